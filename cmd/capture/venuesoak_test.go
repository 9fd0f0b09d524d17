package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
)

// BenchmarkVenueSoak runs `capture run --all-markets` (the built binary, so
// its RSS and CPU are its own) against the loopback test exchange serving a
// Polymarket-sized venue: TAPEDECK_SOAK_TOKENS tokens (default 10,000: 5,000
// markets in the Gamma list, 200 a connection, so 50 connections), each
// served the real polypy stream (book, price_change, last_trade_price,
// tick_size_change, best_bid_ask; hashes blank, so books stay valid), every
// connection sending a frame each 20 ms and bursts of 4 frames a tick for 2 s
// in every 10 s. Venue time (TAPEDECK_SOAK_VENUE, default 1h) runs
// TAPEDECK_SOAK_SPEED times faster than the wall (default 60: an hour in a
// minute) for the listing: every 15 venue minutes 8 new markets (16 tokens,
// the 15-minute crypto markets) are listed (Gamma list and new_market on
// every connection) and the 8 oldest resolved (market_resolved); the frame
// rate is the wall's. At the end the feed stops, the capture is stopped
// with SIGINT and its dataset read.
//
// It reports frames the exchange sent and the dataset holds (frames-in,
// frames-recorded: equal), drops (overload records), live-skipped (records
// the live engine fell behind on), peak RSS and its growth over the steady
// phase, CPU per frame of the capture process with live decoding on, the
// time from a market's listing (its new_market record) to its first
// recorded book (p50, max), and /status.json with every instrument (a page
// of 500 at offset 5,000: time and size). Skipped in -short; run it alone:
//
//	go test -run '^$' -bench BenchmarkVenueSoak -benchtime 1x -timeout 30m ./cmd/capture
func BenchmarkVenueSoak(b *testing.B) {
	if testing.Short() {
		b.Skip("a soak of minutes")
	}
	tokens := envInt("TAPEDECK_SOAK_TOKENS", 10_000)
	speed := envInt("TAPEDECK_SOAK_SPEED", 60)
	venueDur, err := time.ParseDuration(cmpOr(os.Getenv("TAPEDECK_SOAK_VENUE"), "1h"))
	if err != nil || tokens < 2 || speed < 1 {
		b.Fatalf("TAPEDECK_SOAK_*: tokens %d, speed %d, venue %v", tokens, speed, err)
	}
	bin := buildCapture(b)
	for range b.N {
		soakOnce(b, bin, tokens, speed, venueDur)
	}
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// soakVenue is the generated market list: market i has tokens 2i and 2i+1.
type soakVenue struct {
	next int   // markets made so far
	live []int // listed markets, oldest first
}

func soakToken(i int) string     { return fmt.Sprintf("7%076d", i) }
func soakCondition(m int) string { return fmt.Sprintf("0x%064x", m+1) }

func (v *soakVenue) add() int {
	m := v.next
	v.next++
	v.live = append(v.live, m)
	return m
}

// gamma is the Gamma market list of the listed markets.
func (v *soakVenue) gamma() []byte {
	var b bytes.Buffer
	b.WriteString("[\n")
	for i, m := range v.live {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `{"id":"%d","question":"Soak market %d","conditionId":"%s","slug":"soak-market-%d","active":true,"closed":false,`+
			`"outcomes":"[\"Up\", \"Down\"]","clobTokenIds":"[\"%s\", \"%s\"]"}`,
			900000+m, m, soakCondition(m), m, soakToken(2*m), soakToken(2*m+1))
	}
	b.WriteString("\n]\n")
	return b.Bytes()
}

// listingFrames are the real new_market and market_resolved frames with
// market m's ids in place of the real market's.
func listingFrames(m int) (newMarket, resolved []byte) {
	nm, ids := fakeexchange.PolymarketNewMarket()
	res := fakeexchange.PolymarketResolved()
	swap := func(f []byte) []byte {
		f = bytes.ReplaceAll(f, []byte(ids[0]), []byte(soakToken(2*m)))
		f = bytes.ReplaceAll(f, []byte(ids[1]), []byte(soakToken(2*m+1)))
		f = bytes.ReplaceAll(f, []byte("0x311d0c4b6671ab54af4970c06fcf58662516f5168997bdda209ec3db5aa6b0c1"), []byte(soakCondition(m)))
		return bytes.ReplaceAll(f, []byte(`"1031769"`), []byte(`"`+strconv.Itoa(900000+m)+`"`))
	}
	return swap(nm), swap(res)
}

// procSample reads a process's resident set (bytes) and CPU time so far.
func procSample(pid int) (rss int64, cpu time.Duration) {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				rss = kb << 10
			}
		}
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		if i := bytes.LastIndexByte(b, ')'); i > 0 {
			f := strings.Fields(string(b[i+1:]))
			if len(f) > 13 {
				ut, _ := strconv.ParseInt(f[11], 10, 64)
				st, _ := strconv.ParseInt(f[12], 10, 64)
				cpu = time.Duration(ut+st) * (time.Second / 100) // USER_HZ
			}
		}
	}
	return rss, cpu
}

// soakStatus is what the benchmark reads of /status.json.
type soakStatus struct {
	InstrumentsTotal int `json:"instruments_total"`
	Stats            struct {
		Frames  uint64 `json:"frames"`
		Dropped uint64 `json:"dropped"`
	} `json:"stats"`
	Conns []struct {
		State string `json:"state"`
	} `json:"connections"`
	Instruments []json.RawMessage `json:"instruments"`
}

func getStatus(base, query string) (*soakStatus, int, time.Duration, error) {
	t0 := time.Now()
	resp, err := http.Get(base + "status.json" + query)
	if err != nil {
		return nil, 0, 0, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	el := time.Since(t0)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, 0, el, fmt.Errorf("status.json: HTTP %d %v", resp.StatusCode, err)
	}
	st := &soakStatus{}
	return st, len(body), el, json.Unmarshal(body, st)
}

func soakOnce(b *testing.B, bin string, tokens, speed int, venueDur time.Duration) {
	v := &soakVenue{}
	for range tokens / 2 {
		v.add()
	}
	cfg := fakeexchange.WithoutHashes(fakeexchange.PolymarketConfig())
	cfg.Markets, cfg.CountOnly, cfg.Interval = v.gamma(), true, 20*time.Millisecond
	s := fakeexchange.New(cfg)
	defer s.Close()
	out := filepath.Join(b.TempDir(), "ds")
	cmd := exec.Command(bin, "run", "--venue", "polymarket", "--all-markets", "--endpoint", s.WSURL(),
		"--rest-endpoint", s.RESTURL(), "--clob-endpoint", s.CLOBURL(), "--out", out,
		"--metrics-addr", "127.0.0.1:0", "--log-format", "json")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Process.Kill()
	urlc := make(chan string, 1)
	var logTail []string
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var l struct{ Msg, URL, Level string }
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "status page" {
				urlc <- l.URL
			}
			if l.Level != "INFO" && len(logTail) < 50 {
				logTail = append(logTail, sc.Text())
			}
		}
	}()
	var base string
	select {
	case base = <-urlc:
	case <-time.After(2 * time.Minute):
		b.Fatal("no status page")
	}
	pid := cmd.Process.Pid
	var peakRSS int64
	sample := func() (int64, time.Duration) {
		rss, cpu := procSample(pid)
		peakRSS = max(peakRSS, rss)
		return rss, cpu
	}
	// Every token subscribed, every connection up.
	wait := func(what string, limit time.Duration, cond func(*soakStatus) bool) {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		deadline := time.Now().Add(limit)
		for range tick.C {
			sample()
			if st, _, _, err := getStatus(base, "?limit=1"); err == nil && cond(st) {
				return
			}
			if time.Now().After(deadline) {
				b.Fatalf("timed out waiting for %s; log: %s", what, strings.Join(logTail, "\n"))
			}
		}
	}
	wantConns := (tokens + 199) / 200
	wait("every token subscribed", 10*time.Minute, func(st *soakStatus) bool {
		up := 0
		for _, c := range st.Conns {
			if c.State == "connected" {
				up++
			}
		}
		return st.InstrumentsTotal >= tokens && up >= wantConns
	})
	startup := time.Since(start)

	// The steady phase: venue time at speed, listings every 15 venue minutes.
	wall := venueDur / time.Duration(speed)
	every := 15 * time.Minute / time.Duration(speed)
	rss0, cpu0 := sample()
	st0, _, _, _ := getStatus(base, "?limit=1")
	listedAt := map[string]time.Time{} // token → when its new_market went out
	var statusMs []float64
	var statusKB float64
	t0 := time.Now()
	nextListing, nextBurst, burstEnd := t0.Add(every), t0.Add(10*time.Second), time.Time{}
	tick := time.NewTicker(100 * time.Millisecond)
	for now := range tick.C {
		if now.Sub(t0) >= wall {
			break
		}
		sample()
		if now.After(nextListing) {
			nextListing = nextListing.Add(every)
			var gone []int
			for range 8 {
				gone = append(gone, v.live[0])
				v.live = v.live[1:]
			}
			var fresh []int
			for range 8 {
				fresh = append(fresh, v.add())
			}
			s.SetListing(v.gamma(), nil, nil)
			for _, m := range fresh {
				nm, _ := listingFrames(m)
				listedAt[soakToken(2*m)], listedAt[soakToken(2*m+1)] = time.Now(), time.Now()
				s.SendAll(nm)
			}
			for _, m := range gone {
				_, res := listingFrames(m)
				s.SendAll(res)
			}
		}
		if burstEnd.IsZero() && now.After(nextBurst) {
			s.SetBurst(4)
			burstEnd, nextBurst = now.Add(2*time.Second), nextBurst.Add(10*time.Second)
		} else if !burstEnd.IsZero() && now.After(burstEnd) {
			s.SetBurst(1)
			burstEnd = time.Time{}
		}
		if len(statusMs) < 3 && now.Sub(t0) > wall*time.Duration(len(statusMs)+1)/4 {
			st, n, el, err := getStatus(base, "?offset=5000&limit=500")
			if err != nil {
				b.Fatal(err)
			}
			if st.InstrumentsTotal < tokens || len(st.Instruments) != min(500, max(st.InstrumentsTotal-5000, 0)) {
				b.Errorf("status page: %d instruments, a page of %d", st.InstrumentsTotal, len(st.Instruments))
			}
			statusMs, statusKB = append(statusMs, float64(el.Microseconds())/1000), float64(n)/1024
		}
	}
	tick.Stop()
	s.SetBurst(1)
	rss1, cpu1 := sample()
	st1, _, _, _ := getStatus(base, "?limit=1")
	steady := time.Since(t0)

	// The feed stops; every frame sent reaches the capture before SIGINT.
	s.Stall(true)
	sent := capSent(s)
	wait("every frame sent received", 2*time.Minute, func(st *soakStatus) bool { return st.Stats.Frames >= uint64(sent) })
	cmd.Process.Signal(syscall.SIGINT)
	<-logDone
	if err := cmd.Wait(); err != nil {
		b.Fatalf("capture run: %v\n%s\n%s", err, stdout.String(), strings.Join(logTail, "\n"))
	}
	sent = capSent(s)

	// The dataset: frames, drops, skips, listing to first book.
	rd, err := datasets.Open(out, datasets.WithStrict())
	if err != nil {
		b.Fatal(err)
	}
	defer rd.Close()
	var frames, drops, skipped uint64
	newAt := map[string]int64{}     // token → its first new_market record
	firstBook := map[string]int64{} // token → its first recorded book
	for rd.Next() {
		r := rd.Record()
		switch r.Kind {
		case datasets.KindFrame:
			frames++
			p := r.Payload
			if bytes.Contains(p, []byte(`"new_market"`)) {
				for tok := range listedAt {
					if _, ok := newAt[tok]; !ok && bytes.Contains(p, []byte(tok)) {
						newAt[tok] = r.WallNs
					}
				}
			} else if bytes.Contains(p, []byte(`"event_type":"book"`)) {
				for tok, at := range newAt {
					if _, ok := firstBook[tok]; !ok && bytes.Contains(p, []byte(`"asset_id":"`+tok+`"`)) {
						firstBook[tok] = r.WallNs - at
					}
				}
			}
		case datasets.KindOverload:
			if c, err := datasets.DecodeControl(r.Payload); err == nil {
				drops += c.Dropped
			}
		case datasets.KindLiveLag:
			if c, err := datasets.DecodeControl(r.Payload); err == nil {
				skipped += c.Dropped
			}
		}
	}
	if err := rd.Err(); err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	for _, d := range firstBook {
		lat = append(lat, time.Duration(d))
	}
	slices.Sort(lat)
	if frames != uint64(sent) || drops != 0 {
		b.Errorf("the exchange sent %d frames, the dataset holds %d, %d dropped", sent, frames, drops)
	}
	if len(lat) != len(listedAt) {
		b.Errorf("%d tokens listed during the soak, %d with a recorded book", len(listedAt), len(lat))
	}
	steadyFrames := st1.Stats.Frames - st0.Stats.Frames
	b.ReportMetric(float64(tokens), "tokens")
	b.ReportMetric(float64(len(s.Conns())), "conns")
	b.ReportMetric(float64(sent), "frames-in")
	b.ReportMetric(float64(frames), "frames-recorded")
	b.ReportMetric(float64(drops), "drops")
	b.ReportMetric(float64(skipped), "live-skipped")
	b.ReportMetric(float64(steadyFrames)/steady.Seconds(), "frames/s")
	b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(max(steadyFrames, 1)), "cpu-us/frame")
	b.ReportMetric(float64(peakRSS)/(1<<20), "peak-rss-MB")
	b.ReportMetric(float64(rss1-rss0)/(1<<20), "rss-growth-MB")
	b.ReportMetric(startup.Seconds(), "startup-s")
	b.ReportMetric(float64(len(listedAt)), "listed-tokens")
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "listing-to-book-p50-ms")
		b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "listing-to-book-max-ms")
	}
	if len(statusMs) > 0 {
		b.ReportMetric(slices.Max(statusMs), "status-page-max-ms")
		b.ReportMetric(statusKB, "status-page-KB")
	}
	b.Logf("venue %v at %dx in %v wall (startup %v): %d tokens on %d connections, %d listings",
		venueDur, speed, steady.Round(time.Second), startup.Round(time.Second), tokens, len(s.Conns()), len(listedAt)/2)
}

package samplegen

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/venue/registry"
)

// TestRecordIsARealCapture records short sessions of both venues through
// the real recorder: every frame the generated venue sent is in the dataset
// byte for byte at its generated receive time, the venue's disconnect is a
// disconnect record followed by a reconnect, and the rest is what the
// recorder writes (its subscribe frames, acknowledgements, REST notes, the
// connection's clean close, the recorder's). Recording the same session
// again gives byte-identical files.
func TestRecordIsARealCapture(t *testing.T) {
	if testing.Short() {
		t.Skip("records minutes of generated sessions through the recorder")
	}
	for _, v := range venues {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			opts := Options{Seed: 3, Duration: 6 * time.Minute} // through the first disconnect (5:30)
			if v == "hyperliquid" {
				opts.Duration = 7*time.Minute + 10*time.Second // (7:00)
			}
			_, isPong := beats(t, v)
			var gen collector
			if _, err := Generate(v, opts, &gen); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), v)
			sum, err := Record(context.Background(), v, opts, dir)
			if err != nil {
				t.Fatal(err)
			}
			again := filepath.Join(t.TempDir(), v)
			if _, err := Record(context.Background(), v, opts, again); err != nil {
				t.Fatal(err)
			}
			sameFiles(t, dir, again)
			got := readRecords(t, dir)
			var want, frames []datasets.Record
			for _, r := range gen.recs {
				if r.Kind == datasets.KindFrame && !isPong(r.Payload) {
					want = append(want, r)
				}
			}
			kinds := map[datasets.Kind]int{}
			for _, r := range got {
				kinds[r.Kind]++
				if r.Kind == datasets.KindFrame && !isPong(r.Payload) {
					frames = append(frames, r)
				}
			}
			pongs := checkHeartbeats(t, v, got)
			if len(frames) != len(want) || sum.Frames != int64(len(want)+pongs) {
				t.Fatalf("%d frames and %d pongs recorded (summary %d), %d generated", len(frames), pongs, sum.Frames, len(want))
			}
			for i := range want {
				if !bytes.Equal(frames[i].Payload, want[i].Payload) || frames[i].WallNs != want[i].WallNs {
					t.Fatalf("frame %d: %d %.80s\nwant %d %.80s", i, frames[i].WallNs, frames[i].Payload, want[i].WallNs, want[i].Payload)
				}
			}
			if kinds[datasets.KindDisconnect] != 1 || kinds[datasets.KindReconnect] != 1 || kinds[datasets.KindConnect] != 2 ||
				kinds[datasets.KindCleanClose] != 2 || kinds[datasets.KindSent] == 0 || kinds[datasets.KindSubscribed] == 0 {
				t.Errorf("records by kind %v", kinds)
			}
			if v == "hyperliquid" {
				checkAckOrder(t, got)
			}
			if v == "polymarket" && kinds[datasets.KindRESTResponse] != 2 {
				t.Errorf("%d REST bodies, want one per connect", kinds[datasets.KindRESTResponse])
			}
			m, err := datasets.ReadManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			if want, _ := Manifest(v, opts); m.Host != "generated" || m.Endpoint != want.Endpoint || !m.Clean {
				t.Errorf("manifest %+v", m)
			}
		})
	}
}

func readRecords(t *testing.T, dir string) []datasets.Record {
	t.Helper()
	rd, err := datasets.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var out []datasets.Record
	for rd.Next() {
		r := *rd.Record()
		r.Payload = bytes.Clone(r.Payload)
		out = append(out, r)
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameFiles fails unless directories a and b hold the same files, byte for
// byte.
func sameFiles(t *testing.T, a, b string) {
	t.Helper()
	names := func(dir string) []string {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return out
	}
	na, nb := names(a), names(b)
	if !slices.Equal(na, nb) {
		t.Fatalf("files %v and %v", na, nb)
	}
	for _, n := range na {
		x, err := os.ReadFile(filepath.Join(a, n))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(filepath.Join(b, n))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two recordings of the same session (%d and %d bytes)", n, len(x), len(y))
		}
	}
}

// beats returns the heartbeat recognisers of the named venue.
func beats(t testing.TB, v string) (isPing, isPong func([]byte) bool) {
	t.Helper()
	drv, err := registry.Lookup(v)
	if err != nil {
		t.Fatal(err)
	}
	return heartbeat(drv)
}

// checkHeartbeats checks the heartbeats of a recorded session: the
// recorder's pings at the venue's interval from each connect, each answered
// by at most one pong, all but the last answered. It returns the pongs.
func checkHeartbeats(t *testing.T, venueName string, recs []datasets.Record) int {
	t.Helper()
	drv, err := registry.Lookup(venueName)
	if err != nil {
		t.Fatal(err)
	}
	every := int64(drv.Client().Facts().PingInterval)
	isPing, isPong := heartbeat(drv)
	var next int64
	pings, pongs, open := 0, 0, 0
	for _, r := range recs {
		switch {
		case r.Kind == datasets.KindConnect:
			next, open = r.WallNs+every, 0
		case r.Kind == datasets.KindSent && isPing(r.Payload):
			if r.WallNs != next {
				t.Fatalf("ping %d at %d, want %d (the venue's interval from the connect)", pings+1, r.WallNs, next)
			}
			next += every
			pings++
			open++
		case r.Kind == datasets.KindFrame && isPong(r.Payload):
			if open == 0 {
				t.Fatalf("a pong at %d answers no ping", r.WallNs)
			}
			open--
			pongs++
		}
	}
	if pings == 0 || pongs < pings-1 {
		t.Errorf("%d pings, %d pongs", pings, pongs)
	}
	return pongs
}

// checkAckOrder checks that the venue acknowledges each connection's
// subscriptions in the order the recorder sent them (as Hyperliquid does).
func checkAckOrder(t *testing.T, recs []datasets.Record) {
	t.Helper()
	var sent, acked []string
	check := func() {
		if len(sent) == 0 || !slices.Equal(sent, acked) {
			t.Errorf("subscribed %v\nacknowledged %v", sent, acked)
		}
		sent, acked = nil, nil
	}
	for _, r := range recs {
		switch r.Kind {
		case datasets.KindConnect:
			if sent != nil {
				check()
			}
		case datasets.KindSent:
			var f struct {
				Method       string `json:"method"`
				Subscription struct {
					Type string `json:"type"`
					Coin string `json:"coin"`
				} `json:"subscription"`
			}
			if json.Unmarshal(r.Payload, &f) == nil && f.Method == "subscribe" {
				k := f.Subscription.Type
				if f.Subscription.Coin != "" {
					k += "@" + f.Subscription.Coin
				}
				sent = append(sent, k)
			}
		case datasets.KindSubscribed:
			c, err := datasets.DecodeControl(r.Payload)
			if err != nil {
				t.Fatal(err)
			}
			acked = append(acked, c.Text)
		}
	}
	check()
}

// TestRecordVenueTimingNoFalseHeals records, through the real recorder with
// its live engine and healing on, a Polymarket session whose venue hashes
// as the real one does (one hash per batch, of the book after it, with the
// last trade price after the batch's match, sent before that price's
// last_trade_price, which comes on either token): over a thousand trades,
// not one integrity record or resubscribe, and a replay counts no mismatch.
// The same session whose venue book gets a level no message tells is
// caught: confirmed mismatches of that token only, integrity records and a
// resubscribe, and the book is valid again from the next snapshot.
func TestRecordVenueTimingNoFalseHeals(t *testing.T) {
	if testing.Short() {
		t.Skip("records a ten-minute generated session through the recorder, twice")
	}
	for _, tc := range []struct {
		name    string
		corrupt time.Duration
	}{{"clean", 0}, {"corrupted level", 100 * time.Second}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := Options{Seed: ShippedSeed, CorruptAfter: tc.corrupt}
			dir := filepath.Join(t.TempDir(), "polymarket")
			if _, err := Record(context.Background(), "polymarket", opts, dir); err != nil {
				t.Fatal(err)
			}
			kinds := map[datasets.Kind]int{}
			var findings []datasets.Control
			var trades int
			for _, r := range readRecords(t, dir) {
				kinds[r.Kind]++
				switch r.Kind {
				case datasets.KindFrame:
					trades += bytes.Count(r.Payload, []byte(`"last_trade_price", "fee_rate_bps"`))
				case datasets.KindIntegrity, datasets.KindResubscribe:
					var c datasets.Control
					if err := json.Unmarshal(r.Payload, &c); err != nil {
						t.Fatal(err)
					}
					findings = append(findings, c)
				}
			}
			if trades < 1000 {
				t.Fatalf("%d trades, want over a thousand", trades)
			}
			sum, books := replayAll(t, dir)
			if tc.corrupt == 0 {
				if kinds[datasets.KindIntegrity] != 0 || kinds[datasets.KindResubscribe] != 0 {
					t.Fatalf("%d integrity records, %d resubscribes on a venue-consistent session: %+v",
						kinds[datasets.KindIntegrity], kinds[datasets.KindResubscribe], findings)
				}
				if sum.HashMismatch != 0 || sum.HashOK == 0 {
					t.Fatalf("replay: %d ok, %d mismatch, %d unverifiable", sum.HashOK, sum.HashMismatch, sum.HashUnverifiable)
				}
				return
			}
			corrupted := Instruments("polymarket")[0] // the first market's first token
			if kinds[datasets.KindIntegrity] == 0 || kinds[datasets.KindResubscribe] == 0 {
				t.Fatalf("the corrupted level was not caught: records by kind %v", kinds)
			}
			for _, c := range findings {
				if c.Reason != datasets.CheckHashMismatch || !slices.Equal(c.Instruments, []string{corrupted}) {
					t.Errorf("finding %+v, want hash mismatches of %s only", c, corrupted)
				}
			}
			if sum.HashMismatch == 0 {
				t.Errorf("replay counted no mismatch")
			}
			t.Logf("%d trades; %d integrity records, %d resubscribes; replay: %d ok, %d mismatch, %d unverifiable",
				trades, kinds[datasets.KindIntegrity], kinds[datasets.KindResubscribe], sum.HashOK, sum.HashMismatch, sum.HashUnverifiable)
			if !books[corrupted] {
				t.Errorf("the corrupted token's book is not valid at the end (snapshots came after)")
			}
		})
	}
}

// replayAll replays dir checking every hash and returns its summary and
// whether each book is valid at the end.
func replayAll(t *testing.T, dir string) (*replayer.Summary, map[string]bool) {
	t.Helper()
	rp, err := replayer.New([]string{dir}, replayer.WithHashCheck(true))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := rp.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	valid := map[string]bool{}
	for _, b := range rp.Books() {
		valid[b.Instrument] = b.Book.Valid()
	}
	return sum, valid
}

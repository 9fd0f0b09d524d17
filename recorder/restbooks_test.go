package recorder_test

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/venue/polymarket"
)

// wantBooksBody is the POST /books body the fake serves for ids.
func wantBooksBody(cfg fakeexchange.Config, ids []string) []byte {
	var parts [][]byte
	for _, id := range ids {
		parts = append(parts, bytes.ReplaceAll(cfg.Summary.Frame, []byte(cfg.Summary.ID), []byte(id)))
	}
	return append(append([]byte{'['}, bytes.Join(parts, []byte{','})...), ']')
}

// checkBooksBeforeConnects asserts that every connect record of every slot
// is preceded, since that slot's previous connect, by REST book summaries of
// all the slot's tokens on the slot's Conn, each right after the note naming
// its request, with the bytes the server sent (wantBody of the request's
// ids). It returns the number of connects per slot.
func checkBooksBeforeConnects(t *testing.T, recs []rec, tokens map[uint32][]string, booksURL string, wantBody func([]string) []byte) map[uint32]int {
	t.Helper()
	pending := map[uint32][]string{} // tokens covered since the slot's last connect
	expectBody := map[uint32]bool{}  // the slot's previous record was a books note
	connects := map[uint32]int{}
	for _, r := range recs {
		if r.Conn == 0 {
			continue
		}
		if expectBody[r.Conn] && r.Kind != datasets.KindRESTResponse {
			t.Errorf("conn %d: record %d (%s) follows a rest_response note", r.Conn, r.Seq, r.Kind)
		}
		switch r.Kind {
		case datasets.KindNote:
			c := r.control(t)
			expectBody[r.Conn] = c.URL == booksURL && strings.HasPrefix(c.Text, "rest_response follows: POST "+booksURL)
		case datasets.KindRESTResponse:
			if !expectBody[r.Conn] {
				t.Errorf("conn %d: rest_response %d without its note", r.Conn, r.Seq)
			}
			expectBody[r.Conn] = false
			sums, err := polymarket.ParseBookSummaries(r.Payload)
			if err != nil {
				t.Errorf("conn %d: rest_response %d: %v", r.Conn, r.Seq, err)
				continue
			}
			var ids []string
			for _, s := range sums {
				ids = append(ids, s.AssetID)
			}
			if want := wantBody(ids); !bytes.Equal(r.Payload, want) {
				t.Errorf("conn %d: rest_response %d is not the body served:\n got %.200s\nwant %.200s", r.Conn, r.Seq, r.Payload, want)
			}
			pending[r.Conn] = append(pending[r.Conn], ids...)
		case datasets.KindConnect:
			for _, id := range tokens[r.Conn] {
				if !slices.Contains(pending[r.Conn], id) {
					t.Errorf("conn %d: connect %d not preceded by the book summary of %s", r.Conn, r.Seq, id)
				}
			}
			for _, id := range pending[r.Conn] {
				if !slices.Contains(tokens[r.Conn], id) {
					t.Errorf("conn %d: book summary of %s, a token of another slot", r.Conn, id)
				}
			}
			pending[r.Conn] = nil
			connects[r.Conn]++
		}
	}
	return connects
}

func TestPolymarketRESTBooksBeforeEveryConnect(t *testing.T) {
	cfg := fakeexchange.PolymarketConfig()
	s := fakeexchange.New(cfg)
	defer s.Close()
	spec := pmSpec(s, fakeexchange.PolymarketStreamAsset, fakeexchange.PolymarketOtherAsset)
	spec.AssetsPerConn = 1 // two slots
	c := startCapture(t, spec, nil)
	live := func(n int) func() bool {
		return func() bool {
			l := s.Live()
			if len(s.Conns()) < n || len(l) != 2 {
				return false
			}
			for _, c := range l {
				if len(c.Sent()) < 5 {
					return false
				}
			}
			return true
		}
	}
	waitFor(t, "two connections with data", live(2))
	s.KillAll()
	waitFor(t, "first reconnects", live(4))
	s.KillAll()
	waitFor(t, "second reconnects", live(6))
	recs := c.stop()
	checkOrder(t, recs)
	checkByteIdentical(t, s, recs, 0)

	tokens := map[uint32][]string{1: {fakeexchange.PolymarketStreamAsset}, 2: {fakeexchange.PolymarketOtherAsset}}
	connects := checkBooksBeforeConnects(t, recs, tokens, s.CLOBURL()+polymarket.BooksPath,
		func(ids []string) []byte { return wantBooksBody(cfg, ids) })
	if connects[1] < 3 || connects[2] < 3 {
		t.Errorf("connects per slot %v, want 3 each", connects)
	}
	// One request per dial, each for the slot's one token.
	reqs := s.BookRequests()
	if len(reqs) < connects[1]+connects[2] {
		t.Errorf("%d book requests for %d connects", len(reqs), connects[1]+connects[2])
	}
	for _, q := range reqs {
		if len(q) != 1 {
			t.Errorf("book request for %v, want one token", q)
		}
	}
	if st := c.rec.Stats(); st.RESTBooks != uint64(len(ofKind(recs, datasets.KindRESTResponse))) || st.RESTBookErrors != 0 {
		t.Errorf("stats: %d rest books, %d errors; dataset holds %d", st.RESTBooks, st.RESTBookErrors,
			len(ofKind(recs, datasets.KindRESTResponse)))
	}
}

func TestPolymarketRESTBooksBatches(t *testing.T) {
	cfg := fakeexchange.PolymarketConfig()
	s := fakeexchange.New(cfg)
	defer s.Close()
	var ids []string
	for i := range polymarket.BooksBatchLimit + 50 {
		ids = append(ids, "7"+strings.Repeat("0", 60)+itoa(100000+i))
	}
	c := startCapture(t, pmSpec(s, ids...), nil)
	waitFor(t, "data", func() bool { return len(s.Live()) == 1 && len(s.Live()[0].Sent()) > 0 })
	recs := c.stop()
	reqs := s.BookRequests()
	if len(reqs) < 2 || len(reqs[0]) != polymarket.BooksBatchLimit || len(reqs[1]) != 50 ||
		!slices.Equal(slices.Concat(reqs[0], reqs[1]), ids) {
		t.Fatalf("book requests of sizes %d, want %d then 50 in token order", len(reqs), polymarket.BooksBatchLimit)
	}
	connects := checkBooksBeforeConnects(t, recs, map[uint32][]string{1: ids}, s.CLOBURL()+polymarket.BooksPath,
		func(ids []string) []byte { return wantBooksBody(cfg, ids) })
	if connects[1] != 1 {
		t.Errorf("%d connects", connects[1])
	}
}

func TestPolymarketRESTBooksFailureKeepsRecording(t *testing.T) {
	failed := "rest book summaries failed for 1 tokens"
	for _, tc := range []struct {
		name    string
		cfg     func(*fakeexchange.Config)                 // before the server starts
		fault   func(*fakeexchange.Server, *recorder.Spec) // after
		opts    []recorder.Option
		errText string // in the note; "" = not a failure
		note    string // in the note's text
	}{
		{name: "http 500", fault: func(s *fakeexchange.Server, _ *recorder.Spec) { s.FailBooks(http.StatusInternalServerError) },
			errText: "HTTP 500", note: failed},
		{name: "timeout", fault: func(s *fakeexchange.Server, _ *recorder.Spec) { s.DelayBooks(time.Minute) },
			opts: []recorder.Option{recorder.WithRESTBooksTimeout(50 * time.Millisecond)}, errText: "deadline exceeded", note: failed},
		{name: "refused", fault: func(_ *fakeexchange.Server, sp *recorder.Spec) { sp.CLOBEndpoint = "http://127.0.0.1:1" },
			errText: "connection refused", note: failed},
		{name: "no summary", cfg: func(cfg *fakeexchange.Config) { cfg.Summary = fakeexchange.Template{} },
			note: "no summary for 1 of 1 tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fakeexchange.PolymarketConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			s := fakeexchange.New(cfg)
			defer s.Close()
			spec := pmSpec(s, fakeexchange.PolymarketStreamAsset)
			if tc.fault != nil {
				tc.fault(s, &spec)
			}
			c := startCapture(t, spec, nil, tc.opts...)
			waitFor(t, "data", func() bool { return len(s.Live()) == 1 && len(s.Live()[0].Sent()) > 20 })
			recs := c.stop()
			checkOrder(t, recs)
			checkByteIdentical(t, s, recs, 0)

			// The note comes before the connect, on the slot's Conn.
			var note *datasets.Control
			for _, r := range recs {
				if r.Conn != 1 {
					continue
				}
				if r.Kind == datasets.KindConnect {
					break
				}
				if r.Kind == datasets.KindNote {
					if ctl := r.control(t); strings.Contains(ctl.Text, tc.note) {
						note = &ctl
					}
				}
			}
			if note == nil {
				t.Fatalf("no note %q before the first connect:\n%s", tc.note, describe(recs))
			}
			if !strings.Contains(note.Err, tc.errText) || !slices.Equal(note.Instruments, []string{fakeexchange.PolymarketStreamAsset}) {
				t.Errorf("note err %q instruments %v, want %q and the token", note.Err, note.Instruments, tc.errText)
			}
			st := c.rec.Stats()
			restOnConn := 0
			for _, r := range ofKind(recs, datasets.KindRESTResponse) {
				if r.Conn == 1 {
					restOnConn++
				}
			}
			if tc.errText != "" {
				if st.RESTBookErrors == 0 || restOnConn != 0 {
					t.Errorf("%d errors counted, %d bodies stored; want errors and no body", st.RESTBookErrors, restOnConn)
				}
				if got := metricValue(t, c.rec, "tapedeck_capture_rest_book_errors_total", "1"); got != float64(st.RESTBookErrors) {
					t.Errorf("metric %v, stats %d", got, st.RESTBookErrors)
				}
			} else if st.RESTBookErrors != 0 || restOnConn == 0 {
				t.Errorf("%d errors counted, %d bodies stored; want the empty body stored and no error", st.RESTBookErrors, restOnConn)
			}
		})
	}
}

func metricValue(t *testing.T, r *recorder.Recorder, name, conn string) float64 {
	t.Helper()
	mfs, err := r.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "conn" && l.GetValue() == conn {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{conn=%q}", name, conn)
	return 0
}

func TestPolymarketRESTBooksDisabled(t *testing.T) {
	s := fakeexchange.New(fakeexchange.PolymarketConfig())
	defer s.Close()
	spec := pmSpec(s, fakeexchange.PolymarketStreamAsset)
	spec.DisableRESTBooks = true
	c := startCapture(t, spec, nil)
	waitFor(t, "data", func() bool { return len(s.Live()) == 1 && len(s.Live()[0].Sent()) > 5 })
	recs := c.stop()
	if n := len(s.BookRequests()); n != 0 {
		t.Errorf("%d book requests with the summaries off", n)
	}
	if n := len(ofKind(recs, datasets.KindRESTResponse)); n != 0 {
		t.Errorf("%d rest records", n)
	}
}

func TestPlanShowsRESTBooks(t *testing.T) {
	ids := []string{fakeexchange.PolymarketStreamAsset, fakeexchange.PolymarketOtherAsset}
	for _, tc := range []struct {
		name    string
		disable bool
		want    string
	}{
		{"on", false, "before every (re)connect: POST http://127.0.0.1:1/books for the 2 tokens' book summaries in 1 request"},
		{"off", true, "REST book summaries off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := recorder.New(recorder.Spec{Venue: "polymarket", Endpoint: "ws://127.0.0.1:1/ws", RESTEndpoint: "http://127.0.0.1:1",
				CLOBEndpoint: "http://127.0.0.1:1/", Instruments: ids, DisableRESTBooks: tc.disable})
			if err != nil {
				t.Fatal(err)
			}
			p, err := r.Plan(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			if err := p.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), tc.want) {
				t.Errorf("plan text lacks %q:\n%s", tc.want, b.String())
			}
			if on := p.RESTBooks != "" && p.Conns[0].RESTBookRequests == 1; on == tc.disable {
				t.Errorf("plan rest books %q, %d requests", p.RESTBooks, p.Conns[0].RESTBookRequests)
			}
		})
	}
}

// TestReplayChecksHashesOfLiveRecording records a fake market whose
// WebSocket book agrees with its REST summary, across a reconnect, and
// replays it: the summaries stored before each connect teach the decoder the
// fields the WebSocket books lack, so their hashes are checked, and match.
// Without the summaries nothing can be checked.
func TestReplayChecksHashesOfLiveRecording(t *testing.T) {
	for _, tc := range []struct {
		name    string
		disable bool
	}{{"with rest books", false}, {"without", true}} {
		t.Run(tc.name, func(t *testing.T) {
			s := fakeexchange.New(fakeexchange.PolymarketHashConfig())
			defer s.Close()
			spec := pmSpec(s, fakeexchange.PolymarketHashAsset)
			spec.DisableRESTBooks = tc.disable
			c := startCapture(t, spec, nil)
			waitFor(t, "book", func() bool { return len(s.Live()) == 1 && len(s.Live()[0].Sent()) > 0 })
			s.KillAll()
			waitFor(t, "book after reconnect", func() bool {
				return len(s.Conns()) == 2 && len(s.Live()) == 1 && len(s.Live()[0].Sent()) > 0
			})
			recs := c.stop()
			checkByteIdentical(t, s, recs, 0)

			rp, err := replayer.New([]string{c.dir})
			if err != nil {
				t.Fatal(err)
			}
			sum, err := rp.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if sum.DecodeErrors != 0 || sum.RESTUndecoded != 0 {
				t.Fatalf("%d decode errors %v, %d rest bodies undecoded", sum.DecodeErrors, sum.FirstDecodeErrors, sum.RESTUndecoded)
			}
			t.Logf("%d hashes checked, %d ok", sum.HashChecked, sum.HashOK)
			if tc.disable {
				if sum.HashChecked != 0 {
					t.Errorf("%d hashes checked without the REST summaries", sum.HashChecked)
				}
				return
			}
			// Per connection: the summary's own hash and the WebSocket book's.
			if sum.HashChecked < 4 || sum.HashOK != sum.HashChecked {
				t.Errorf("%d hashes checked, %d ok; want >= 4, all ok", sum.HashChecked, sum.HashOK)
			}
		})
	}
}

// TestPolymarketRESTBooksTimeoutCoversAllBatches hangs the book endpoint:
// the timeout bounds all of a connect's batches together, so the second
// batch is not even sent, and each batch is recorded as failed. The first
// batch is made to reach the endpoint before its deadline ends it
// (arrivedFirst): on a loaded host 50 ms may pass before the request is
// even read.
func TestPolymarketRESTBooksTimeoutCoversAllBatches(t *testing.T) {
	s := fakeexchange.New(fakeexchange.PolymarketConfig())
	defer s.Close()
	s.DelayBooks(time.Minute)
	var ids []string
	for i := range polymarket.BooksBatchLimit + 50 {
		ids = append(ids, "7"+strings.Repeat("0", 60)+itoa(100000+i))
	}
	done := make(chan struct{})
	defer close(done)
	c := startCapture(t, pmSpec(s, ids...), nil, recorder.WithRESTBooksTimeout(50*time.Millisecond),
		recorder.WithHTTPClient(&http.Client{Transport: arrivedFirst{s, done}}))
	waitFor(t, "data", func() bool { return len(s.Live()) == 1 && len(s.Live()[0].Sent()) > 0 })
	recs := c.stop()
	checkByteIdentical(t, s, recs, 0)
	if n := len(s.BookRequests()); n != 1 {
		t.Errorf("%d book requests reached the hanging endpoint, want 1", n)
	}
	var failed []int
	for _, r := range recs {
		if r.Kind == datasets.KindConnect {
			break
		}
		if r.Kind == datasets.KindNote && r.Conn == 1 {
			if ctl := r.control(t); ctl.Err != "" {
				failed = append(failed, len(ctl.Instruments))
			}
		}
	}
	if !slices.Equal(failed, []int{polymarket.BooksBatchLimit, 50}) {
		t.Errorf("failure notes before the connect cover %v tokens, want [%d 50]", failed, polymarket.BooksBatchLimit)
	}
}

// arrivedFirst sends requests with http.DefaultTransport, except that a
// book-summary request whose context has not ended yet is cancelled by its
// end only once the fake exchange has received it: the deadline then
// always ends a request that hangs at the endpoint, not one still on its
// way. A request whose context has already ended is not sent, as with
// http.DefaultTransport.
type arrivedFirst struct {
	s    *fakeexchange.Server
	done <-chan struct{} // the test is over
}

func (a arrivedFirst) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.URL.Path, "/books") {
		return http.DefaultTransport.RoundTrip(req)
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	arrived := a.s.NextBookRequest()
	ctx, cancel := context.WithCancel(context.WithoutCancel(req.Context()))
	go func() {
		select {
		case <-arrived:
		case <-a.done:
		}
		select {
		case <-req.Context().Done():
		case <-a.done:
		}
		cancel()
	}()
	resp, err := http.DefaultTransport.RoundTrip(req.WithContext(ctx))
	if err != nil && req.Context().Err() != nil {
		err = req.Context().Err()
	}
	return resp, err
}

package export

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
)

// Backfill end to end: a capture of Hyperliquid trades from the test
// exchange on loopback (which, like the venue, answers the subscribe with
// its ack and then plays trades frames), replayed into the trades table.
// The first trades frame after the subscribe is the venue's history:
// backfill=true; every later trade is live.
func TestCapturedBackfillExported(t *testing.T) {
	s := fakeexchange.New(fakeexchange.HyperliquidConfig())
	defer s.Close()
	r, err := recorder.New(recorder.Spec{Venue: "hyperliquid", Endpoint: s.WSURL(), RESTEndpoint: s.RESTURL(),
		Instruments: []string{"BTC"}, Channels: []string{"trades"}},
		recorder.WithBackoff(5*time.Millisecond, 50*time.Millisecond),
		recorder.WithFlushInterval(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := r.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "hl")
	w, err := datasets.Create(dir, r.Manifest(), datasets.WithFlushInterval(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, w) }()
	trades := func() int {
		n := 0
		for _, c := range s.Conns() {
			for _, f := range c.Sent() {
				if bytes.Contains(f, []byte(`"channel":"trades"`)) {
					n++
				}
			}
		}
		return n
	}
	for deadline := time.Now().Add(20 * time.Second); trades() < 4; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for trades frames")
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Conns()); n != 1 {
		t.Fatalf("%d connections, want one (a reconnect would replay history again)", n)
	}

	data, _ := exportOne(t, []string{dir}, TableTrades, FormatParquet, 0)
	tb := readArrowTable(t, FormatParquet, data)
	bf := tb.col(t, "backfill")
	if len(tb.rows) < 4 {
		t.Fatalf("%d trades exported", len(tb.rows))
	}
	for i, row := range tb.rows {
		if want := i == 0; (row[bf] == "true") != want {
			t.Fatalf("trade %d backfill %s, want %v (rows %v)", i, row[bf], want, tb.rows)
		}
	}
}

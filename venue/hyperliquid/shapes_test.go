package hyperliquid

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/venue"
)

// Real shapes and hostile frames (issue 12 item 3, issue 13 items 7 and 8),
// from the real fixtures in testdata.

func subscribeTrades(coin string) []byte {
	return []byte(`{"method":"subscribe","subscription":{"type":"trades","coin":"` + coin + `"}}`)
}

func tradeFlags(evs []venue.Event) (flags []bool, ids []string) {
	for _, e := range evs {
		if e.Type == venue.EventTrade {
			flags = append(flags, e.Backfill)
			ids = append(ids, string(e.ID))
		}
	}
	return flags, ids
}

// The first trades frame after a subscribe carries trades from before it:
// flagged Backfill, per coin and connection; the next one is live. Armed by
// the sent subscribe (replay feeds KindSent records to Sent) or, without
// one, by the venue's subscriptionResponse.
func TestBackfillTrades(t *testing.T) {
	jk := lines(t, "jkorf_trades_2025-12.ndjson") // ack, trades (HYPE)
	ack, trades := string(jk[0]), string(jk[1])
	var btcTrades string
	for _, l := range lines(t, "arbitrage_observatory_probe_2026-09_core.ndjson") {
		if bytes.Contains(l, []byte(`"channel":"trades"`)) {
			btcTrades = string(l)
		}
	}
	if btcTrades == "" {
		t.Fatal("no BTC trades frame in the fixture")
	}

	// Sent subscribe, ack, backfill, live.
	d := NewDecoder()
	d.Sent(subscribeTrades("HYPE"), 1)
	mustDecode(t, d, ack)
	flags, ids := tradeFlags(mustDecode(t, d, trades))
	if len(flags) != 1 || !flags[0] || ids[0] != "716095722814130" {
		t.Fatalf("first frame: backfill %v ids %v", flags, ids)
	}
	if flags, _ := tradeFlags(mustDecode(t, d, trades)); !slicesEqual(flags, []bool{false}) {
		t.Fatalf("second frame: backfill %v", flags)
	}
	// Another coin's trades are not this subscription's backfill.
	if flags, ids := tradeFlags(mustDecode(t, d, btcTrades)); !slicesEqual(flags, []bool{false}) || ids[0] != "1045359869404765" {
		t.Fatalf("BTC frame: backfill %v ids %v", flags, ids)
	}

	// No sent record: the ack arms it.
	d = NewDecoder()
	mustDecode(t, d, ack)
	if flags, _ := tradeFlags(mustDecode(t, d, trades)); !slicesEqual(flags, []bool{true}) {
		t.Fatalf("ack only: backfill %v", flags)
	}

	// Data before a late ack: the ack must not flag the live frame after it.
	d = NewDecoder()
	d.Sent(subscribeTrades("HYPE"), 1)
	if flags, _ := tradeFlags(mustDecode(t, d, trades)); !slicesEqual(flags, []bool{true}) {
		t.Fatalf("before ack: backfill %v", flags)
	}
	mustDecode(t, d, ack)
	if flags, _ := tradeFlags(mustDecode(t, d, trades)); !slicesEqual(flags, []bool{false}) {
		t.Fatalf("after late ack: backfill %v", flags)
	}

	// A resubscribe (after a reconnect) replays history again; an
	// unsubscribe disarms.
	d.Invalidate()
	d.Sent(subscribeTrades("HYPE"), 2)
	mustDecode(t, d, ack)
	if flags, _ := tradeFlags(mustDecode(t, d, trades)); !slicesEqual(flags, []bool{true}) {
		t.Fatalf("resubscribe: backfill %v", flags)
	}
	d.Sent(subscribeTrades("HYPE"), 3)
	d.Sent([]byte(`{"method":"unsubscribe","subscription":{"type":"trades","coin":"HYPE"}}`), 4)
	if flags, _ := tradeFlags(mustDecode(t, d, trades)); !slicesEqual(flags, []bool{false}) {
		t.Fatalf("after unsubscribe: backfill %v", flags)
	}
	// Other subscriptions and junk do not arm anything.
	d.Sent([]byte(`{"method":"subscribe","subscription":{"type":"l2Book","coin":"HYPE"}}`), 5)
	d.Sent([]byte(`not json`), 6)
	if flags, _ := tradeFlags(mustDecode(t, d, trades)); !slicesEqual(flags, []bool{false}) {
		t.Fatalf("after an l2Book subscribe: backfill %v", flags)
	}
}

func slicesEqual(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A crossed l2Book snapshot is not one the venue sends: rejected, and the
// coin's book is invalid until the next good snapshot.
func TestCrossedSnapshotRejected(t *testing.T) {
	real := string(lines(t, "order_book_server_ack_l2book_trades_2025-07.ndjson")[1]) // BTC 20+20
	d := NewDecoder()
	mustDecode(t, d, real)
	// Best bid 106217.0 above best ask 106233.0: move the best ask under it.
	crossed := strings.Replace(real, `{"px":"106233.0"`, `{"px":"106200.0"`, 1)
	var out venue.Frame
	err := d.Decode([]byte(crossed), 1, &out)
	if !errors.Is(err, ErrCrossed) || !strings.Contains(err.Error(), "106217") {
		t.Fatalf("err = %v", err)
	}
	if d.Book("BTC").Valid() || len(out.Events) != 1 || out.Events[0].Type != venue.EventReject || out.Events[0].Book != d.Book("BTC") {
		t.Fatalf("valid %v events %+v", d.Book("BTC").Valid(), out.Events)
	}
	if d.Book("BTC").Len(0) != 20 {
		t.Fatal("levels changed")
	}
	mustDecode(t, d, real)
	if !d.Book("BTC").Valid() {
		t.Fatal("next snapshot did not restore the book")
	}
	// Locked (bid = ask) is not valid either.
	locked := strings.Replace(real, `{"px":"106233.0"`, `{"px":"106217.0"`, 1)
	if err := d.Decode([]byte(locked), 1, &out); !errors.Is(err, ErrCrossed) {
		t.Fatalf("locked: %v", err)
	}
}

// Rejected frames that would have changed a book invalidate it (the coin's,
// or every book when the coin cannot be read); non-frames are all
// ErrNotObject and invalidate nothing; an envelope-less object of another
// shape (an info body such as meta) is a skipped message, not an error.
func TestRejectsInvalidate(t *testing.T) {
	btc := string(lines(t, "order_book_server_ack_l2book_trades_2025-07.ndjson")[1])
	cases := []struct {
		name    string
		frame   string
		err     error
		invalid []string
	}{
		{"l2Book bad size", strings.Replace(btc, `"sz":"0.001"`, `"sz":"-1"`, 1), nil, []string{"BTC"}},
		{"l2Book truncated", btc[:len(btc)/2], nil, []string{"BTC"}},
		{"l2Book no coin", `{"channel":"l2Book","data":{"time":1,"levels":[[{"px":"x","sz":"1","n":1}],[]]}}`, nil, []string{"BTC", "X"}},
		{"bbo bad", bbo(`{"px":"100","sz":"0"}`, `null`), ErrNonPositive, []string{"X"}},
		{"trades bad", `{"channel":"trades","data":[{"coin":"BTC","side":"S","px":"1","sz":"1"}]}`, ErrSide, nil},
		{"null", "null", ErrNotObject, nil},
		{"string", `"str"`, ErrNotObject, nil},
		{"number", "42", ErrNotObject, nil},
		{"array", "[]", ErrNotObject, nil},
		{"false", " false ", ErrNotObject, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := NewDecoder()
			mustDecode(t, d, btc)
			mustDecode(t, d, snap)
			var out venue.Frame
			err := d.Decode([]byte(c.frame), 1, &out)
			if err == nil || c.err != nil && !errors.Is(err, c.err) {
				t.Fatalf("err = %v, want %v", err, c.err)
			}
			for _, coin := range []string{"BTC", "X"} {
				want := !slicesContainsStr(c.invalid, coin)
				if d.Book(coin).Valid() != want {
					t.Fatalf("%s valid %v, want %v", coin, d.Book(coin).Valid(), want)
				}
			}
			n := len(c.invalid)
			if n == 0 {
				n = 1
			}
			if len(out.Events) != n || d.Stats().Invalidated != uint64(len(c.invalid)) {
				t.Fatalf("events %+v stats %+v", out.Events, d.Stats())
			}
		})
	}
	d := NewDecoder()
	evs := mustDecode(t, d, `{"universe":[{"name":"BTC","szDecimals":5,"maxLeverage":40}]}`)
	if len(evs) != 1 || evs[0].Type != venue.EventUnknown || d.Stats().UnknownTypes != 1 {
		t.Fatalf("meta body: %+v", evs)
	}
	mustDecode(t, d, "Websocket connection established.") // the legacy greeting is still text
}

func slicesContainsStr(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

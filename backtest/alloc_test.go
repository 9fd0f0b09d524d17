package backtest

import (
	"testing"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed"
)

// recorded decodes frames received one step apart, as frame does, and
// returns their events without delivering them, each with a copy of its
// decoded event (the decoder reuses its own), to be delivered again and
// again. The books are the decoder's as the last frame left them: events
// that set a level to what it already is keep them so.
func (tp *tape) recorded(frames ...string) []*feed.Event {
	tp.t.Helper()
	var evs []*feed.Event
	for _, f := range frames {
		tp.recvNs += tp.step
		tp.seq++
		if err := tp.dec.Decode([]byte(f), tp.recvNs, &tp.out); err != nil {
			tp.t.Fatalf("decode %s: %v", f, err)
		}
		for i := range tp.out.Events {
			d := tp.out.Events[i]
			evs = append(evs, &feed.Event{Venue: tp.ven, Seq: tp.seq, RecvNs: tp.recvNs, Kind: datasets.KindFrame,
				Channel: feed.ChannelOf(d.Type), Instrument: d.Instrument, Decoded: &d, Payload: []byte(f), Book: d.Book, Scale: tp.sc})
		}
	}
	return evs
}

// The matching path allocates nothing per event in steady state: level
// changes at and away from a resting order's price (the queue models'
// Depth), trades at its price that leave it queued (Trade), trades on the
// mirrored token, book snapshots, events without an exchange time, with
// each queue model, on both venues (issue 31).
func TestMatchingPathAllocatesNothing(t *testing.T) {
	for _, q := range []QueueModel{RiskAverse{}, PowerProb(2), LogProb()} {
		t.Run("polymarket/"+q.Name(), func(t *testing.T) {
			tp, s := pmTape(t, Config{Queue: q})
			bid := tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.40"), Size: tp.sz("5"), TIF: GTC})
			no := tp.submit(s, OrderRequest{Instrument: pmNo, Side: Buy, Price: tp.px("0.57"), Size: tp.sz("5"), TIF: GTC})
			evs := tp.recorded(
				`{"event_type":"price_change","market":"`+pmMarket+`","timestamp":"`+tp.ms()+`","price_changes":[`+
					`{"asset_id":"`+pmYes+`","price":"0.40","size":"100.01","side":"BUY"},{"asset_id":"`+pmYes+`","price":"0.43","size":"190","side":"SELL"}]}`,
				`{"event_type":"price_change","market":"`+pmMarket+`","timestamp":"`+tp.ms()+`","price_changes":[`+
					`{"asset_id":"`+pmYes+`","price":"0.40","size":"100","side":"BUY"},{"asset_id":"`+pmYes+`","price":"0.43","size":"200","side":"SELL"}]}`,
				`{"event_type":"last_trade_price","asset_id":"`+pmYes+`","market":"`+pmMarket+`","price":"0.40","size":"0.01","side":"SELL","timestamp":"`+tp.ms()+`"}`,
				`{"event_type":"last_trade_price","asset_id":"`+pmNo+`","market":"`+pmMarket+`","price":"0.60","size":"0.01","side":"BUY","timestamp":"`+tp.ms()+`"}`,
				`{"event_type":"book","asset_id":"`+pmNo+`","market":"`+pmMarket+`","timestamp":"`+tp.ms()+`","bids":`+pmLevels("0.58:80,0.57:200")+`,"asks":`+pmLevels("0.60:100,0.61:50")+`}`,
				"PONG",
			)
			steady(t, tp, evs, bid, no)
		})
	}
	t.Run("hyperliquid", func(t *testing.T) {
		tp, s := hlTape(t, Config{})
		bid := tp.submit(s, OrderRequest{Instrument: "BTC", Side: Buy, Price: tp.px("100000"), Size: tp.sz("0.01"), TIF: GTC})
		evs := tp.recorded(
			`{"channel":"l2Book","data":{"coin":"BTC","time":`+tp.ms()+`,"levels":[`+hlLevels("100000:1.5,99999:2")+`,`+hlLevels("100001:0.5,100002:3")+`]}}`,
			`{"channel":"trades","data":[{"coin":"BTC","side":"A","px":"100000","sz":"0.00001","time":`+tp.ms()+`,"hash":"0x1","tid":7}]}`,
			`{"channel":"l2Book","data":{"coin":"BTC","time":`+tp.ms()+`,"levels":[`+hlLevels("100000:1,99999:2")+`,`+hlLevels("100001:0.5,100002:3")+`]}}`,
			`{"channel":"activeAssetCtx","data":{"coin":"BTC","ctx":{"funding":"0.0000125","openInterest":"10","markPx":"100000","oraclePx":"100000"}}}`,
			`{"channel":"pong"}`,
		)
		steady(t, tp, evs, bid)
	})
}

// steady delivers evs over and over and fails unless that allocates
// nothing, leaving the orders resting unfilled (else the run measured
// something else than the matching path of a quiet book).
func steady(t *testing.T, tp *tape, evs []*feed.Event, ids ...uint64) {
	t.Helper()
	for _, id := range ids {
		if o := tp.e.order(id); o.Status != StatusOpen || o.Queue <= 0 {
			t.Fatalf("order %d %s, queue %d: not resting behind others", id, o.Status, o.Queue)
		}
	}
	n := len(tp.e.fills)
	allocs := testing.AllocsPerRun(100, func() {
		for _, ev := range evs {
			if err := tp.e.OnEvent(ev); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per round of %d events", allocs, len(evs))
	}
	for _, id := range ids {
		if o := tp.e.order(id); o.Status != StatusOpen || len(tp.e.fills) != n {
			t.Fatalf("order %d %s, %d fills: the events filled it", id, o.Status, len(tp.e.fills)-n)
		}
	}
	if tp.e.events < 100*uint64(len(evs)) {
		t.Fatalf("%d events delivered", tp.e.events)
	}
}

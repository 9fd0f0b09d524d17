package backtest

import (
	"strconv"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/registry"
)

// tape feeds hand-written venue frames through the venue's real decoder
// into an Engine, as the replayer does: every decoded event is delivered
// with its book, channel and scale. Receive times advance by step per
// frame; frames carry their own exchange timestamps (ms) where the venue
// has them.
type tape struct {
	t      *testing.T
	e      *Engine
	ven    string
	dec    venue.Decoder
	sc     book.Scale
	out    venue.Frame
	recvNs int64
	step   int64
	lag    int64 // recorded feed latency: frames are stamped this long before they are received
	seq    uint64
}

func newTape(t *testing.T, ven string, s Strategy, cfg Config) *tape {
	t.Helper()
	d, err := registry.Lookup(ven)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	e := NewEngine(s, cfg)
	e.addDriver(d) // as the events of a replay carry it
	return &tape{t: t, e: e, ven: ven, dec: d.NewDecoder(venue.DecoderOptions{}), sc: d.Scale(),
		recvNs: t0, step: 1e6}
}

// t0 is the tapes' first receive time: 2025-10-23T00:00:00Z.
const t0 = int64(1761177600000000000)

// ms is the exchange timestamp of the next frame, in ms (receive time
// minus 0, so recorded feed latency is zero unless a test says otherwise).
func (tp *tape) ms() string { return strconv.FormatInt((tp.recvNs+tp.step-tp.lag)/1e6, 10) }

// frame decodes one frame received one step after the previous one and
// delivers its events.
func (tp *tape) frame(f string) {
	tp.t.Helper()
	tp.recvNs += tp.step
	tp.seq++
	if err := tp.dec.Decode([]byte(f), tp.recvNs, &tp.out); err != nil {
		tp.t.Fatalf("decode %s: %v", f, err)
	}
	for i := range tp.out.Events {
		d := &tp.out.Events[i]
		ev := &feed.Event{Venue: tp.ven, Seq: tp.seq, RecvNs: tp.recvNs, Kind: datasets.KindFrame,
			Channel: feed.ChannelOf(d.Type), Instrument: d.Instrument, Decoded: d, Payload: []byte(f),
			Book: d.Book, Scale: tp.sc}
		if err := tp.e.OnEvent(ev); err != nil {
			tp.t.Fatal(err)
		}
	}
}

// rest delivers a recorded REST body (as the replayer delivers every REST
// record: Control set, Decoded nil), and its decoded events.
func (tp *tape) rest(body string) {
	tp.t.Helper()
	tp.recvNs += tp.step
	tp.seq++
	ev := &feed.Event{Venue: tp.ven, Seq: tp.seq, RecvNs: tp.recvNs, Kind: datasets.KindRESTResponse,
		Channel: feed.ChannelControl, Control: &datasets.Control{}, Payload: []byte(body), Scale: tp.sc}
	if err := tp.e.OnEvent(ev); err != nil {
		tp.t.Fatal(err)
	}
}

// idle advances the clock by n steps with frames that touch no traded
// book but carry an exchange timestamp, so that they move the venue's
// exchange clock (a trade of an instrument no test trades).
func (tp *tape) idle(n int) {
	tp.t.Helper()
	for range n {
		if tp.ven == venue.Polymarket {
			tp.frame(`{"event_type":"last_trade_price","asset_id":"1","market":"0x01","price":"0.5","size":"1","side":"BUY","timestamp":"` + tp.ms() + `"}`)
		} else {
			tp.frame(`{"channel":"trades","data":[{"coin":"IDLE","side":"B","px":"1","sz":"1","time":` + tp.ms() + `,"hash":"0x1","tid":1}]}`)
		}
	}
}

// pong advances the clock by n steps with frames that carry no exchange
// time (a Polymarket PONG, a Hyperliquid pong): the exchange clock stays.
func (tp *tape) pong(n int) {
	tp.t.Helper()
	for range n {
		if tp.ven == venue.Polymarket {
			tp.frame("PONG")
		} else {
			tp.frame(`{"channel":"pong"}`)
		}
	}
}

// script is a strategy driven by the test: do runs on the first event
// after it is set, then is cleared; every order change and fill is logged.
type script struct {
	do     func(ctx *Context)
	orders []Order
	fills  []Fill
	events int
}

func (s *script) OnEvent(ctx *Context, _ *feed.Event) {
	s.events++
	if f := s.do; f != nil {
		s.do = nil
		f(ctx)
	}
}
func (s *script) OnOrder(_ *Context, o *Order) { s.orders = append(s.orders, *o) }
func (s *script) OnFill(_ *Context, f *Fill)   { s.fills = append(s.fills, *f) }

// submit runs one Submit on the next event, lets the (zero-latency) order
// reach the venue, and returns the order id.
func (tp *tape) submit(s *script, r OrderRequest) uint64 {
	tp.t.Helper()
	var id uint64
	s.do = func(ctx *Context) { id, _ = ctx.Submit(r) }
	tp.idle(2) // the second frame, stamped after the submit, brings it to the venue
	if id == 0 {
		tp.t.Fatal("submit did not run")
	}
	return id
}

// Polymarket frames. The two tokens of market pmMarket are pmYes and pmNo.
const (
	pmMarket = "0x5f65177b394277fd294cd75650044e32ba009a95022d88a0c1d565897d72f8f1"
	pmYes    = "94022367472047775158269173293876979533288470167463650966689320774843018181757"
	pmNo     = "3329029450753225654467003002742946394863848082479209219558348197750220015613"
)

// levels formats "0.40:100,0.39:50" as a JSON array of level objects with
// the venue's price and size keys (and extra, e.g. a count).
func levels(spec, pk, sk, extra string) string {
	if spec == "" {
		return "[]"
	}
	var b strings.Builder
	b.WriteByte('[')
	for i, l := range strings.Split(spec, ",") {
		p, s, _ := strings.Cut(l, ":")
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"` + pk + `":"` + p + `","` + sk + `":"` + s + `"` + extra + `}`)
	}
	b.WriteByte(']')
	return b.String()
}

func pmLevels(spec string) string { return levels(spec, "price", "size", "") }

func hlLevels(spec string) string { return levels(spec, "px", "sz", `,"n":1`) }

func (tp *tape) pmBook(asset, bids, asks string) {
	tp.frame(`{"event_type":"book","asset_id":"` + asset + `","market":"` + pmMarket + `","timestamp":"` + tp.ms() +
		`","bids":` + pmLevels(bids) + `,"asks":` + pmLevels(asks) + `}`)
}

// pmChange sets one level (side BUY or SELL).
func (tp *tape) pmChange(asset, side, price, size string) {
	tp.frame(`{"event_type":"price_change","market":"` + pmMarket + `","timestamp":"` + tp.ms() +
		`","price_changes":[{"asset_id":"` + asset + `","price":"` + price + `","size":"` + size + `","side":"` + side + `"}]}`)
}

// pmTrade prints a trade; side is the taker's (BUY or SELL).
func (tp *tape) pmTrade(asset, side, price, size string) {
	tp.frame(`{"event_type":"last_trade_price","asset_id":"` + asset + `","market":"` + pmMarket + `","price":"` + price +
		`","size":"` + size + `","side":"` + side + `","timestamp":"` + tp.ms() + `"}`)
}

func (tp *tape) pmTick(asset, old, tick string) {
	tp.frame(`{"event_type":"tick_size_change","asset_id":"` + asset + `","market":"` + pmMarket + `","old_tick_size":"` + old +
		`","new_tick_size":"` + tick + `","timestamp":"` + tp.ms() + `"}`)
}

func (tp *tape) pmResolved(winner string) {
	tp.frame(`{"event_type":"market_resolved","id":"1031769","market":"` + pmMarket + `","assets_ids":["` + pmYes + `","` + pmNo +
		`"],"winning_asset_id":"` + winner + `","winning_outcome":"Yes","timestamp":"` + tp.ms() + `"}`)
}

func (tp *tape) hlBook(coin, bids, asks string) {
	tp.frame(`{"channel":"l2Book","data":{"coin":"` + coin + `","time":` + tp.ms() + `,"levels":[` + hlLevels(bids) + `,` + hlLevels(asks) + `]}}`)
}

// hlTrade: side "B" a buying taker, "A" a selling one.
func (tp *tape) hlTrade(coin, side, px, sz string) {
	tp.frame(`{"channel":"trades","data":[{"coin":"` + coin + `","side":"` + side + `","px":"` + px + `","sz":"` + sz +
		`","time":` + tp.ms() + `,"hash":"0x1","tid":` + strconv.FormatUint(tp.seq+1, 10) + `}]}`)
}

func (tp *tape) hlCtx(coin, mark, funding string) { tp.hlCtxOracle(coin, mark, mark, funding) }

func (tp *tape) hlCtxOracle(coin, mark, oracle, funding string) {
	tp.frame(`{"channel":"activeAssetCtx","data":{"coin":"` + coin + `","ctx":{"funding":"` + funding +
		`","openInterest":"10","markPx":"` + mark + `","oraclePx":"` + oracle + `"}}}`)
}

// px and sz convert decimals at the tape's scale.
func (tp *tape) px(s string) int64 {
	v, err := book.ParseDecimal([]byte(s), tp.sc.PriceDecimals)
	if err != nil {
		tp.t.Fatal(err)
	}
	return v
}

func (tp *tape) sz(s string) int64 {
	v, err := book.ParseDecimal([]byte(s), tp.sc.SizeDecimals)
	if err != nil {
		tp.t.Fatal(err)
	}
	return v
}

// cash parses dollars at CashDecimals.
func cash(t *testing.T, s string) int64 {
	t.Helper()
	neg := strings.HasPrefix(s, "-")
	v, err := book.ParseDecimal([]byte(strings.TrimPrefix(s, "-")), CashDecimals)
	if err != nil {
		t.Fatal(err)
	}
	if neg {
		return -v
	}
	return v
}

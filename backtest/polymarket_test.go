package backtest

import (
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/venue"
)

func pmTape(t *testing.T, cfg Config) (*tape, *script) {
	s := &script{}
	if cfg.Cash == 0 {
		cfg.Cash = cash(t, "1000")
	}
	tp := newTape(t, venue.Polymarket, s, cfg)
	// YES bids 0.40×100, 0.39×50; asks 0.42×80, 0.43×200. NO is its mirror.
	tp.pmBook(pmYes, "0.40:100,0.39:50", "0.42:80,0.43:200")
	tp.pmBook(pmNo, "0.58:80,0.57:200", "0.60:100,0.61:50")
	return tp, s
}

func wantStatus(t *testing.T, tp *tape, id uint64, st Status, reason string) *Order {
	t.Helper()
	o := tp.e.order(id)
	if o.Status != st || !strings.Contains(o.Reason, reason) {
		t.Fatalf("order %d: %s %q, want %s containing %q", id, o.Status, o.Reason, st, reason)
	}
	return o
}

func TestPolymarketPostOnlyAndGTC(t *testing.T) {
	tp, s := pmTape(t, Config{})
	// Marketable post-only: rejected with the venue's reason, no fill.
	id := tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.42"), Size: tp.sz("10"), TIF: GTC, PostOnly: true})
	wantStatus(t, tp, id, StatusRejected, "INVALID_POST_ONLY_ORDER")
	// Post-only on FOK: the venue refuses the type.
	id = tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.41"), Amount: tp.px("5"), TIF: FOK, PostOnly: true})
	wantStatus(t, tp, id, StatusRejected, "INVALID_POST_ONLY_ORDER_TYPE")
	// A passive post-only GTC rests with the level's size ahead of it.
	id = tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.40"), Size: tp.sz("10"), TIF: GTC, PostOnly: true})
	o := wantStatus(t, tp, id, StatusOpen, "")
	if o.Queue != tp.sz("100") {
		t.Fatalf("queue %d, want 100 shares ahead", o.Queue)
	}
	if len(tp.e.fills) != 0 || tp.e.cash != cash(t, "1000") {
		t.Fatalf("fills %v cash %d: a rejection must leave no trace", tp.e.fills, tp.e.cash)
	}
	// Notifications arrive (zero ack latency) at the next event: rejected,
	// rejected, open.
	tp.idle(1)
	var sts []Status
	for _, o := range s.orders {
		sts = append(sts, o.Status)
	}
	if len(sts) != 3 || sts[0] != StatusRejected || sts[2] != StatusOpen {
		t.Fatalf("notifications %v", sts)
	}
}

func TestPolymarketTickAndMinSize(t *testing.T) {
	tp, s := pmTape(t, Config{})
	id := tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.405"), Size: tp.sz("10"), TIF: GTC})
	wantStatus(t, tp, id, StatusRejected, "INVALID_ORDER_MIN_TICK_SIZE")
	if o := tp.e.order(id); !strings.Contains(o.Reason, "0.405") || !strings.Contains(o.Reason, "0.01") {
		t.Fatalf("reason %q names neither price nor tick", o.Reason)
	}
	id = tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.40"), Size: tp.sz("4.99"), TIF: GTC})
	wantStatus(t, tp, id, StatusRejected, "INVALID_ORDER_MIN_SIZE")
	// Prices at 0 or 1 are outside the (0, 1) domain of an outcome token.
	id = tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("1"), Size: tp.sz("10"), TIF: GTC})
	wantStatus(t, tp, id, StatusRejected, "INVALID_ORDER_MIN_TICK_SIZE")
	// tick_size_change to 0.001: the same price is now valid.
	tp.pmTick(pmYes, "0.01", "0.001")
	if in := tp.e.insts[pmYes]; in.Tick != tp.px("0.001") {
		t.Fatalf("tick %d after tick_size_change", in.Tick)
	}
	id = tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.405"), Size: tp.sz("10"), TIF: GTC})
	wantStatus(t, tp, id, StatusOpen, "")
	// A book summary from REST sets tick and minimum size.
	tp.rest(`[{"market":"` + pmMarket + `","asset_id":"` + pmNo + `","timestamp":"1","hash":"","bids":[],"asks":[],"min_order_size":"15","tick_size":"0.001","neg_risk":false}]`)
	if in := tp.e.insts[pmNo]; in.MinSize != tp.sz("15") || in.Tick != tp.px("0.001") {
		t.Fatalf("summary rules: min %d tick %d", in.MinSize, in.Tick)
	}
	id = tp.submit(s, OrderRequest{Instrument: pmNo, Side: Buy, Price: tp.px("0.55"), Size: tp.sz("10"), TIF: GTC})
	wantStatus(t, tp, id, StatusRejected, "INVALID_ORDER_MIN_SIZE")
	// Unknown instrument: rejected at once, naming it.
	var err error
	s.do = func(ctx *Context) { _, err = ctx.Submit(OrderRequest{Instrument: "123", Side: Buy, Price: 1, Size: 1}) }
	tp.idle(1)
	if err == nil || !strings.Contains(err.Error(), `"123"`) {
		t.Fatalf("unknown instrument: %v", err)
	}
}

func TestPolymarketGTD(t *testing.T) {
	tp, s := pmTape(t, Config{})
	tp.step = 10e9 // 10 s per frame
	now := tp.recvNs
	// Expiring within the one-minute threshold: refused.
	id := tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.39"), Size: tp.sz("10"), TIF: GTD, ExpireNs: now + 60e9})
	wantStatus(t, tp, id, StatusRejected, "INVALID_ORDER_EXPIRATION")
	// An expiration on a GTC: refused.
	id = tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.39"), Size: tp.sz("10"), TIF: GTC, ExpireNs: now + 600e9})
	wantStatus(t, tp, id, StatusRejected, "only GTD")
	// Expiring in 100 s: it rests, and leaves the book a minute before,
	// at the first event stamped at or after expiry − 60 s.
	exp := tp.recvNs + 10e9 + 100e9
	id = tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.39"), Size: tp.sz("10"), TIF: GTD, ExpireNs: exp})
	wantStatus(t, tp, id, StatusOpen, "")
	for tp.e.order(id).Status == StatusOpen {
		tp.pmChange(pmYes, "BUY", "0.38", "5")
	}
	o := wantStatus(t, tp, id, StatusExpired, "")
	if o.DoneNs < exp-60e9 || o.DoneNs >= exp-60e9+tp.step {
		t.Fatalf("expired at %d, want the first event at or after %d", o.DoneNs, exp-60e9)
	}
}

func TestPolymarketFOKAndFAK(t *testing.T) {
	tp, s := pmTape(t, Config{})
	// FOK BUY for $100 up to 0.43: asks hold 80×0.42 + 200×0.43 = $119.60,
	// so it fills: 80 at 0.42 ($33.60) and the remaining $66.40 / 0.43 =
	// 154.418604… shares, floored to the share scale: 154.418604 at 0.43
	// ($66.39999972: the whole amount but the share scale's fraction).
	id := tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.43"), Amount: tp.px("100"), TIF: FOK})
	o := wantStatus(t, tp, id, StatusFilled, "")
	if len(tp.e.fills) != 2 || tp.e.fills[0].Size != tp.sz("80") || tp.e.fills[1].Size != tp.sz("154.418604") {
		t.Fatalf("fills %+v", tp.e.fills)
	}
	if o.Size != tp.sz("234.418604") || tp.e.insts[pmYes].Position != o.Size {
		t.Fatalf("order size %d position %d", o.Size, tp.e.insts[pmYes].Position)
	}
	if spent := cash(t, "1000") - tp.e.cash; spent != cash(t, "99.99999972") {
		t.Fatalf("spent %d, want $33.60 + 154.418604 × 0.43 = $66.39999972", spent)
	}
	// The levels it took are gone for the next taker until the venue
	// updates them: a FOK BUY of $20 at 0.42 cannot fill.
	before := tp.e.cash
	id = tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.42"), Amount: tp.px("20"), TIF: FOK})
	wantStatus(t, tp, id, StatusRejected, "FOK_ORDER_NOT_FILLED_ERROR")
	if tp.e.cash != before || len(tp.e.fills) != 2 {
		t.Fatal("an unfilled FOK left a trace")
	}
	// A FOK BUY sized in shares is refused: market BUYs are in dollars.
	id = tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.45"), Size: tp.sz("10"), TIF: FOK})
	wantStatus(t, tp, id, StatusRejected, "sized in dollars")
	// FAK SELL in shares: 100 of 120 fill at 0.40 (the bids 0.39 are below
	// the limit 0.40), the rest is killed.
	id = tp.submit(s, OrderRequest{Instrument: pmYes, Side: Sell, Price: tp.px("0.40"), Size: tp.sz("120"), TIF: FAK})
	o = wantStatus(t, tp, id, StatusCancelled, "killed")
	if o.Filled != tp.sz("100") {
		t.Fatalf("FAK filled %d", o.Filled)
	}
	// FAK with nothing to match: the venue's words.
	id = tp.submit(s, OrderRequest{Instrument: pmYes, Side: Sell, Price: tp.px("0.45"), Size: tp.sz("10"), TIF: FAK})
	wantStatus(t, tp, id, StatusCancelled, "no orders found to match with FAK order")
	// A SELL beyond the shares held is refused (tokens must be held).
	id = tp.submit(s, OrderRequest{Instrument: pmNo, Side: Sell, Price: tp.px("0.58"), Size: tp.sz("10"), TIF: GTC})
	wantStatus(t, tp, id, StatusRejected, "INVALID_ORDER_NOT_ENOUGH_BALANCE")
}

func TestPolymarketMirroredBook(t *testing.T) {
	s := &script{}
	tp := newTape(t, venue.Polymarket, s, Config{Cash: cash(t, "1000")})
	// YES has no asks at all; NO has bids at 0.45: a BUY YES at 0.55 meets
	// them as SELL YES at 1 − 0.45 = 0.55.
	tp.pmBook(pmYes, "0.40:100", "")
	tp.pmBook(pmNo, "0.45:30", "0.60:100")
	if tp.e.insts[pmYes].Complement != tp.e.insts[pmNo] {
		t.Fatal("the two tokens of the market are not paired")
	}
	id := tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.55"), Amount: tp.px("5.5"), TIF: FOK})
	wantStatus(t, tp, id, StatusFilled, "")
	if f := tp.e.fills; len(f) != 1 || f[0].Price != tp.px("0.55") || f[0].Size != tp.sz("10") || f[0].Instrument != pmYes {
		t.Fatalf("fills %+v", f)
	}
	// A post-only BUY YES at 0.55 would cross the mirrored NO bid: refused.
	id = tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.55"), Size: tp.sz("5"), TIF: GTC, PostOnly: true})
	wantStatus(t, tp, id, StatusRejected, "INVALID_POST_ONLY_ORDER")
}

func TestPolymarketResolution(t *testing.T) {
	tp, s := pmTape(t, Config{})
	tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.42"), Amount: tp.px("33.6"), TIF: FOK}) // 80 YES for $33.60
	tp.submit(s, OrderRequest{Instrument: pmNo, Side: Buy, Price: tp.px("0.60"), Amount: tp.px("30"), TIF: FOK})    // 50 NO for $30
	rest := tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.30"), Size: tp.sz("10"), TIF: GTC})
	if got := tp.e.cash; got != cash(t, "936.4") {
		t.Fatalf("cash %d before resolution, want $936.40", got)
	}
	tp.pmResolved(pmYes)
	// YES pays 1 × 80, NO 0: cash 936.40 + 80.
	if got := tp.e.cash; got != cash(t, "1016.4") {
		t.Fatalf("cash %d after resolution, want $1016.40", got)
	}
	yes, no := tp.e.insts[pmYes], tp.e.insts[pmNo]
	if !yes.Resolved || !no.Resolved || yes.Position != 0 || no.Position != 0 || yes.Settle != tp.px("1") || no.Settle != 0 {
		t.Fatalf("after resolution: yes %+v no %+v", *yes, *no)
	}
	wantStatus(t, tp, rest, StatusCancelled, "market resolved")
	// An order after resolution: refused at once.
	var err error
	s.do = func(ctx *Context) {
		_, err = ctx.Submit(OrderRequest{Instrument: pmNo, Side: Buy, Price: tp.px("0.5"), Size: tp.sz("5")})
	}
	tp.idle(1)
	if err == nil || !strings.Contains(err.Error(), "resolved") {
		t.Fatalf("order after resolution: %v", err)
	}
}

func TestPolymarketUserResolution(t *testing.T) {
	tp, s := pmTape(t, Config{Resolutions: map[string]bool{pmYes: false, pmNo: true}})
	tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.42"), Amount: tp.px("33.6"), TIF: FOK})
	res := tp.e.Finish()
	if tp.e.cash != cash(t, "966.4") || res.Summary.PnL != -33.6 {
		t.Fatalf("cash %d pnl %v: YES settled at 0 loses the $33.60", tp.e.cash, res.Summary.PnL)
	}
}

// A dollar-sized BUY of $5,000 (its amount times the share unit overflows
// int64) takes the whole visible book up to its limit, and no more.
func TestPolymarketLargeDollarBuy(t *testing.T) {
	tp, s := pmTape(t, Config{Cash: cash(t, "100000")})
	id := tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.43"), Amount: tp.px("5000"), TIF: FAK})
	o := wantStatus(t, tp, id, StatusFilled, "")
	if o.Size != tp.sz("280") || tp.e.cash != cash(t, "100000")-cash(t, "119.6") {
		t.Fatalf("bought %d for %d, want 280 shares for $119.60", o.Size, cash(t, "100000")-tp.e.cash)
	}
}

// Polymarket's size rules (venue/polymarket Trading): sizes in hundredths
// of a share, a market BUY's dollars in cents, a marketable BUY worth $1
// at least; refused in the venue's words. Fills come in whole lots and
// the rest rests.
func TestPolymarketSizeRules(t *testing.T) {
	tp, s := pmTape(t, Config{})
	for _, c := range []struct {
		r    OrderRequest
		want string
	}{
		{OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.40"), Size: tp.sz("10.005"), TIF: GTC},
			"invalid amounts, the buy orders maker amount supports a max accuracy of 4 decimals, taker amount a max of 2 decimals"},
		{OrderRequest{Instrument: pmYes, Side: Sell, Price: tp.px("0.45"), Size: tp.sz("5.001"), TIF: GTC},
			"invalid amounts, the sell orders maker amount supports a max accuracy of 2 decimals, taker amount a max of 4 decimals"},
		{OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.43"), Amount: tp.px("10.005"), TIF: FOK},
			"invalid amounts, the market buy orders maker amount supports a max accuracy of 2 decimals, taker amount a max of 4 decimals"},
		{OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.43"), Amount: tp.px("0.99"), TIF: FAK},
			"invalid amount for a marketable BUY order ($0.99), min size: $1"},
	} {
		id := tp.submit(s, c.r)
		if o := wantStatus(t, tp, id, StatusRejected, ""); o.Reason != c.want {
			t.Fatalf("%+v: reason %q, want %q", c.r, o.Reason, c.want)
		}
	}
	if len(tp.e.fills) != 0 || tp.e.cash != cash(t, "1000") {
		t.Fatal("a rejection left a trace")
	}
	// A finer ask, 80.005 at 0.42 (the NO bid mirrors 80 there: the larger
	// stands). A crossing GTC BUY of 100 takes 80.00, whole lots; the
	// 0.005 left is no lot; the other 20 rest at 0.42 with nothing ahead.
	tp.pmChange(pmYes, "SELL", "0.42", "80.005")
	id := tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.42"), Size: tp.sz("100"), TIF: GTC})
	o := wantStatus(t, tp, id, StatusOpen, "")
	if len(tp.e.fills) != 1 || tp.e.fills[0].Size != tp.sz("80") || o.Leaves() != tp.sz("20") || o.Queue != 0 {
		t.Fatalf("fills %+v leaves %d queue %d: want 80 taken, 20 resting", tp.e.fills, o.Leaves(), o.Queue)
	}
	// cash 1000 − 80 × 0.42 = 966.40.
	if tp.e.cash != cash(t, "966.4") {
		t.Fatalf("cash %d, want 966.40", tp.e.cash)
	}
	// A trade of 7.777 at 0.42 fills the resting rest 7.77 (whole lots);
	// 12.23 rest. cash 966.40 − 7.77 × 0.42 = 966.40 − 3.2634 = 963.1366.
	tp.pmTrade(pmYes, "SELL", "0.42", "7.777")
	if len(tp.e.fills) != 2 || tp.e.fills[1].Size != tp.sz("7.77") || o.Leaves() != tp.sz("12.23") || o.Status != StatusOpen {
		t.Fatalf("fills %+v leaves %d: want 7.77 filled, 12.23 resting", tp.e.fills, o.Leaves())
	}
	if tp.e.cash != cash(t, "963.1366") || tp.e.insts[pmYes].Position != tp.sz("87.77") {
		t.Fatalf("cash %d position %d, want 963.1366 and 87.77", tp.e.cash, tp.e.insts[pmYes].Position)
	}
	// At tick 0.001 a SELL's dollars have 5 decimals.
	tp.pmTick(pmYes, "0.01", "0.001")
	id = tp.submit(s, OrderRequest{Instrument: pmYes, Side: Sell, Price: tp.px("0.455"), Size: tp.sz("5.001"), TIF: GTC})
	if o := tp.e.order(id); o.Reason != "invalid amounts, the sell orders maker amount supports a max accuracy of 2 decimals, taker amount a max of 5 decimals" {
		t.Fatalf("reason %q", o.Reason)
	}
}

// A limit BUY that crosses is a marketable order: worth $1 at least. A
// resting one is bound only by the 5-share minimum.
func TestPolymarketMarketableBuyMinimum(t *testing.T) {
	s := &script{}
	tp := newTape(t, venue.Polymarket, s, Config{Cash: cash(t, "1000")})
	tp.pmBook(pmYes, "0.10:100", "0.15:50")
	tp.pmBook(pmNo, "0.85:50", "0.90:100")
	// 5 × 0.15 = $0.75 crossing: refused.
	id := tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.15"), Size: tp.sz("5"), TIF: GTC})
	if o := wantStatus(t, tp, id, StatusRejected, ""); o.Reason != "invalid amount for a marketable BUY order ($0.75), min size: $1" {
		t.Fatalf("reason %q", o.Reason)
	}
	// 5 × 0.14 = $0.70 resting: open.
	wantStatus(t, tp, tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.14"), Size: tp.sz("5"), TIF: GTC}), StatusOpen, "")
	// 6.67 × 0.15 = $1.0005 crossing: filled, cash 1000 − 1.0005.
	id = tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.15"), Size: tp.sz("6.67"), TIF: GTC})
	wantStatus(t, tp, id, StatusFilled, "")
	if tp.e.cash != cash(t, "998.9995") {
		t.Fatalf("cash %d, want 998.9995", tp.e.cash)
	}
}

package backtest

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue"
)

// venueRules are one venue's order rules as its driver describes them
// (venue.Capabilities.Trading), with the time-in-force names parsed. The
// simulator never names a venue: everything venue-specific is in the
// description.
type venueRules struct {
	name string
	drv  venue.Driver // Instruments reads the recorded REST bodies
	t    *venue.Trading
	tifs uint8 // bit per TIF
	fees FeeModel

	clockNs int64         // the venue's exchange clock: its latest timestamp seen
	due     queue[action] // actions in flight and GTD expiries, by exchange time
}

func (r *venueRules) accepts(t TIF) bool { return r.tifs&(1<<t) != 0 }

// addDriver makes d's trading rules known to e.
func (e *Engine) addDriver(d venue.Driver) {
	e.lastDrv = d
	if e.drivers == nil {
		e.drivers = map[string]venue.Driver{}
	}
	if _, ok := e.drivers[d.Name()]; !ok {
		e.drivers[d.Name()] = d
	}
}

// lookupRules finds a venue's trading rules from its driver; nil when the
// venue is unknown or cannot be traded.
func (e *Engine) lookupRules(name string) *venueRules {
	d := e.drivers[name]
	if d == nil {
		return nil
	}
	t := d.Capabilities().Trading
	if t == nil {
		return nil
	}
	r := &venueRules{name: name, drv: d, t: t}
	for _, n := range t.OrderTypes {
		if tif, err := ParseTIF(n); err == nil {
			r.tifs |= 1 << tif
		}
	}
	return r
}

func fmtDec(v int64, d uint8) string {
	if v < 0 {
		return "-" + book.FormatDecimal(-v, d)
	}
	return book.FormatDecimal(v, d)
}

// check validates a new order against the instrument's rules at exchange
// time nowNs; it returns the venue's rejection reason (with the values that
// broke the rule) or "".
func check(in *Instrument, o *Order, nowNs int64) string {
	t := in.rules.t
	r := &t.Reasons
	sc := in.Scale
	one := pow10(sc.PriceDecimals)
	p := func(v int64) string { return fmtDec(v, sc.PriceDecimals) }
	sz := func(v int64) string { return fmtDec(v, sc.SizeDecimals) }
	if o.PostOnly && (!t.PostOnlyFlag || (o.TIF != GTC && o.TIF != GTD)) {
		return r.PostOnlyType
	}
	if o.ReduceOnly && !t.ReduceOnly {
		return r.ReduceOnly
	}
	if o.TIF == GTD {
		if o.ExpireNs <= nowNs+int64(t.GTDThreshold) {
			return fmt.Sprintf("%s: a GTD order must expire more than %s after the exchange time (expiration %d, now %d)",
				r.Expiration, t.GTDThreshold, o.ExpireNs, nowNs)
		}
	} else if o.ExpireNs != 0 {
		return r.Expiration + ": only GTD orders take an expiration"
	}
	dollar := t.DollarMarketBuys && (o.TIF == FOK || o.TIF == FAK) && o.Side == Buy
	if dollar {
		if o.Amount <= 0 || o.Size != 0 {
			return fmt.Sprintf("%s: a %s BUY is sized in dollars (Amount), not shares", r.MinSize, o.TIF)
		}
		if d := t.DollarDecimals; d > 0 && d < int(sc.PriceDecimals) && o.Amount%pow10(sc.PriceDecimals-uint8(d)) != 0 {
			return reasonText(r.Size, "market buy", d, t.DollarShareDecimals, "amount "+p(o.Amount))
		}
		if m := minMarketable(in); m > 0 && o.Amount < m {
			return reasonText(r.MinMarketable, "", 0, 0, p(o.Amount))
		}
	} else if o.Amount != 0 {
		return fmt.Sprintf("%s: only FOK/FAK BUYs are sized in dollars", r.MinSize)
	}
	if o.Price <= 0 || (t.Outcomes && o.Price >= one) {
		return fmt.Sprintf("%s (price %s: outside the valid range)", r.Tick, p(o.Price))
	}
	if in.Tick > 0 && (o.Price%in.Tick != 0 || (t.Outcomes && (o.Price < in.Tick || o.Price > one-in.Tick))) {
		return fmt.Sprintf("%s (price %s, tick %s)", r.Tick, p(o.Price), p(in.Tick))
	}
	if t.PriceSigFigs > 0 && !sigFigPrice(o.Price, sc.PriceDecimals, t.PriceSigFigs, in.maxPriceDecimals()) {
		return fmt.Sprintf("%s (price %s: at most %d significant figures and %d decimals)", r.Price, p(o.Price),
			t.PriceSigFigs, in.maxPriceDecimals())
	}
	if !dollar {
		if o.Size <= 0 {
			return fmt.Sprintf("%s (size %s)", r.MinSize, sz(o.Size))
		}
		if lot := in.Lot(); lot > 1 && o.Size%lot != 0 {
			// A BUY's maker amount is its dollars (price × size: the
			// tick's decimals and the size's), its taker amount the
			// shares; a SELL's the reverse.
			dollars := tickDecimals(in) + in.SzDecimals
			if o.Side == Buy {
				return reasonText(r.Size, "buy", dollars, in.SzDecimals, fmt.Sprintf("size %s: szDecimals %d", sz(o.Size), in.SzDecimals))
			}
			return reasonText(r.Size, "sell", in.SzDecimals, dollars, fmt.Sprintf("size %s: szDecimals %d", sz(o.Size), in.SzDecimals))
		}
		if in.MinSize > 0 && o.TIF != FOK && o.TIF != FAK && o.Size < in.MinSize {
			return fmt.Sprintf("%s (size %s, minimum %s)", r.MinSize, sz(o.Size), sz(in.MinSize))
		}
	}
	if t.MinNotional > 0 && !o.ReduceOnly &&
		Notional(o.Price, o.Size, sc.PriceDecimals, sc.SizeDecimals) < int64(math.Round(t.MinNotional*1e10)) {
		return fmt.Sprintf("%s (value %s)", r.MinNotional, fmtDec(Notional(o.Price, o.Size, sc.PriceDecimals, sc.SizeDecimals), CashDecimals))
	}
	if o.ReduceOnly && ((o.Side == Buy && in.xPos >= 0) || (o.Side == Sell && in.xPos <= 0)) {
		return r.ReduceOnly
	}
	return ""
}

// reasonText fills a venue's rejection text (venue.TradingReasons): its
// {side}, {maker}, {taker} and {amount}, or, when it names none of them,
// the details appended in parentheses.
func reasonText(text, side string, maker, taker int, details string) string {
	if !strings.Contains(text, "{") {
		return text + " (" + details + ")"
	}
	return strings.NewReplacer("{side}", side, "{maker}", strconv.Itoa(maker), "{taker}", strconv.Itoa(taker),
		"{amount}", details).Replace(text)
}

// tickDecimals is the number of decimals of the instrument's tick (0.01:
// 2); the price scale's when it has none.
func tickDecimals(in *Instrument) int {
	d := int(in.Scale.PriceDecimals)
	for t := in.Tick; t > 0 && t%10 == 0 && d > 0; t /= 10 {
		d--
	}
	return d
}

// minMarketable is the venue's smallest marketable BUY at the price scale
// (venue.Trading.MinMarketableBuy); 0 when it has none.
func minMarketable(in *Instrument) int64 {
	if in.rules == nil || in.rules.t.MinMarketableBuy <= 0 {
		return 0
	}
	return int64(math.Round(in.rules.t.MinMarketableBuy * float64(pow10(in.Scale.PriceDecimals))))
}

// maxPriceDecimals is the significant-figures rule's decimal limit:
// MaxPriceDecimals − szDecimals (szDecimals 0 when unknown).
func (in *Instrument) maxPriceDecimals() int {
	m := in.rules.t.MaxPriceDecimals
	if in.maxPriceDec > 0 {
		m = in.maxPriceDec
	}
	if in.SzDecimals > 0 {
		m -= in.SzDecimals
	}
	return max(m, 0)
}

// sigFigPrice: at most figs significant figures and at most maxDec decimal
// places; integer prices are always valid (Hyperliquid "Tick and lot size").
func sigFigPrice(p int64, pd uint8, figs, maxDec int) bool {
	if p%pow10(pd) == 0 {
		return true
	}
	if maxDec < int(pd) && p%pow10(pd-uint8(maxDec)) != 0 {
		return false
	}
	v := p
	for v%10 == 0 {
		v /= 10
	}
	digits := 0
	for x := v; x > 0; x /= 10 {
		digits++
	}
	// Leading zeros of a value below 1 are not significant: digits counts
	// only from the first non-zero digit.
	return digits <= figs
}

// Lot is the size step: 10^(SizeDecimals − szDecimals) when the
// instrument's szDecimals is known, else 1.
func (in *Instrument) Lot() int64 {
	if in.SzDecimals >= 0 && int(in.Scale.SizeDecimals) >= in.SzDecimals {
		return pow10(in.Scale.SizeDecimals - uint8(in.SzDecimals))
	}
	return 1
}

// PriceStep is the coarsest valid price step near p: the tick when the
// venue has one, else the significant-figures rule's step at p's magnitude.
func (in *Instrument) PriceStep(p int64) int64 {
	if in.Tick > 0 {
		return in.Tick
	}
	t := in.rules
	if t == nil || t.t.PriceSigFigs == 0 {
		return 1
	}
	digits := 0
	for x := p; x > 0; x /= 10 {
		digits++
	}
	step := int64(1)
	for range max(digits-t.t.PriceSigFigs, 0) {
		step *= 10
	}
	pd := in.Scale.PriceDecimals
	minStep := pow10(pd - uint8(min(int(pd), in.maxPriceDecimals())))
	return max(step, minStep)
}

// Outcomes reports whether the instrument is an outcome token (prices in
// (0, 1), settlement at 1 or 0, a SELL needs the tokens).
func (in *Instrument) Outcomes() bool { return in.rules != nil && in.rules.t.Outcomes }

// PostOnly returns the order type and flag that make a post-only order on
// the instrument's venue (GTC with PostOnly, or ALO).
func (in *Instrument) PostOnly() (TIF, bool) {
	if in.rules != nil && in.rules.t.PostOnlyFlag {
		return GTC, true
	}
	return ALO, false
}

// Instrument is one instrument as a strategy knows it, through
// Context.Instrument: its rules and book as the feed delivered them, and
// its position, funding and last fill as the reports received make them
// (the simulated exchange's own state is not exported). Read-only.
type Instrument struct {
	ID     string
	Venue  string
	Market string // the market it belongs to (Polymarket condition id), "" if none
	Scale  book.Scale
	Book   *book.Book // last book the feed delivered (read-only)
	// Index is the instrument's place in Context.Instruments (the first
	// seen is 0), for a strategy that keeps per-instrument state in a
	// slice rather than a map.
	Index int

	Tick        int64 // tick size (price units; tick_size_change and book summaries update it); 0 none
	MinSize     int64 // minimum order size (size units); 0 none
	SzDecimals  int   // size decimals (Hyperliquid szDecimals); -1 unknown
	MaxLeverage int   // cross-margin venues: max leverage from the recorded listing; 0 unknown (1 is used)

	Complement *Instrument // the other outcome token of a binary market
	Resolved   bool
	Settle     int64 // settlement price when Resolved (0 or one unit)

	// The strategy's view (see the package doc): what the fill reports,
	// funding and settlements received so far say, never the exchange's
	// state ahead of them.
	Position  int64 // size units; negative is short (Context.Position)
	Funding   int64 // funding paid (cash units; positive paid)
	LastTrade int64 // price of the last fill reported; 0 before the first

	// What the feed has delivered (public, at its receive time).
	FundRate   float64 // latest funding rate recorded
	MarkPx     int64   // latest mark price recorded
	ExchangeNs int64   // latest exchange timestamp of its events
	lastPeriod int64

	// The simulated exchange's state, ahead of the strategy's view.
	xPos     int64 // position
	xFunding int64 // funding paid
	lastFill int64 // price of the last fill

	rules       *venueRules
	maxPriceDec int
	shardKey    string     // the key Config.Shard was asked about (market, else ID)
	shardOwned  bool       // its answer
	open        []*Order   // resting orders at the exchange, in arrival order
	xb          *book.Book // the exchange's book (see clock.go); nil on a venue without rules
	view        instView   // what the strategy has been told
	oraclePx    int64      // latest recorded oracle price (funding)
	boundRate   float64    // the funding rate in force at the next boundary
	boundOracle int64      // the oracle price then
	lastMid     int64      // the mid when the book last had one (marks)
	cashFlow    int64      // cash its fills, funding and settlement moved (PnL by instrument)
	taken       takenLevels
	scratch     []book.Level
	merged      []book.Level // levels' merge of a book and its mirror
	marks       []markQueue  // by index in Config.MarkoutsNs (report.go)
	marksN      int          // markouts pending in marks
	marksDue    int64        // the earliest atNs in marks (valid when marksN > 0)
	fee         *feeState    // its market's fee state, once there is one (Engine.feeOf)
	feeFor      string       // the key fee was found for

	xs *sharedInst // in a RunMany, the engines' shared books xb points at (shared.go)
}

// takenLevel remembers recorded size the strategy's taker orders consumed
// at a level, until the level next changes (so two orders cannot take the
// same liquidity).
type takenLevel struct {
	side  book.Side
	price int64
	size  int64
}

// takenLevels are the levels an instrument's takes touched (a handful:
// searched in order).
type takenLevels []takenLevel

func (t takenLevels) at(side book.Side, price int64) int64 {
	for _, l := range t {
		if l.side == side && l.price == price {
			return l.size
		}
	}
	return 0
}

func (t *takenLevels) add(side book.Side, price, size int64) {
	for i := range *t {
		if l := &(*t)[i]; l.side == side && l.price == price {
			l.size += size
			return
		}
	}
	*t = append(*t, takenLevel{side, price, size})
}

func (t *takenLevels) remove(side book.Side, price int64) {
	s := *t
	for i := range s {
		if s[i].side == side && s[i].price == price {
			s[i] = s[len(s)-1]
			*t = s[:len(s)-1]
			return
		}
	}
}

func (in *Instrument) takenAt(side book.Side, price int64) int64 { return in.taken.at(side, price) }

func (in *Instrument) take(side book.Side, price, size int64) { in.taken.add(side, price, size) }

// untake forgets what was taken at a level the venue has changed, at the
// exchange and in the strategy's view (the same event shows it the level).
func (in *Instrument) untake(side book.Side, price int64) {
	in.taken.remove(side, price)
	in.view.taken.remove(side, price)
}

// untakeAll forgets every take (a snapshot replaced the book).
func (in *Instrument) untakeAll() {
	in.taken = in.taken[:0]
	in.view.taken = in.view.taken[:0]
}

// seeTaken adds to the strategy's view of in's takes what a taker fill
// report tells it (size at price on side opp), as far as the exchange
// still counts it taken: a level the venue has re-published since is
// whole again in the book the strategy has.
func (in *Instrument) seeTaken(opp book.Side, price, size int64) {
	if q := min(size, in.taken.at(opp, price)-in.view.taken.at(opp, price)); q > 0 {
		in.view.taken.add(opp, price, q)
	}
}

// Mid returns the book's mid price and whether it has one: both sides,
// not crossed (a crossed book is a batch of the venue in progress).
func (in *Instrument) Mid() (int64, bool) {
	if in.Book == nil || !in.Book.Valid() {
		return 0, false
	}
	b, ok1 := in.Book.Best(book.Bid)
	a, ok2 := in.Book.Best(book.Ask)
	if !ok1 || !ok2 || b.Price > a.Price {
		return 0, false
	}
	return (b.Price + a.Price) / 2, true
}

// accountView is the account as the strategy knows it: every order as its
// last report left it, the fills reported, the cash they make.
type accountView struct {
	orders  []*Order // by ID − 1
	fills   []Fill
	cash    int64
	version uint64 // Context.ViewVersion
}

// instView is what the strategy knows of an instrument's orders (its
// position is Instrument.Position).
type instView struct {
	taken takenLevels // what taker fill reports say the strategy took (Context.Available)
	live  []*Order    // orders not reported done, in submission order
}

func (v *instView) drop(o *Order) {
	if i := slices.Index(v.live, o); i >= 0 {
		v.live = slices.Delete(v.live, i, i+1)
	}
}

// useDrivers makes the datasets' venues known before the first event (the
// REST warm-up asks for their rules) and checks Config.FeeTier against
// their fee schedules.
func (e *Engine) useDrivers(ds []venue.Driver) error {
	ok := e.cfg.FeeTier == 0
	for _, d := range ds {
		if d == nil {
			continue
		}
		e.addDriver(d)
		if t := d.Capabilities().Trading; t != nil && e.cfg.FeeTier < len(t.FeeTiers) {
			ok = true
		}
	}
	if !ok {
		return fmt.Errorf("backtest: fee tier %d: no venue's schedule has it", e.cfg.FeeTier)
	}
	return nil
}

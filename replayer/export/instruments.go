package export

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tapedeck/tapedeck/columnar"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/venue"
)

// SourceTickSizeChange is the source column of a row begun by a decoded tick
// size change (venue.EventTickSize: Polymarket tick_size_change).
const SourceTickSizeChange = "tick_size_change"

// maxProblems bounds the unreadable messages an instruments table keeps to
// report (Problems); the rest are counted.
const maxProblems = 20

// instrumentsTable: what the recording says about each instrument, one row
// per instrument and per change (Tardis' instrument "changes"). The facts
// come from the venue's driver (venue.Driver.Instruments), which reads the
// REST bodies the recording holds (discovery listings, book summaries) and
// the WebSocket messages that carry instrument facts, and from decoded tick
// size changes. A fact that contradicts the instrument's current row starts
// a new row at its time, unless the venue's own clock says it is older than
// the row (a REST summary served from before a tick_size_change already
// seen); one that only adds what was unknown fills it in,
// in every row of the instrument (it was true, as far as the recording
// says, all along). Rows are written at the end, sorted by venue, then
// instrument, then time. Only instruments of the recording get rows: those
// any event names or the manifests list (WithRecordedInstruments), not the
// whole of a venue listing.
type instrumentsTable struct {
	cExch, cLocal, cUntil, cVenue, cInst              int
	cType, cMarket, cSlug, cName, cOutcome, cOutIndex int
	cPaired, cBase, cQuote                            int
	cTick, cPriceDec, cMin, cStep, cSzDec, cLev       int
	cNegRisk, cActive, cSource                        int
	cFees, cFeeType, cTaker, cFeeExp, cRebate         int

	names    interned
	insts    map[string]*instHistory // by venue + "\x00" + instrument
	firstNs  int64                   // receive time of the first event
	problems []string
	dropped  int // problems beyond maxProblems
}

type instHistory struct {
	venue, id string
	seenNs    int64 // receive time of the first event naming it; 0 if none
	// latestExNs is the newest venue time of a fact that began a row.
	latestExNs int64
	rows       []instRow
}

type instRow struct {
	info          venue.Instrument
	exNs, localNs int64
	untilNs       int64 // local time of the next row; 0 for the last
	source        string
}

func newInstrumentsTable() *instrumentsTable {
	return &instrumentsTable{insts: map[string]*instHistory{}, names: interned{}}
}

func (t *instrumentsTable) columns(b *columnar.Batch, _ venue.Capabilities) {
	t.cExch = b.Add("exchange_ts_ns", columnar.Timestamp, true)
	t.cLocal = b.Add("local_ts_ns", columnar.Timestamp, false)
	t.cUntil = b.Add("valid_until_ns", columnar.Timestamp, true)
	t.cVenue = b.Add("venue", columnar.String, false)
	t.cInst = b.Add("instrument", columnar.String, false)
	t.cType = b.Add("type", columnar.String, true)
	t.cMarket = b.Add("market", columnar.String, true)
	t.cSlug = b.Add("slug", columnar.String, true)
	t.cName = b.Add("name", columnar.String, true)
	t.cOutcome = b.Add("outcome", columnar.String, true)
	t.cOutIndex = b.Add("outcome_index", columnar.Int32, true)
	t.cPaired = b.Add("paired_instrument", columnar.String, true)
	t.cBase = b.Add("base", columnar.String, true)
	t.cQuote = b.Add("quote", columnar.String, true)
	t.cTick = b.Add("tick_size", columnar.Price, true)
	t.cPriceDec = b.Add("price_decimals", columnar.Int32, true)
	t.cMin = b.Add("min_order_size", columnar.Size, true)
	t.cStep = b.Add("size_increment", columnar.Size, true)
	t.cSzDec = b.Add("sz_decimals", columnar.Int32, true)
	t.cLev = b.Add("max_leverage", columnar.Int32, true)
	t.cNegRisk = b.Add("neg_risk", columnar.Bool, true)
	t.cActive = b.Add("active", columnar.Bool, true)
	t.cFees = b.Add("fees_enabled", columnar.Bool, true)
	t.cFeeType = b.Add("fee_type", columnar.String, true)
	t.cTaker = b.Add("taker_fee_rate", columnar.Decimal, true)
	t.cFeeExp = b.Add("fee_exponent", columnar.Decimal, true)
	t.cRebate = b.Add("maker_rebate_share", columnar.Decimal, true)
	for _, c := range []int{t.cTaker, t.cFeeExp, t.cRebate} {
		b.SetScale(c, feeDecimals)
	}
	t.cSource = b.Add("source", columnar.String, true)
	for _, c := range []int{t.cOutIndex, t.cPriceDec, t.cSzDec} {
		b.SetNullInt(c, -1) // CSV: -1 is unknown, 0 a value
	}
}

// feeDecimals is the scale of the fee columns (rates, exponent, share).
const feeDecimals = 6

// optFee writes a fee fraction where a negative value means unknown.
func optFee(b *columnar.Batch, c int, v float64) {
	if v < 0 {
		b.Null(c)
	} else {
		b.Int64(c, int64(math.Round(v*1e6)))
	}
}

func (t *instrumentsTable) history(v, id string) *instHistory {
	// One venue per export (a mixed one is ErrMixedScale); the key still
	// carries it so that two venues' ids never merge.
	k := v + "\x00" + id
	h := t.insts[k]
	if h == nil {
		h = &instHistory{venue: t.names.get(v), id: t.names.get(id)}
		t.insts[strings.Clone(k)] = h
	}
	return h
}

func (t *instrumentsTable) onEvent(s *Sink, e *replayer.Event) error {
	if t.firstNs == 0 {
		t.firstNs = e.RecvNs
	}
	if e.Instrument != "" {
		if h := t.history(e.Venue, e.Instrument); h.seenNs == 0 {
			h.seenNs = e.RecvNs
		}
	}
	d := e.Decoded
	switch {
	case e.Kind == datasets.KindRESTResponse && d == nil:
		// The body, delivered once as a control record (its decoded
		// snapshots come too, and would say the same again).
		t.facts(e, e.Payload)
	case d == nil || e.Kind != datasets.KindFrame:
	case d.Type == venue.EventTickSize && e.Instrument != "" && d.Price > 0:
		f := venue.NewInstrument(e.Instrument, SourceTickSizeChange)
		f.Market, f.TickSize, f.ExchangeNs = d.Market, d.Price, d.ExchangeNs
		t.add(e.Venue, f, e.RecvNs)
	case d.Type == venue.EventSnapshot || d.Type == venue.EventMarket:
		t.facts(e, d.Raw)
	}
	return nil
}

// facts asks the venue's driver what msg says and merges it.
func (t *instrumentsTable) facts(e *replayer.Event, msg []byte) {
	drv := e.Driver
	if drv == nil || len(msg) == 0 {
		return
	}
	fs, err := drv.Instruments(msg)
	if err != nil {
		t.problem(fmt.Sprintf("dataset %d seq %d (%s): %v", e.Dataset, e.Seq, e.Kind, err))
	}
	for _, f := range fs {
		t.add(e.Venue, f, e.RecvNs)
	}
}

func (t *instrumentsTable) problem(p string) {
	if len(t.problems) < maxProblems {
		t.problems = append(t.problems, p)
	} else {
		t.dropped++
	}
}

// add merges fact f, received at recvNs, into its instrument's history.
func (t *instrumentsTable) add(v string, f venue.Instrument, recvNs int64) {
	h := t.history(v, f.Instrument)
	f.Instrument = h.id
	f.Paired = slices.Clone(f.Paired)
	f.Market, f.Slug, f.Name = t.names.get(f.Market), t.names.get(f.Slug), t.names.get(f.Name)
	src := t.names.get(f.Source)
	if len(h.rows) == 0 {
		h.rows = append(h.rows, instRow{info: f, exNs: f.ExchangeNs, localNs: recvNs, source: src})
		h.latestExNs = f.ExchangeNs
		return
	}
	cur := &h.rows[len(h.rows)-1]
	// Older news by the venue's own clock (a REST summary served from
	// before a tick_size_change already seen) changes nothing.
	stale := f.ExchangeNs != 0 && f.ExchangeNs < h.latestExNs
	if !stale && contradicts(&cur.info, &f) {
		next := cur.info
		overlay(&next, &f, true)
		cur.untilNs = recvNs
		h.rows = append(h.rows, instRow{info: next, exNs: f.ExchangeNs, localNs: recvNs, source: src})
		h.latestExNs = max(h.latestExNs, f.ExchangeNs)
		return
	}
	for i := range h.rows {
		overlay(&h.rows[i].info, &f, false)
	}
}

// contradicts reports whether f says something about a field that differs
// from what cur says of it.
func contradicts(cur, f *venue.Instrument) bool {
	str := func(a, b string) bool { return a != "" && b != "" && a != b }
	num := func(a, b int64) bool { return a != 0 && b != 0 && a != b }
	dec := func(a, b int) bool { return a >= 0 && b >= 0 && a != b }
	flag := func(a, b venue.Flag) bool { return a != venue.FlagUnknown && b != venue.FlagUnknown && a != b }
	return str(cur.Market, f.Market) || str(cur.Slug, f.Slug) || str(cur.Name, f.Name) ||
		str(cur.Type, f.Type) || str(cur.Outcome, f.Outcome) || dec(cur.OutcomeIndex, f.OutcomeIndex) ||
		(len(cur.Paired) > 0 && len(f.Paired) > 0 && !slices.Equal(cur.Paired, f.Paired)) ||
		str(cur.Base, f.Base) || str(cur.Quote, f.Quote) ||
		num(cur.TickSize, f.TickSize) || num(cur.MinSize, f.MinSize) || num(cur.SizeStep, f.SizeStep) ||
		dec(cur.SzDecimals, f.SzDecimals) || dec(cur.PriceDecimals, f.PriceDecimals) ||
		num(int64(cur.MaxLeverage), int64(f.MaxLeverage)) ||
		flag(cur.NegRisk, f.NegRisk) || flag(cur.Active, f.Active) ||
		flag(cur.FeesEnabled, f.FeesEnabled) || str(cur.FeeType, f.FeeType) ||
		frac(cur.TakerFeeRate, f.TakerFeeRate) || frac(cur.MakerRebateShare, f.MakerRebateShare) ||
		(cur.FeeExponent != 0 && f.FeeExponent != 0 && cur.FeeExponent != f.FeeExponent)
}

// frac: two stated fee fractions (-1 unstated) that differ.
func frac(a, b float64) bool { return a >= 0 && b >= 0 && a != b }

// overlay copies into dst the fields f knows: all of them with replace,
// else only those dst does not know.
func overlay(dst, f *venue.Instrument, replace bool) {
	str := func(d *string, v string) {
		if v != "" && (replace || *d == "") {
			*d = v
		}
	}
	num := func(d *int64, v int64) {
		if v != 0 && (replace || *d == 0) {
			*d = v
		}
	}
	dec := func(d *int, v int) {
		if v >= 0 && (replace || *d < 0) {
			*d = v
		}
	}
	flag := func(d *venue.Flag, v venue.Flag) {
		if v != venue.FlagUnknown && (replace || *d == venue.FlagUnknown) {
			*d = v
		}
	}
	str(&dst.Market, f.Market)
	str(&dst.Slug, f.Slug)
	str(&dst.Name, f.Name)
	str(&dst.Type, f.Type)
	str(&dst.Outcome, f.Outcome)
	dec(&dst.OutcomeIndex, f.OutcomeIndex)
	if len(f.Paired) > 0 && (replace || len(dst.Paired) == 0) {
		dst.Paired = f.Paired
	}
	str(&dst.Base, f.Base)
	str(&dst.Quote, f.Quote)
	num(&dst.TickSize, f.TickSize)
	num(&dst.MinSize, f.MinSize)
	num(&dst.SizeStep, f.SizeStep)
	dec(&dst.SzDecimals, f.SzDecimals)
	dec(&dst.PriceDecimals, f.PriceDecimals)
	if f.MaxLeverage != 0 && (replace || dst.MaxLeverage == 0) {
		dst.MaxLeverage = f.MaxLeverage
	}
	flag(&dst.NegRisk, f.NegRisk)
	flag(&dst.Active, f.Active)
	flag(&dst.FeesEnabled, f.FeesEnabled)
	str(&dst.FeeType, f.FeeType)
	fr := func(d *float64, v float64) {
		if v >= 0 && (replace || *d < 0) {
			*d = v
		}
	}
	fr(&dst.TakerFeeRate, f.TakerFeeRate)
	fr(&dst.MakerRebateShare, f.MakerRebateShare)
	if f.FeeExponent != 0 && (replace || dst.FeeExponent == 0) {
		dst.FeeExponent = f.FeeExponent
	}
}

// finish writes the rows of the recording's instruments, in order, within
// the window.
func (t *instrumentsTable) finish(s *Sink) error {
	for _, id := range s.cfg.recordedList {
		t.history(s.cfg.venue, id)
	}
	hs := make([]*instHistory, 0, len(t.insts))
	for _, h := range t.insts {
		if h.seenNs == 0 && !s.cfg.isRecorded(h.id) {
			continue // listed by the venue, not recorded
		}
		if s.cfg.instruments != nil && !s.cfg.instruments[h.id] && !s.cfg.instruments[instMarket(h)] {
			continue
		}
		hs = append(hs, h)
	}
	pairByMarket(t.insts)
	slices.SortFunc(hs, func(a, b *instHistory) int {
		if c := strings.Compare(a.venue, b.venue); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	for _, h := range hs {
		if len(h.rows) == 0 {
			// Named by events or the manifest, described by nothing.
			at := h.seenNs
			if at == 0 {
				at = t.firstNs
			}
			if s.cfg.windowed(at, 0) {
				if err := t.row(s, h, instRow{info: venue.NewInstrument(h.id, ""), localNs: at}); err != nil {
					return err
				}
			}
			continue
		}
		for _, r := range h.rows {
			if !s.cfg.windowed(r.localNs, r.untilNs) {
				continue
			}
			if err := t.row(s, h, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// pairByMarket fills paired_instrument, where no message gave it, with the
// other instruments the recording places in the same market (a Polymarket
// market's other outcome token, when only book summaries named them).
func pairByMarket(insts map[string]*instHistory) {
	byMarket := map[string][]string{}
	for _, h := range insts {
		if m := instMarket(h); m != "" {
			byMarket[h.venue+"\x00"+m] = append(byMarket[h.venue+"\x00"+m], h.id)
		}
	}
	for _, h := range insts {
		ids := byMarket[h.venue+"\x00"+instMarket(h)]
		if len(ids) < 2 {
			continue
		}
		var others []string
		for _, id := range ids {
			if id != h.id {
				others = append(others, id)
			}
		}
		slices.Sort(others)
		for i := range h.rows {
			if len(h.rows[i].info.Paired) == 0 {
				h.rows[i].info.Paired = others
			}
		}
	}
}

func instMarket(h *instHistory) string {
	for _, r := range h.rows {
		if r.info.Market != "" {
			return r.info.Market
		}
	}
	return ""
}

func (t *instrumentsTable) row(s *Sink, h *instHistory, r instRow) error {
	b := s.b
	in := &r.info
	optI64(b, t.cExch, r.exNs)
	b.Int64(t.cLocal, r.localNs)
	optI64(b, t.cUntil, r.untilNs)
	b.String(t.cVenue, h.venue)
	b.String(t.cInst, h.id)
	optStr(b, t.cType, in.Type)
	optStr(b, t.cMarket, in.Market)
	optStr(b, t.cSlug, in.Slug)
	optStr(b, t.cName, in.Name)
	optStr(b, t.cOutcome, in.Outcome)
	optDec(b, t.cOutIndex, in.OutcomeIndex)
	optStr(b, t.cPaired, strings.Join(in.Paired, ","))
	optStr(b, t.cBase, in.Base)
	optStr(b, t.cQuote, in.Quote)
	optI64(b, t.cTick, in.TickSize)
	optDec(b, t.cPriceDec, in.PriceDecimals)
	optI64(b, t.cMin, in.MinSize)
	optI64(b, t.cStep, in.SizeStep)
	optDec(b, t.cSzDec, in.SzDecimals)
	optI32(b, t.cLev, in.MaxLeverage)
	optFlag(b, t.cNegRisk, in.NegRisk)
	optFlag(b, t.cActive, in.Active)
	optFlag(b, t.cFees, in.FeesEnabled)
	optStr(b, t.cFeeType, in.FeeType)
	optFee(b, t.cTaker, in.TakerFeeRate)
	exp := -1.0 // 0: not stated
	if in.FeeExponent != 0 {
		exp = in.FeeExponent
	}
	optFee(b, t.cFeeExp, exp)
	optFee(b, t.cRebate, in.MakerRebateShare)
	optStr(b, t.cSource, r.source)
	return s.endRow()
}

// optDec writes a count where -1 means unknown.
func optDec(b *columnar.Batch, c, v int) {
	if v < 0 {
		b.Null(c)
	} else {
		b.Int32(c, int32(v))
	}
}

func optFlag(b *columnar.Batch, c int, f venue.Flag) {
	if f == venue.FlagUnknown {
		b.Null(c)
	} else {
		b.Bool(c, f == venue.FlagTrue)
	}
}

// csvFields: the instruments table has no Tardis layout (New refuses it).
func (t *instrumentsTable) csvFields(bool) []columnar.CSVField { return nil }

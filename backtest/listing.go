package backtest

import (
	"fmt"
	"sync"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/venue"
)

// restBody reads what a recorded REST body states about instruments, as
// the venue's driver reads it (venue.Driver.Instruments: the same facts the
// exports' instruments table has): tick and minimum sizes (Polymarket book
// summaries and Gamma listings), szDecimals and price decimals (Hyperliquid
// meta and spotMeta), a market's fees (Gamma feesEnabled, feeType,
// feeSchedule). They apply from the body's receive time on. A body, or an
// element of one, that does not read is a problem in Result.Errors; what
// did read applies.
func (e *Engine) restBody(ev *feed.Event) {
	r := e.rulesOf(ev.Venue, nil)
	if r == nil || r.drv == nil {
		return
	}
	facts, err := e.listing.read(r.drv, ev.Payload)
	if err != nil {
		e.problem(fmt.Errorf("backtest: recorded REST body (seq %d, recv %d): %w", ev.Seq, ev.RecvNs, err))
	}
	for i := range facts {
		f := &facts[i]
		if f.Instrument == "" {
			continue
		}
		key := f.Market
		if key == "" {
			key = f.Instrument
		}
		e.listedFees(key, f, ev.RecvNs)
		rules := listedRules{market: f.Market, tick: f.TickSize, minSize: f.MinSize, szDec: -1, maxLev: f.MaxLeverage}
		if f.SzDecimals >= 0 {
			rules.szDec = f.SzDecimals
			if f.PriceDecimals >= 0 {
				rules.maxPriceDec = f.PriceDecimals + f.SzDecimals
			}
		}
		if in := e.lookup(f.Instrument); in != nil {
			e.pair(in, f.Market)
			rules.apply(in)
			continue
		}
		// No event has named it yet (a listing names every market of the
		// venue): its rules wait for its first event, so that instruments
		// the recording never trades cost nothing per event.
		if e.pending == nil {
			e.pending = map[string]listedRules{}
		}
		p, ok := e.pending[f.Instrument]
		if !ok {
			p.szDec = -1
		}
		p.merge(rules)
		e.pending[f.Instrument] = p
	}
}

// listedRules are an instrument's rules as recorded REST bodies state them
// (0, or szDec -1: not stated).
type listedRules struct {
	market             string
	tick, minSize      int64
	szDec, maxPriceDec int
	maxLev             int
}

func (r *listedRules) merge(n listedRules) {
	if n.market != "" {
		r.market = n.market
	}
	if n.tick > 0 {
		r.tick = n.tick
	}
	if n.minSize > 0 {
		r.minSize = n.minSize
	}
	if n.szDec >= 0 {
		r.szDec, r.maxPriceDec = n.szDec, n.maxPriceDec
	}
	if n.maxLev > 0 {
		r.maxLev = n.maxLev
	}
}

func (r *listedRules) apply(in *Instrument) {
	if r.tick > 0 {
		in.Tick = r.tick
	}
	if r.minSize > 0 {
		in.MinSize = r.minSize
	}
	if r.maxLev > 0 {
		in.MaxLeverage = r.maxLev
	}
	if r.szDec >= 0 {
		in.SzDecimals = r.szDec
		if r.maxPriceDec > 0 {
			in.maxPriceDec = r.maxPriceDec
		}
	}
}

// warmupREST reads a REST body recorded before the replay's window
// (replayer.WithWarmupREST): its facts apply from its receive time, as
// restBody's; nothing is delivered to the strategy.
func (e *Engine) warmupREST(ven string, rec *datasets.Record) {
	r := e.rulesOf(ven, nil)
	if r == nil {
		return
	}
	e.restBody(&feed.Event{Venue: ven, Seq: rec.Seq, RecvNs: rec.WallNs, Kind: rec.Kind, Payload: rec.Payload,
		Scale: r.drv.Scale(), Channel: feed.ChannelControl})
}

// listing reads a recorded REST body's instrument facts. RunMany hands
// every engine the same listing for one body, so the body is read once
// for all the runs of a replay, not once per run (the facts are only read).
type listing struct {
	body  []byte
	once  sync.Once
	facts []venue.Instrument
	err   error
}

// read returns d's facts of body, shared when l is the listing of this
// very body (same bytes), read on the spot otherwise.
func (l *listing) read(d venue.Driver, body []byte) ([]venue.Instrument, error) {
	if l == nil || len(body) == 0 || len(l.body) != len(body) || &l.body[0] != &body[0] {
		return d.Instruments(body)
	}
	l.once.Do(func() { l.facts, l.err = d.Instruments(body) })
	return l.facts, l.err
}

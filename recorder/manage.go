package recorder

import (
	"context"
	"slices"
	"time"

	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/hyperliquid"
	"github.com/tapedeck/tapedeck/venue/polymarket"
)

// manage follows the venue's listing when recording all markets: Polymarket
// new_market / market_resolved events from any connection, and a periodic
// re-run of discovery on both venues. New items go to connections with
// room (or a new connection); gone items are unsubscribed.
func (r *Recorder) manage(ctx context.Context) {
	t := time.NewTicker(r.o.refreshInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case l := <-r.lifecycle:
			if l.Resolved {
				r.removeItems(l.AssetIDs)
			} else {
				r.addItems(ctx, l.AssetIDs)
			}
		case <-t.C:
			r.refresh(ctx)
		}
	}
}

// refresh re-runs discovery and reconciles the subscribed items with it. A
// failed refresh keeps the current set (logged; the next tick retries).
func (r *Recorder) refresh(ctx context.Context) {
	r.mu.Lock()
	before := slices.Clone(r.instruments)
	r.mu.Unlock()
	if err := r.Discover(ctx); err != nil {
		if ctx.Err() == nil {
			r.log.Warn("discovery refresh failed; keeping the current instruments", "err", err)
		}
		return
	}
	r.mu.Lock()
	after := slices.Clone(r.instruments)
	r.mu.Unlock()
	var added, gone []string
	for _, i := range after {
		if !slices.Contains(before, i) {
			added = append(added, i)
		}
	}
	for _, i := range before {
		if !slices.Contains(after, i) {
			gone = append(gone, i)
		}
	}
	if len(added) == 0 && len(gone) == 0 {
		return
	}
	for _, rr := range r.restSnapshot() {
		r.pushREST(0, rr)
	}
	r.log.Info("listing changed", "added", len(added), "gone", len(gone))
	r.addItems(ctx, r.itemsFor(added))
	r.removeItems(r.itemsFor(gone))
}

// itemsFor turns instruments into the items that carry them.
func (r *Recorder) itemsFor(insts []string) []string {
	if r.spec.Venue != venue.Hyperliquid || len(insts) == 0 {
		return insts
	}
	subs, err := hyperliquid.ExpandChannels(r.spec.Channels, insts)
	if err != nil {
		r.log.Warn("new coins", "err", err)
		return nil
	}
	out := make([]string, len(subs))
	for i, s := range subs {
		out[i] = s.String()
	}
	return out
}

// addItems subscribes items not carried yet: on the slot with the fewest
// items that has room (and, on Hyperliquid, no subscription with the same
// socket key), else on a new slot.
func (r *Recorder) addItems(ctx context.Context, items []string) {
	perConn := r.spec.AssetsPerConn
	if perConn == 0 {
		perConn = polymarket.DefaultConnAssets
	}
	if r.spec.Venue == venue.Hyperliquid {
		perConn = hyperliquid.MaxSubscriptions
	}
	batches := map[*slot][]string{}
	var fresh [][]string
	r.mu.Lock()
	for _, it := range items {
		if _, ok := r.assigned[it]; ok {
			continue
		}
		var best *slot
		var bestN int
		for _, s := range r.slots {
			s.mu.Lock()
			n := len(s.items) + len(batches[s])
			conflict := r.spec.Venue == venue.Hyperliquid && hasSocketKey(append(slices.Clone(s.items), batches[s]...), it)
			s.mu.Unlock()
			if n < perConn && !conflict && (best == nil || n < bestN) {
				best, bestN = s, n
			}
		}
		if best == nil && r.spec.Venue == venue.Polymarket {
			if len(fresh) == 0 || len(fresh[len(fresh)-1]) >= perConn {
				fresh = append(fresh, nil)
			}
			fresh[len(fresh)-1] = append(fresh[len(fresh)-1], it)
			r.assigned[it] = nil
			continue
		}
		if best == nil && len(r.slots)+len(fresh) < hyperliquid.MaxConns {
			fresh = append(fresh, []string{it})
			r.assigned[it] = nil
			continue
		}
		if best == nil {
			r.log.Warn("no connection can take a new subscription", "item", it)
			continue
		}
		batches[best] = append(batches[best], it)
		r.assigned[it] = best
	}
	r.mu.Unlock()
	for s, its := range batches {
		select {
		case s.ctl <- slotOp{add: its}:
		case <-ctx.Done():
			return
		}
	}
	for _, its := range fresh {
		if ctx.Err() != nil {
			return
		}
		r.startSlot(ctx, its)
	}
}

func hasSocketKey(items []string, it string) bool {
	s, err := hyperliquid.ParseSubscription(it)
	if err != nil {
		return false
	}
	for _, x := range items {
		if o, err := hyperliquid.ParseSubscription(x); err == nil && o.SocketKey() == s.SocketKey() {
			return true
		}
	}
	return false
}

// removeItems unsubscribes items from the slots carrying them.
func (r *Recorder) removeItems(items []string) {
	batches := map[*slot][]string{}
	r.mu.Lock()
	for _, it := range items {
		if s := r.assigned[it]; s != nil {
			batches[s] = append(batches[s], it)
		}
		delete(r.assigned, it)
	}
	r.mu.Unlock()
	for s, its := range batches {
		select {
		case s.ctl <- slotOp{remove: its}:
		case <-r.runCtx.Done():
			return
		}
	}
}

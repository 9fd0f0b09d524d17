package recorder

import (
	"cmp"
	"context"
	"slices"

	"time"
)

// listingChange is what one frame said of the venue's listing
// (venue.ClientProtocol.Listing): items to subscribe and to drop.
type listingChange struct{ added, removed []string }

// manage follows the venue's listing when recording all markets: listing
// changes in band from any connection (Polymarket new_market /
// market_resolved), and a periodic
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
			r.removeItems(l.removed)
			r.addItems(ctx, l.added)
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
	// Sets, not slices.Contains: an all-markets listing has 10,000 and more
	// instruments (1e8 comparisons a refresh).
	had, has := make(map[string]bool, len(before)), make(map[string]bool, len(after))
	for _, i := range before {
		had[i] = true
	}
	for _, i := range after {
		has[i] = true
	}
	var added, gone []string
	for _, i := range after {
		if !had[i] {
			added = append(added, i)
		}
	}
	for _, i := range before {
		if !has[i] {
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
	items, err := r.p.Items(r.spec.Channels, insts)
	if err != nil {
		r.log.Warn("new instruments", "err", err)
		return nil
	}
	return items
}

// addItems subscribes items not carried yet: on the slot with the fewest
// items that has room (and no item it conflicts with: Hyperliquid's
// variants of one channel and coin), else on a new slot.
func (r *Recorder) addItems(ctx context.Context, items []string) {
	perConn := r.facts.MaxConnItems
	if r.facts.ShardByItems {
		perConn = cmp.Or(r.spec.AssetsPerConn, r.facts.DefaultConnItems, r.facts.MaxConnItems)
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
			conflict := r.p.Conflicts(append(slices.Clone(s.items), batches[s]...), it)
			s.mu.Unlock()
			if n < perConn && !conflict && (best == nil || n < bestN) {
				best, bestN = s, n
			}
		}
		if best == nil && r.facts.ShardByItems {
			if len(fresh) == 0 || len(fresh[len(fresh)-1]) >= perConn {
				fresh = append(fresh, nil)
			}
			fresh[len(fresh)-1] = append(fresh[len(fresh)-1], it)
			r.assigned[it] = nil
			continue
		}
		if best == nil && (r.facts.MaxConns == 0 || len(r.slots)+len(fresh) < r.facts.MaxConns) {
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

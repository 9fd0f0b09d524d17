package recorder

// REST book snapshots before every connect, for the venues whose driver asks
// for them (Polymarket's book summaries). A WebSocket book lacks min_order_size and
// neg_risk, two of the fields its hash covers (PROTOCOLS.md §3.1), so a
// replay can verify hashes only if it has seen a REST summary of the token.
// Before every connect of a slot the recorder fetches its tokens' summaries
// and stores the raw bodies on that slot's Conn, where the replayer hands
// them to the connection's decoder.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tapedeck/tapedeck/datasets"
)

// ErrRESTBooks reports a failed REST book-summary request. It never ends a
// session: the failure is logged, counted and recorded as a KindNote.
var ErrRESTBooks = errors.New("recorder: rest book summaries")

// fetchBooks stores the REST book snapshots of the slot's items that the
// venue's driver asks for (venue.ClientProtocol.BookRequests; Polymarket:
// summaries in batches of polymarket.BooksBatchLimit): for each request a
// note naming it, then the raw body. A failed request is a note with the
// error and the items it covered; the others go ahead. All requests together
// get the books timeout, so a hanging endpoint delays a connect by that much
// at most. It returns early only when ctx ends.
func (s *slot) fetchBooks(ctx context.Context) {
	r := s.r
	if r.clobURL == "" {
		return
	}
	reqs := r.p.BookRequests(r.clobURL, s.snapshotItems())
	if len(reqs) == 0 {
		return
	}
	fctx, cancel := context.WithTimeout(ctx, r.o.restBooksTimeout)
	defer cancel()
	for _, q := range reqs {
		rr, err := r.fetch(fctx, ErrRESTBooks, q.Method, q.URL, q.Body)
		if ctx.Err() != nil {
			return // shutting down: not a failure of the venue
		}
		if err != nil {
			s.booksFailed(rr, q.Items, err)
			continue
		}
		r.pushREST(s.id, rr)
		s.cm.restBooks.Inc()
		r.stats.restBooks.Add(1)
		missing, err := r.p.BookResponse(q, rr.Body)
		if err != nil {
			// Stored anyway (it is what the venue said), but say that the
			// replay will not learn from it.
			s.booksFailed(RESTResponse{Method: rr.Method, URL: rr.URL, Status: rr.Status}, q.Items,
				fmt.Errorf("%w: %s %s: %w", ErrRESTBooks, q.Method, q.URL, err))
			continue
		}
		if len(missing) > 0 {
			// Normal for a token without an order book yet; its hashes
			// wait for the next connect.
			text := fmt.Sprintf("rest book summaries: no summary for %d of %d tokens: %s",
				len(missing), len(q.Items), strings.Join(missing[:min(len(missing), 10)], " "))
			r.log.Info(text, "conn", s.id)
			r.control(s.id, datasets.KindNote, datasets.Control{URL: q.URL, Code: rr.Status, Instruments: missing, Text: text})
		}
	}
}

// booksFailed logs, counts and records a failed book-summary request.
func (s *slot) booksFailed(rr RESTResponse, ids []string, err error) {
	r := s.r
	s.cm.restBookErr.Inc()
	r.stats.restBookErrors.Add(1)
	r.log.Warn("rest book summaries failed; connecting without them", "conn", s.id, "tokens", len(ids), "err", err)
	r.control(s.id, datasets.KindNote, datasets.Control{URL: rr.URL, Code: rr.Status, Err: err.Error(),
		Instruments: slices.Clone(ids),
		Text:        fmt.Sprintf("rest book summaries failed for %d tokens: their book hashes cannot be checked until a later connect", len(ids))})
}

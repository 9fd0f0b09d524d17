package recorder

import (
	"context"
	"errors"

	"github.com/tapedeck/tapedeck/venue"
)

// The venue's client protocol (venue.ClientProtocol, from its driver) is all
// a session knows of the venue: items, frames, limits, pacing and the
// classification of received frames.

// pacingOf turns a venue's pacing into the pacer's, nil for unpaced.
func pacingOf(p venue.Pacing) *pacerConfig {
	if p.Burst == 0 {
		return nil
	}
	return &pacerConfig{burst: p.Burst, window: p.Window, perMinute: p.PerMinute}
}

// protocol is the venue's client protocol with its optional capabilities
// resolved once (venue.Acker, venue.Discoverer, …): the methods of those it
// lacks do what a venue without the capability means.
type protocol struct {
	venue.ClientProtocol
	acks    venue.Acker
	disc    venue.Discoverer
	listing venue.ListingWatcher
	books   venue.BookFetcher
	mirror  venue.Mirrorer
	chans   venue.ChannelItems
}

func newProtocol(p venue.ClientProtocol) protocol {
	out := protocol{ClientProtocol: p}
	out.acks, _ = p.(venue.Acker)
	out.disc, _ = p.(venue.Discoverer)
	out.listing, _ = p.(venue.ListingWatcher)
	out.books, _ = p.(venue.BookFetcher)
	out.mirror, _ = p.(venue.Mirrorer)
	out.chans, _ = p.(venue.ChannelItems)
	return out
}

// Acks reports whether the venue acknowledges every subscription.
func (p protocol) Acks() bool { return p.acks != nil }

func (p protocol) AckItem(frame []byte) (string, bool) {
	if p.acks == nil {
		return "", false
	}
	return p.acks.AckItem(frame)
}

func (p protocol) NeedsDiscovery(instruments []string) bool {
	return p.disc != nil && p.disc.NeedsDiscovery(instruments)
}

// Discover returns instruments as they are without a listing to read.
func (p protocol) Discover(ctx context.Context, fetch venue.Fetch, base string, instruments []string, all bool) ([]string, error) {
	if p.disc == nil {
		if all {
			return nil, errors.New("the venue has no listing to take every instrument from")
		}
		return venue.Dedupe(instruments), nil
	}
	return p.disc.Discover(ctx, fetch, base, instruments, all)
}

func (p protocol) Listing(frame []byte) (added, removed []string, err error) {
	if p.listing == nil {
		return nil, nil, nil
	}
	return p.listing.Listing(frame)
}

func (p protocol) BookRequests(base string, items []string) []venue.Request {
	if p.books == nil {
		return nil
	}
	return p.books.BookRequests(base, items)
}

func (p protocol) BookResponse(req venue.Request, body []byte) ([]string, error) {
	if p.books == nil {
		return nil, nil
	}
	return p.books.BookResponse(req, body)
}

func (p protocol) Conflicts(items []string, item string) bool {
	return p.chans != nil && p.chans.Conflicts(items, item)
}

// Mirror returns no REST bases for a venue whose API no mirror serves.
func (p protocol) Mirror(origin, wsPath string) venue.Endpoints {
	if p.mirror == nil {
		return venue.Endpoints{}
	}
	return p.mirror.Mirror(origin, wsPath)
}

func (p protocol) Items(channels, instruments []string) ([]string, error) {
	if p.chans == nil {
		return instruments, nil
	}
	return p.chans.Items(channels, instruments)
}

func (p protocol) Subscriptions(channels, items []string) []string {
	if p.chans == nil {
		return channels
	}
	return p.chans.Subscriptions(channels, items)
}

func (p protocol) WatchKey(item string) (channel, instrument string, steady bool) {
	if p.chans == nil {
		return "", item, false
	}
	return p.chans.WatchKey(item)
}

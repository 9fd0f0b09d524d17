package research

import (
	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/feed"
)

// samplePoints bounds each instrument's series: when it fills up, every
// other sample is dropped and the interval doubles, so memory grows with
// the number of instruments, not with the recording's length.
const samplePoints = 256

// BookSampler follows every instrument's best bid and ask on the replay the
// runs share, for the tearsheet's fills-over-the-market charts. It is a
// feed.Subscriber (backtest.ManyOptions.Also).
type BookSampler struct {
	series map[string]*TopSeries
}

// TopSeries is an instrument's sampled top of book: at each RecvNs the best
// bid and ask after the last event at or before it (0: the side was empty),
// at Scale.
type TopSeries struct {
	Scale      book.Scale
	RecvNs     []int64
	Bid, Ask   []int64
	intervalNs int64
	nextNs     int64
}

// NewBookSampler returns a sampler taking a sample per instrument at most
// every second of receive time, coarser as the recording grows.
func NewBookSampler() *BookSampler { return &BookSampler{series: map[string]*TopSeries{}} }

// Series returns an instrument's series, nil if it had no book.
func (s *BookSampler) Series(id string) *TopSeries { return s.series[id] }

// OnEvent implements feed.Subscriber.
func (s *BookSampler) OnEvent(e *feed.Event) error {
	if e.Book == nil || e.Instrument == "" || e.Channel != feed.ChannelBook {
		return nil
	}
	ts := s.series[e.Instrument]
	if ts == nil {
		ts = &TopSeries{Scale: e.Scale, intervalNs: 1e9}
		s.series[e.Instrument] = ts
	}
	if e.RecvNs < ts.nextNs {
		return nil
	}
	if len(ts.RecvNs) == samplePoints {
		k := 0
		for i := 0; i < len(ts.RecvNs); i += 2 {
			ts.RecvNs[k], ts.Bid[k], ts.Ask[k] = ts.RecvNs[i], ts.Bid[i], ts.Ask[i]
			k++
		}
		ts.RecvNs, ts.Bid, ts.Ask = ts.RecvNs[:k], ts.Bid[:k], ts.Ask[:k]
		ts.intervalNs *= 2
	}
	var bid, ask int64
	if l, ok := e.Book.Best(book.Bid); ok {
		bid = l.Price
	}
	if l, ok := e.Book.Best(book.Ask); ok {
		ask = l.Price
	}
	ts.RecvNs = append(ts.RecvNs, e.RecvNs)
	ts.Bid = append(ts.Bid, bid)
	ts.Ask = append(ts.Ask, ask)
	ts.nextNs = (e.RecvNs/ts.intervalNs + 1) * ts.intervalNs
	return nil
}

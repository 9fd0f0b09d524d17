// Package report builds `replay report`: one self-contained HTML file
// describing one or more datasets before anyone trusts a backtest on them.
// It shows a coverage timeline per connection and per instrument with the
// losses marked (gaps, disconnects, reconnects, stalls, overloads, write
// errors, and the stretches where a book was invalid), messages per second,
// the mid and spread of each instrument over time, the hash-check and
// top-of-book outcomes, and a table of every loss with its times. The
// charts are inline SVG; the file loads nothing and runs no script.
//
// The dataset figures (records, frames per connection, losses) are those
// of datasets.Inspect, which `replay inspect --json` prints; the book
// figures come from one replay with the decoders every other verb uses.
// The output is deterministic: the same datasets and options give the same
// bytes.
package report

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/venue"
)

// Defaults of Options.
const (
	DefaultBuckets = 400
	// DefaultCharted is how many instruments (the busiest) get mid and
	// spread charts; every instrument gets a coverage row and a table row.
	DefaultCharted = 40
)

// Options tune a report.
type Options struct {
	// Buckets is the number of time buckets of every timeline and chart
	// (default DefaultBuckets).
	Buckets int
	// Charted is how many instruments get mid/spread charts (0:
	// DefaultCharted; negative: none).
	Charted int
	// Replay are the options of the replay that rebuilds the books (hash
	// mode, skip damaged…).
	Replay []replayer.Option
	// Title heads the page (default: the dataset paths).
	Title string
}

// Report is what the HTML shows.
type Report struct {
	Title    string
	StartNs  int64 // earliest record of any dataset
	EndNs    int64 // latest
	BucketNs int64
	Buckets  int
	Datasets []*Dataset
	// Instruments are sorted by dataset, instrument and connection.
	Instruments []*Instrument
	Charted     int // how many of Instruments (the busiest) have charts
	Summary     *replayer.Summary
	// ReplayErr is set when the replay stopped early (what it saw is shown).
	ReplayErr string
}

// Dataset is one input: its Inspect figures and per-connection timelines.
type Dataset struct {
	Index int
	Path  string
	Info  *datasets.Info
	Conns []*ConnTimeline
	// Frames per bucket over every connection.
	Frames []uint64
	// LossesByKind counts Info.Losses by kind.
	LossesByKind map[string]int
	// SessionLosses are the losses of no one connection slot (write
	// errors, damage): every slot's row shows them. Kept once, not copied
	// into each slot's Losses.
	SessionLosses []datasets.Loss
}

// ConnTimeline is one connection slot of a dataset.
type ConnTimeline struct {
	Conn   uint32
	Info   datasets.ConnInfo
	Frames []uint64 // frames per bucket
	Losses []datasets.Loss
	// Down are the stretches from a disconnect (not at shutdown) to the
	// next connect of the slot, or to the end.
	Down []Interval
}

// Instrument is one instrument on one connection slot of one dataset.
type Instrument struct {
	Dataset    int
	Conn       uint32
	Venue      string
	Instrument string
	Events     uint64
	FirstNs    int64
	LastNs     int64
	Active     []uint32  // events per bucket
	Mid        []float64 // last mid per bucket; NaN where there is none
	Spread     []float64 // last spread per bucket; NaN where there is none
	// Invalid are the stretches where the book was invalid after having
	// been valid (a loss until the next snapshot), and InvalidNs their total.
	Invalid   []Interval
	InvalidNs int64
	Losses    int // loss records delivered for it
	Quality   venue.Quality
	Valid     bool // at the end
	// Top of book at the end, as decimals ("" for an empty side).
	BidPx, AskPx string
}

// Interval is [FromNs, ToNs].
type Interval struct{ FromNs, ToNs int64 }

type instKey struct {
	ds   int
	conn uint32
	inst string
}

type instState struct {
	*Instrument
	wasValid bool
	valid    bool
	since    int64
}

// collector is the replay's subscriber.
type collector struct {
	rep   *Report
	insts map[instKey]*instState
}

func (r *Report) bucket(ns int64) int {
	if r.BucketNs <= 0 {
		return 0
	}
	return min(max(int((ns-r.StartNs)/r.BucketNs), 0), r.Buckets-1)
}

func (c *collector) OnEvent(e *feed.Event) error {
	if e.Instrument == "" {
		return nil
	}
	k := instKey{e.Dataset, e.Conn, e.Instrument}
	st := c.insts[k]
	if st == nil {
		n := c.rep.Buckets
		in := &Instrument{Dataset: e.Dataset, Conn: e.Conn, Venue: e.Venue, Instrument: e.Instrument, FirstNs: e.RecvNs,
			Active: make([]uint32, n), Mid: nanSlice(n), Spread: nanSlice(n)}
		st = &instState{Instrument: in}
		c.insts[k] = st
	}
	in := st.Instrument
	in.Events++
	in.LastNs = e.RecvNs
	b := c.rep.bucket(e.RecvNs)
	in.Active[b]++
	if e.Kind.IsLoss() {
		in.Losses++
	}
	if bk := e.Book; bk != nil {
		valid := bk.Valid()
		if valid != st.valid {
			if !valid && st.wasValid {
				st.since = e.RecvNs
			} else if valid && st.wasValid && st.since != 0 {
				in.Invalid = append(in.Invalid, Interval{st.since, e.RecvNs})
				in.InvalidNs += e.RecvNs - st.since
				st.since = 0
			}
			st.valid = valid
			st.wasValid = st.wasValid || valid
		}
		if valid {
			bid, okB := bk.Best(book.Bid)
			ask, okA := bk.Best(book.Ask)
			if okB && okA {
				p := math.Pow10(int(e.Scale.PriceDecimals))
				in.Mid[b] = float64(bid.Price+ask.Price) / 2 / p
				in.Spread[b] = float64(ask.Price-bid.Price) / p
			}
		}
	}
	return nil
}

func nanSlice(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = math.NaN()
	}
	return s
}

// Build reads the datasets and replays them.
func Build(ctx context.Context, paths []string, o Options) (*Report, error) {
	if len(paths) == 0 {
		return nil, replayer.ErrNoDatasets
	}
	if o.Buckets <= 0 {
		o.Buckets = DefaultBuckets
	}
	if o.Charted == 0 {
		o.Charted = DefaultCharted
	}
	o.Charted = max(o.Charted, 0) // negative: none
	rep := &Report{Title: o.Title, Buckets: o.Buckets}
	if rep.Title == "" {
		rep.Title = strings.Join(paths, ", ")
	}
	for i, p := range paths {
		info, err := datasets.Inspect(p)
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		rep.Datasets = append(rep.Datasets, &Dataset{Index: i, Path: p, Info: info})
		if info.StartNs != 0 && (rep.StartNs == 0 || info.StartNs < rep.StartNs) {
			rep.StartNs = info.StartNs
		}
		rep.EndNs = max(rep.EndNs, info.EndNs)
	}
	rep.BucketNs = max((rep.EndNs-rep.StartNs+int64(rep.Buckets)-1)/int64(rep.Buckets), 1)
	for _, d := range rep.Datasets {
		if err := rep.frames(d); err != nil {
			return nil, err
		}
	}

	col := &collector{rep: rep, insts: map[instKey]*instState{}}
	r, err := replayer.New(paths, o.Replay...)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	r.Subscribe(feed.Key{}, col)
	sum, err := r.Run(ctx)
	if err != nil {
		rep.ReplayErr = err.Error()
	}
	rep.Summary = sum
	books := map[instKey]replayer.BookState{}
	for _, b := range r.Books() {
		books[instKey{b.Dataset, b.Conn, b.Instrument}] = b
	}
	for k, st := range col.insts {
		in := st.Instrument
		if st.since != 0 { // still invalid at the end
			in.Invalid = append(in.Invalid, Interval{st.since, rep.EndNs})
			in.InvalidNs += rep.EndNs - st.since
		}
		if b, ok := books[k]; ok {
			in.Quality = b.Quality
			if bk := b.Book; bk != nil {
				in.Valid = bk.Valid()
				if l, ok := bk.Best(book.Bid); ok {
					in.BidPx = book.FormatDecimal(l.Price, b.Scale.PriceDecimals)
				}
				if l, ok := bk.Best(book.Ask); ok {
					in.AskPx = book.FormatDecimal(l.Price, b.Scale.PriceDecimals)
				}
			}
		}
		rep.Instruments = append(rep.Instruments, in)
	}
	slices.SortFunc(rep.Instruments, func(a, b *Instrument) int {
		if a.Dataset != b.Dataset {
			return a.Dataset - b.Dataset
		}
		if c := strings.Compare(a.Instrument, b.Instrument); c != 0 {
			return c
		}
		return int(a.Conn) - int(b.Conn)
	})
	rep.Charted = min(o.Charted, len(rep.Instruments))
	return rep, nil
}

// Losses counts the loss records of every dataset.
func (r *Report) Losses() int {
	n := 0
	for _, d := range r.Datasets {
		n += len(d.Info.Losses)
	}
	return n
}

// frames counts each connection's frames per bucket (a raw pass: a frame
// that decodes to nothing still counts, as in Inspect).
func (rep *Report) frames(d *Dataset) error {
	d.Frames = make([]uint64, rep.Buckets)
	d.LossesByKind = map[string]int{}
	conns := map[uint32]*ConnTimeline{}
	for _, ci := range d.Info.Conns {
		ct := &ConnTimeline{Conn: ci.Conn, Info: ci, Frames: make([]uint64, rep.Buckets)}
		conns[ci.Conn] = ct
		d.Conns = append(d.Conns, ct)
	}
	for _, l := range d.Info.Losses {
		d.LossesByKind[l.Kind]++
		if ct := conns[l.Conn]; ct != nil {
			ct.Losses = append(ct.Losses, l)
		} else { // the session's or every connection's (write errors, damage)
			d.SessionLosses = append(d.SessionLosses, l)
		}
	}
	rd, err := datasets.Open(d.Path, datasets.WithSkipDamaged())
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	defer rd.Close()
	downSince := map[uint32]int64{}
	for rd.Next() {
		rec := rd.Record()
		switch rec.Kind {
		case datasets.KindDisconnect:
			if c, err := datasets.DecodeControl(rec.Payload); err == nil && c.Reason != "shutdown" {
				if _, down := downSince[rec.Conn]; !down {
					downSince[rec.Conn] = rec.WallNs
				}
			}
			continue
		case datasets.KindConnect:
			if from, down := downSince[rec.Conn]; down {
				if ct := conns[rec.Conn]; ct != nil {
					ct.Down = append(ct.Down, Interval{from, rec.WallNs})
				}
				delete(downSince, rec.Conn)
			}
			continue
		case datasets.KindFrame:
		default:
			continue
		}
		b := rep.bucket(rec.WallNs)
		d.Frames[b]++
		if ct := conns[rec.Conn]; ct != nil {
			ct.Frames[b]++
		}
	}
	for conn, from := range downSince { // still down at the end
		if ct := conns[conn]; ct != nil {
			ct.Down = append(ct.Down, Interval{from, d.Info.EndNs})
		}
	}
	for _, ct := range d.Conns {
		slices.SortFunc(ct.Down, func(a, b Interval) int { return int(a.FromNs - b.FromNs) })
	}
	return nil // a read error is Info.Err, shown with the dataset
}

package replayer

import (
	"fmt"

	"github.com/tapedeck/tapedeck/datasets"
)

// recordSource is what the Merger needs of a dataset reader; tests merge
// in-memory sources through it.
type recordSource interface {
	Next() bool
	Record() *datasets.Record
	Err() error
}

// mergeHead is one dataset's current record in the merge heap. The wall time
// is copied so that ordering never chases the record pointer.
type mergeHead struct {
	wallNs int64
	ds     int
}

// Merger is a k-way merge of dataset readers into one record stream in the
// package's replay order: the head with the smallest (WallNs, dataset index)
// comes next, and each dataset's own records keep their Seq order (see the
// package documentation). It does not allocate per record.
//
// A Merger is not safe for concurrent use. It does not own the readers: the
// caller closes them after the merge.
type Merger struct {
	srcs    []recordSource
	one     *datasets.Reader // the only source, read without the heap
	heap    []mergeHead
	cur     int              // dataset of the record last returned; -1 before the first
	rec     *datasets.Record // that record; nil with cur -1
	started bool
	err     error
}

// NewMerger returns a Merger over readers; a reader's index in the slice is
// its dataset index in the order and in Record. Readers must be positioned
// where the merge should start (freshly opened, or after Seek).
func NewMerger(readers []*datasets.Reader) *Merger {
	srcs := make([]recordSource, len(readers))
	for i, r := range readers {
		srcs[i] = r
	}
	m := newMerger(srcs)
	if len(readers) == 1 {
		m.one = readers[0]
	}
	return m
}

func newMerger(srcs []recordSource) *Merger {
	return &Merger{srcs: srcs, heap: make([]mergeHead, 0, len(srcs)), cur: -1}
}

// Next advances to the next record in replay order. It returns false at the
// end of every input or at the first read error, which Err then reports; the
// error is sticky.
func (m *Merger) Next() bool {
	if m.err != nil {
		return false
	}
	if m.one != nil {
		// One input: its own order is the replay order.
		if m.one.Next() {
			m.cur, m.rec = 0, m.one.Record()
			return true
		}
		m.cur, m.rec = -1, nil
		if err := m.one.Err(); err != nil {
			m.err = fmt.Errorf("replayer: read dataset %d: %w", 0, err)
		}
		return false
	}
	if !m.started {
		m.started = true
		for i := range m.srcs {
			if m.advance(i) {
				m.heap = append(m.heap, mergeHead{m.srcs[i].Record().WallNs, i})
				m.up(len(m.heap) - 1)
			} else if m.err != nil {
				return false
			}
		}
	} else if len(m.heap) > 0 {
		// The top is the dataset returned last: advance it in place.
		if m.advance(m.heap[0].ds) {
			m.heap[0].wallNs = m.srcs[m.heap[0].ds].Record().WallNs
		} else {
			if m.err != nil {
				return false
			}
			last := len(m.heap) - 1
			m.heap[0] = m.heap[last]
			m.heap = m.heap[:last]
		}
		m.down(0)
	}
	if len(m.heap) == 0 {
		m.cur, m.rec = -1, nil
		return false
	}
	m.cur = m.heap[0].ds
	m.rec = m.srcs[m.cur].Record()
	return true
}

// advance moves source i on, recording a read error.
func (m *Merger) advance(i int) bool {
	if m.srcs[i].Next() {
		return true
	}
	if err := m.srcs[i].Err(); err != nil {
		m.err = fmt.Errorf("replayer: read dataset %d: %w", i, err)
		m.cur, m.rec = -1, nil
	}
	return false
}

// Record returns the current record and the index of its dataset. The record
// is borrowed from that dataset's reader until the next call to Next. Before
// the first Next, after the end or after a read error, it returns -1 and nil.
func (m *Merger) Record() (dataset int, rec *datasets.Record) {
	return m.cur, m.rec
}

// Err returns the first read error, wrapped with the dataset index, or nil
// at a clean end. A reader's own error (a *datasets.CorruptionError, say)
// stays reachable through errors.As.
func (m *Merger) Err() error { return m.err }

func headLess(a, b mergeHead) bool {
	if a.wallNs != b.wallNs {
		return a.wallNs < b.wallNs
	}
	return a.ds < b.ds
}

func (m *Merger) up(i int) {
	h := m.heap
	for i > 0 {
		p := (i - 1) / 2
		if !headLess(h[i], h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (m *Merger) down(i int) {
	h := m.heap
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && headLess(h[r], h[l]) {
			c = r
		}
		if !headLess(h[c], h[i]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

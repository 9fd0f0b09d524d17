package replayer

import (
	"fmt"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/venue"
)

// maxDecodeErrors is how many decode errors a Summary lists in full; the
// rest are only counted.
const maxDecodeErrors = 20

// DecodeError is one frame a decoder rejected, wholly or some of its
// messages: no level changed, the books the rejected messages would have
// changed are invalid until their next snapshot, and the replay went on. It
// is an error wrapping the decoder's own (Cause: a venue's *DecodeError
// naming the field and offset), so errors.Is and errors.As see through it.
type DecodeError struct {
	Dataset int    `json:"dataset"`
	Conn    uint32 `json:"conn"`
	Seq     uint64 `json:"seq"`
	RecvNs  int64  `json:"recv_ns"`
	Err     string `json:"error"`
	Cause   error  `json:"-"` // the decoder's error
}

// Error names the record and what the decoder said.
func (e *DecodeError) Error() string {
	return fmt.Sprintf("replayer: dataset %d conn %d seq %d: %s", e.Dataset, e.Conn, e.Seq, e.Err)
}

// Unwrap returns Cause.
func (e *DecodeError) Unwrap() error { return e.Cause }

// Summary is what a replay did. Records, frames, bytes and decode errors
// cover everything applied, including records applied silently before the
// window or a seek target; events, controls and losses cover what was
// delivered. Integrity counters (hash and top-of-book checks, crossed
// batches) are the decoders' own, over the whole replay. It is JSON-ready:
// `replay run --json` prints it as is.
type Summary struct {
	Datasets []DatasetSummary `json:"datasets"`

	Records      uint64            `json:"records"`       // records read from every dataset
	Frames       uint64            `json:"frames"`        // frame records decoded
	Bytes        uint64            `json:"bytes"`         // payload bytes of those frames
	WarmupFrames uint64            `json:"warmup_frames"` // of Frames, applied before the window or a seek target without delivery
	Events       map[string]uint64 `json:"events"`        // delivered venue events by venue.EventType name
	Controls     uint64            `json:"controls"`      // delivered control records (a loss counts once)
	Instruments  int               `json:"instruments"`   // distinct (venue, instrument) seen
	UnknownKinds uint64            `json:"unknown_kinds"` // records of kinds this version does not know, skipped

	DecodeErrors      uint64        `json:"decode_errors"`                 // frames with at least one rejected message
	FirstDecodeErrors []DecodeError `json:"first_decode_errors,omitempty"` // the first 20
	RejectedMessages  uint64        `json:"rejected_messages"`             // messages rejected in frames and REST bodies (a frame may reject several)
	BooksInvalidated  uint64        `json:"books_invalidated"`             // book invalidations those rejections caused
	ControlErrors     uint64        `json:"control_errors"`                // control payloads that were not valid JSON (delivered empty)
	RESTUndecoded     uint64        `json:"rest_undecoded"`                // REST bodies the decoder rejected, wholly or some of their summaries
	FirstRESTErrors   []DecodeError `json:"first_rest_errors,omitempty"`   // the first 20

	Losses map[string]uint64 `json:"losses"` // loss records (Kind.IsLoss) by kind name, including the gap records standing for damage
	// Damaged sums the damage the readers stepped over (DatasetSummary.Damage
	// lists it); nil when none.
	Damaged *Damaged `json:"damaged,omitempty"`

	// HashMode is the verification that ran ("all", "sampled" or "off",
	// WithHashMode); HashEvery the sampling interval of "sampled". HashSeen
	// counts the hashes on checkable books (Polymarket: one per
	// same-timestamp batch and per snapshot), HashChecked the verdicts
	// given: HashOK (the venue's hash is the rebuilt book's), HashMismatch
	// (confirmed: the book was wrong) and HashUnverifiable (the data cannot
	// decide: no known last trade price explains the hash and no trade came
	// within the window; see venue/polymarket NOTES.md).
	HashMode         string `json:"hash_mode"`
	HashEvery        string `json:"hash_every,omitempty"`
	HashSeen         uint64 `json:"hash_seen"`
	HashChecked      uint64 `json:"hash_checked"`
	HashOK           uint64 `json:"hash_ok"`
	HashMismatch     uint64 `json:"hash_mismatch"`
	HashUnverifiable uint64 `json:"hash_unverifiable"`
	TopChecked       uint64 `json:"top_checked"`
	TopMismatch      uint64 `json:"top_mismatch"`
	CrossedBatches   uint64 `json:"crossed_batches"`

	SubscriberFailures []SubscriberFailure `json:"subscriber_failures,omitempty"`
	Seeks              int                 `json:"seeks"`

	WallNs       int64     `json:"wall_ns"` // wall time Run took
	FramesPerSec float64   `json:"frames_per_sec"`
	MBPerSec     float64   `json:"mb_per_sec"` // frame payload bytes, 10^6 per second
	Speed        string    `json:"speed"`
	Lateness     *Lateness `json:"lateness,omitempty"` // paced replays only
	// Skipped is the recorded idle time a paced replay did not wait out
	// (around losses, and past the max gap); nil when none.
	Skipped *Skipped `json:"skipped,omitempty"`

	// BytesFetched is what the readers read from the datasets' files (for
	// a remote dataset, the bytes fetched over the network: with a window,
	// about the size of its blocks).
	BytesFetched int64 `json:"bytes_fetched"`
	// Warmup says, for a replay with a window start, whether the books were
	// built from the start of the recording ("full") or start empty at the
	// window and become valid at each instrument's next snapshot ("none").
	Warmup string `json:"warmup,omitempty"`
	// Unsnapshotted counts book updates that came before their book's
	// first snapshot (with Warmup "none", those before each book's first
	// snapshot in the window), which could not be applied.
	Unsnapshotted uint64 `json:"unsnapshotted"`

	// Digest identifies the emitted stream (see the digest encoding in
	// the package documentation): same datasets and options, same digest.
	Digest string `json:"digest"`
}

// DatasetSummary names one input of the replay.
type DatasetSummary struct {
	Path  string `json:"path"`
	Venue string `json:"venue"`
	// Truncated describes the torn tail the reader stopped at, "" when
	// none: the bytes after it could not be read.
	Truncated string `json:"truncated,omitempty"`
	// Damage lists the stretches the reader could not read and stepped
	// over, each replaced by a gap record.
	Damage []datasets.Damage `json:"damage,omitempty"`
	// BytesFetched is what was read from this dataset's files.
	BytesFetched int64 `json:"bytes_fetched"`
}

// Damaged is what damage cost a replay: the records lost (a lower bound
// unless RecordsExact), the bytes skipped, and the wall time span around
// them.
type Damaged struct {
	Stretches    int    `json:"stretches"`
	Records      uint64 `json:"records"`
	RecordsExact bool   `json:"records_exact"`
	Bytes        int64  `json:"bytes"`
	FromNs       int64  `json:"from_ns,omitempty"`
	ToNs         int64  `json:"to_ns,omitempty"`
}

// add sums ds into d (nil: none yet); nil stays nil for no damage.
func (d *Damaged) add(ds []datasets.Damage) *Damaged {
	if len(ds) == 0 {
		return d
	}
	recs, exact, bytes, from, to := datasets.DamageTotals(ds)
	if d == nil {
		return &Damaged{Stretches: len(ds), Records: recs, RecordsExact: exact, Bytes: bytes, FromNs: from, ToNs: to}
	}
	d.Stretches += len(ds)
	d.Records += recs
	d.RecordsExact = d.RecordsExact && exact
	d.Bytes += bytes
	if from != 0 && (d.FromNs == 0 || from < d.FromNs) {
		d.FromNs = from
	}
	d.ToNs = max(d.ToNs, to)
	return d
}

// String says what was skipped in one line.
func (d *Damaged) String() string {
	recs := fmt.Sprintf("%d records", d.Records)
	if !d.RecordsExact {
		recs = "at least " + recs
	}
	return fmt.Sprintf("%s (%d bytes) lost in %d damaged stretch(es) between %s and %s",
		recs, d.Bytes, d.Stretches, fmtWall(d.FromNs), fmtWall(d.ToNs))
}

// fmtWall formats wall ns as RFC 3339 UTC; 0 is "?".
func fmtWall(ns int64) string {
	if ns == 0 {
		return "?"
	}
	return time.Unix(0, ns).UTC().Format(time.RFC3339Nano)
}

// eventCounts turns per-type counts into the Summary map.
func eventCounts(c *[venue.NumEventTypes]uint64) map[string]uint64 {
	m := make(map[string]uint64)
	for t, n := range c {
		if n > 0 {
			m[venue.EventType(t).String()] = n
		}
	}
	return m
}

func lossCounts(c *[256]uint64) map[string]uint64 {
	m := make(map[string]uint64)
	for k, n := range c {
		if n > 0 {
			m[datasets.Kind(k).String()] = n
		}
	}
	return m
}

// setChecks fills the summary's check counters from the decoders' stats.
func (s *Summary) setChecks(st *venue.Stats) {
	s.HashChecked, s.HashOK, s.HashSeen = st.HashChecked, st.HashOK, st.HashSeen
	s.HashMismatch, s.HashUnverifiable = st.HashMismatch, st.HashUnverifiable
	s.TopChecked, s.TopMismatch = st.TopChecked, st.TopMismatch
	s.CrossedBatches = st.CrossedBatches
}

// addCheckStats adds s's check counters to dst's.
func addCheckStats(dst *venue.Stats, s *venue.Stats) {
	dst.HashChecked += s.HashChecked
	dst.HashOK += s.HashOK
	dst.HashMismatch += s.HashMismatch
	dst.HashUnverifiable += s.HashUnverifiable
	dst.HashSeen += s.HashSeen
	dst.TopChecked += s.TopChecked
	dst.TopMismatch += s.TopMismatch
	dst.CrossedBatches += s.CrossedBatches
}

package replayer

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tapedeck/tapedeck/internal/units"
)

// WriteTable writes the summary for people, one aligned "name  value" line
// each, as `replay run` prints it: datasets, frames and throughput, events,
// losses and damage, rejections, the hash and top-of-book checks, pacing
// and the digest. Lines about what did not happen (no warm-up, no
// rejections, an unpaced replay) are left out.
func (s *Summary) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	var names []string
	for _, d := range s.Datasets {
		n := d.Path + " (" + d.Venue + ")"
		if d.Truncated != "" {
			n += " TRUNCATED: " + d.Truncated
		}
		names = append(names, n)
	}
	fmt.Fprintf(tw, "datasets\t%s\n", strings.Join(names, ", "))
	wall := time.Duration(s.WallNs)
	fmt.Fprintf(tw, "frames\t%d (%s) in %v: %.0f frames/s, %.1f MB/s\n",
		s.Frames, units.DecimalBytes(s.Bytes), wall.Round(time.Microsecond), s.FramesPerSec, s.MBPerSec)
	if s.WarmupFrames > 0 {
		fmt.Fprintf(tw, "warm-up\t%d frames before the window, applied silently\n", s.WarmupFrames)
	}
	if s.Warmup == "none" {
		fmt.Fprintf(tw, "warm-up\tnone: read from the block holding --from; books start empty there and each is valid from its next snapshot (%d updates before one)\n", s.Unsnapshotted)
	}
	fmt.Fprintf(tw, "fetched\t%s read from the datasets' files\n", units.DecimalBytes(uint64(s.BytesFetched)))
	fmt.Fprintf(tw, "events\t%s\n", countList(s.Events))
	fmt.Fprintf(tw, "instruments\t%d\n", s.Instruments)
	fmt.Fprintf(tw, "losses\t%s\n", countList(s.Losses))
	if s.Damaged != nil {
		fmt.Fprintf(tw, "DAMAGED\t%s\n", s.Damaged)
		for _, d := range s.Datasets {
			for _, dm := range d.Damage {
				fmt.Fprintf(tw, "\t%s\n", dm.String())
			}
		}
	}
	fmt.Fprintf(tw, "decode errors\t%d\n", s.DecodeErrors)
	writeDecodeErrors(tw, s.FirstDecodeErrors)
	if s.RejectedMessages > 0 || s.BooksInvalidated > 0 {
		fmt.Fprintf(tw, "rejected\t%d messages; %d book invalidations (invalid until the next snapshot)\n",
			s.RejectedMessages, s.BooksInvalidated)
	}
	if s.RESTUndecoded > 0 {
		fmt.Fprintf(tw, "REST bodies rejected\t%d\n", s.RESTUndecoded)
		writeDecodeErrors(tw, s.FirstRESTErrors)
	}
	switch s.HashMode {
	case "sampled":
		fmt.Fprintf(tw, "hash checks\t%d ok, %d mismatch, %d unverifiable of %d checked (sampled every %s of %d hashes)\n",
			s.HashOK, s.HashMismatch, s.HashUnverifiable, s.HashChecked, s.HashEvery, s.HashSeen)
	case "off":
		fmt.Fprintf(tw, "hash checks\toff\n")
	default:
		fmt.Fprintf(tw, "hash checks\t%d ok, %d mismatch, %d unverifiable of %d\n", s.HashOK, s.HashMismatch, s.HashUnverifiable, s.HashChecked)
	}
	fmt.Fprintf(tw, "top of book\t%d mismatches of %d checks\n", s.TopMismatch, s.TopChecked)
	fmt.Fprintf(tw, "crossed batches\t%d\n", s.CrossedBatches)
	if s.UnknownKinds > 0 || s.ControlErrors > 0 {
		fmt.Fprintf(tw, "skipped\t%d records of unknown kinds, %d bad control payloads\n", s.UnknownKinds, s.ControlErrors)
	}
	for _, f := range s.SubscriberFailures {
		fmt.Fprintf(tw, "subscriber failed\t#%d at dataset %d seq %d: %s\n", f.Subscriber, f.Dataset, f.Seq, f.Err)
	}
	if l := s.Lateness; l != nil {
		fmt.Fprintf(tw, "lateness (%s)\tp50 %v, p99 %v, max %v over %d dispatches\n", s.Speed,
			time.Duration(l.P50Ns), time.Duration(l.P99Ns), time.Duration(l.MaxNs), l.Count)
	}
	if k := s.Skipped; k != nil {
		fmt.Fprintf(tw, "not waited out\t%s\n", k)
	}
	fmt.Fprintf(tw, "digest\t%s\n", s.Digest)
	return tw.Flush()
}

// String says what recorded idle time a paced replay skipped, in words
// ("" when none).
func (k *Skipped) String() string {
	var parts []string
	if k.Losses > 0 {
		parts = append(parts, fmt.Sprintf("%d recorded losses skipped at once (%v of recorded time)", k.Losses, time.Duration(k.LossNs)))
	}
	if k.Capped > 0 {
		parts = append(parts, fmt.Sprintf("%d idle stretches cut to --max-gap (%v of recorded time)", k.Capped, time.Duration(k.CappedNs)))
	}
	return strings.Join(parts, "; ")
}

// writeDecodeErrors lists errors one line each; an error of several
// rejected messages (one per line) is indented under its record.
func writeDecodeErrors(tw io.Writer, errs []DecodeError) {
	for _, e := range errs {
		msg := strings.ReplaceAll(e.Err, "\n", "\n\t    ")
		fmt.Fprintf(tw, "\tdataset %d conn %d seq %d: %s\n", e.Dataset, e.Conn, e.Seq, msg)
	}
}

// countList formats counts as "a 1, b 2" in name order, or "none".
func countList(m map[string]uint64) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

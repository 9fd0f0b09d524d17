package interchange

import (
	"bufio"
	"compress/gzip" // the standard library's level 6 matches zlib's default, which hftbacktest writes
	"fmt"
	"io"
	"strconv"

	"github.com/klauspost/compress/zstd"
	"github.com/tapedeck/tapedeck/datasets"
)

// ExportOption configures ExportRaw.
type ExportOption func(*exportConfig) error

type exportConfig struct {
	compression Compression
	framesOnly  bool
	isoDigits   int
}

// WithCompression compresses the output (gzip or zstd at their default
// levels). Default None: the caller may wrap w itself.
func WithCompression(c Compression) ExportOption {
	return func(e *exportConfig) error {
		if c > Zstd {
			return fmt.Errorf("interchange: unknown compression %d", c)
		}
		e.compression = c
		return nil
	}
}

// ExportFramesOnly makes NDJSON export write the received frames only, one
// per line with no wrapper (the plain form), dropping receive times and
// every other record kind (counted in ExportStats.Skipped).
func ExportFramesOnly() ExportOption {
	return func(e *exportConfig) error { e.framesOnly = true; return nil }
}

// WithTimeDigits sets the fractional digits of Tardis times, 1 to 9.
// Default 7, the width Tardis tools slice (100 ns resolution, truncated);
// 9 keeps ns receive times exact and is read back by this package.
func WithTimeDigits(n int) ExportOption {
	return func(e *exportConfig) error {
		if n < 1 || n > 9 {
			return fmt.Errorf("interchange: time digits %d outside 1..9", n)
		}
		e.isoDigits = n
		return nil
	}
}

// ExportStats counts what ExportRaw did.
type ExportStats struct {
	Records int64 // records read from the source
	Lines   int64 // lines written
	Bytes   int64 // bytes written before compression
	// Skipped counts, by kind, records the format cannot hold: every
	// non-frame kind in hftbacktest and plain NDJSON; in Tardis every kind
	// but frames and losses (a run of losses becomes one empty line and the
	// rest of the run is counted here).
	Skipped map[datasets.Kind]int64
}

// ExportRaw writes src's records to w in format's line form until src ends.
// NDJSON writes the wrapper form (every kind, exact ns receive times) unless
// ExportFramesOnly; Tardis writes frames and marks losses (datasets.Kind
// IsLoss) with an empty line; HFTBacktest writes frames with ns receive
// times. A frame the format cannot carry (a line break, a binary payload)
// stops the export with an *ExportError. ExportRaw does not close w; it
// flushes and finishes the compressor it added.
func ExportRaw(w io.Writer, src Source, format Format, opts ...ExportOption) (*ExportStats, error) {
	cfg := exportConfig{isoDigits: 7}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if format < NDJSON || format > HFTBacktest {
		return nil, fmt.Errorf("%w %d", ErrFormat, format)
	}
	st := &ExportStats{Skipped: map[datasets.Kind]int64{}}
	var finish func() error
	switch cfg.compression {
	case Gzip:
		gz := gzip.NewWriter(w)
		w, finish = gz, gz.Close
	case Zstd:
		zw, err := zstd.NewWriter(w, zstd.WithEncoderConcurrency(1))
		if err != nil {
			return nil, fmt.Errorf("interchange: zstd writer: %w", err)
		}
		w, finish = zw, zw.Close
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	err := exportLoop(bw, src, format, &cfg, st)
	if err == nil {
		err = bw.Flush()
	}
	if finish != nil {
		if ferr := finish(); err == nil {
			err = ferr
		}
	}
	return st, err
}

func exportLoop(bw *bufio.Writer, src Source, format Format, cfg *exportConfig, st *ExportStats) error {
	var line []byte
	prevLoss := false
	for src.Next() {
		r := src.Record()
		st.Records++
		line = line[:0]
		switch {
		case format == NDJSON && !cfg.framesOnly:
			line = appendWrapper(line, r)
		case r.Kind == datasets.KindFrame:
			if r.Flags&datasets.FlagBinary != 0 {
				return &ExportError{Seq: r.Seq, Kind: r.Kind, Err: ErrBinary}
			}
			if hasLineBreak(r.Payload) {
				return &ExportError{Seq: r.Seq, Kind: r.Kind, Err: ErrNewline}
			}
			if len(r.Payload) == 0 {
				return &ExportError{Seq: r.Seq, Kind: r.Kind, Err: ErrEmpty}
			}
			switch format {
			case Tardis:
				line = appendISO(line, r.WallNs, cfg.isoDigits)
				line = append(line, ' ')
			case HFTBacktest:
				line = strconv.AppendInt(line, r.WallNs, 10)
				line = append(line, ' ')
			}
			line = append(line, r.Payload...)
			line = append(line, '\n')
			prevLoss = false
		case format == Tardis && r.Kind.IsLoss():
			if prevLoss {
				st.Skipped[r.Kind]++
				continue
			}
			prevLoss = true
			line = append(line, '\n')
		default:
			st.Skipped[r.Kind]++
			continue
		}
		n, err := bw.Write(line)
		st.Bytes += int64(n)
		if err != nil {
			return fmt.Errorf("interchange: write: %w", err)
		}
		st.Lines++
	}
	if err := src.Err(); err != nil {
		return fmt.Errorf("interchange: read dataset: %w", err)
	}
	return nil
}

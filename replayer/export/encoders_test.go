package export

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// TestEncodersSameFile: the sequential path (WithEncoders(1): every batch
// written inside OnEvent, one column after another) and the pipelined one
// (batches written on other goroutines while the next fills, a Parquet
// batch's columns encoded by several at once) write the same bytes, for
// every table, format, value type and batching.
func TestEncodersSameFile(t *testing.T) {
	for _, ds := range testDatasets {
		paths := ds.paths(t)
		for tbl := TableDepth; tbl <= TableInstruments; tbl++ {
			for _, f := range []Format{FormatParquet, FormatArrow, FormatCSV} {
				for _, exact := range []bool{false, true} {
					for _, rows := range []int{0, 3} { // one batch, many
						t.Run(fmt.Sprintf("%s/%s/%s/exact=%v/rows=%d", ds.name, tbl, f, exact, rows), func(t *testing.T) {
							opts := []Option{WithDatasets(paths...)}
							if exact {
								opts = append(opts, WithExact())
							}
							if rows > 0 {
								opts = append(opts, WithBatchRows(rows))
							}
							var outs [3]bytes.Buffer
							var sinks [3]*Sink
							for i, n := range []int{1, 2, 7} {
								sinks[i] = sinkTo(t, &outs[i], tbl, f, append(opts, WithEncoders(n))...)
							}
							replay(t, paths, sinks[0], sinks[1], sinks[2])
							for _, s := range sinks {
								if err := s.Close(); err != nil {
									t.Fatal(err)
								}
							}
							if sinks[0].Rows() == 0 {
								t.Fatal("no rows: the case tests nothing")
							}
							for i := 1; i < len(outs); i++ {
								if !bytes.Equal(outs[0].Bytes(), outs[i].Bytes()) {
									t.Fatalf("sequential %d bytes, pipelined (case %d) %d bytes, and they differ", outs[0].Len(), i, outs[i].Len())
								}
							}
						})
					}
				}
			}
		}
	}
	// Many row groups of a wide book: the columns of each are spread over
	// the workers in a different interleaving every time.
	for _, f := range []Format{FormatParquet, FormatArrow, FormatCSV} {
		t.Run("synth/"+f.String(), func(t *testing.T) {
			var outs [3]bytes.Buffer
			for i, n := range []int{1, 2, 5} {
				s := sinkTo(t, &outs[i], TableDepth, f, WithBatchRows(512), WithEncoders(n))
				books := []*synthBook{newSynthBook("a", 40), newSynthBook("b", 7)}
				for e := 0; e < 5000; e++ {
					if err := s.OnEvent(books[e%2].next(e)); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			for i := 1; i < len(outs); i++ {
				if !bytes.Equal(outs[0].Bytes(), outs[i].Bytes()) {
					t.Fatalf("sequential %d bytes, pipelined (case %d) %d bytes, and they differ", outs[0].Len(), i, outs[i].Len())
				}
			}
		})
	}
}

// TestPipelinedWriteErrorStops: with batches written on other goroutines, a
// failed write still stops the sink within a batch of where the sequential
// sink stops (the batch being filled when the write failed), and every
// later call returns the error.
func TestPipelinedWriteErrorStops(t *testing.T) {
	const batch = 16
	run := func(t *testing.T, f Format, at, encoders int) (*Sink, error) {
		s, err := New(&failWriter{n: at}, TableDepth, f, WithBatchRows(batch), WithEncoders(encoders))
		if err != nil {
			t.Fatal(err)
		}
		sb := newSynthBook("x", 30)
		var first error
		for i := 0; i < 20000 && first == nil; i++ {
			first = s.OnEvent(sb.next(i))
		}
		if first == nil {
			first = s.Close()
		}
		var we *WriteError
		if !errors.As(first, &we) || !errors.Is(first, errDiskFull) {
			t.Fatalf("encoders %d: err %v, want a *WriteError wrapping the disk error", encoders, first)
		}
		return s, first
	}
	for _, f := range []Format{FormatParquet, FormatArrow, FormatCSV} {
		for _, at := range []int{100, 5000, 50000, 500000} {
			t.Run(fmt.Sprintf("%s/%d", f, at), func(t *testing.T) {
				seq, _ := run(t, f, at, 1)
				s, _ := run(t, f, at, 3)
				// The two write the same bytes, so the same batch fails; the
				// pipelined sink learns it at the latest when the next
				// batch is full.
				if s.Rows() > seq.Rows()+batch {
					t.Errorf("%d rows taken, the sequential sink stopped at %d: want at most %d", s.Rows(), seq.Rows(), seq.Rows()+batch)
				}
				sb := newSynthBook("x", 30)
				for i := 0; i < 3; i++ {
					if err := s.OnEvent(sb.next(i)); !errors.Is(err, errDiskFull) && !errors.Is(err, ErrClosed) {
						t.Fatalf("after failure: %v", err)
					}
				}
			})
		}
	}
}

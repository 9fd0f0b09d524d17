package bench

import (
	"path/filepath"
	"testing"

	"github.com/tapedeck/tapedeck/venue"
)

// streamFrames is the size of the in-memory sessions of the decode
// scenarios: a tenth of the generated inputs, so that the frames stay in
// memory beside the on-disk datasets.
func streamFrames(tb testing.TB) int64 { return max(sessionFrames(tb)/10, 10_000) }

// BenchmarkStream decodes and applies a generated session's frames in
// recorded order, one frame per op: the decoder's work inside a replay,
// without storage or routing.
func BenchmarkStream(b *testing.B) {
	for _, v := range venues {
		b.Run("venue="+v, func(b *testing.B) {
			s := loadSession(b, v, streamFrames(b))
			benchFrames(b, v, nil, s.frames, 0)
		})
	}
}

// BenchmarkDecode decodes frames of one event type, one frame per op, on a
// decoder warmed with the whole session so every book exists; the frames
// keep their recorded order. Event types that touch no book (trades,
// quotes, mids, asset contexts, control) are the decode-only costs; the
// decoders offer no parse-without-apply mode, since applying is what
// decoding is for.
func BenchmarkDecode(b *testing.B) {
	for _, v := range venues {
		s := loadSession(b, v, streamFrames(b))
		byType := map[string][][]byte{}
		d := newDecoder(v)
		var out venue.Frame
		for _, f := range s.frames {
			if err := d.Decode(f, 0, &out); err != nil {
				continue // counted by the decoder; not a workload
			}
			t := "nonjson"
			if len(out.Events) > 0 {
				t = out.Events[0].Type.String()
			}
			byType[t] = append(byType[t], f)
		}
		for t := venue.EventType(0); int(t) < venue.NumEventTypes; t++ {
			frames := byType[t.String()]
			if len(frames) < 10 {
				continue
			}
			b.Run("venue="+v+"/event="+t.String(), func(b *testing.B) {
				benchFrames(b, v, s.frames, frames, 0)
			})
		}
	}
}

// BenchmarkReal decodes and applies the real recorded frames of
// testdata/real in turn (books with 4 to 86 levels per side, price changes,
// Hyperliquid snapshots and a REST book body), one frame per op.
func BenchmarkReal(b *testing.B) {
	for _, v := range venues {
		b.Run("venue="+v, func(b *testing.B) {
			files, _ := filepath.Glob(filepath.Join("testdata/real", v, "*.ndjson"))
			var frames [][]byte
			d := newDecoder(v)
			var out venue.Frame
			for _, f := range files {
				for _, fr := range readFrames(b, f) {
					if err := d.Decode(fr, 0, &out); err != nil {
						b.Logf("skipping a frame of %s: %v", filepath.Base(f), err)
						continue
					}
					frames = append(frames, fr)
				}
			}
			benchFrames(b, v, nil, frames, 0)
		})
	}
}

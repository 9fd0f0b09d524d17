package hyperliquid

import (
	"path/filepath"
	"testing"

	"github.com/tapedeck/tapedeck/venue"
)

// BenchmarkDecode measures decode + apply per frame: the peer workload
// (NautilusTrader's HL book frame, 20+20 levels, replaced on every frame) and
// each real fixture, its frames decoded in turn by one decoder.
func BenchmarkDecode(b *testing.B) {
	b.Run("peer_l2book_btc_20x2", func(b *testing.B) {
		benchFrames(b, lines(b, "l2book_btc_20x2.json"))
	})
	b.Run("real_l2book_btc_20x2", func(b *testing.B) {
		benchFrames(b, lines(b, "order_book_server_ack_l2book_trades_2025-07.ndjson")[1:2])
	})
	b.Run("real_http_l2book_dydx_20x2", func(b *testing.B) {
		benchFrames(b, lines(b, "python_sdk_http_info_l2book_dydx_2023-07.ndjson"))
	})
	b.Run("real_bbo", func(b *testing.B) {
		benchFrames(b, lines(b, "arbitrage_observatory_probe_2026-09_core.ndjson")[2:3])
	})
	b.Run("real_trades", func(b *testing.B) {
		benchFrames(b, lines(b, "order_book_server_ack_l2book_trades_2025-07.ndjson")[2:3])
	})
	files, _ := filepath.Glob(filepath.Join("testdata", "*.ndjson"))
	for _, f := range files {
		name := filepath.Base(f)
		b.Run("file_"+name[:len(name)-len(".ndjson")], func(b *testing.B) {
			benchFrames(b, lines(b, name))
		})
	}
}

// benchFrames decodes frames in turn; one op is one frame.
func benchFrames(b *testing.B, frames [][]byte) {
	d := NewDecoder()
	var out venue.Frame
	total := 0
	for _, f := range frames {
		if err := d.Decode(f, 0, &out); err != nil {
			b.Fatal(err)
		}
		total += len(f)
	}
	b.SetBytes(int64(total / len(frames)))
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if err := d.Decode(frames[i], 0, &out); err != nil {
			b.Fatal(err)
		}
		if i++; i == len(frames) {
			i = 0
		}
	}
}

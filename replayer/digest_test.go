package replayer

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/venue"
)

// TestDigestEncoding rebuilds the digest of a tiny replay from the layout in
// the package documentation, byte by byte, so the code cannot drift from it.
func TestDigestEncoding(t *testing.T) {
	connect := string(datasets.EncodeControl(datasets.Control{URL: "wss://x"}))
	dir := writeDataset(t, "fakevenue", []rec{
		{datasets.KindConnect, 3, 5, connect},
		frame(3, 7, "snap a 10 2 20 4;trade a 15 6"),
	})
	r := newFakeReplayer(t, []string{dir})
	s := run(t, r)

	le := binary.LittleEndian
	var want []byte
	recordItem := func(kind datasets.Kind, conn uint32, seq uint64, recv int64) {
		b := make([]byte, 32)
		b[0], b[1] = 'R', byte(kind)
		le.PutUint32(b[8:], conn)
		le.PutUint64(b[16:], seq)
		le.PutUint64(b[24:], uint64(recv))
		want = append(want, b...)
	}
	eventItem := func(ch Channel, typ venue.EventType, flags byte, inst string, third, price, size int64, top [4]int64) {
		b := make([]byte, 72)
		b[0], b[1], b[2], b[3] = 'E', byte(ch), byte(typ), flags
		if inst != "" {
			le.PutUint64(b[8:], xxhash.Sum64String(inst))
		}
		le.PutUint64(b[16:], uint64(third))
		le.PutUint64(b[24:], uint64(price))
		le.PutUint64(b[32:], uint64(size))
		for i, v := range top {
			le.PutUint64(b[40+8*i:], uint64(v))
		}
		want = append(want, b...)
	}
	recordItem(datasets.KindConnect, 3, 1, 5)
	eventItem(ChannelControl, 0, 0, "", int64(xxhash.Sum64String(connect)), 0, 0, [4]int64{})
	recordItem(datasets.KindFrame, 3, 2, 7)
	// The fake decoder stamps ExchangeNs with the receive time; the book is
	// valid and the snapshot event itself carries no price.
	eventItem(ChannelBook, venue.EventSnapshot, 1|2, "a", 7, 0, 0, [4]int64{10, 2, 20, 4})
	eventItem(ChannelTrades, venue.EventTrade, 1|2, "a", 7, 15, 6, [4]int64{10, 2, 20, 4})

	if got, exp := s.Digest, fmt.Sprintf("xxh64:%016x", xxhash.Sum64(want)); got != exp {
		t.Fatalf("digest %s, the documented encoding gives %s", got, exp)
	}
}

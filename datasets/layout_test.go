package datasets

import (
	"encoding/hex"
	"testing"
	"unsafe"
)

// The on-disk headers, byte for byte. A change here is a format change:
// bump FormatVersion, keep reading the old layout, update FORMAT.md.
func TestLayoutLocked(t *testing.T) {
	var sh [segmentHeaderSize]byte
	segmentHeader{Version: 1, Number: 2, DictCopies: 2}.marshal(&sh)
	var bh [blockHeaderSize]byte
	h := blockHeader{Codec: codecZstd, Flags: blockFlagDict, Type: blockTypeRecords, CompLen: 100, RawLen: 300, Count: 3,
		CompCRC: 0xAABBCCDD, RawCRC: 0x11223344, FirstSeq: 7, LastSeq: 9, FirstWall: 1_764_000_000_000_000_000, LastWall: 1_764_000_000_000_000_500}
	h.marshal(&bh)
	for _, tc := range []struct {
		name string
		got  []byte
		want string
	}{
		{"segment header", sh[:], "54445347010020000200000002000000000000000000000000000000ddfdd3ce"},
		{"block header", bh[:], "5444424b01010000640000002c01000003000000ddccbbaa44332211" +
			"1a6f424b" + "0700000000000000" + "0900000000000000" + "0000ca67a7fc7a18" + "f401ca67a7fc7a18"},
	} {
		if g := hex.EncodeToString(tc.got); g != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, g, tc.want)
		}
	}
	// Sizes of the structures and of what a reader keeps per block.
	if segmentHeaderSize != 32 || blockHeaderSize != 64 || indexHeaderSize != 32 || indexEntrySize != 48 || recordColumnsSize != 34 {
		t.Fatal("layout sizes changed")
	}
	if s := unsafe.Sizeof(indexEntry{}); s != 48 {
		t.Errorf("indexEntry is %d bytes in memory", s)
	}
}

package datasets

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// docTable is a markdown table of FORMAT.md: its rows, cells trimmed.
type docTable [][]string

// docTables returns the first table after each heading of FORMAT.md.
func docTables(t *testing.T) (map[string]docTable, string) {
	t.Helper()
	b, err := os.ReadFile("FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	tables := map[string]docTable{}
	done := map[string]bool{}
	heading := ""
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			heading = strings.TrimSpace(strings.TrimLeft(line, "#"))
			continue
		}
		if !strings.HasPrefix(line, "|") {
			if len(tables[heading]) > 0 {
				done[heading] = true // only the first table under a heading
			}
			continue
		}
		if strings.HasPrefix(line, "|---") || done[heading] {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.Trim(strings.TrimSpace(cells[i]), "`")
		}
		tables[heading] = append(tables[heading], cells)
	}
	return tables, string(b)
}

// layout checks a fixed-size structure's table: fields tile the structure
// and each field's bytes in buf hold want[name].
func checkLayout(t *testing.T, tab docTable, size int, buf []byte, want map[string]uint64) {
	t.Helper()
	if len(tab) < 2 {
		t.Fatalf("table missing")
	}
	next := 0
	seen := map[string]bool{}
	for _, row := range tab[1:] {
		off, err1 := strconv.Atoi(row[0])
		n, err2 := strconv.Atoi(row[1])
		if err1 != nil || err2 != nil {
			t.Fatalf("bad row %q", row)
		}
		if off != next {
			t.Errorf("%s at offset %d, previous field ends at %d", row[3], off, next)
		}
		next = off + n
		name, typ := row[3], row[2]
		field := buf[off : off+n]
		var got uint64
		switch typ {
		case "u8":
			got = uint64(field[0])
		case "u16":
			got = uint64(binary.LittleEndian.Uint16(field))
		case "u32":
			got = uint64(binary.LittleEndian.Uint32(field))
		case "u64", "i64":
			got = binary.LittleEndian.Uint64(field)
		case "bytes":
			if want := strings.Fields(row[4])[0]; string(field) != want {
				t.Errorf("%s: bytes %q, doc says %q", name, field, want)
			}
			seen[name] = true
			continue
		case "zero":
			for _, c := range field {
				if c != 0 {
					t.Errorf("%s not zero: % x", name, field)
				}
			}
			continue
		default:
			t.Fatalf("unknown type %q", typ)
		}
		w, ok := want[name]
		if !ok {
			t.Errorf("doc field %q unknown to the test", name)
			continue
		}
		seen[name] = true
		if got != w {
			t.Errorf("%s (%s at %d): code wrote %#x, test expects %#x", name, typ, off, got, w)
		}
	}
	if next != size {
		t.Errorf("fields cover %d bytes, the code's size is %d", next, size)
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("field %q not documented", name)
		}
	}
}

func TestFormatDocMatchesCode(t *testing.T) {
	tables, doc := docTables(t)
	if !strings.HasPrefix(doc, fmt.Sprintf("# tapedeck dataset format, version %d\n", FormatVersion)) {
		t.Errorf("FORMAT.md title does not name version %d", FormatVersion)
	}
	for _, s := range []string{segmentName(1), indexName(1), ManifestName, fmt.Sprintf("%#x", dictID)} {
		if !strings.Contains(doc, s) {
			t.Errorf("FORMAT.md does not mention %s", s)
		}
	}

	t.Run("segment header", func(t *testing.T) {
		var b [segmentHeaderSize]byte
		segmentHeader{Version: FormatVersion, Number: 0x01020304, DictCopies: 2}.marshal(&b)
		checkLayout(t, tables["Segment header"], segmentHeaderSize, b[:], map[string]uint64{
			"version": FormatVersion, "header_len": segmentHeaderSize, "segment": 0x01020304, "dict_copies": 2,
			"header_crc": uint64(crc32c(b[:28])),
		})
	})
	t.Run("block header", func(t *testing.T) {
		var b [blockHeaderSize]byte
		h := blockHeader{Codec: codecZstd, Flags: blockFlagDict, Type: blockTypeRecords, CompLen: 0x1111, RawLen: 0x2222,
			Count: 0x33, CompCRC: 0x44444444, RawCRC: 0x55555555, FirstSeq: 0x0606060606, LastSeq: 0x0707070707,
			FirstWall: 0x0808080808080808, LastWall: 0x0909090909090909}
		h.marshal(&b)
		checkLayout(t, tables["Block header"], blockHeaderSize, b[:], map[string]uint64{
			"codec": codecZstd, "flags": blockFlagDict, "type": blockTypeRecords, "comp_len": 0x1111, "raw_len": 0x2222,
			"count": 0x33, "comp_crc": 0x44444444, "raw_crc": 0x55555555, "header_crc": uint64(blockHeaderCRC(b[:])),
			"first_seq": 0x0606060606, "last_seq": 0x0707070707, "first_wall_ns": 0x0808080808080808, "last_wall_ns": 0x0909090909090909,
		})
		var back blockHeader
		if err := back.unmarshal(b[:]); err != nil || back != h {
			t.Fatalf("round trip: %+v %v", back, err)
		}
	})
	t.Run("index", func(t *testing.T) {
		dir := t.TempDir()
		e := indexEntry{Offset: 0x0101, CompLen: 0x0202, Count: 0x03, FirstSeq: 0x0404, LastSeq: 0x0505, FirstWall: 0x0606, LastWall: 0x0707}
		if err := writeIndex(dir, 7, 0x0303+0x0101+blockHeaderSize, []indexEntry{e}, false); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(dir + "/" + indexName(7))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != indexHeaderSize+indexEntrySize {
			t.Fatalf("index of one entry is %d bytes", len(b))
		}
		sum := binary.LittleEndian.Uint32(b[28:32])
		checkLayout(t, tables["Index header"], indexHeaderSize, b[:indexHeaderSize], map[string]uint64{
			"version": FormatVersion, "entry_size": indexEntrySize, "entries": 1, "segment": 7,
			"segment_size": 0x0303 + 0x0101 + blockHeaderSize, "file_crc": uint64(sum),
		})
		checkLayout(t, tables["Index entry"], indexEntrySize, b[indexHeaderSize:], map[string]uint64{
			"offset": 0x0101, "comp_len": 0x0202, "count": 3, "first_seq": 0x0404, "last_seq": 0x0505,
			"first_wall_ns": 0x0606, "last_wall_ns": 0x0707,
		})
	})
	t.Run("record columns", func(t *testing.T) {
		recs := []Record{
			{Kind: KindFrame, Flags: FlagBinary, Conn: 9, WallNs: 1000, MonoNs: 50, Payload: []byte("abc")},
			{Kind: KindGap, Flags: FlagAssigned, Conn: ConnAll, WallNs: 1300, MonoNs: 70, Payload: []byte("de")},
			{Kind: KindNote, Conn: 2, WallNs: 1200, MonoNs: 90, Payload: []byte("f")},
		}
		var bb blockBuilder
		for i := range recs {
			bb.add(&recs[i], uint64(10+2*i))
		}
		var h blockHeader
		out := bb.seal(nil, 0, nil, &h)
		raw := out[blockHeaderSize:]
		n := len(recs)
		want := map[string][]uint64{
			"seq_delta":  {0, 2, 2},
			"wall_delta": {0, 300, ^uint64(100) + 1},
			"mono_delta": {50, 20, 20},
			"length":     {3, 2, 1},
			"conn":       {9, uint64(ConnAll), 2},
			"kind":       {uint64(KindFrame), uint64(KindGap), uint64(KindNote)},
			"flags":      {uint64(FlagBinary), uint64(FlagAssigned), 0},
		}
		tab := tables["Block content (records)"]
		next, width := 0, 0
		for _, row := range tab[1:] {
			coef := func(s string) int {
				s = strings.TrimSuffix(strings.TrimSuffix(s, "n"), "·")
				if s == "" {
					return 1
				}
				c, err := strconv.Atoi(s)
				if err != nil {
					t.Fatalf("bad column cell %q", s)
				}
				return c
			}
			if row[3] == "payloads" {
				if got := string(raw[coef(row[0])*n:]); got != "abcdef" {
					t.Errorf("payloads at %s: %q", row[0], got)
				}
				continue
			}
			off, w := coef(row[0]), coef(row[1])
			if off != next {
				t.Errorf("column %s at %d·n, previous ends at %d·n", row[3], off, next)
			}
			next = off + w
			width += w
			vals, ok := want[row[3]]
			if !ok {
				t.Fatalf("column %q unknown to the test", row[3])
			}
			for i := 0; i < n; i++ {
				f := raw[off*n+i*w : off*n+(i+1)*w]
				var got uint64
				switch w {
				case 1:
					got = uint64(f[0])
				case 4:
					got = uint64(binary.LittleEndian.Uint32(f))
				case 8:
					got = binary.LittleEndian.Uint64(f)
				}
				if got != vals[i] {
					t.Errorf("column %s record %d: %d, want %d", row[3], i, got, vals[i])
				}
			}
		}
		if width != recordColumnsSize {
			t.Errorf("documented columns are %d bytes per record, code says %d", width, recordColumnsSize)
		}
	})
	t.Run("kinds", func(t *testing.T) {
		for k := Kind(1); k <= KindLiveLag; k++ {
			if !strings.Contains(doc, fmt.Sprintf("| %d | %s |", k, k)) {
				t.Errorf("kind %d (%s) not in the kinds table", k, k)
			}
		}
	})
	t.Run("limits", func(t *testing.T) {
		want := map[string]int{"MaxPayloadSize": MaxPayloadSize, "MaxBlockSize": MaxBlockSize, "MaxDictSize": MaxDictSize,
			"DefaultBlockSize": DefaultBlockSize, "DefaultDictSize": DefaultDictSize, "DefaultSegmentSize": DefaultSegmentSize}
		tab := tables["Limits"]
		if len(tab) != len(want)+1 {
			t.Fatalf("limits table has %d rows", len(tab)-1)
		}
		for _, row := range tab[1:] {
			if v, err := strconv.Atoi(row[1]); err != nil || v != want[row[0]] {
				t.Errorf("%s: doc %s, code %d", row[0], row[1], want[row[0]])
			}
		}
	})
	for _, m := range [][4]byte{segmentMagic, blockMagic, indexMagic} {
		if !strings.Contains(doc, "`"+string(m[:])+"`") {
			t.Errorf("magic %s not documented", m)
		}
	}
}

package interchange

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/tapedeck/tapedeck/datasets"
)

func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func decompress(t testing.TB, b []byte) []byte {
	t.Helper()
	var r io.Reader
	switch {
	case bytes.HasPrefix(b, gzipMagic):
		g, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		r = g
	case bytes.HasPrefix(b, zstdMagic):
		z, err := zstd.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer z.Close()
		r = z
	default:
		return b
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func readDataset(t testing.TB, dir string) (datasets.Manifest, []datasets.Record) {
	t.Helper()
	r, err := datasets.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var m memSink
	for r.Next() {
		m.Append(r.Record())
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return r.Manifest(), m.recs
}

func exportDataset(t testing.TB, dir string, f Format, opts ...ExportOption) ([]byte, *ExportStats) {
	t.Helper()
	r, err := datasets.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var buf bytes.Buffer
	st, err := ExportRaw(&buf, r, f, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), st
}

// TestFileRoundTrip: a file imported into a dataset on disk and exported in
// its own format gives the same lines (same frames, same times), whatever
// the compression on either side.
func TestFileRoundTrip(t *testing.T) {
	tardis, _ := os.ReadFile("testdata/tardis_hyperliquid.txt")
	hft, _ := os.ReadFile("testdata/hftbacktest_polymarket.txt")
	plain, _ := os.ReadFile("testdata/polymarket_frames.ndjson")
	cases := []struct {
		name   string
		format Format
		data   []byte
		in     Compression
		out    Compression
		opts   []ExportOption
	}{
		{"tardis", Tardis, tardis, Zstd, Zstd, nil},
		{"tardis-gz", Tardis, tardis, Gzip, None, nil},
		{"hftbacktest", HFTBacktest, hft, Gzip, Gzip, nil},
		{"ndjson-plain", NDJSON, plain, None, None, []ExportOption{ExportFramesOnly()}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in := writeFile(t, dir, "in", compress(t, tc.in, tc.data))
			ds := filepath.Join(dir, "ds")
			st, err := ImportFiles(ds, datasets.Manifest{Venue: "hyperliquid"}, tc.format, []string{in})
			if err != nil {
				t.Fatal(err)
			}
			if rep, err := datasets.Verify(ds); err != nil || !rep.OK() {
				t.Fatalf("verify: %v %+v", err, rep)
			}
			m, recs := readDataset(t, ds)
			if int64(len(recs)) != st.Records {
				t.Fatalf("dataset holds %d records, import appended %d", len(recs), st.Records)
			}
			if m.Source != tc.format.String()+":"+in || m.TimesAssigned != st.TimesAssigned ||
				m.MonoBaseWallNs != recs[0].WallNs || m.StartNs != recs[0].WallNs {
				t.Errorf("manifest %+v", m)
			}
			out, _ := exportDataset(t, ds, tc.format, append(tc.opts, WithCompression(tc.out))...)
			if got := decompress(t, out); !bytes.Equal(got, tc.data) {
				t.Fatalf("export differs from the imported file:\n%s\nwant\n%s", got, tc.data)
			}
			if tc.out != None && !bytes.Equal(out[:2], map[Compression][]byte{Gzip: gzipMagic, Zstd: zstdMagic}[tc.out][:2]) {
				t.Errorf("export is not %s", tc.out)
			}
		})
	}
}

// TestDatasetRoundTrip: a dataset of every record kind exported to NDJSON
// and imported back is the same dataset (kinds, flags, connections,
// payloads, times). Tardis with 9 digits keeps frame times exact too.
func TestDatasetRoundTrip(t *testing.T) {
	src := []datasets.Record{
		{Kind: datasets.KindConnect, WallNs: 1790251200000000000, Payload: datasets.EncodeControl(datasets.Control{URL: "wss://api.hyperliquid.xyz/ws"})},
		{Kind: datasets.KindSent, WallNs: 1790251200000000001, Payload: []byte(`{"method":"subscribe","subscription":{"type":"l2Book","coin":"BTC"}}`)},
		{Kind: datasets.KindFrame, WallNs: 1790251200000000123, Payload: []byte(`{"channel":"pong"}`)},
		{Kind: datasets.KindFrame, Conn: 3, WallNs: 1790251200000000124, Payload: []byte("PONG")},
		{Kind: datasets.KindFrame, WallNs: 1790251200000000125, Payload: []byte("{\n  \"pretty\": true\n}")},
		{Kind: datasets.KindFrame, WallNs: 1790251200000000126, Payload: []byte(` {"lead":"space"}`)},
		{Kind: datasets.KindFrame, WallNs: 1790251200000000127, Payload: []byte(`{"broken":`)},
		{Kind: datasets.KindFrame, Flags: datasets.FlagBinary, WallNs: 1790251200000000128, Payload: []byte{0, 1, 2, 0xff}},
		{Kind: datasets.KindFrame, WallNs: 1790251200000000129, Payload: []byte{'{', 0xff, '}'}},
		{Kind: datasets.KindDisconnect, WallNs: 1790251200000000200, Payload: datasets.EncodeControl(datasets.Control{Code: 1006, Err: "EOF"})},
		{Kind: datasets.KindGap, WallNs: 1790251200000000201, Payload: datasets.EncodeControl(datasets.Control{FromNs: 1, ToNs: 2})},
		{Kind: datasets.KindNote, Flags: datasets.FlagAssigned, WallNs: 1790251200000000300, Payload: datasets.EncodeControl(datasets.Control{Text: "a \"note\"\n"})},
		{Kind: datasets.KindFrame, WallNs: 1790251200000000400, Payload: []byte(`[{"event_type":"book"}]`)},
	}
	dir := t.TempDir()
	w, err := datasets.Create(filepath.Join(dir, "src"), datasets.Manifest{Venue: "hyperliquid", MonoBaseWallNs: src[0].WallNs})
	if err != nil {
		t.Fatal(err)
	}
	for i := range src {
		src[i].MonoNs = src[i].WallNs - src[0].WallNs
		if _, err := w.Append(&src[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out, st := exportDataset(t, filepath.Join(dir, "src"), NDJSON)
	if st.Lines != int64(len(src)) || len(st.Skipped) != 0 {
		t.Fatalf("NDJSON export wrote %d lines, skipped %v", st.Lines, st.Skipped)
	}
	p := writeFile(t, dir, "all.ndjson", out)
	if _, err := ImportFiles(filepath.Join(dir, "back"), datasets.Manifest{Venue: "hyperliquid"}, NDJSON, []string{p}); err != nil {
		t.Fatal(err)
	}
	_, back := readDataset(t, filepath.Join(dir, "back"))
	if len(back) != len(src) {
		t.Fatalf("%d records back, want %d", len(back), len(src))
	}
	for i := range src {
		a, b := src[i], back[i]
		if a.Kind != b.Kind || a.Flags != b.Flags || a.Conn != b.Conn || a.WallNs != b.WallNs || a.MonoNs != b.MonoNs ||
			!bytes.Equal(a.Payload, b.Payload) {
			t.Errorf("record %d: got %+v %q, want %+v %q", i, b, b.Payload, a, a.Payload)
		}
	}

	// Tardis cannot carry the binary frame: the export says which record.
	_, err = ExportRaw(io.Discard, &sliceSource{recs: src}, Tardis)
	var ee *ExportError
	if !errors.As(err, &ee) || !errors.Is(err, ErrNewline) || ee.Seq != 0 || ee.Kind != datasets.KindFrame {
		t.Fatalf("Tardis export of a pretty-printed frame: err = %v", err)
	}
	var text []datasets.Record
	for _, r := range src {
		if r.Kind != datasets.KindFrame || (!bytes.Contains(r.Payload, []byte("\n")) && r.Flags&datasets.FlagBinary == 0) {
			text = append(text, r)
		}
	}
	var buf bytes.Buffer
	st, err = ExportRaw(&buf, &sliceSource{recs: text}, Tardis, WithTimeDigits(9))
	if err != nil {
		t.Fatal(err)
	}
	if st.Skipped[datasets.KindConnect] != 1 || st.Skipped[datasets.KindSent] != 1 || st.Skipped[datasets.KindGap] != 1 ||
		st.Skipped[datasets.KindNote] != 1 {
		t.Errorf("skipped %v: want connect, sent, the second loss of a run, note", st.Skipped)
	}
	tr, _, err := importBytes(t, Tardis, "t", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	k := 0
	for _, r := range text {
		if r.Kind != datasets.KindFrame && r.Kind != datasets.KindDisconnect {
			continue
		}
		if tr[k].Kind != r.Kind || (r.Kind == datasets.KindFrame && (tr[k].WallNs != r.WallNs || !bytes.Equal(tr[k].Payload, r.Payload))) {
			t.Errorf("tardis record %d: got %s@%d %q, want %s@%d %q", k, tr[k].Kind, tr[k].WallNs, tr[k].Payload, r.Kind, r.WallNs, r.Payload)
		}
		k++
	}
}

func TestImportFilesErrors(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good.txt", []byte("1 {}\n2 {}\n"))
	bad := writeFile(t, dir, "bad.txt", []byte("3 {}\nx {}\n"))
	ds := filepath.Join(dir, "ds")
	st, err := ImportFiles(ds, datasets.Manifest{Venue: "polymarket"}, HFTBacktest, []string{good, bad})
	var le *LineError
	if !errors.As(err, &le) || le.File != bad || le.Line != 2 {
		t.Fatalf("err = %v, want bad.txt line 2", err)
	}
	if st.Records != 3 {
		t.Fatalf("%d records imported before the error, want 3", st.Records)
	}
	_, recs := readDataset(t, ds)
	if len(recs) != 3 {
		t.Fatalf("dataset keeps %d records, want the 3 before the error", len(recs))
	}
	// An error before any record leaves no dataset behind.
	ds2 := filepath.Join(dir, "ds2")
	if _, err := ImportFiles(ds2, datasets.Manifest{}, HFTBacktest, []string{filepath.Join(dir, "missing")}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(ds2, datasets.ManifestName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed import left a dataset at %s", ds2)
	}
	// Importing into an existing dataset is refused by datasets.Create.
	if _, err := ImportFiles(ds, datasets.Manifest{}, HFTBacktest, []string{good}); err == nil {
		t.Fatal("import over an existing dataset succeeded")
	}
	// Empty input still makes a (empty) dataset.
	empty := writeFile(t, dir, "empty.txt", nil)
	if _, err := ImportFiles(filepath.Join(dir, "ds3"), datasets.Manifest{}, Tardis, []string{empty}); err != nil {
		t.Fatal(err)
	}
	if _, recs := readDataset(t, filepath.Join(dir, "ds3")); len(recs) != 0 {
		t.Fatalf("empty import holds %d records", len(recs))
	}
}

func TestProgress(t *testing.T) {
	dir := t.TempDir()
	var lines bytes.Buffer
	for lines.Len() < 3<<20 {
		lines.WriteString("1790251200012345678 {\"channel\":\"pong\"}\n")
	}
	p := writeFile(t, dir, "big.txt", lines.Bytes())
	var calls int
	var last int64
	_, err := ImportFiles(filepath.Join(dir, "ds"), datasets.Manifest{}, HFTBacktest, []string{p},
		WithProgress(func(path string, read, size int64) {
			calls++
			if path != p || size != int64(lines.Len()) || read < last {
				t.Errorf("progress(%s, %d, %d)", path, read, size)
			}
			last = read
		}))
	if err != nil {
		t.Fatal(err)
	}
	if calls < 3 || last != int64(lines.Len()) {
		t.Fatalf("%d progress calls ending at %d of %d", calls, last, lines.Len())
	}
}

// TestSampleRoundTrip sends the shipped samples through every format, via
// files on disk and new datasets: NDJSON gives back every record; Tardis (9 digits) and
// hftbacktest give back every frame with its exact receive time.
func TestSampleRoundTrip(t *testing.T) {
	for _, venue := range []string{"polymarket", "hyperliquid"} {
		_, all := readDataset(t, filepath.Join("..", "samples", venue))
		// The first 1500 records and every control record after them
		// (disconnect, reconnect, clean close): all the kinds,
		// at a size that stays quick under -race.
		var want []datasets.Record
		for i, r := range all {
			if i < 1500 || r.Kind != datasets.KindFrame {
				want = append(want, r)
			}
		}
		var frames []datasets.Record
		for _, r := range want {
			if r.Kind == datasets.KindFrame {
				frames = append(frames, r)
			}
		}
		// Compression is covered elsewhere; one compressed case per venue
		// keeps this test quick under -race.
		c := map[string][3]Compression{"polymarket": {Zstd, None, None}, "hyperliquid": {None, None, Gzip}}[venue]
		for i, tc := range []struct {
			format Format
			opts   []ExportOption
			want   []datasets.Record
		}{
			{NDJSON, nil, want},
			{Tardis, []ExportOption{WithTimeDigits(9)}, frames},
			{HFTBacktest, nil, frames},
		} {
			tc.opts = append(tc.opts, WithCompression(c[i]))
			t.Run(venue+"/"+tc.format.String(), func(t *testing.T) {
				dir := t.TempDir()
				var buf bytes.Buffer
				if _, err := ExportRaw(&buf, &sliceSource{recs: want}, tc.format, tc.opts...); err != nil {
					t.Fatal(err)
				}
				p := writeFile(t, dir, "export", buf.Bytes())
				ds := filepath.Join(dir, "ds")
				if _, err := ImportFiles(ds, datasets.Manifest{Venue: venue}, tc.format, []string{p}); err != nil {
					t.Fatal(err)
				}
				_, got := readDataset(t, ds)
				k := 0
				for _, r := range got {
					if tc.format == Tardis && r.Kind == datasets.KindDisconnect {
						continue // the sample's loss, as an empty line
					}
					if k >= len(tc.want) {
						t.Fatalf("more records back than the %d sent", len(tc.want))
					}
					w := tc.want[k]
					// Tardis and hftbacktest files name no connection: their
					// records import on conn 0 (WithConn).
					conn := w.Conn
					if tc.format != NDJSON {
						conn = 0
					}
					if r.Kind != w.Kind || r.Flags != w.Flags || r.Conn != conn || r.WallNs != w.WallNs || !bytes.Equal(r.Payload, w.Payload) {
						t.Fatalf("record %d: got %s@%d conn %d, want %s@%d conn %d", k, r.Kind, r.WallNs, r.Conn, w.Kind, w.WallNs, conn)
					}
					if tc.format == NDJSON && r.MonoNs != w.MonoNs {
						t.Fatalf("record %d: mono %d, want %d", k, r.MonoNs, w.MonoNs)
					}
					k++
				}
				if k != len(tc.want) {
					t.Fatalf("%d records back, want %d", k, len(tc.want))
				}
			})
		}
	}
}

// TestEmptyFrameRoundTrip (issue 13 item 14): an empty frame, exported as an
// NDJSON wrapper line, imports back as the same empty frame, with the
// frames around it untouched.
func TestEmptyFrameRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	w, err := datasets.Create(dir, datasets.Manifest{Venue: "hyperliquid", Endpoint: "wss://api.hyperliquid.xyz/ws"})
	if err != nil {
		t.Fatal(err)
	}
	frames := []string{`{"channel":"pong"}`, "", `{"channel":"subscriptionResponse"}`}
	for i, f := range frames {
		if _, err := w.Append(&datasets.Record{Kind: datasets.KindFrame, WallNs: int64(i+1) * 1e9, MonoNs: int64(i + 1), Payload: []byte(f)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out, _ := exportDataset(t, dir, NDJSON)
	recs, _, err := importBytes(t, NDJSON, "export.ndjson", out)
	if err != nil {
		t.Fatalf("import of the export: %v\n%s", err, out)
	}
	if len(recs) != len(frames) {
		t.Fatalf("%d records back, want %d\n%s", len(recs), len(frames), out)
	}
	for i, r := range recs {
		if r.Kind != datasets.KindFrame || string(r.Payload) != frames[i] || r.WallNs != int64(i+1)*1e9 {
			t.Fatalf("record %d: %v %q at %d, want frame %q", i, r.Kind, r.Payload, r.WallNs, frames[i])
		}
	}
}

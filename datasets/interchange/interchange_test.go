package interchange

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/klauspost/compress/zstd"
	"go.uber.org/goleak"

	"github.com/tapedeck/tapedeck/datasets"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// memSink keeps copies of appended records.
type memSink struct{ recs []datasets.Record }

func (m *memSink) Append(r *datasets.Record) (uint64, error) {
	c := *r
	c.Payload = append([]byte(nil), r.Payload...)
	c.Seq = uint64(len(m.recs) + 1)
	m.recs = append(m.recs, c)
	return c.Seq, nil
}

// sliceSource replays records as a Source.
type sliceSource struct {
	recs []datasets.Record
	i    int
	err  error
}

func (s *sliceSource) Next() bool {
	if s.i >= len(s.recs) {
		return false
	}
	s.i++
	return true
}
func (s *sliceSource) Record() *datasets.Record { return &s.recs[s.i-1] }
func (s *sliceSource) Err() error               { return s.err }

func readLines(t testing.TB, name string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, l := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		out = append(out, l)
	}
	return out
}

func compress(t testing.TB, c Compression, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch c {
	case None:
		return b
	case Gzip:
		w := gzip.NewWriter(&buf)
		w.Write(b)
		w.Close()
	case Zstd:
		w, err := zstd.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
		w.Close()
	}
	return buf.Bytes()
}

func importBytes(t testing.TB, f Format, name string, data []byte, opts ...ImportOption) ([]datasets.Record, ImportStats, error) {
	t.Helper()
	var sink memSink
	im, err := NewImporter(f, &sink, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	err = im.Import(name, bytes.NewReader(data))
	return sink.recs, im.Stats(), err
}

func TestImportPlainNDJSON(t *testing.T) {
	want := readLines(t, "polymarket_frames.ndjson")
	data, _ := os.ReadFile("testdata/polymarket_frames.ndjson")
	start := int64(1761179880000000000)
	recs, st, err := importBytes(t, NDJSON, "pm.ndjson", data, WithStartNs(start), WithAssignedStep(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(want) || !st.TimesAssigned || st.Frames != int64(len(want)) {
		t.Fatalf("%d records, stats %+v; want %d frames with assigned times", len(recs), st, len(want))
	}
	for i, r := range recs {
		if !bytes.Equal(r.Payload, want[i]) {
			t.Errorf("line %d: payload differs from the input line", i+1)
		}
		if r.Kind != datasets.KindFrame || r.Flags != datasets.FlagAssigned {
			t.Errorf("line %d: kind %s flags %b", i+1, r.Kind, r.Flags)
		}
		if wantNs := start + int64(i)*5e6; r.WallNs != wantNs || r.MonoNs != wantNs-start {
			t.Errorf("line %d: times %d/%d, want %d/%d", i+1, r.WallNs, r.MonoNs, wantNs, wantNs-start)
		}
	}
}

// TestImportForms imports the same frames from every form and compression
// and expects the same payloads and times.
func TestImportForms(t *testing.T) {
	tardis, _ := os.ReadFile("testdata/tardis_hyperliquid.txt")
	hft, _ := os.ReadFile("testdata/hftbacktest_polymarket.txt")
	hlFrames := readLines(t, "hyperliquid_frames.ndjson")
	pmFrames := readLines(t, "polymarket_frames.ndjson")
	cases := []struct {
		name   string
		format Format
		data   []byte
		frames [][]byte
		discon int
		first  int64
	}{
		{"tardis", Tardis, tardis, hlFrames, 1, 1790251200137000000},
		{"hftbacktest", HFTBacktest, hft, pmFrames, 0, 1790251200012345678},
	}
	for _, tc := range cases {
		for _, c := range []Compression{None, Gzip, Zstd} {
			t.Run(tc.name+"/"+c.String(), func(t *testing.T) {
				recs, st, err := importBytes(t, tc.format, "in", compress(t, c, tc.data))
				if err != nil {
					t.Fatal(err)
				}
				if st.Frames != int64(len(tc.frames)) || st.Disconnects != int64(tc.discon) || st.TimesAssigned {
					t.Fatalf("stats %+v", st)
				}
				if recs[0].WallNs != tc.first || recs[0].MonoNs != 0 {
					t.Errorf("first record at %d/%d, want %d/0", recs[0].WallNs, recs[0].MonoNs, tc.first)
				}
				k := 0
				for _, r := range recs {
					if r.Kind != datasets.KindFrame {
						continue
					}
					if !bytes.Equal(r.Payload, tc.frames[k]) {
						t.Errorf("frame %d differs", k)
					}
					k++
				}
			})
		}
	}
}

func TestTardisDisconnects(t *testing.T) {
	in := "\n\n2026-09-24T12:00:00.0000001Z {\"a\":1}\n\n\n\n2026-09-24T12:00:01Z {\"a\":2}\n\n"
	recs, st, err := importBytes(t, Tardis, "t", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprintf("%s@%d", r.Kind, r.WallNs-1790251200000000000))
	}
	want := "disconnect@100 frame@100 disconnect@100 frame@1000000000 disconnect@1000000000"
	if strings.Join(got, " ") != want {
		t.Fatalf("records %v\nwant      %s", got, want)
	}
	if st.Disconnects != 3 || st.Skipped != 3 {
		t.Errorf("stats %+v: want 3 disconnects, 3 collapsed empty lines", st)
	}
	for _, r := range recs {
		if r.Kind == datasets.KindDisconnect && r.Flags&datasets.FlagAssigned == 0 {
			t.Error("a disconnect's inferred time is not flagged as assigned")
		}
	}
}

func TestWrapperForms(t *testing.T) {
	in := strings.Join([]string{
		`{"recv_ns":1000,"frame":{"channel":"pong"}}`,
		`{"frame": [1, {"x":"}]"}] , "recv_ns" : 2000 , "future_key":{"a":[1,2]}}`,
		`{"recv_ns":3000,"text":"PONG"}`,
		`{"recv_ns":3500,"text":"line\nbreak \"quoted\" \u00e9"}`,
		`{"recv_ns":4000,"kind":"sent","text":"PING","conn":2}`,
		`{"recv_ns":5000,"kind":"disconnect","control":{"code":1006}}`,
		`{"recv_ns":6000,"b64":"AAEC/w==","assigned":true,"binary":true}`,
		`{"recv_ns":6001,"b64":"e/99"}`,
		`{"localTimestamp":"2019-06-01T00:00:00.0520580Z","message":{"type":"l2update"}}`,
	}, "\n")
	recs, st, err := importBytes(t, NDJSON, "w", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		kind    datasets.Kind
		flags   uint8
		conn    uint32
		ns      int64
		payload string
	}{
		{datasets.KindFrame, 0, 0, 1000, `{"channel":"pong"}`},
		{datasets.KindFrame, 0, 0, 2000, `[1, {"x":"}]"}]`},
		{datasets.KindFrame, 0, 0, 3000, `PONG`},
		{datasets.KindFrame, 0, 0, 3500, "line\nbreak \"quoted\" é"},
		{datasets.KindSent, 0, 2, 4000, `PING`},
		{datasets.KindDisconnect, 0, 0, 5000, `{"code":1006}`},
		{datasets.KindFrame, datasets.FlagBinary | datasets.FlagAssigned, 0, 6000, "\x00\x01\x02\xff"},
		{datasets.KindFrame, 0, 0, 6001, "{\xff}"},
		{datasets.KindFrame, 0, 0, 1559347200052058000, `{"type":"l2update"}`},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d", len(recs), len(want))
	}
	for i, w := range want {
		r := recs[i]
		if r.Kind != w.kind || r.Flags != w.flags || r.Conn != w.conn || r.WallNs != w.ns || string(r.Payload) != w.payload {
			t.Errorf("line %d: got %s flags=%b conn=%d ns=%d %q\nwant %s flags=%b conn=%d ns=%d %q", i+1,
				r.Kind, r.Flags, r.Conn, r.WallNs, r.Payload, w.kind, w.flags, w.conn, w.ns, w.payload)
		}
	}
	if !st.TimesAssigned || st.Backwards != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestMalformed(t *testing.T) {
	cases := []struct {
		name   string
		format Format
		in     string
		line   int64
		want   error
	}{
		{"tardis no space", Tardis, "2026-09-24T12:00:00Z{}\n", 1, ErrSyntax},
		{"tardis bad time", Tardis, "2026-09-24T12:00:00.0000000Z {}\n2026-13-24T12:00:00Z {}\n", 2, ErrTime},
		{"tardis no zone", Tardis, "2026-09-24T12:00:00.000 {}\n", 1, ErrTime},
		{"tardis feb 30", Tardis, "2026-02-30T12:00:00Z {}\n", 1, ErrTime},
		{"tardis ten digits", Tardis, "2026-09-24T12:00:00.0123456789Z {}\n", 1, ErrTime},
		{"tardis empty frame", Tardis, "2026-09-24T12:00:00Z \n", 1, ErrEmpty},
		{"hft letters", HFTBacktest, "1 {}\n12x4 {}\n", 2, ErrTime},
		{"hft overflow", HFTBacktest, "99999999999999999999 {}\n", 1, ErrTime},
		{"hft no frame", HFTBacktest, "123\n", 1, ErrSyntax},
		{"hft empty frame", HFTBacktest, "123 \n", 1, ErrEmpty},
		{"wrapper then plain", NDJSON, `{"recv_ns":1,"frame":{}}` + "\n" + `{"channel":"pong"}` + "\n", 2, ErrMixedForm},
		{"plain then wrapper", NDJSON, `{"channel":"pong"}` + "\n" + `{"recv_ns":1,"frame":{}}` + "\n", 2, ErrMixedForm},
		{"wrapper bad time", NDJSON, `{"recv_ns":-5,"frame":{}}`, 1, ErrTime},
		{"wrapper no payload", NDJSON, `{"recv_ns":5}`, 1, ErrSyntax},
		{"wrapper two payloads", NDJSON, `{"recv_ns":5,"frame":{},"text":"x"}`, 1, ErrSyntax},
		{"wrapper scalar frame", NDJSON, `{"recv_ns":5,"frame":12}`, 1, ErrSyntax},
		{"wrapper unbalanced", NDJSON, `{"recv_ns":5,"frame":{"a":[1}}`, 1, ErrSyntax},
		{"wrapper trailing", NDJSON, `{"recv_ns":5,"frame":{}} x`, 1, ErrSyntax},
		{"wrapper bad kind", NDJSON, `{"recv_ns":5,"kind":"nope","frame":{}}`, 1, ErrSyntax},
		{"wrapper bad b64", NDJSON, `{"recv_ns":5,"b64":"!!"}`, 1, ErrSyntax},
		{"gzip corrupt", Tardis, string(compress(t, Gzip, []byte("2026-09-24T12:00:00Z {}\n")))[:20], 1, io.ErrUnexpectedEOF},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := importBytes(t, tc.format, "bad.txt", []byte(tc.in))
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("err = %v, want a *LineError", err)
			}
			if le.File != "bad.txt" || le.Line != tc.line || !errors.Is(err, tc.want) {
				t.Fatalf("err = %v (file %q line %d), want line %d wrapping %v", err, le.File, le.Line, tc.line, tc.want)
			}
			if !strings.HasPrefix(err.Error(), fmt.Sprintf("bad.txt:%d: ", tc.line)) {
				t.Errorf("message %q does not start with file:line", err)
			}
		})
	}
}

func TestLineLimit(t *testing.T) {
	big := `{"x":"` + strings.Repeat("a", 600<<10) + `"}`
	in := "1 {}\n2 " + big + "\n3 {}"
	recs, _, err := importBytes(t, HFTBacktest, "big", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || string(recs[1].Payload) != big || string(recs[2].Payload) != "{}" {
		t.Fatalf("long line not imported whole (%d records)", len(recs))
	}
	_, _, err = importBytes(t, HFTBacktest, "big", []byte(in), WithMaxLineSize(100<<10))
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 || !errors.Is(err, ErrLineSize) {
		t.Fatalf("err = %v, want ErrLineSize at line 2", err)
	}
	// A stream cut inside a long line: the error is at that line.
	gz := compress(t, Gzip, []byte("1 {}\n2 "+strings.Repeat("x", 700<<10)+"\n"))
	_, _, err = importBytes(t, HFTBacktest, "cut.gz", gz[:len(gz)*2/3])
	if !errors.As(err, &le) || le.Line != 2 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated long line: err = %v, want unexpected EOF at line 2", err)
	}
	_, _, err = importBytes(t, HFTBacktest, "big", []byte("1 "+strings.Repeat("b", 200)), WithMaxLineSize(100))
	if !errors.Is(err, ErrLineSize) {
		t.Fatalf("unterminated last line: err = %v, want ErrLineSize", err)
	}
}

// TestReaders imports through readers that return little at a time, and
// one that fails: the records must not depend on how bytes arrive.
func TestReaders(t *testing.T) {
	data, _ := os.ReadFile("testdata/tardis_hyperliquid.txt")
	want, _, err := importBytes(t, Tardis, "t", data)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []Compression{None, Gzip, Zstd} {
		for name, wrap := range map[string]func(io.Reader) io.Reader{
			"onebyte": iotest.OneByteReader, "half": iotest.HalfReader, "dataerr": iotest.DataErrReader,
		} {
			t.Run(c.String()+"/"+name, func(t *testing.T) {
				var sink memSink
				im, _ := NewImporter(Tardis, &sink)
				defer im.Close()
				if err := im.Import("t", wrap(bytes.NewReader(compress(t, c, data)))); err != nil {
					t.Fatal(err)
				}
				if len(sink.recs) != len(want) {
					t.Fatalf("%d records, want %d", len(sink.recs), len(want))
				}
				for i := range want {
					if !bytes.Equal(sink.recs[i].Payload, want[i].Payload) || sink.recs[i].WallNs != want[i].WallNs {
						t.Fatalf("record %d differs", i)
					}
				}
			})
		}
	}
	t.Run("timeout", func(t *testing.T) {
		var sink memSink
		im, _ := NewImporter(Tardis, &sink)
		defer im.Close()
		err := im.Import("t", iotest.TimeoutReader(bytes.NewReader(data[:100])))
		var le *LineError
		if !errors.As(err, &le) || !errors.Is(err, iotest.ErrTimeout) {
			t.Fatalf("err = %v, want a LineError wrapping the read error", err)
		}
	})
}

// TestSeveralFiles appends files in order; times continue; stats add up.
func TestSeveralFiles(t *testing.T) {
	data, _ := os.ReadFile("testdata/polymarket_frames.ndjson")
	var sink memSink
	im, _ := NewImporter(NDJSON, &sink, WithStartNs(1000))
	defer im.Close()
	for i := 0; i < 3; i++ {
		if err := im.Import(fmt.Sprint("f", i), bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
	}
	if len(sink.recs) != 18 || im.Stats().Files != 3 {
		t.Fatalf("%d records from %d files", len(sink.recs), im.Stats().Files)
	}
	for i, r := range sink.recs {
		if r.WallNs != 1000+int64(i)*1e6 {
			t.Fatalf("record %d at %d", i, r.WallNs)
		}
	}
	// Backwards receive times (files given out of order) keep their wall
	// time but never move the monotonic clock back.
	var back memSink
	im2, _ := NewImporter(HFTBacktest, &back)
	defer im2.Close()
	im2.Import("late", strings.NewReader("2000 {}\n3000 {}\n"))
	im2.Import("early", strings.NewReader("1000 {}\n"))
	if st := im2.Stats(); st.Backwards != 1 || back.recs[2].WallNs != 1000 || back.recs[2].MonoNs != 1000 {
		t.Fatalf("stats %+v, last record %+v", st, back.recs[2])
	}
}

func TestISOTime(t *testing.T) {
	for _, tc := range []struct {
		in string
		ns int64
	}{
		{"1970-01-01T00:00:00Z", 0},
		{"2019-06-01T00:03:03.1238784Z", 1559347383123878400},
		{"2026-09-24T12:00:00.000000001Z", 1790251200000000001},
		{"2024-02-29T23:59:59.9Z", 1709251199900000000},
		{"2026-09-24 12:00:00Z", 1790251200000000000},
	} {
		got, err := parseISO([]byte(tc.in))
		if err != nil || got != tc.ns {
			t.Errorf("parseISO(%q) = %d, %v; want %d", tc.in, got, err, tc.ns)
		}
	}
	for _, tc := range []struct {
		ns     int64
		digits int
		want   string
	}{
		{1559347383123878400, 7, "2019-06-01T00:03:03.1238784Z"},
		{1559347383123878499, 7, "2019-06-01T00:03:03.1238784Z"},
		{1790251200000000001, 9, "2026-09-24T12:00:00.000000001Z"},
		{0, 3, "1970-01-01T00:00:00.000Z"},
	} {
		if got := string(appendISO(nil, tc.ns, tc.digits)); got != tc.want {
			t.Errorf("appendISO(%d, %d) = %s, want %s", tc.ns, tc.digits, got, tc.want)
		}
	}
	if n := len(appendISO(nil, 1790251200000000000, 7)); n != 28 {
		t.Errorf("Tardis time is %d bytes, tardis-node slices 28", n)
	}
}

func TestFormatNames(t *testing.T) {
	for _, f := range []Format{NDJSON, Tardis, HFTBacktest} {
		g, err := ParseFormat(f.String())
		if err != nil || g != f {
			t.Errorf("ParseFormat(%q) = %v, %v", f, g, err)
		}
	}
	if _, err := ParseFormat("csv"); !errors.Is(err, ErrFormat) {
		t.Errorf("ParseFormat(csv) err = %v", err)
	}
	if _, err := NewImporter(Format(9), &memSink{}); !errors.Is(err, ErrFormat) {
		t.Errorf("NewImporter(9) err = %v", err)
	}
	for path, want := range map[string]Compression{"a.gz": Gzip, "a.ZST": Zstd, "a.zstd": Zstd, "a.txt": None, "-": None} {
		if got := CompressionFromPath(path); got != want {
			t.Errorf("CompressionFromPath(%s) = %s, want %s", path, got, want)
		}
	}
}

// nullSink counts appends without keeping anything.
type nullSink struct{ n uint64 }

func (s *nullSink) Append(*datasets.Record) (uint64, error) { s.n++; return s.n, nil }

// TestImportAllocs: once warm, importing a line allocates nothing.
func TestImportAllocs(t *testing.T) {
	for _, tc := range []struct {
		f    Format
		line string
	}{
		{Tardis, "2026-09-24T12:00:00.1370000Z {\"channel\":\"pong\"}\n"},
		{HFTBacktest, "1790251200012345678 {\"channel\":\"pong\"}\n"},
		{NDJSON, "{\"recv_ns\":1,\"frame\":{\"channel\":\"pong\"}}\n"},
		{NDJSON, "{\"channel\":\"pong\"}\n"},
	} {
		data := bytes.Repeat([]byte(tc.line), 64)
		im, _ := NewImporter(tc.f, &nullSink{})
		r := bytes.NewReader(data)
		im.Import("x", r)
		allocs := testing.AllocsPerRun(20, func() {
			r.Reset(data)
			im.Import("x", r)
		})
		im.Close()
		if allocs/64 > 0.05 {
			t.Errorf("%s %q: %.2f allocations per 64 lines", tc.f, tc.line[:12], allocs)
		}
	}
}

// TestExportAllocs: a call allocates its line buffer a few times while it
// grows, then nothing per record.
func TestExportAllocs(t *testing.T) {
	recs := make([]datasets.Record, 1000)
	for i := range recs {
		recs[i] = datasets.Record{Kind: datasets.KindFrame, WallNs: 1790251200012345678 + int64(i), Payload: []byte(`{"channel":"pong"}`)}
	}
	for _, f := range []Format{Tardis, HFTBacktest, NDJSON} {
		src := &sliceSource{recs: recs}
		st := &ExportStats{Skipped: map[datasets.Kind]int64{}}
		bw := bufio.NewWriterSize(io.Discard, 4096)
		cfg := exportConfig{isoDigits: 7}
		allocs := testing.AllocsPerRun(50, func() {
			src.i = 0
			exportLoop(bw, src, f, &cfg, st)
		})
		if allocs > 8 {
			t.Errorf("%s: %.1f allocations per export of 1000 records", f, allocs)
		}
	}
}

func TestCRLF(t *testing.T) {
	data, _ := os.ReadFile("testdata/tardis_hyperliquid.txt")
	want, _, err := importBytes(t, Tardis, "lf", data)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := importBytes(t, Tardis, "crlf", bytes.ReplaceAll(data, []byte("\n"), []byte("\r\n")))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d records from CRLF lines, %d from LF", len(got), len(want))
	}
	for i := range want {
		if got[i].Kind != want[i].Kind || got[i].WallNs != want[i].WallNs || !bytes.Equal(got[i].Payload, want[i].Payload) {
			t.Fatalf("record %d differs between CRLF and LF", i)
		}
	}
}

func TestCompressionUnmarshalText(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Compression
	}{{"gzip", Gzip}, {"gz", Gzip}, {"zstd", Zstd}, {"zst", Zstd}, {"none", None}} {
		c := Compression(99)
		if err := c.UnmarshalText([]byte(tt.in)); err != nil || c != tt.want {
			t.Errorf("%q: %v, %v; want %v", tt.in, c, err, tt.want)
		}
		if c.String() != tt.want.String() {
			t.Errorf("%q: String %q", tt.in, c.String())
		}
	}
	for _, in := range []string{"", "GZIP", "xz", "snappy"} {
		c := Zstd
		if err := c.UnmarshalText([]byte(in)); !errors.Is(err, ErrFormat) || c != Zstd {
			t.Errorf("%q: %v, %v; want ErrFormat and c unchanged", in, c, err)
		}
	}
}

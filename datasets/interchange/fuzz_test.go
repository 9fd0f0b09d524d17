package interchange

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzImport feeds arbitrary bytes to every importer: no panic, errors are
// LineErrors, and whatever imports cleanly survives an NDJSON export and
// re-import unchanged (two paths to one answer).
func FuzzImport(f *testing.F) {
	files, _ := filepath.Glob("testdata/*")
	for _, p := range files {
		if fi, err := os.Stat(p); err != nil || fi.IsDir() || filepath.Ext(p) == ".md" {
			continue // testdata/fuzz holds the fuzzer's own corpus
		}
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		// Seeds of a few lines each, under 2 KiB: an input and the
		// minimising of a new one stay quick (the whole files as seeds ran
		// 20 inputs in 20 s).
		var seed []byte
		for _, line := range bytes.SplitAfter(b, []byte("\n")) {
			if len(line) > maxFuzzSeed {
				continue
			}
			if len(seed)+len(line) > maxFuzzSeed {
				for _, fm := range []Format{NDJSON, Tardis, HFTBacktest} {
					f.Add(seed, uint8(fm))
				}
				seed = nil
			}
			seed = append(seed, line...)
		}
		for _, fm := range []Format{NDJSON, Tardis, HFTBacktest} {
			f.Add(seed, uint8(fm))
		}
	}
	f.Add([]byte(`{"recv_ns":1,"kind":"sent","conn":2,"text":"PI\"NG"}`+"\n"+`{"recv_ns":2,"binary":true,"b64":"AAE="}`), uint8(NDJSON))
	f.Add([]byte("\n\n2019-06-01T00:00:00.1Z [1]\n\n"), uint8(Tardis))
	f.Fuzz(func(t *testing.T, data []byte, fm uint8) {
		if len(data) > maxFuzzInput {
			return
		}
		format := Format(fm%3 + 1)
		var sink memSink
		im, err := NewImporter(format, &sink, WithMaxLineSize(1<<16))
		if err != nil {
			t.Fatal(err)
		}
		defer im.Close()
		if err := im.Import("fuzz", bytes.NewReader(data)); err != nil {
			if _, ok := err.(*LineError); !ok {
				t.Fatalf("error %T is not a *LineError: %v", err, err)
			}
			return
		}
		var buf bytes.Buffer
		if _, err := ExportRaw(&buf, &sliceSource{recs: sink.recs}, NDJSON); err != nil {
			t.Fatalf("export of imported records: %v", err)
		}
		var back memSink
		im2, _ := NewImporter(NDJSON, &back)
		defer im2.Close()
		if err := im2.Import("export", &buf); err != nil {
			t.Fatalf("re-import of the export: %v\n%s", err, buf.Bytes())
		}
		if len(back.recs) != len(sink.recs) {
			t.Fatalf("%d records back, want %d", len(back.recs), len(sink.recs))
		}
		for i, a := range sink.recs {
			b := back.recs[i]
			if a.Kind != b.Kind || a.Flags != b.Flags || a.Conn != b.Conn || a.WallNs != b.WallNs ||
				!bytes.Equal(a.Payload, b.Payload) {
				t.Fatalf("record %d: %+v %q became %+v %q", i, a, a.Payload, b, b.Payload)
			}
		}
	})
}

// Fuzz seeds and inputs are bounded so that the fuzzers explore: an input
// of a few KB and the minimising of one are fast.
const (
	maxFuzzSeed  = 2 << 10
	maxFuzzInput = 16 << 10
)

// FuzzValidJSON: validJSON must agree with encoding/json.Valid.
func FuzzValidJSON(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.ndjson")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		for _, l := range bytes.Split(b, []byte("\n")) {
			f.Add(l)
		}
	}
	for _, s := range []string{`{}`, `[]`, ` [1, -0.5e+3, "a\u00e9\n", true, false, null, {"k": []}] `, `{"a":1,}`,
		`[01]`, `"\x"`, `1.`, `-`, `{"a" 1}`, `[1 2]`, `"\ud800"`, "\"\x01\"", `nul`, `[[[[[]]]]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid says %v", b, got, want)
		}
	})
}

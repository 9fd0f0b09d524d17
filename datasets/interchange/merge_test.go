package interchange

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/datasets"
)

func TestImportMerged(t *testing.T) {
	var sink memSink
	im, _ := NewImporter(HFTBacktest, &sink)
	defer im.Close()
	a := "10 {\"a\":1}\n30 {\"a\":3}\n30 {\"a\":4}\n"
	b := "\n20 {\"b\":2}\n30 {\"b\":3}\n40 {\"b\":4}\n"
	c := ""
	if err := im.ImportMerged([]string{"a", "b", "c"}, []io.Reader{strings.NewReader(a), strings.NewReader(b), strings.NewReader(c)}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range sink.recs {
		got = append(got, fmt.Sprintf("%d%s", r.WallNs, r.Payload))
	}
	want := `10{"a":1} 20{"b":2} 30{"a":3} 30{"a":4} 30{"b":3} 40{"b":4}`
	if strings.Join(got, " ") != want {
		t.Fatalf("merged %v\nwant   %s", got, want)
	}
	if st := im.Stats(); st.Backwards != 0 || st.Files != 3 || st.Skipped != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestImportMergedTardisDisconnect(t *testing.T) {
	var sink memSink
	im, _ := NewImporter(Tardis, &sink)
	defer im.Close()
	a := "1970-01-01T00:00:00.000000010Z A1\n\n1970-01-01T00:00:00.000000050Z A5\n"
	b := "1970-01-01T00:00:00.000000020Z B2\n1970-01-01T00:00:00.000000030Z B3\n"
	if err := im.ImportMerged([]string{"a", "b"}, []io.Reader{strings.NewReader(a), strings.NewReader(b)}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range sink.recs {
		if r.Kind == datasets.KindDisconnect {
			got = append(got, fmt.Sprintf("%d:disconnect", r.WallNs))
		} else {
			got = append(got, fmt.Sprintf("%d:%s", r.WallNs, r.Payload))
		}
	}
	// a's disconnect follows A1 and is read ahead of B2: it stays at 10.
	want := "10:A1 10:disconnect 20:B2 30:B3 50:A5"
	if strings.Join(got, " ") != want {
		t.Fatalf("merged %v\nwant   %s", got, want)
	}
	if im.Stats().Backwards != 0 {
		t.Errorf("stats %+v", im.Stats())
	}
}

func TestImportMergedErrors(t *testing.T) {
	var sink memSink
	im, _ := NewImporter(NDJSON, &sink)
	defer im.Close()
	err := im.ImportMerged([]string{"w", "p"}, []io.Reader{strings.NewReader(`{"recv_ns":1,"frame":{}}`), strings.NewReader(`{"a":1}`)})
	var le *LineError
	if !errors.As(err, &le) || le.File != "p" || le.Line != 1 || !errors.Is(err, ErrMerge) {
		t.Fatalf("plain NDJSON in a merge: err = %v", err)
	}
	im2, _ := NewImporter(HFTBacktest, &sink)
	defer im2.Close()
	err = im2.ImportMerged([]string{"ok", "bad"}, []io.Reader{strings.NewReader("1 {}\n2 {}\n3 {}\n"), strings.NewReader("2 {}\nzz {}\n")})
	if !errors.As(err, &le) || le.File != "bad" || le.Line != 2 || !errors.Is(err, ErrTime) {
		t.Fatalf("bad line in a merge: err = %v", err)
	}
}

// TestImportFilesMerged splits a real hftbacktest file in two (as the
// collector does per symbol), imports both merged, and exports the original.
func TestImportFilesMerged(t *testing.T) {
	data, _ := os.ReadFile("testdata/hftbacktest_polymarket.txt")
	lines := bytes.SplitAfter(data, []byte("\n"))
	var odd, even []byte
	for i, l := range lines {
		if i%2 == 0 {
			even = append(even, l...)
		} else {
			odd = append(odd, l...)
		}
	}
	dir := t.TempDir()
	p1 := writeFile(t, dir, "odd.gz", compress(t, Gzip, odd))
	p2 := writeFile(t, dir, "even.gz", compress(t, Gzip, even))
	ds := filepath.Join(dir, "ds")
	st, err := ImportFiles(ds, datasets.Manifest{Venue: "polymarket"}, HFTBacktest, []string{p1, p2}, WithMerge())
	if err != nil {
		t.Fatal(err)
	}
	if st.Backwards != 0 || st.Files != 2 {
		t.Fatalf("stats %+v", st)
	}
	out, _ := exportDataset(t, ds, HFTBacktest)
	if !bytes.Equal(out, data) {
		t.Fatalf("merged export differs:\n%s\nwant\n%s", out, data)
	}
}

package columnar

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
)

// typedTestColumns is the ColumnsFunc of typedTestSchema.
func typedTestColumns(names []string, _ map[string]string) ([]Column, error) {
	var got []string
	for _, c := range typedTestSchema.Columns {
		got = append(got, c.Name)
	}
	if !slices.Equal(names, got) {
		return nil, errors.New("not the test table")
	}
	return typedTestSchema.Columns, nil
}

// rewrite writes c again through a TypedTable, in format f with c's
// schema and options.
func rewrite(t testing.TB, c *Contents, f Format) []byte {
	t.Helper()
	var b bytes.Buffer
	sc := c.Schema
	if sc.Name == "" {
		sc.Name = typedTestSchema.Name
	}
	tt, err := NewTypedTable(&b, sc, f, c.Options)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range c.Rows {
		for i, cell := range row {
			tt.Set(i, cell)
		}
		if err := tt.EndRow(); err != nil {
			t.Fatal(err)
		}
	}
	if err := tt.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// A typed table read back and written again is the same file, byte for
// byte, in every format and with every option the file shows: the codec,
// the batch size, the source datasets, nulls and the caller's metadata.
func TestReadTypedRewritesTheSameBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    Format
		o    Options
		rows int
	}{
		{"parquet", Parquet, Options{}, 23},
		{"parquet zstd batches", Parquet, Options{Compression: Zstd, BatchRows: 5, Datasets: []string{"a/b", "c"}}, 23},
		{"parquet none", Parquet, Options{Compression: Uncompressed}, 7},
		{"parquet empty", Parquet, Options{}, 0},
		{"arrow", Arrow, Options{}, 23},
		{"arrow zstd batches", Arrow, Options{Compression: Zstd, BatchRows: 4, Datasets: []string{"x"}}, 23},
		{"arrow empty", Arrow, Options{}, 0},
		{"csv", CSV, Options{}, 23},
		{"csv empty", CSV, Options{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var orig bytes.Buffer
			writeTyped(t, &orig, tc.f, typedRows(tc.rows), tc.o)
			c, err := ReadTyped(orig.Bytes(), typedTestColumns, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if c.Format != tc.f || len(c.Rows) != tc.rows {
				t.Fatalf("read %s with %d rows, want %s with %d", c.Format, len(c.Rows), tc.f, tc.rows)
			}
			if tc.f != CSV && (c.Schema.Name != "fills" || c.Schema.Metadata["tapedeck.strategy"] != "mm" || len(c.Schema.Metadata) != 1) {
				t.Fatalf("schema %+v", c.Schema)
			}
			if tc.rows > 1 && c.Rows[1][6].I != 1_000_000_007 || tc.rows > 0 && !c.Rows[0][7].Null {
				t.Fatalf("rows %+v", c.Rows[:2])
			}
			if got := rewrite(t, c, tc.f); !bytes.Equal(got, orig.Bytes()) {
				t.Fatalf("rewritten: %d bytes, want the %d read (options read %+v)", len(got), orig.Len(), c.Options)
			}
		})
	}
}

// Damaged and foreign input is an error naming the format, never a panic:
// every prefix of a real file, and tables of other columns or types.
func TestReadTypedRefusesBadInput(t *testing.T) {
	for _, f := range []Format{Parquet, Arrow, CSV} {
		var b bytes.Buffer
		writeTyped(t, &b, f, typedRows(9), Options{BatchRows: 4})
		data := b.Bytes()
		for n := 0; n < len(data); n += max(1, len(data)/97) {
			if f == CSV && bytes.LastIndexByte(data[:n], '\n') == n-1 {
				continue // a CSV cut after a line is a shorter table
			}
			if _, err := ReadTyped(data[:n], typedTestColumns, 1000); err == nil {
				t.Fatalf("%s cut at %d of %d bytes: read", f, n, len(data))
			}
		}
		other := func([]string, map[string]string) ([]Column, error) {
			cols := slices.Clone(typedTestSchema.Columns)
			cols[5].Scale = 2 // price at another scale
			return cols, nil
		}
		if _, err := ReadTyped(data, other, 1000); f != CSV && (err == nil || !strings.Contains(err.Error(), "price")) {
			t.Fatalf("%s read with another price scale: %v", f, err)
		}
		if _, err := ReadTyped(data, typedTestColumns, 8); err == nil || !strings.Contains(err.Error(), "more than 8 rows") {
			t.Fatalf("%s: 9 rows read with a limit of 8: %v", f, err)
		}
		refuse := func([]string, map[string]string) ([]Column, error) { return nil, errors.New("not mine") }
		if _, err := ReadTyped(data, refuse, 1000); err == nil || !strings.Contains(err.Error(), "not mine") || !strings.Contains(err.Error(), f.String()) {
			t.Fatalf("%s: %v", f, err)
		}
	}
}

func TestSniffFormat(t *testing.T) {
	for head, want := range map[string]Format{"PAR1\x15": Parquet, "ARROW1\x00\x00": Arrow, "point,strategy\n": CSV, "": CSV, "PAR": CSV} {
		if got := SniffFormat([]byte(head)); got != want {
			t.Errorf("%q: %s, want %s", head, got, want)
		}
	}
	for name, want := range map[string]Format{"a/sweep.parquet": Parquet, "x.arrow": Arrow, "s.csv": CSV, "csv": 0, "s.json": 0, ".csv": 0} {
		if got, ok := FormatOfName(name); got != want || ok != (want != 0) {
			t.Errorf("%q: %s %v, want %s", name, got, ok, want)
		}
	}
}

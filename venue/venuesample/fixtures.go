package samplegen

import (
	"bufio"
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/tapedeck/tapedeck/book"
)

// The real frames the sessions start from; PROVENANCE.md in testdata says
// where each comes from.
//
//go:embed testdata/polymarket/*.ndjson testdata/hyperliquid/*.ndjson
var realFS embed.FS

// realLines returns the lines of one embedded fixture.
func realLines(name string) [][]byte {
	b, err := realFS.ReadFile("testdata/" + name)
	if err != nil {
		panic(fmt.Sprintf("samplegen: embedded fixture %s: %v", name, err)) // a build defect, not input
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			out = append(out, append([]byte(nil), sc.Bytes()...))
		}
	}
	return out
}

// MustJSON decodes an embedded fixture line; fixtures are fixed at build
// time, so a failure is a defect of this package.
func MustJSON(line []byte, v any) {
	if err := json.Unmarshal(line, v); err != nil {
		panic(fmt.Sprintf("samplegen: embedded fixture: %v", err))
	}
}

func MustDec(s string, decimals uint8) int64 {
	v, err := book.ParseDecimal([]byte(s), decimals)
	if err != nil {
		panic(fmt.Sprintf("samplegen: embedded fixture value %q: %v", s, err))
	}
	return v
}

// Level is one price level: px and sz at the venue's scale, n resting orders
// (Hyperliquid only).
type Level struct {
	Px, Sz int64
	N      int64
}

// SortLevels sorts ascending by price when asc, else descending.
func SortLevels(ls []Level, asc bool) {
	sort.Slice(ls, func(i, j int) bool {
		if asc {
			return ls[i].Px < ls[j].Px
		}
		return ls[i].Px > ls[j].Px
	})
}

package bench

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ParseOutput reads go test -bench output and returns, per scenario name and
// unit, the values of every run in order. Names lose the "Benchmark" prefix
// and the -GOMAXPROCS suffix; lines that are not benchmark results are
// ignored. A result line with an odd value/unit layout is an error naming
// the line.
func ParseOutput(r io.Reader) (map[string]map[string][]float64, error) {
	out := map[string]map[string][]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.ParseInt(f[1], 10, 64); err != nil {
			continue // "BenchmarkX" alone on a line, or a log line
		}
		if (len(f)-2)%2 != 0 {
			return nil, fmt.Errorf("bench: output line %d: odd value/unit pairs: %q", line, sc.Text())
		}
		name := trimProcs(strings.TrimPrefix(f[0], "Benchmark"))
		units := out[name]
		if units == nil {
			units = map[string][]float64{}
			out[name] = units
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("bench: output line %d: value %q: %w", line, f[i], err)
			}
			units[f[i+1]] = append(units[f[i+1]], v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("bench: read output: %w", err)
	}
	return out, nil
}

// trimProcs drops the -N GOMAXPROCS suffix go test appends to a name.
func trimProcs(name string) string {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return name
	}
	if _, err := strconv.Atoi(name[i+1:]); err != nil {
		return name
	}
	return name[:i]
}

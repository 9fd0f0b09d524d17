package research

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strings"
)

// MaxPoints bounds a grid: a sweep of more points is refused before any
// data is read (a typo such as 0:1:0.0001 would otherwise ask for millions
// of runs).
const MaxPoints = 10000

// Axis is one swept parameter and the values it takes, in order. A Name of
// the form STRATEGY.PARAM applies to that strategy only; a bare name to
// every strategy of the run that has the parameter.
type Axis struct {
	Name   string
	Values []string
}

// ParseAxis parses a --sweep value: NAME=LO:HI:STEP, a range from LO to HI
// inclusive in steps of STEP (decimal arithmetic: 0.01:0.05:0.01 gives
// 0.01, 0.02, 0.03, 0.04, 0.05, each with STEP's or the bounds' decimals),
// or NAME=V1,V2,…, a list taken as given.
func ParseAxis(s string) (Axis, error) {
	name, spec, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" || spec == "" {
		return Axis{}, fmt.Errorf("sweep %q: want NAME=LO:HI:STEP or NAME=V1,V2,…", s)
	}
	a := Axis{Name: name}
	if strings.Count(spec, ":") == 2 && !strings.Contains(spec, ",") {
		parts := strings.Split(spec, ":")
		vals, err := decimalRange(parts[0], parts[1], parts[2])
		if err != nil {
			return Axis{}, fmt.Errorf("sweep %q: %v", s, err)
		}
		a.Values = vals
		return a, nil
	}
	seen := map[string]bool{}
	for _, v := range strings.Split(spec, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			return Axis{}, fmt.Errorf("sweep %q: empty value in the list", s)
		}
		if seen[v] {
			return Axis{}, fmt.Errorf("sweep %q: %s is listed twice", s, v)
		}
		seen[v] = true
		a.Values = append(a.Values, v)
	}
	return a, nil
}

// decimalRange lists lo, lo+step, … ≤ hi exactly, written with the largest
// number of decimals among the three.
func decimalRange(lo, hi, step string) ([]string, error) {
	var l, h, st big.Rat
	for _, p := range []struct {
		s string
		r *big.Rat
	}{{lo, &l}, {hi, &h}, {step, &st}} {
		if _, ok := p.r.SetString(strings.TrimSpace(p.s)); !ok || strings.ContainsAny(p.s, "/eE") {
			return nil, fmt.Errorf("%q is not a decimal number", p.s)
		}
	}
	if st.Sign() <= 0 {
		return nil, errors.New("the step must be positive")
	}
	if h.Cmp(&l) < 0 {
		return nil, errors.New("the range ends before it starts")
	}
	dec := max(decimals(lo), decimals(hi), decimals(step))
	var out []string
	for v := new(big.Rat).Set(&l); v.Cmp(&h) <= 0; v.Add(v, &st) {
		if len(out) == MaxPoints {
			return nil, fmt.Errorf("more than %d values", MaxPoints)
		}
		out = append(out, v.FloatString(dec))
	}
	return out, nil
}

func decimals(s string) int {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '.'); i >= 0 {
		return len(s) - i - 1
	}
	return 0
}

// Point is one parameter set of a sweep: a value for each swept name.
type Point struct {
	Index  int               // position in the whole sweep, from 0
	Values map[string]string // swept name → value
}

// Grid is the Cartesian product of the axes, the first axis varying
// slowest, in the order the values were given.
func Grid(axes []Axis) ([]Point, error) {
	names := map[string]bool{}
	total := 1
	for _, a := range axes {
		if names[a.Name] {
			return nil, fmt.Errorf("sweep: %s is swept twice", a.Name)
		}
		names[a.Name] = true
		if len(a.Values) == 0 {
			return nil, fmt.Errorf("sweep: %s has no values", a.Name)
		}
		total *= len(a.Values)
		if total > MaxPoints {
			return nil, fmt.Errorf("sweep: more than %d points", MaxPoints)
		}
	}
	pts := make([]Point, total)
	for i := range pts {
		pts[i] = Point{Index: i, Values: make(map[string]string, len(axes))}
		rest := i
		for k := len(axes) - 1; k >= 0; k-- {
			n := len(axes[k].Values)
			pts[i].Values[axes[k].Name] = axes[k].Values[rest%n]
			rest /= n
		}
	}
	return pts, nil
}

// ReadGrid reads an explicit list of points from CSV: a header naming the
// parameters, then one row per point (every cell set). It returns the
// names in the header's order.
func ReadGrid(r io.Reader) ([]string, []Point, error) {
	cr := csv.NewReader(io.LimitReader(r, 64<<20))
	cr.Comment = '#'
	head, err := cr.Read()
	if err != nil {
		return nil, nil, fmt.Errorf("sweep file: no header: %w", err)
	}
	seen := map[string]bool{}
	for i, h := range head {
		head[i] = strings.TrimSpace(h)
		if head[i] == "" || seen[head[i]] {
			return nil, nil, fmt.Errorf("sweep file: header column %d is empty or repeated", i+1)
		}
		seen[head[i]] = true
	}
	var pts []Point
	for {
		row, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("sweep file: %w", err)
		}
		if len(pts) == MaxPoints {
			return nil, nil, fmt.Errorf("sweep file: more than %d points", MaxPoints)
		}
		p := Point{Index: len(pts), Values: make(map[string]string, len(head))}
		for i, v := range row {
			if v = strings.TrimSpace(v); v == "" {
				line, _ := cr.FieldPos(i)
				return nil, nil, fmt.Errorf("sweep file: line %d: %s is empty", line, head[i])
			}
			p.Values[head[i]] = v
		}
		pts = append(pts, p)
	}
	if len(pts) == 0 {
		return nil, nil, errors.New("sweep file: no points")
	}
	return head, pts, nil
}

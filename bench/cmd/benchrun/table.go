package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/tapedeck/tapedeck/bench"
)

// printReport writes the primary units of every scenario: aligned columns on
// a terminal, TSV otherwise.
func printReport(w io.Writer, r *bench.Report, tty bool) error {
	rows := [][]string{{"scenario", "unit", "median", "p95", "runs"}}
	hasPerUnit := map[string]bool{}
	for _, s := range r.Scenarios {
		if strings.HasPrefix(s.Unit, "ns/") && s.Unit != "ns/op" {
			hasPerUnit[s.Name] = true
		}
	}
	for _, s := range r.Scenarios {
		if !bench.Primary(s.Unit) || (s.Unit == "ns/op" && hasPerUnit[s.Name]) {
			continue
		}
		rows = append(rows, []string{s.Name, s.Unit, num(s.Median), num(s.P95), strconv.Itoa(s.Runs)})
	}
	return printRows(w, rows, tty)
}

func printGate(w io.Writer, res *bench.GateResult, tty bool) error {
	rows := [][]string{{"scenario", "unit", "baseline", "current", "slowdown", "band", "pairs", "verdict"}}
	for _, c := range res.Comparisons {
		rows = append(rows, []string{c.Scenario, c.Unit, num(c.BaseMedian), num(c.CurMedian),
			ratio(c.Ratio), "[" + ratio(c.Lo) + ", " + ratio(c.Hi) + "]", strconv.Itoa(c.Pairs), c.Verdict.String()})
	}
	if err := printRows(w, rows, tty); err != nil {
		return err
	}
	for _, m := range res.Missing {
		if _, err := fmt.Fprintf(w, "missing in current: %s\n", m); err != nil {
			return err
		}
	}
	return nil
}

func printRows(w io.Writer, rows [][]string, tty bool) error {
	if !tty {
		for _, r := range rows {
			if _, err := fmt.Fprintln(w, strings.Join(r, "\t")); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// num formats a measurement with 4 significant digits.
func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case math.Abs(v) >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func ratio(v float64) string {
	if math.IsNaN(v) || v == 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

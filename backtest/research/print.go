package research

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tapedeck/tapedeck/backtest"
)

// String is the point's values as "name=value" pairs in name order,
// separated by spaces ("" for a point of no swept names).
func (p Point) String() string {
	ps := make([]string, 0, len(p.Values))
	for k, v := range p.Values {
		ps = append(ps, k+"="+v)
	}
	slices.Sort(ps)
	return strings.Join(ps, " ")
}

// sweepRow is one run of a sweep as PrintSweep's JSON has it.
type sweepRow struct {
	Point    int               `json:"point"`
	Strategy string            `json:"strategy"`
	Values   map[string]string `json:"values,omitempty"`
	Summary  *backtest.Summary `json:"summary"`
}

// PrintSweep prints the runs of a sweep for people, as `replay backtest
// --sweep` does: one right-aligned row per run, in the order given, with its
// point, strategy, the value of each swept name in axes, and its metrics
// (pnl, fees, turnover, fill ratio, max drawdown, Sharpe, Sortino, fills,
// digest); with asJSON, an indented JSON array of every run's point,
// strategy, values and whole summary instead. WriteTable writes the
// machine-readable table.
func PrintSweep(w io.Writer, runs []*Run, axes []string, asJSON bool) error {
	if asJSON {
		rows := make([]sweepRow, len(runs))
		for i, r := range runs {
			rows[i] = sweepRow{r.Point.Index, r.Strategy, r.Point.Values, &r.Result.Summary}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "point\tstrategy\t")
	for _, a := range axes {
		fmt.Fprintf(tw, "%s\t", a)
	}
	fmt.Fprintln(tw, "pnl\tfees\tturnover\tfill ratio\tmax dd\tsharpe\tsortino\tfills\tdigest\t")
	for _, r := range runs {
		m := r.Metrics
		fmt.Fprintf(tw, "%d\t%s\t", r.Point.Index, r.Strategy)
		for _, a := range axes {
			fmt.Fprintf(tw, "%s\t", r.Point.Values[a])
		}
		fmt.Fprintf(tw, "%.6f\t%.6f\t%.2f\t%.4f\t%.6f\t%.3f\t%.3f\t%d\t%s\t\n", m.PnL, m.Fees, m.Turnover, m.FillRatio, m.MaxDrawdown, m.Sharpe, m.Sortino, m.Fills, m.Digest)
	}
	return tw.Flush()
}

// WriteTable prints the walk-forward run for people, as `replay backtest
// --walk` does: one row per window and strategy with the window's number
// (from 1), its test start (RFC 3339, UTC), the point chosen on the train
// window, its train objective and its test pnl and digest. Report is the
// JSON form.
func (wk *Walk) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "window\ttest from\tstrategy\tchosen\ttrain "+wk.Objective+"\ttest pnl\tdigest")
	for i, win := range wk.Windows {
		for _, c := range win.Chosen {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.6g\t%.6f\t%s\n", i+1, time.Unix(0, win.TestFromNs).UTC().Format(time.RFC3339),
				c.Strategy, c.Point, c.TrainObjective, c.Test.Metrics.PnL, c.Test.Metrics.Digest)
		}
	}
	return tw.Flush()
}

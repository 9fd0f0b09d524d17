package research

import (
	"cmp"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tapedeck/tapedeck/backtest"
	"github.com/tapedeck/tapedeck/replayer"
)

// Sheet is what a tearsheet shows: one run in detail (Main), and for a
// sweep every point's figures; for a walk-forward its windows.
type Sheet struct {
	Title     string
	Datasets  []string
	Main      *Run // the run shown in detail; nil: none (a walk shows its windows)
	Runs      []*Run
	Axes      []string
	Objective string // the figure the heatmap shows (default pnl)
	Replay    *replayer.Summary
	Books     *BookSampler // nil: fills are drawn without the market
	Walk      *Walk
}

// WriteHTML writes the tearsheet: one self-contained HTML file, inline SVG,
// no script and nothing loaded, the same bytes for the same runs. Every
// summary figure carries its name (the JSON summary's key, data-key) and
// its exact value (data-value) beside the rounded text shown.
func (s *Sheet) WriteHTML(w io.Writer) error {
	obj := cmp.Or(s.Objective, "pnl")
	v := &view{Sheet: s, Obj: obj}
	if s.Main != nil {
		v.figures()
		v.Charts = append(v.Charts,
			chartOf("Equity", v.equityChart()),
			chartOf("Drawdown", v.drawdownChart()),
			chartOf("Inventory", v.inventoryChart()))
		for _, id := range v.topInstruments(2) {
			v.Charts = append(v.Charts, chartOf("Fills over the market: "+shorten(id, 24), v.fillsChart(id)))
		}
		v.Charts = append(v.Charts,
			chartOf("Markouts by horizon (mean per unit)", v.markoutChart()),
			chartOf("PnL by hour (UTC)", v.hourChart()))
		v.byInstrument()
	}
	if len(s.Runs) > 1 {
		v.sweep()
	}
	if s.Walk != nil {
		v.walk()
	}
	if s.Replay != nil {
		v.coverage()
	}
	return sheetTmpl.Execute(w, v)
}

type figure struct{ Key, Label, Value, Exact string }

type chart struct {
	Title string
	SVG   template.HTML
}

func chartOf(title string, svg template.HTML) chart { return chart{title, svg} }

type view struct {
	*Sheet
	Obj       string
	Figures   []figure
	Params    [][2]string
	Charts    []chart
	InstRows  [][]string
	FeeRows   [][]string
	Heatmap   template.HTML
	SweepHead []string
	SweepRows [][]string
	WalkRows  [][]string
	WalkChart template.HTML
	Coverage  []string
}

func money(v float64) string { return strconv.FormatFloat(v, 'f', 6, 64) }
func jsonNum(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func (v *view) figures() {
	r := v.Main
	s := &r.Result.Summary
	add := func(key, label string, val float64, text string) {
		v.Figures = append(v.Figures, figure{key, label, text, jsonNum(val)})
	}
	add("pnl", "PnL", s.PnL, money(s.PnL))
	add("fees", "Fees", s.Fees, money(s.Fees))
	add("rebates", "Rebates", s.Rebates, money(s.Rebates))
	add("funding", "Funding", s.Funding, money(s.Funding))
	add("turnover", "Turnover", s.Turnover, money(s.Turnover))
	add("fill_ratio", "Fill ratio", s.FillRatio, strconv.FormatFloat(s.FillRatio, 'f', 4, 64))
	add("max_drawdown", "Max drawdown", s.MaxDrawdown, money(s.MaxDrawdown))
	period := time.Duration(s.ReturnPeriodNs).String()
	add("sharpe", "Sharpe ("+period+" returns, annualized)", s.Sharpe, strconv.FormatFloat(s.Sharpe, 'f', 3, 64))
	add("sortino", "Sortino ("+period+" returns, annualized)", s.Sortino, strconv.FormatFloat(s.Sortino, 'f', 3, 64))
	add("peak_margin", "Peak margin", s.PeakMargin, money(s.PeakMargin))
	add("orders", "Orders", float64(s.Orders), strconv.Itoa(s.Orders))
	add("fills", "Fills", float64(s.Fills), fmt.Sprintf("%d (maker %d, taker %d)", s.Fills, s.MakerFills, s.TakerFills))
	for i := range v.Figures {
		f := &v.Figures[i]
		switch f.Key {
		case "orders":
			f.Value = strconv.Itoa(s.Orders)
		case "fills":
			f.Label = fmt.Sprintf("Fills (maker %d, taker %d)", s.MakerFills, s.TakerFills)
			f.Value = strconv.Itoa(s.Fills)
		}
	}
	keys := slices.Sorted(mapKeys(r.Params))
	for _, k := range keys {
		v.Params = append(v.Params, [2]string{k, r.Params[k]})
	}
	for _, u := range s.FeeRates {
		v.FeeRows = append(v.FeeRows, []string{u.Market, jsonNum(u.Rate), u.Source, strconv.Itoa(u.Fills), money(u.Fees)})
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// ---- charts ---------------------------------------------------------------

const cw, ch, padL, padR, padT, padB = 760.0, 220.0, 70.0, 12.0, 10.0, 26.0

type series struct {
	X, Y  []float64
	Color string
	Label string
	Steps bool
	Bars  bool // vertical bars from 0 instead of a line
}

// plot draws series over shared axes; marks are extra points drawn as
// small shapes (fills).
func plot(ss []series, marks []mark, yLabel func(float64) string) template.HTML {
	x0, x1, y0, y1 := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for i := range s.X {
			x0, x1 = math.Min(x0, s.X[i]), math.Max(x1, s.X[i])
			y0, y1 = math.Min(y0, s.Y[i]), math.Max(y1, s.Y[i])
		}
	}
	for _, m := range marks {
		x0, x1 = math.Min(x0, m.X), math.Max(x1, m.X)
		y0, y1 = math.Min(y0, m.Y), math.Max(y1, m.Y)
	}
	for _, s := range ss {
		if s.Bars && len(s.X) > 0 {
			y0, y1 = math.Min(y0, 0), math.Max(y1, 0)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img">`, int(cw), int(ch), int(cw), int(ch))
	if math.IsInf(x0, 0) {
		b.WriteString(`<text x="20" y="40" class="empty">no data</text></svg>`)
		return template.HTML(b.String())
	}
	if x1 == x0 {
		x1 = x0 + 1
	}
	if y1 == y0 {
		y0, y1 = y0-1, y1+1
	}
	px := func(x float64) float64 { return padL + (x-x0)/(x1-x0)*(cw-padL-padR) }
	py := func(y float64) float64 { return padT + (y1-y)/(y1-y0)*(ch-padT-padB) }
	fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" class="frame"/>`, f1(padL), f1(padT), f1(cw-padL-padR), f1(ch-padT-padB))
	for _, y := range []float64{y0, (y0 + y1) / 2, y1} {
		fmt.Fprintf(&b, `<text x="%s" y="%s" class="yl">%s</text>`, f1(padL-4), f1(py(y)+4), template.HTMLEscapeString(yLabel(y)))
	}
	fmt.Fprintf(&b, `<text x="%s" y="%s" class="xl">%s</text>`, f1(padL), f1(ch-6), template.HTMLEscapeString(tsLabel(x0)))
	fmt.Fprintf(&b, `<text x="%s" y="%s" class="xr">%s</text>`, f1(cw-padR), f1(ch-6), template.HTMLEscapeString(tsLabel(x1)))
	lx := cw - padR
	for i := len(ss) - 1; i >= 0; i-- {
		if ss[i].Label == "" {
			continue
		}
		lbl := shorten(ss[i].Label, 28)
		lx -= 7*float64(len([]rune(lbl))) + 18
		fmt.Fprintf(&b, `<rect x="%s" y="%s" width="10" height="10" fill="%s"/><text x="%s" y="%s" class="xl">%s</text>`,
			f1(lx), f1(padT+4), ss[i].Color, f1(lx+13), f1(padT+13), template.HTMLEscapeString(lbl))
	}
	for _, s := range ss {
		if len(s.X) == 0 {
			continue
		}
		if s.Bars {
			bw := math.Max(2, (cw-padL-padR)/float64(len(s.X)+1)*0.8)
			for i := range s.X {
				top, bot := py(math.Max(s.Y[i], 0)), py(math.Min(s.Y[i], 0))
				x := px(s.X[i]) - bw/2
				if len(s.X) == 1 {
					x = padL + (cw-padL-padR-bw)/2
				}
				fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s</title></rect>`,
					f1(x), f1(top), f1(bw), f1(math.Max(bot-top, 0.5)), s.Color, template.HTMLEscapeString(tsLabel(s.X[i])+": "+num(s.Y[i])))
			}
			continue
		}
		b.WriteString(`<path fill="none" stroke="` + s.Color + `" d="`)
		for i := range s.X {
			op := "L"
			if i == 0 {
				op = "M"
			} else if s.Steps {
				fmt.Fprintf(&b, "L%s %s", f1(px(s.X[i])), f1(py(s.Y[i-1])))
			}
			fmt.Fprintf(&b, "%s%s %s", op, f1(px(s.X[i])), f1(py(s.Y[i])))
		}
		b.WriteString(`"><title>` + template.HTMLEscapeString(s.Label) + `</title></path>`)
	}
	for _, m := range marks {
		x, y := px(m.X), py(m.Y)
		if m.Up {
			fmt.Fprintf(&b, `<path class="buy" d="M%s %sl4 7h-8z"/>`, f1(x), f1(y-4))
		} else {
			fmt.Fprintf(&b, `<path class="sell" d="M%s %sl4 -7h-8z"/>`, f1(x), f1(y+4))
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

type mark struct {
	X, Y float64
	Up   bool
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func tsLabel(ns float64) string {
	if ns > 1e17 {
		return time.Unix(0, int64(ns)).UTC().Format("2006-01-02 15:04:05")
	}
	return strconv.FormatFloat(ns, 'g', 6, 64)
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

func (v *view) equityChart() template.HTML {
	eq := series{Color: "#1f5fbf", Label: "equity"}
	for _, p := range v.Main.Result.Equity {
		eq.X, eq.Y = append(eq.X, float64(p.RecvNs)), append(eq.Y, float64(p.Equity)/1e10)
	}
	return plot([]series{eq}, nil, money2)
}

func (v *view) drawdownChart() template.HTML {
	dd := series{Color: "#c0392b", Label: "drawdown from the running peak", Steps: true}
	peak := math.Inf(-1)
	for _, p := range v.Main.Result.Equity {
		e := float64(p.Equity) / 1e10
		peak = math.Max(peak, e)
		dd.X, dd.Y = append(dd.X, float64(p.RecvNs)), append(dd.Y, e-peak)
	}
	return plot([]series{dd}, nil, money2)
}

func money2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// topInstruments are the n instruments with the most fills, then by id.
func (v *view) topInstruments(n int) []string {
	count := map[string]int{}
	for _, f := range v.Main.Result.Fills {
		count[f.Instrument]++
	}
	ids := slices.Collect(mapKeys(count))
	slices.SortFunc(ids, func(a, b string) int {
		if c := cmp.Compare(count[b], count[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return ids[:min(n, len(ids))]
}

var palette = []string{"#1f5fbf", "#c0392b", "#27ae60", "#8e44ad", "#d35400", "#16a085"}

func (v *view) inventoryChart() template.HTML {
	r := v.Main.Result
	ids := v.topInstruments(4)
	var ss []series
	for i, id := range ids {
		s := series{Color: palette[i%len(palette)], Label: id, Steps: true}
		sd := math.Pow10(int(r.Scales[id].SizeDecimals))
		for _, p := range r.Positions {
			if p.Instrument == id {
				s.X, s.Y = append(s.X, float64(p.RecvNs)), append(s.Y, float64(p.Position)/sd)
			}
		}
		ss = append(ss, s)
	}
	return plot(ss, nil, num)
}

// fillsChart draws an instrument's fills (▲ buys, ▼ sells) over the
// sampled best bid and ask.
func (v *view) fillsChart(id string) template.HTML {
	r := v.Main.Result
	pd := math.Pow10(int(r.Scales[id].PriceDecimals))
	var ss []series
	if v.Books != nil {
		if ts := v.Books.Series(id); ts != nil {
			bid := series{Color: "#27ae60", Label: "best bid", Steps: true}
			ask := series{Color: "#c0392b", Label: "best ask", Steps: true}
			for i, t := range ts.RecvNs {
				if ts.Bid[i] > 0 {
					bid.X, bid.Y = append(bid.X, float64(t)), append(bid.Y, float64(ts.Bid[i])/pd)
				}
				if ts.Ask[i] > 0 {
					ask.X, ask.Y = append(ask.X, float64(t)), append(ask.Y, float64(ts.Ask[i])/pd)
				}
			}
			ss = append(ss, bid, ask)
		}
	}
	var ms []mark
	for _, f := range r.Fills {
		if f.Instrument == id {
			ms = append(ms, mark{X: float64(f.RecvNs), Y: float64(f.Price) / pd, Up: f.Side == backtest.Buy})
		}
	}
	return plot(ss, ms, num)
}

func (v *view) markoutChart() template.HTML {
	s := series{Color: "#1f5fbf", Label: "mean markout per unit (x: seconds after the fill)"}
	hs := slices.Collect(mapKeys(v.Main.Result.Summary.Markouts))
	slices.SortFunc(hs, func(a, b string) int { return horizonNs(a) - horizonNs(b) })
	for _, h := range hs {
		s.X = append(s.X, float64(horizonNs(h))/1e9)
		s.Y = append(s.Y, v.Main.Result.Summary.Markouts[h])
	}
	return plot([]series{s}, nil, num)
}

func (v *view) hourChart() template.HTML {
	s := series{Color: "#1f5fbf", Label: "equity change per hour", Bars: true}
	prev := v.Main.Result.Summary.StartCash
	hour := int64(-1)
	last := prev
	flush := func() {
		s.X, s.Y = append(s.X, float64(hour*3600e9)), append(s.Y, last-prev)
		prev = last
	}
	for _, p := range v.Main.Result.Equity {
		if h := p.RecvNs / 3600e9; h != hour {
			if hour >= 0 {
				flush()
			}
			hour = h
		}
		last = float64(p.Equity) / 1e10
	}
	if hour >= 0 {
		flush()
	}
	return plot([]series{s}, nil, money2)
}

// byInstrument lists each traded instrument's fills, fees and PnL (the
// summary's InstrumentPnL: fills' cash flows, funding, settlement and the
// end position at its mark).
func (v *view) byInstrument() {
	r := v.Main.Result
	fees := map[string]float64{}
	n := map[string]int{}
	for _, f := range r.Fills {
		fees[f.Instrument] += float64(f.Fee) / 1e10
		n[f.Instrument]++
	}
	ids := slices.Sorted(mapKeys(r.Summary.InstrumentPnL))
	for _, id := range ids {
		v.InstRows = append(v.InstRows, []string{id, strconv.Itoa(n[id]), money(fees[id]), money(r.Summary.InstrumentPnL[id])})
	}
}

// ---- sweep, walk, coverage -------------------------------------------------

func (v *view) sweep() {
	v.SweepHead = append([]string{"point", "strategy"}, v.Axes...)
	v.SweepHead = append(v.SweepHead, "pnl", "fees", "turnover", "fill ratio", "max drawdown", "sharpe", "sortino", "fills", "digest")
	for _, r := range v.Runs {
		m := r.Metrics
		row := []string{strconv.Itoa(r.Point.Index), r.Strategy}
		for _, a := range v.Axes {
			row = append(row, r.Point.Values[a])
		}
		row = append(row, money(m.PnL), money(m.Fees), money(m.Turnover), strconv.FormatFloat(m.FillRatio, 'f', 4, 64),
			money(m.MaxDrawdown), strconv.FormatFloat(m.Sharpe, 'f', 3, 64), strconv.FormatFloat(m.Sortino, 'f', 3, 64),
			strconv.Itoa(m.Fills), m.Digest)
		v.SweepRows = append(v.SweepRows, row)
	}
	if len(v.Axes) >= 1 {
		v.Heatmap = v.heatmap()
	}
}

// heatmap draws the objective over the first two swept names (one row
// when one is swept), averaged over the other names' values and the
// strategies; cells run from red (lowest) to green (highest).
func (v *view) heatmap() template.HTML {
	ax, ay := v.Axes[0], ""
	if len(v.Axes) > 1 {
		ay = v.Axes[1]
	}
	var xs, ys []string
	sum := map[[2]string]float64{}
	cnt := map[[2]string]int{}
	for _, r := range v.Runs {
		x, y := r.Point.Values[ax], r.Point.Values[ay]
		if !slices.Contains(xs, x) {
			xs = append(xs, x)
		}
		if !slices.Contains(ys, y) {
			ys = append(ys, y)
		}
		o, _ := r.Metrics.Objective(v.Obj)
		sum[[2]string{x, y}] += o
		cnt[[2]string{x, y}]++
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for k, s := range sum {
		a := s / float64(cnt[k])
		sum[k] = a
		lo, hi = math.Min(lo, a), math.Max(hi, a)
	}
	const cell, left, top = 64.0, 90.0, 24.0
	w, h := left+cell*float64(len(xs))+10, top+28*float64(len(ys))+30
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" role="img">`, f1(w), f1(h))
	fmt.Fprintf(&b, `<text x="%s" y="14" class="xl">%s →</text>`, f1(left), template.HTMLEscapeString(ax))
	if ay != "" {
		fmt.Fprintf(&b, `<text x="4" y="14" class="xl">%s ↓</text>`, template.HTMLEscapeString(ay))
	}
	for i, x := range xs {
		fmt.Fprintf(&b, `<text x="%s" y="%s" class="xl">%s</text>`, f1(left+cell*float64(i)+4), f1(h-8), template.HTMLEscapeString(x))
	}
	for j, y := range ys {
		fmt.Fprintf(&b, `<text x="4" y="%s" class="xl">%s</text>`, f1(top+28*float64(j)+18), template.HTMLEscapeString(y))
		for i, x := range xs {
			a, ok := sum[[2]string{x, y}]
			if !ok {
				continue
			}
			t := 0.5
			if hi > lo {
				t = (a - lo) / (hi - lo)
			}
			col := fmt.Sprintf("rgb(%d,%d,90)", int(200*(1-t)+40), int(180*t+40))
			fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="26" fill="%s"><title>%s=%s %s=%s: %s %s</title></rect>`,
				f1(left+cell*float64(i)), f1(top+28*float64(j)), f1(cell-2), col,
				template.HTMLEscapeString(ax), template.HTMLEscapeString(x), template.HTMLEscapeString(ay), template.HTMLEscapeString(y),
				template.HTMLEscapeString(v.Obj), num(a))
			fmt.Fprintf(&b, `<text x="%s" y="%s" class="cell">%s</text>`, f1(left+cell*float64(i)+4), f1(top+28*float64(j)+17), num(a))
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func (v *view) walk() {
	w := v.Walk
	for i, win := range w.Windows {
		for _, c := range win.Chosen {
			var ps []string
			for _, k := range slices.Sorted(mapKeys(c.Point.Values)) {
				ps = append(ps, k+"="+c.Point.Values[k])
			}
			v.WalkRows = append(v.WalkRows, []string{strconv.Itoa(i + 1),
				tsLabel(float64(win.TrainFromNs)) + " – " + tsLabel(float64(win.TrainToNs)),
				tsLabel(float64(win.TestFromNs)) + " – " + tsLabel(float64(win.TestToNs)),
				c.Strategy, strings.Join(ps, " "), num(c.TrainObjective), money(c.Test.Metrics.PnL), c.Test.Metrics.Digest})
		}
	}
	var ss []series
	for i, s := range slices.Sorted(mapKeys(w.Equity)) {
		sr := series{Color: palette[i%len(palette)], Label: s}
		for _, p := range w.Equity[s] {
			sr.X, sr.Y = append(sr.X, float64(p.RecvNs)), append(sr.Y, float64(p.Equity)/1e10)
		}
		ss = append(ss, sr)
	}
	v.WalkChart = plot(ss, nil, money2)
}

func (v *view) coverage() {
	s := v.Replay
	var events uint64
	for _, n := range s.Events {
		events += n
	}
	v.Coverage = append(v.Coverage, fmt.Sprintf("%d frames decoded, %d venue events delivered, %d instruments", s.Frames, events, s.Instruments))
	if s.Damaged != nil {
		v.Coverage = append(v.Coverage, "damaged data was stepped over (see replay inspect): the backtest did not see those records")
	}
	kinds := slices.Sorted(mapKeys(s.Losses))
	var total uint64
	var parts []string
	for _, k := range kinds {
		total += s.Losses[k]
		parts = append(parts, fmt.Sprintf("%s %d", k, s.Losses[k]))
	}
	if total == 0 {
		v.Coverage = append(v.Coverage, "no losses in the data")
	} else {
		v.Coverage = append(v.Coverage, fmt.Sprintf("the data has %d losses (%s): the backtest ran over them, and each affected book was invalid until its next snapshot", total, strings.Join(parts, ", ")))
	}
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n/2] + "…" + s[len(s)-n/2+1:]
}

var sheetTmpl = template.Must(template.New("sheet").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>{{.Title}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:12px}td,th{padding:2px 8px;border-bottom:1px solid #eee;text-align:right}
td:first-child,th:first-child{text-align:left}
.frame{fill:none;stroke:#bbb}.yl{font-size:10px;text-anchor:end}.xl{font-size:10px}.xr{font-size:10px;text-anchor:end}
.cell{font-size:10px;fill:#fff}.buy{fill:#27ae60}.sell{fill:#c0392b}.empty{fill:#888}
.fig{display:inline-block;margin:0 18px 10px 0}.fig b{display:block;font-size:18px}
.mono{font-family:ui-monospace,monospace;font-size:11px}
</style></head><body>
<h1>{{.Title}}</h1>
<p class="mono">{{range .Datasets}}{{.}} {{end}}</p>
{{with .Main}}<h2>Run: {{.Strategy}}</h2>
<table>{{range $.Params}}<tr><td>{{index . 0}}</td><td>{{index . 1}}</td></tr>{{end}}</table>{{end}}
{{if .Figures}}<h2>Summary</h2><div id="figures">{{range .Figures}}<div class="fig">{{.Label}}<b data-key="{{.Key}}" data-value="{{.Exact}}">{{.Value}}</b></div>{{end}}</div>{{end}}
{{range .Charts}}<h2>{{.Title}}</h2>{{.SVG}}{{end}}
{{if .InstRows}}<h2>PnL by instrument</h2><table><tr><th>instrument</th><th>fills</th><th>fees</th><th>PnL</th></tr>{{range .InstRows}}<tr>{{range .}}<td class="mono">{{.}}</td>{{end}}</tr>{{end}}</table>{{end}}
{{if .FeeRows}}<h2>Fees and rebates</h2><table><tr><th>market</th><th>rate</th><th>source</th><th>fills</th><th>fees (net of rebates)</th></tr>{{range .FeeRows}}<tr>{{range .}}<td class="mono">{{.}}</td>{{end}}</tr>{{end}}</table>{{end}}
{{if .SweepRows}}<h2>Sweep: {{.Obj}} over the points</h2>{{.Heatmap}}
<table id="points"><tr>{{range .SweepHead}}<th>{{.}}</th>{{end}}</tr>{{range .SweepRows}}<tr>{{range .}}<td class="mono">{{.}}</td>{{end}}</tr>{{end}}</table>{{end}}
{{if .WalkRows}}<h2>Walk-forward ({{.Walk.Objective}})</h2>
<table id="walk"><tr><th>window</th><th>train</th><th>test</th><th>strategy</th><th>chosen</th><th>train {{.Walk.Objective}}</th><th>test PnL</th><th>test digest</th></tr>{{range .WalkRows}}<tr>{{range .}}<td class="mono">{{.}}</td>{{end}}</tr>{{end}}</table>
<h2>Out-of-sample equity, test windows stitched</h2>{{.WalkChart}}{{end}}
{{if .Coverage}}<h2>Data coverage</h2><ul>{{range .Coverage}}<li>{{.}}</li>{{end}}</ul>{{end}}
</body></html>
`))

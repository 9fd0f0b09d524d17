package report

import (
	_ "embed"
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/units"
)

//go:embed report.html.tmpl
var pageTemplate string

//go:embed report.css
var pageCSS string

// Colours of the marks, by loss kind (and the legend).
var kindColour = map[string]string{
	"disconnect":  "#c0262d",
	"reconnect":   "#e8772e",
	"stall":       "#d4a017",
	"overload":    "#7b3fb5",
	"write_error": "#1f1f1f",
	"gap":         "#c0262d",
}

const (
	chartW   = 900 // SVG user units of a timeline or chart
	labelW   = 190 // left label column of the coverage timeline
	rowH     = 16
	rowGap   = 4
	chartH   = 120
	smallH   = 90
	axisH    = 18
	plotLeft = 56
)

// WriteHTML writes the report as one self-contained HTML page.
func (r *Report) WriteHTML(w io.Writer) error {
	t, err := template.New("report").Funcs(template.FuncMap{
		"ts":       fmtNs,
		"dur":      fmtDur,
		"bytes":    fmtBytes,
		"conn":     fmtConn,
		"rate":     r.rateChart,
		"coverage": r.coverage,
		"midchart": r.midChart,
		"pct":      func(a, b uint64) string { return pct(a, b) },
		"sub":      func(a, b uint64) uint64 { return a - min(a, b) },
		"sub64":    func(a, b int64) int64 { return a - b },
		"bytes64":  func(n uint64) string { return fmtBytes(int64(n)) },
		"css":      func() template.CSS { return template.CSS(pageCSS) },
		"charted":  func() []*Instrument { return r.Instruments[:r.Charted] },
		"kinds":    func() []string { return []string{"disconnect", "reconnect", "stall", "overload", "write_error", "gap"} },
		"colour":   func(k string) template.CSS { return template.CSS("background:" + kindColour[k]) },
		"ns":       func(v int64) string { return strconv.FormatInt(v, 10) },
		"state":    datasetState,
		"damage": func(d []datasets.Damage) string {
			recs, exact, b, _, _ := datasets.DamageTotals(d)
			s := fmt.Sprintf("%d stretches, %d records, %s", len(d), recs, fmtBytes(b))
			if !exact {
				s = fmt.Sprintf("%d stretches, at least %d records, %s", len(d), recs, fmtBytes(b))
			}
			return s
		},
	}).Parse(pageTemplate)
	if err != nil {
		return err
	}
	return t.Execute(w, r)
}

func datasetState(m datasets.Manifest) string {
	s := "closed cleanly"
	switch {
	case m.Recovered:
		s = "recovered after the writer died"
	case !m.Clean:
		s = "not closed cleanly (crashed or still recording)"
	}
	if m.Repaired {
		s += "; repaired"
	}
	return s
}

func fmtNs(ns int64) string {
	if ns == 0 {
		return "–"
	}
	return time.Unix(0, ns).UTC().Format("2006-01-02 15:04:05.000")
}

func fmtDur(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d >= time.Hour:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	default:
		return d.String()
	}
}

func fmtBytes(n int64) string { return units.Bytes(n) }

func fmtConn(c uint32) string {
	if c == datasets.ConnAll {
		return "all"
	}
	return strconv.FormatUint(uint64(c), 10)
}

func pct(a, b uint64) string {
	if b == 0 {
		return "–"
	}
	return strconv.FormatFloat(100*float64(a)/float64(b), 'f', 1, 64) + " %"
}

// x maps a time to the SVG x of a plot spanning [left, left+width].
func (r *Report) x(ns int64, left, width float64) float64 {
	span := float64(r.EndNs - r.StartNs)
	if span <= 0 {
		return left
	}
	return left + width*float64(ns-r.StartNs)/span
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// num prints a chart value with enough digits to tell it from its
// neighbours.
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

// timeAxis draws the time labels under a plot.
func (r *Report) timeAxis(b *strings.Builder, left, width, y float64) {
	for i := 0; i <= 4; i++ {
		ns := r.StartNs + (r.EndNs-r.StartNs)*int64(i)/4
		xx := left + width*float64(i)/4
		anchor := "middle"
		if i == 0 {
			anchor = "start"
		} else if i == 4 {
			anchor = "end"
		}
		fmt.Fprintf(b, `<line class="tick" x1="%s" x2="%s" y1="%s" y2="%s"/>`, f1(xx), f1(xx), f1(y-axisH+4), f1(y-axisH+8))
		fmt.Fprintf(b, `<text class="axis" x="%s" y="%s" text-anchor="%s">%s</text>`, f1(xx), f1(y), anchor,
			html.EscapeString(time.Unix(0, ns).UTC().Format("15:04:05")))
	}
}

// rateChart is the messages-per-second area chart of a dataset.
func (r *Report) rateChart(d *Dataset) template.HTML {
	secs := float64(r.BucketNs) / 1e9
	peak := 0.0
	for _, n := range d.Frames {
		peak = max(peak, float64(n)/secs)
	}
	w, h := float64(chartW-plotLeft), float64(chartH)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-label="frames per second of dataset %d, peak %s">`,
		chartW, chartH+axisH+4, d.Index, num(peak))
	fmt.Fprintf(&b, `<rect class="plot" x="%d" y="0" width="%s" height="%s"/>`, plotLeft, f1(w), f1(h))
	if peak > 0 {
		var pts strings.Builder
		fmt.Fprintf(&pts, "%d,%s", plotLeft, f1(h))
		for i, n := range d.Frames {
			x0 := plotLeft + w*float64(i)/float64(r.Buckets)
			x1 := plotLeft + w*float64(i+1)/float64(r.Buckets)
			y := h - (float64(n)/secs)/peak*(h-4)
			fmt.Fprintf(&pts, " %s,%s %s,%s", f1(x0), f1(y), f1(x1), f1(y))
		}
		fmt.Fprintf(&pts, " %s,%s", f1(plotLeft+w), f1(h))
		fmt.Fprintf(&b, `<polygon class="area" points="%s"/>`, pts.String())
	}
	fmt.Fprintf(&b, `<text class="axis" x="%d" y="10" text-anchor="end">%s/s</text>`, plotLeft-4, num(peak))
	fmt.Fprintf(&b, `<text class="axis" x="%d" y="%s" text-anchor="end">0</text>`, plotLeft-4, f1(h))
	r.timeAxis(&b, plotLeft, w, h+axisH)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// runs returns the [from, to) bucket runs where active(i) holds.
func runs(n int, active func(int) bool) [][2]int {
	var out [][2]int
	for i := 0; i < n; {
		if !active(i) {
			i++
			continue
		}
		j := i
		for j < n && active(j) {
			j++
		}
		out = append(out, [2]int{i, j})
		i = j
	}
	return out
}

// mark draws one loss on a timeline row: its span when it has one (at least
// a hairline), a tick at its time otherwise.
func (r *Report) mark(b *strings.Builder, l datasets.Loss, y float64) {
	left, w := float64(labelW), float64(chartW-labelW)
	from, to := l.FromNs, l.ToNs
	if from == 0 || to < from {
		from, to = l.WallNs, l.WallNs
	}
	x0, x1 := r.x(from, left, w), r.x(to, left, w)
	title := fmt.Sprintf("%s, conn %s, seq %d: %s – %s", l.Kind, fmtConn(l.Conn), l.Seq, fmtNs(from), fmtNs(to))
	if l.Dropped > 0 {
		title += fmt.Sprintf(", %d dropped", l.Dropped)
	}
	if l.Detail != "" {
		title += ": " + l.Detail
	}
	fmt.Fprintf(b, `<rect class="mark" data-kind="%s" x="%s" y="%s" width="%s" height="%d" fill="%s"><title>%s</title></rect>`,
		html.EscapeString(l.Kind), f1(x0), f1(y-2), f1(max(x1-x0, 1.5)), rowH+4, kindColour[l.Kind], html.EscapeString(title))
}

// markRow draws the loss marks of one timeline row: its own losses and
// the session's, at most one mark per kind and time bucket, so that a row
// costs at most the buckets whatever the number of losses (a crafted
// dataset of a million loss records drawn on thousands of rows).
func (r *Report) markRow(b *strings.Builder, y float64, lists ...[]datasets.Loss) {
	type key struct {
		bucket int64
		kind   string
	}
	seen := map[key]bool{}
	for _, ls := range lists {
		for _, l := range ls {
			k := key{(l.WallNs - r.StartNs) / r.BucketNs, l.Kind}
			if seen[k] {
				continue
			}
			seen[k] = true
			r.mark(b, l, y)
		}
	}
}

// coverage is the timeline: a row per connection of every dataset, then a
// row per instrument.
func (r *Report) coverage() template.HTML {
	rows := 0
	for _, d := range r.Datasets {
		rows += len(d.Conns)
	}
	rows += len(r.Instruments)
	if len(r.Instruments) > 0 {
		rows++ // the separator
	}
	h := float64(rows*(rowH+rowGap)) + axisH + 6
	left, w := float64(labelW), float64(chartW-labelW)
	bw := w / float64(r.Buckets)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="timeline" id="timeline" viewBox="0 0 %d %s" role="img" aria-label="coverage timeline">`, chartW, f1(h))
	y := 2.0
	row := func(label, cls string, attrs string) {
		fmt.Fprintf(&b, `<g class="row %s"%s><text class="label" x="%s" y="%s" text-anchor="end">%s</text>`, cls, attrs, f1(left-6), f1(y+rowH-4), html.EscapeString(label))
		fmt.Fprintf(&b, `<rect class="lane" x="%s" y="%s" width="%s" height="%d"/>`, f1(left), f1(y), f1(w), rowH)
	}
	connLosses := map[[2]uint32]*ConnTimeline{}
	session := map[int][]datasets.Loss{}
	for _, d := range r.Datasets {
		session[d.Index] = d.SessionLosses
		for _, c := range d.Conns {
			connLosses[[2]uint32{uint32(d.Index), c.Conn}] = c
			label := fmt.Sprintf("conn %d", c.Conn)
			if len(r.Datasets) > 1 {
				label = fmt.Sprintf("#%d %s conn %d", d.Index, d.Info.Manifest.Venue, c.Conn)
			}
			row(label, "conn", fmt.Sprintf(` data-ds="%d" data-conn="%d"`, d.Index, c.Conn))
			for _, run := range runs(r.Buckets, func(i int) bool { return c.Frames[i] > 0 }) {
				var n uint64
				for i := run[0]; i < run[1]; i++ {
					n += c.Frames[i]
				}
				fmt.Fprintf(&b, `<rect class="on" x="%s" y="%s" width="%s" height="%d"><title>%s – %s: %d frames</title></rect>`,
					f1(left+bw*float64(run[0])), f1(y), f1(bw*float64(run[1]-run[0])), rowH,
					fmtNs(r.StartNs+int64(run[0])*r.BucketNs), fmtNs(min(r.StartNs+int64(run[1])*r.BucketNs, r.EndNs)), n)
			}
			for _, iv := range c.Down {
				x0, x1 := r.x(iv.FromNs, left, w), r.x(iv.ToNs, left, w)
				fmt.Fprintf(&b, `<rect class="down" x="%s" y="%s" width="%s" height="%d"><title>down %s – %s (%s)</title></rect>`,
					f1(x0), f1(y), f1(max(x1-x0, 1.5)), rowH, fmtNs(iv.FromNs), fmtNs(iv.ToNs), fmtDur(iv.ToNs-iv.FromNs))
			}
			r.markRow(&b, y, c.Losses, d.SessionLosses)
			b.WriteString(`</g>`)
			y += rowH + rowGap
		}
	}
	if len(r.Instruments) > 0 {
		fmt.Fprintf(&b, `<text class="axis" x="%s" y="%s" text-anchor="end">instruments</text>`, f1(left-6), f1(y+rowH-4))
		y += rowH + rowGap
	}
	for _, in := range r.Instruments {
		row(shorten(in.Instrument, 26), "inst", fmt.Sprintf(` data-ds="%d" data-conn="%d" data-inst="%s"`, in.Dataset, in.Conn, html.EscapeString(in.Instrument)))
		fmt.Fprintf(&b, `<title>%s (dataset %d, conn %d)</title>`, html.EscapeString(in.Instrument), in.Dataset, in.Conn)
		for _, run := range runs(r.Buckets, func(i int) bool { return in.Active[i] > 0 }) {
			fmt.Fprintf(&b, `<rect class="on inst" x="%s" y="%s" width="%s" height="%d"/>`,
				f1(left+bw*float64(run[0])), f1(y), f1(bw*float64(run[1]-run[0])), rowH)
		}
		for _, iv := range in.Invalid {
			x0, x1 := r.x(iv.FromNs, left, w), r.x(iv.ToNs, left, w)
			fmt.Fprintf(&b, `<rect class="invalid" x="%s" y="%s" width="%s" height="%d"><title>book invalid %s – %s (%s)</title></rect>`,
				f1(x0), f1(y+rowH/2), f1(max(x1-x0, 1.5)), rowH/2, fmtNs(iv.FromNs), fmtNs(iv.ToNs), fmtDur(iv.ToNs-iv.FromNs))
		}
		var own []datasets.Loss
		if c := connLosses[[2]uint32{uint32(in.Dataset), in.Conn}]; c != nil {
			own = c.Losses
		}
		r.markRow(&b, y, own, session[in.Dataset])
		b.WriteString(`</g>`)
		y += rowH + rowGap
	}
	r.timeAxis(&b, left, w, y+axisH-2)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n/2-1] + "…" + s[len(s)-n/2+1:]
}

// midChart draws an instrument's mid (line, left scale) and spread (bars,
// right scale) over time.
func (r *Report) midChart(in *Instrument) template.HTML {
	lo, hi, smax := math.Inf(1), math.Inf(-1), 0.0
	for i := range in.Mid {
		if m := in.Mid[i]; !math.IsNaN(m) {
			lo, hi = min(lo, m), max(hi, m)
			smax = max(smax, in.Spread[i], 0)
		}
	}
	w, h := float64(chartW-2*plotLeft), float64(smallH)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart small" viewBox="0 0 %d %d" role="img" aria-label="mid and spread of %s">`,
		chartW, smallH+axisH+4, html.EscapeString(in.Instrument))
	fmt.Fprintf(&b, `<rect class="plot" x="%d" y="0" width="%s" height="%s"/>`, plotLeft, f1(w), f1(h))
	if math.IsInf(lo, 1) {
		fmt.Fprintf(&b, `<text class="axis" x="%s" y="%s" text-anchor="middle">no valid two-sided book</text>`, f1(plotLeft+w/2), f1(h/2))
	} else {
		if hi == lo {
			lo, hi = lo-max(math.Abs(lo)*0.001, 1e-9), hi+max(math.Abs(hi)*0.001, 1e-9)
		}
		bw := w / float64(r.Buckets)
		if smax > 0 {
			for i, s := range in.Spread {
				if math.IsNaN(s) || s <= 0 { // a crossed book's negative spread has no bar
					continue
				}
				bh := s / smax * (h * 0.35)
				fmt.Fprintf(&b, `<rect class="spread" x="%s" y="%s" width="%s" height="%s"/>`, f1(plotLeft+bw*float64(i)), f1(h-bh), f1(max(bw, 0.8)), f1(bh))
			}
		}
		var path strings.Builder
		pen := false
		for i, m := range in.Mid {
			if math.IsNaN(m) {
				pen = false
				continue
			}
			x := plotLeft + bw*(float64(i)+0.5)
			y := 4 + (h-8)*(hi-m)/(hi-lo)
			if pen {
				fmt.Fprintf(&path, " L%s %s", f1(x), f1(y))
			} else {
				fmt.Fprintf(&path, " M%s %s", f1(x), f1(y))
				pen = true
			}
		}
		fmt.Fprintf(&b, `<path class="mid" d="%s"/>`, strings.TrimSpace(path.String()))
		fmt.Fprintf(&b, `<text class="axis" x="%d" y="10" text-anchor="end">%s</text>`, plotLeft-4, num(hi))
		fmt.Fprintf(&b, `<text class="axis" x="%d" y="%s" text-anchor="end">%s</text>`, plotLeft-4, f1(h-2), num(lo))
		fmt.Fprintf(&b, `<text class="axis spreadlabel" x="%s" y="%s" text-anchor="start">spread</text>`, f1(plotLeft+w+4), f1(h-14))
		fmt.Fprintf(&b, `<text class="axis spreadlabel" x="%s" y="%s" text-anchor="start">≤ %s</text>`, f1(plotLeft+w+4), f1(h-2), num(smax))
	}
	r.timeAxis(&b, plotLeft, w, h+axisH)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

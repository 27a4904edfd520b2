package dashboard

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"
)

// MaxPoints bounds the points of a chart's series: longer series are averaged into at
// most this many buckets before drawing, so a chart costs the browser the same over an
// hour and over a week.
const MaxPoints = 360

// Series is one line of a chart: its name (the legend's and the data table's column)
// and one value per instant of the chart's Times; NaN marks a missing value (a gap).
type Series struct {
	Name   string
	Values []float64
}

// Chart is a line chart over time, drawn server-side as inline SVG (see svg). Each
// series has its own dash pattern as well as its own colour, and the chart carries a
// data table, so no figure is told by colour alone.
type Chart struct {
	Name  string // the svg's data-chart attribute: "throughput", "backlog", ...
	Title string // the svg's <title>, the table's caption
	Unit  string // the values' unit, after the title: "messages/min", "ms"
	Times []time.Time
	// Series share Times; the first is drawn as an area when Area is set.
	Series []Series
	Area   bool
	// Total, when not empty, is the svg's data-total attribute (the throughput chart's
	// pushed messages over the range).
	Total string
}

// The chart's geometry in SVG user units: the plot sits inside the margins; the svg
// scales to its container's width (CSS).
const (
	chartW, chartH                     = 640.0, 200.0
	marginL, marginR, marginT, marginB = 56.0, 12.0, 12.0, 40.0
	plotW, plotH                       = chartW - marginL - marginR, chartH - marginT - marginB
	legendY                            = chartH - 6
	maxSeriesStyles                    = 4
	singlePointRadius                  = 3
	tickLabelOffset, axisLabelSize     = 6.0, 11
)

// dashes are the series' dash patterns, by index (with the CSS classes s0..s3 for
// their colours).
var dashes = [maxSeriesStyles]string{"", "6 3", "2 3", "8 3 2 3"}

// bounded returns c with every series averaged into at most MaxPoints buckets (a
// bucket's instant is its first one; NaN values do not count, a bucket of only NaN
// stays NaN).
func (c Chart) bounded() Chart {
	n := len(c.Times)
	if n <= MaxPoints {
		return c
	}
	per := (n + MaxPoints - 1) / MaxPoints
	out := c
	out.Times = make([]time.Time, 0, MaxPoints)
	for i := 0; i < n; i += per {
		out.Times = append(out.Times, c.Times[i])
	}
	out.Series = make([]Series, len(c.Series))
	for si, s := range c.Series {
		vals := make([]float64, 0, len(out.Times))
		for i := 0; i < n; i += per {
			sum, k := 0.0, 0
			for _, v := range s.Values[i:min(i+per, len(s.Values))] {
				if !math.IsNaN(v) {
					sum, k = sum+v, k+1
				}
			}
			if k == 0 {
				vals = append(vals, math.NaN())
			} else {
				vals = append(vals, sum/float64(k))
			}
		}
		out.Series[si] = Series{Name: s.Name, Values: vals}
	}
	return out
}

// niceCeil is the smallest of 1, 2, 2.5, 5 times a power of ten that is at least v
// (1 for v <= 0): the y axis's top.
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// compact formats v for an axis or a table: 1234567 as 1.23M, 0.5 as 0.5.
func compact(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v):
		return "–"
	case a >= 1e9:
		return trimFloat(v/1e9, 2) + "G"
	case a >= 1e6:
		return trimFloat(v/1e6, 2) + "M"
	case a >= 1e4:
		return trimFloat(v/1e3, 1) + "k"
	case a == math.Trunc(a):
		return strconv.FormatFloat(v, 'f', 0, 64)
	default:
		return trimFloat(v, 2)
	}
}

// trimFloat formats v with at most digits decimals, without trailing zeros.
func trimFloat(v float64, digits int) string {
	s := strconv.FormatFloat(v, 'f', digits, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// timeLabel formats an axis or table instant (UTC): the time of day over a day or less,
// with the date beyond.
func timeLabel(t time.Time, span time.Duration) string {
	if span <= 24*time.Hour {
		return t.UTC().Format("15:04")
	}
	return t.UTC().Format("Jan 2 15:04")
}

// HTML is the chart as inline SVG followed by its data table.
func (c Chart) HTML() template.HTML {
	c = c.bounded()
	var b strings.Builder
	c.svg(&b)
	c.table(&b)
	return template.HTML(b.String()) // every text written is escaped by esc
}

func esc(s string) string { return template.HTMLEscapeString(s) }

func (c Chart) caption() string {
	if c.Unit == "" {
		return c.Title
	}
	return c.Title + " (" + c.Unit + ")"
}

// svg writes the chart: axes with labels, one path per series, a legend.
func (c Chart) svg(b *strings.Builder) {
	id := "chart-" + c.Name
	fmt.Fprintf(b, `<svg class="chart" data-chart="%s"`, esc(c.Name))
	if c.Total != "" {
		fmt.Fprintf(b, ` data-total="%s"`, esc(c.Total))
	}
	fmt.Fprintf(b, ` viewBox="0 0 %g %g" role="img" aria-labelledby="%s-title %s-desc" xmlns="http://www.w3.org/2000/svg">`,
		chartW, chartH, esc(id), esc(id))
	fmt.Fprintf(b, `<title id="%s-title">%s</title><desc id="%s-desc">%s</desc>`, esc(id), esc(c.caption()), esc(id), esc(c.summary()))
	top := niceCeil(c.maxValue())
	c.axes(b, top)
	for i, s := range c.Series {
		c.path(b, i, s, top)
	}
	c.legend(b)
	b.WriteString(`</svg>`)
}

// summary is the chart's text description: the latest and the largest value of each
// series.
func (c Chart) summary() string {
	if len(c.Times) == 0 {
		return "No data in this range."
	}
	parts := make([]string, 0, len(c.Series))
	for _, s := range c.Series {
		last, peak := math.NaN(), math.NaN()
		for _, v := range s.Values {
			if !math.IsNaN(v) {
				last = v
				if math.IsNaN(peak) || v > peak {
					peak = v
				}
			}
		}
		parts = append(parts, fmt.Sprintf("%s: latest %s, highest %s", s.Name, compact(last), compact(peak)))
	}
	return strings.Join(parts, "; ") + "."
}

func (c Chart) maxValue() float64 {
	top := 0.0
	for _, s := range c.Series {
		for _, v := range s.Values {
			if !math.IsNaN(v) && v > top {
				top = v
			}
		}
	}
	return top
}

// x is the horizontal position of point i of n.
func x(i, n int) float64 {
	if n <= 1 {
		return marginL + plotW/2
	}
	return marginL + plotW*float64(i)/float64(n-1)
}

// y is the vertical position of value v on an axis topped at top.
func y(v, top float64) float64 { return marginT + plotH*(1-v/top) }

// axes writes the y axis (0, half, top, with grid lines) and the x axis (first, middle
// and last instants).
func (c Chart) axes(b *strings.Builder, top float64) {
	b.WriteString(`<g class="axis">`)
	for _, v := range []float64{0, top / 2, top} {
		yy := y(v, top)
		fmt.Fprintf(b, `<line class="grid" x1="%g" y1="%.1f" x2="%g" y2="%.1f"/>`, marginL, yy, marginL+plotW, yy)
		fmt.Fprintf(b, `<text x="%g" y="%.1f" text-anchor="end" font-size="%d">%s</text>`,
			marginL-tickLabelOffset, yy+4, axisLabelSize, esc(compact(v)))
	}
	fmt.Fprintf(b, `<line x1="%g" y1="%g" x2="%g" y2="%g"/>`, marginL, marginT+plotH, marginL+plotW, marginT+plotH)
	n := len(c.Times)
	if n > 0 {
		span := c.Times[n-1].Sub(c.Times[0])
		idx := []int{0, n / 2, n - 1}
		if n < 3 {
			idx = idx[:0]
			for i := range n {
				idx = append(idx, i)
			}
		}
		anchors := map[int]string{0: "start", n - 1: "end"}
		for _, i := range idx {
			anchor := anchors[i]
			if anchor == "" || n == 1 {
				anchor = "middle"
			}
			fmt.Fprintf(b, `<text x="%.1f" y="%g" text-anchor="%s" font-size="%d">%s</text>`,
				x(i, n), marginT+plotH+16, anchor, axisLabelSize, esc(timeLabel(c.Times[i], span)))
		}
	}
	b.WriteString(`</g>`)
}

// path writes series i: a line (an area under the first with Area), a dot where a
// point stands alone between gaps.
func (c Chart) path(b *strings.Builder, i int, s Series, top float64) {
	n := len(c.Times)
	var d strings.Builder
	open := false
	for k := 0; k < n && k < len(s.Values); k++ {
		v := s.Values[k]
		if math.IsNaN(v) {
			open = false
			continue
		}
		cmd := "L"
		if !open {
			cmd = "M"
		}
		fmt.Fprintf(&d, "%s%.1f,%.1f ", cmd, x(k, n), y(v, top))
		lone := !open && (k+1 >= n || k+1 >= len(s.Values) || math.IsNaN(s.Values[k+1]))
		if lone {
			fmt.Fprintf(b, `<circle class="s%d" cx="%.1f" cy="%.1f" r="%d"/>`, i%maxSeriesStyles, x(k, n), y(v, top), singlePointRadius)
		}
		open = true
	}
	if d.Len() == 0 {
		return
	}
	if i == 0 && c.Area {
		// The area closes each run of points down to the axis.
		fmt.Fprintf(b, `<path class="area s0" d="%s"/>`, esc(areaPath(s.Values, n, top)))
	}
	fmt.Fprintf(b, `<path class="line s%d" d="%s" fill="none"`, i%maxSeriesStyles, esc(strings.TrimSpace(d.String())))
	if dash := dashes[i%maxSeriesStyles]; dash != "" {
		fmt.Fprintf(b, ` stroke-dasharray="%s"`, dash)
	}
	b.WriteString(`/>`)
}

// areaPath is the closed outline under each run of values between gaps.
func areaPath(values []float64, n int, top float64) string {
	var d strings.Builder
	start := -1
	closeRun := func(end int) {
		if start < 0 {
			return
		}
		fmt.Fprintf(&d, "L%.1f,%.1f L%.1f,%.1f Z ", x(end, n), y(0, top), x(start, n), y(0, top))
		start = -1
	}
	for k := 0; k < n && k < len(values); k++ {
		if math.IsNaN(values[k]) {
			closeRun(k - 1)
			continue
		}
		if start < 0 {
			start = k
			fmt.Fprintf(&d, "M%.1f,%.1f ", x(k, n), y(values[k], top))
		} else {
			fmt.Fprintf(&d, "L%.1f,%.1f ", x(k, n), y(values[k], top))
		}
	}
	closeRun(min(n, len(values)) - 1)
	return strings.TrimSpace(d.String())
}

// legend writes each series' name after a sample of its line.
func (c Chart) legend(b *strings.Builder) {
	b.WriteString(`<g class="legend">`)
	lx := marginL
	for i, s := range c.Series {
		fmt.Fprintf(b, `<line class="line s%d" x1="%g" y1="%g" x2="%g" y2="%g"`, i%maxSeriesStyles, lx, legendY-4, lx+18, legendY-4)
		if dash := dashes[i%maxSeriesStyles]; dash != "" {
			fmt.Fprintf(b, ` stroke-dasharray="%s"`, dash)
		}
		fmt.Fprintf(b, `/><text x="%g" y="%g" font-size="%d">%s</text>`, lx+22, legendY, axisLabelSize, esc(s.Name))
		lx += 30 + 7*float64(len(s.Name))
	}
	b.WriteString(`</g>`)
}

// table writes the chart's values as a table, folded under its caption: the same
// figures for screen readers and for copying.
func (c Chart) table(b *strings.Builder) {
	fmt.Fprintf(b, `<details class="chart-data"><summary>Data: %s</summary><table><caption>%s</caption><thead><tr><th scope="col">Time (UTC)</th>`,
		esc(c.Title), esc(c.caption()))
	for _, s := range c.Series {
		fmt.Fprintf(b, `<th scope="col">%s</th>`, esc(s.Name))
	}
	b.WriteString(`</tr></thead><tbody>`)
	for i, t := range c.Times {
		fmt.Fprintf(b, `<tr><th scope="row"><time datetime="%s">%s</time></th>`, t.UTC().Format(time.RFC3339), esc(t.UTC().Format("2006-01-02 15:04")))
		for _, s := range c.Series {
			v := math.NaN()
			if i < len(s.Values) {
				v = s.Values[i]
			}
			fmt.Fprintf(b, `<td>%s</td>`, esc(compact(v)))
		}
		b.WriteString(`</tr>`)
	}
	if len(c.Times) == 0 {
		fmt.Fprintf(b, `<tr><td colspan="%d">No data in this range.</td></tr>`, len(c.Series)+1)
	}
	b.WriteString(`</tbody></table></details>`)
}

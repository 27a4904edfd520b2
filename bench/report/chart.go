package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/queen-go/queen/bench/load"
)

// chart is one inline SVG chart: everything the template draws, in viewBox pixels.
// Only numbers and escaped labels reach the SVG.
type chart struct {
	Title          string
	W, H           int
	L, T, R, B     float64 // the plot area's edges
	XTicks, YTicks []tick
	XLabel, YLabel string
	Lines          []line
	Bars           []bar
	Legend         []legendItem
	Note           string // under the title: what a point is
}

// Positions the template needs, derived from the plot area.
func (c *chart) PW() float64       { return round1(c.R - c.L) }
func (c *chart) PH() float64       { return round1(c.B - c.T) }
func (c *chart) YTickX() float64   { return c.L - 6 }
func (c *chart) XTickEnd() float64 { return c.B + 4 }
func (c *chart) XTickY() float64   { return c.B + 16 }
func (c *chart) YLabelY() float64  { return c.T - 10 }
func (c *chart) XMid() float64     { return round1((c.L + c.R) / 2) }
func (c *chart) XLabelY() float64  { return float64(c.H) - 6 }

type tick struct {
	Pos   float64 // px along the axis
	Label string
}

// line is one series; a NaN value breaks it into segments.
type line struct {
	Name, Color string
	Dash        bool
	Segs        []string // polyline points, "x,y x,y ..."
	Dots        []dot    // single points that have no neighbour to join
}

type dot struct{ X, Y float64 }

type bar struct {
	X, Y, W, H float64
	Color, Tip string
}

// legendItem is one entry of the legend, drawn in HTML under the chart.
type legendItem struct {
	Name, Color string
	Dash        bool
}

// palette is distinguishable on white and in grey print.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"}

// seriesData is one line of a chart before scaling: x in seconds, y in its unit.
type seriesData struct {
	name  string
	color string
	dash  bool
	x, y  []float64
}

// newChart lays out a chart of w×h px with room for the axes' labels.
func newChart(title string, w, h int) *chart {
	return &chart{Title: title, W: w, H: h, L: 64, T: 28, R: float64(w) - 12, B: float64(h) - 40}
}

// axis maps values to pixels: linear from lo, or logarithmic (lo > 0).
type axis struct {
	lo, hi   float64
	log      bool
	from, to float64 // pixels of lo and hi
}

func (a axis) px(v float64) float64 {
	f := 0.0
	if a.log {
		f = (math.Log10(v) - math.Log10(a.lo)) / (math.Log10(a.hi) - math.Log10(a.lo))
	} else if a.hi > a.lo {
		f = (v - a.lo) / (a.hi - a.lo)
	}
	return round1(a.from + f*(a.to-a.from))
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

// niceStep is a round step (1, 2 or 5 times a power of ten) giving about n steps over span.
func niceStep(span float64, n int) float64 {
	if span <= 0 || math.IsNaN(span) || math.IsInf(span, 0) {
		return 1
	}
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// linearTicks are round ticks from 0 to at least hi; it returns them and the axis top.
func linearTicks(hi float64, n int, label func(float64) string) ([]float64, []string, float64) {
	if hi <= 0 || math.IsNaN(hi) || math.IsInf(hi, 0) {
		hi = 1
	}
	step := niceStep(hi, n)
	top := math.Ceil(hi/step-1e-9) * step
	var vs []float64
	var ls []string
	for i := 0; float64(i)*step <= top*(1+1e-9); i++ {
		v := float64(i) * step
		vs, ls = append(vs, v), append(ls, label(v))
	}
	return vs, ls, top
}

// logTicks are the powers of ten (and 2 and 5 times them over fewer than three decades)
// covering [lo, hi]; it returns them and the axis' ends.
func logTicks(lo, hi float64) ([]float64, float64, float64) {
	if !(lo > 0) || math.IsInf(lo, 0) {
		lo = 1e-3
	}
	if !(hi > lo) || math.IsInf(hi, 0) {
		hi = lo * 10
	}
	a, b := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if b <= a {
		b = a + 1
	}
	b = min(b, a+15) // an absurd value is drawn at the axis' end, not given 300 decades
	var vs []float64
	for e := a; e <= b; e++ {
		p := math.Pow(10, e)
		vs = append(vs, p)
		if b-a < 3 && e < b {
			vs = append(vs, 2*p, 5*p)
		}
	}
	return vs, math.Pow(10, a), math.Pow(10, b)
}

// xTime sets the x axis to seconds from 0 to end.
func (c *chart) xTime(end float64) axis {
	vs, ls, top := linearTicks(end, 6, secondsLabel)
	x := axis{lo: 0, hi: top, from: c.L, to: c.R}
	for i, v := range vs {
		c.XTicks = append(c.XTicks, tick{Pos: x.px(v), Label: ls[i]})
	}
	c.XLabel = "time since the start"
	return x
}

// yLinear sets the y axis linear from 0 to at least hi.
func (c *chart) yLinear(hi float64, unit string) axis {
	vs, ls, top := linearTicks(hi, 5, tickLabel)
	y := axis{lo: 0, hi: top, from: c.B, to: c.T}
	for i, v := range vs {
		c.YTicks = append(c.YTicks, tick{Pos: y.px(v), Label: ls[i]})
	}
	c.YLabel = unit
	return y
}

// yLog sets the y axis logarithmic over [lo, hi] (both > 0).
func (c *chart) yLog(lo, hi float64, unit string) axis {
	vs, bottom, top := logTicks(lo, hi)
	y := axis{lo: bottom, hi: top, log: true, from: c.B, to: c.T}
	for _, v := range vs {
		c.YTicks = append(c.YTicks, tick{Pos: y.px(v), Label: tickLabel(v)})
	}
	c.YLabel = unit + " (log scale)"
	return y
}

// plot adds the series as lines (NaN values and, on a log axis, values <= 0 break
// them; a value off the axis is drawn at its end), and their legend.
func (c *chart) plot(x, y axis, ss []seriesData) {
	for _, s := range ss {
		l := line{Name: s.name, Color: s.color, Dash: s.dash}
		var seg []dot
		end := func() {
			switch len(seg) {
			case 0:
			case 1:
				l.Dots = append(l.Dots, seg[0])
			default:
				var b strings.Builder
				for i, d := range seg {
					if i > 0 {
						b.WriteByte(' ')
					}
					b.WriteString(strconv.FormatFloat(d.X, 'f', 1, 64) + "," + strconv.FormatFloat(d.Y, 'f', 1, 64))
				}
				l.Segs = append(l.Segs, b.String())
			}
			seg = seg[:0]
		}
		for j := range s.x {
			v := s.y[j]
			if math.IsNaN(v) || math.IsInf(v, 0) || y.log && v <= 0 {
				end()
				continue
			}
			seg = append(seg, dot{X: x.px(s.x[j]), Y: y.px(min(max(v, y.lo), y.hi))})
		}
		end()
		c.Lines = append(c.Lines, l)
		c.Legend = append(c.Legend, legendItem{Name: s.name, Color: s.color, Dash: s.dash})
	}
}

// throughputChart draws each counter's rate per interval (events/s) over the run.
func throughputChart(title string, s *load.Series, counters []string) *chart {
	c := newChart(title, 760, 260)
	var ss []seriesData
	top, end := 0.0, 0.0
	for k, name := range counters {
		i := indexOf(s.Counters, name)
		d := seriesData{name: name, color: palette[k%len(palette)]}
		for _, p := range s.Points {
			r := math.NaN()
			if p.Span > 0 {
				r = float64(p.Counts[i]) / p.Span.Seconds()
				top = max(top, r)
			}
			d.x, d.y = append(d.x, p.At.Seconds()), append(d.y, r)
			end = max(end, p.At.Seconds())
		}
		ss = append(ss, d)
	}
	x, y := c.xTime(end), c.yLinear(top, "per second")
	c.plot(x, y, ss)
	c.Note = pointNote(s)
	return c
}

// latencyChart draws the per-interval percentiles on a log axis; nil when no interval
// has a latency.
func latencyChart(s *load.Series) *chart {
	c := newChart("Latency per interval", 760, 260)
	names := []string{"p50", "p90", "p99", "max"}
	get := []func(load.LatencyPoint) float64{
		func(l load.LatencyPoint) float64 { return l.P50 }, func(l load.LatencyPoint) float64 { return l.P90 },
		func(l load.LatencyPoint) float64 { return l.P99 }, func(l load.LatencyPoint) float64 { return l.Max },
	}
	colors := []string{palette[0], palette[2], palette[3], palette[1]}
	lo, hi, end := math.Inf(1), 0.0, 0.0
	var ss []seriesData
	for k, name := range names {
		d := seriesData{name: name, color: colors[k], dash: name == "max"}
		any := false
		for _, p := range s.Points {
			v := get[k](p.Lat)
			if !math.IsNaN(v) && !math.IsInf(v, 0) && v > 0 {
				lo, hi, any = min(lo, v), max(hi, v), true
			}
			d.x, d.y = append(d.x, p.At.Seconds()), append(d.y, v)
			end = max(end, p.At.Seconds())
		}
		if any {
			ss = append(ss, d)
		}
	}
	if len(ss) == 0 {
		return nil
	}
	x, y := c.xTime(end), c.yLog(lo, hi, "ms")
	c.plot(x, y, ss)
	c.Note = pointNote(s)
	return c
}

// gaugeChart draws one gauge over the run, small.
func gaugeChart(s *load.Series, gi int) *chart {
	c := newChart(s.Gauges[gi], 370, 200)
	c.L = 58
	d := seriesData{name: s.Gauges[gi], color: palette[gi%len(palette)]}
	top, end := 0.0, 0.0
	for _, p := range s.Points {
		v := math.NaN()
		if gi < len(p.Gauges) {
			v = p.Gauges[gi]
		}
		if !math.IsNaN(v) {
			top = max(top, v)
		}
		d.x, d.y = append(d.x, p.At.Seconds()), append(d.y, v)
		end = max(end, p.At.Seconds())
	}
	x, y := c.xTime(end), c.yLinear(top, "")
	c.plot(x, y, []seriesData{d})
	c.Legend = nil
	return c
}

// errorChart draws the failures per interval as bars; nil when there were none.
func errorChart(s *load.Series) *chart {
	c := newChart("Errors per interval", 760, 200)
	end, top := 0.0, 0.0
	counts := make([]int64, len(s.Points))
	for j, p := range s.Points {
		for _, name := range s.Errors {
			counts[j] += p.Counts[indexOf(s.Counters, name)]
		}
		top = max(top, float64(counts[j]))
		end = max(end, p.At.Seconds())
	}
	if top == 0 {
		return nil
	}
	x, y := c.xTime(end), c.yLinear(max(top, 5), "errors") // at least 0..5: whole errors on the ticks
	for j, p := range s.Points {
		if counts[j] == 0 {
			continue
		}
		x0, x1 := x.px((p.At - p.Span).Seconds()), x.px(p.At.Seconds())
		y0 := y.px(float64(counts[j]))
		c.Bars = append(c.Bars, bar{X: x0, Y: y0, W: max(x1-x0, 1), H: round1(c.B - y0), Color: palette[1],
			Tip: fmt.Sprintf("%s–%s: %d errors", secondsLabel((p.At - p.Span).Seconds()), secondsLabel(p.At.Seconds()), counts[j])})
	}
	c.Note = pointNote(s)
	return c
}

// histogramChart draws the whole run's latency histogram: the share of observations
// in each tenth of a decade of ms, on a log axis; nil without observations.
func histogramChart(bs []load.Bucket) *chart {
	const perDecade = 10
	bins := map[int]uint64{}
	var total uint64
	lo, hi := math.MaxInt, math.MinInt
	for _, b := range bs {
		mid := math.Max((b.Lo+b.Hi)/2, 1e-3) // the 0 µs bucket (below the 1 µs resolution) with 1 µs
		k := int(math.Floor(math.Log10(mid) * perDecade))
		bins[k] += b.Count
		total += b.Count
		lo, hi = min(lo, k), max(hi, k)
	}
	if total == 0 {
		return nil
	}
	c := newChart("Latency distribution (whole run)", 760, 240)
	edge := func(k int) float64 { return math.Pow(10, float64(k)/perDecade) }
	vs, bottom, top := logTicks(edge(lo), edge(hi+1))
	x := axis{lo: bottom, hi: top, log: true, from: c.L, to: c.R}
	for _, v := range vs {
		c.XTicks = append(c.XTicks, tick{Pos: x.px(v), Label: tickLabel(v)})
	}
	c.XLabel = "latency, ms (log scale)"
	most := 0.0
	for _, n := range bins {
		most = max(most, 100*float64(n)/float64(total))
	}
	y := c.yLinear(most, "% of observations")
	for k := lo; k <= hi; k++ {
		n := bins[k]
		if n == 0 {
			continue
		}
		share := 100 * float64(n) / float64(total)
		x0, x1 := x.px(edge(k)), x.px(edge(k+1))
		y0 := y.px(share)
		c.Bars = append(c.Bars, bar{X: x0, Y: y0, W: max(x1-x0-1, 1), H: round1(c.B - y0), Color: palette[0],
			Tip: fmt.Sprintf("%s–%s ms: %d (%.1f %%)", figure(edge(k)), figure(edge(k+1)), n, share)})
	}
	return c
}

// hbar is one row of a horizontal bar chart (CPU per message).
type hbar struct {
	Label, Value string
	Y, W         float64 // the bar's top and length
	TY, VX       float64 // the texts' baseline, and where the value is written
	Color        string
}

// hbars is a small horizontal bar chart: one bar per row, scaled to the largest.
type hbars struct {
	Title   string
	W, H    int
	X0, Max float64 // where the bars start, and the longest bar's length, px
	Rows    []hbar
}

// LabelX is where the row labels end.
func (h *hbars) LabelX() float64 { return h.X0 - 8 }

func cpuBars(rows []cpuRow) *hbars {
	h := &hbars{Title: "CPU per message, µs", W: 760, X0: 200, Max: 460}
	most := 0.0
	for _, r := range rows {
		most = max(most, r.usPerMsg)
	}
	for i, r := range rows {
		w := 0.0
		if most > 0 {
			w = round1(h.Max * r.usPerMsg / most)
		}
		y := float64(10 + 30*i)
		h.Rows = append(h.Rows, hbar{Label: r.name, Value: figure(r.usPerMsg) + " µs", Y: y, W: max(w, 1),
			TY: y + 13, VX: h.X0 + max(w, 1) + 6, Color: palette[i%len(palette)]})
	}
	h.H = 20 + 30*len(rows)
	return h
}

// pointNote says what one point of a time chart covers.
func pointNote(s *load.Series) string {
	if len(s.Points) == 0 {
		return ""
	}
	span := s.Points[0].Span
	if len(s.Points) > 1 {
		span = s.Points[1].Span
	}
	n := fmt.Sprintf("one point per %s", secondsLabel(math.Round(span.Seconds()*10)/10))
	if s.Stride > 1 {
		n += fmt.Sprintf(" (%d progress intervals merged per point to bound the series: per-point p90, p99 and max are the worst of the merged ones)", s.Stride)
	}
	return n
}

// secondsLabel renders seconds as 45s, 2m30s or 1h05m.
func secondsLabel(v float64) string {
	switch {
	case v < 60:
		return strconv.FormatFloat(v, 'g', 4, 64) + "s"
	case v < 3600:
		m, s := int(v)/60, int(v)%60
		if s == 0 {
			return fmt.Sprintf("%dm", m)
		}
		return fmt.Sprintf("%dm%02ds", m, s)
	default:
		h, m := int(v)/3600, int(v)%3600/60
		return fmt.Sprintf("%dh%02dm", h, m)
	}
}

// tickLabel renders an axis tick: 0.3, 250, 12,000 (six significant digits at most,
// so a multiple of a step such as 0.1 does not show its rounding error).
func tickLabel(v float64) string {
	if math.Abs(v) >= 1000 {
		return grouped(int64(math.Round(v)))
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

func indexOf(names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	return -1
}

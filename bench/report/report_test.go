package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/bench/load"
	"github.com/queen-go/queen/bench/verify"
)

// hostile is markup that must come out as text wherever a string lands on the page.
const hostile = `</script><img src=x onerror=alert(1)><svg onload=alert(2)>"'&`

// synthetic is a push run of n one-second intervals with CPU figures and a few errors.
func synthetic(n int) *load.Summary {
	sr := &load.Series{Counters: []string{"msgs", "requests", "errors"}, Gauges: []string{"backlog"}, Msgs: "msgs",
		Errors: []string{"errors"}, Stride: 1}
	for i := range n {
		lat := load.LatencyPoint{N: 100, P50: 1 + float64(i%3), P90: 3, P99: 8, Max: 20}
		if i == 2 {
			lat = load.LatencyPoint{P50: math.NaN(), P90: math.NaN(), P99: math.NaN(), Max: math.NaN()} // an idle second
		}
		errs := int64(0)
		if i == 3 {
			errs = 2
		}
		sr.Points = append(sr.Points, load.Point{At: time.Duration(i+1) * time.Second, Span: time.Second,
			Counts: []int64{12000 + int64(i)*10, 12000, errs}, Gauges: []float64{float64(i * 5)}, Lat: lat})
	}
	return &load.Summary{Mode: "push", Seconds: float64(n), Totals: map[string]int64{"msgs": 12345, "requests": 12000, "errors": 2},
		Rates: map[string]float64{"msgs": 12345.0 / float64(n), "requests": 1200, "errors": 0.2}, P50ms: 1.2, P90ms: 3.4, P99ms: 8.9, MaxMs: 21.5,
		Extra: map[string]any{"pg_us_per_msg": 25.5, "pg_cpu_s": 3.1, "broker_us_per_msg": 14.2, "broker_cpu_s": 1.7,
			"bench_us_per_msg": 7.5, "bench_cpu_s": 0.9, "criteria": map[string]any{"rss": "PASS"}},
		Series: sr, Latency: []load.Bucket{{Lo: 0, Hi: 0.001, Count: 3}, {Lo: 1.0, Hi: 1.03, Count: 900}, {Lo: 8, Hi: 8.25, Count: 97}}}
}

func liveRun(s *load.Summary) Run {
	return Run{Mode: "push", Target: "http://127.0.0.1:6632", Command: "queen-bench push -conns 4",
		Started: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC), Wall: 12 * time.Second,
		Machine: &Machine{Cores: 2, GOMAXPROCS: 2, GoVersion: "go1.26.0", OS: "linux", Arch: "amd64", Host: "bench1"},
		Flags: []Flag{{Name: "conns", Value: "4", Default: "64", Usage: "concurrent connections", Set: true},
			{Name: "batch", Value: "1", Default: "1", Usage: "messages per request"}},
		Summary: s}
}

// render writes p and checks that the page is well-formed XML (what a browser's HTML
// parser certainly reads as meant): every element closed, nothing left open. It returns
// the page and how many times each element occurs.
func render(t *testing.T, p Page) (string, map[string]int) {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, p); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	elems := map[string]int{}
	d := xml.NewDecoder(strings.NewReader(doc))
	d.Strict = true
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, doc)
		}
		if se, ok := tok.(xml.StartElement); ok {
			elems[se.Name.Local]++
			for _, a := range se.Attr {
				if strings.HasPrefix(strings.ToLower(a.Name.Local), "on") {
					t.Fatalf("event handler attribute %s=%q on <%s>", a.Name.Local, a.Value, se.Name.Local)
				}
			}
		}
	}
	for _, bad := range []string{"<script", "<link", "<img", "@import", "url(", "http://fonts", "https://"} {
		if strings.Contains(doc, bad) {
			t.Fatalf("page holds %q: not self-contained or not escaped", bad)
		}
	}
	return doc, elems
}

func TestWriteRendersEverySection(t *testing.T) {
	t.Parallel()
	pipe := verify.Report{Stages: []verify.StageReport{{Name: "cm-avail_cm-db", Counts: verify.Counts{Msgs: 10, Unique: 9, Dups: 1, Gaps: 2}}},
		Total: verify.Counts{Msgs: 10, Unique: 9, Dups: 1, Gaps: 2}}
	fault := verify.FaultReport{Pass: true, Groups: []verify.GroupFaults{{Group: "g1", Pass: true,
		FaultCounts: verify.FaultCounts{Acknowledged: 50, Delivered: 51, Unique: 50, Redeliveries: 1}}}}
	noPoints := synthetic(0)
	tests := []struct {
		name  string
		page  Page
		want  []string // substrings of the page
		elems map[string]int
	}{
		{"live push run", Page{Runs: []Run{liveRun(synthetic(6))}}, []string{
			"Configuration", "http://127.0.0.1:6632", "queen-bench push -conns 4", "2026-12-02 10:00:00 UTC", "go1.26.0",
			"2 (GOMAXPROCS 2)", "-conns", "Throughput per interval", "12,345", "p99", "8.90 ms", "21.5 ms", "Latency per interval",
			"Latency distribution", "Errors per interval", "backlog", "PostgreSQL (pg_us_per_msg)", "25.5", "14.2", "7.50",
			"JSON summary line", "criteria", "rss=PASS", "push request round trip",
		}, map[string]int{"svg": 4, "polyline": 5, "details": 1}},
		{"pipeline fails", Page{Runs: []Run{{Mode: "pipeline", Summary: synthetic(3), Verdict: FromPipeline(pipe)}}}, []string{
			"badge fail", `<div class="verdict fail">VERDICT: FAIL`, "lost (gaps below the frontier)", "cm-avail_cm-db", "fatal when not 0", `class="bad"`,
		}, nil},
		{"soak passes with criteria", Page{Runs: []Run{{Mode: "soak", Summary: synthetic(3), Verdict: FromFault(fault,
			[]load.Criterion{{Name: "RSS growth", Measured: "+3 %", Limit: "<= +10 %", Status: "PASS"}}, "SOAK VERDICT: PASS", true)}}}, []string{
			"badge pass", "SOAK VERDICT: PASS", "Leak criteria", "RSS growth", "stored duplicates", "redeliveries",
		}, nil},
		{"saved results: no series", Page{Source: "results.jsonl", Runs: []Run{{Name: "idle, round 1, hot-list off", Mode: "idle",
			Summary: &load.Summary{Mode: "idle", Seconds: 60, Totals: map[string]int64{"pops": 50}, Rates: map[string]float64{"pops": 0.8},
				Extra: map[string]any{"pg_cpu_s_per_min": 30.0}}}},
			Tables: []Table{{Caption: "side by side", Header: []string{"scenario", "on/off"}, Rows: [][]string{{"idle", "0.52"}}}}},
			[]string{"results.jsonl", "time series is not available", "Not measured in this run", "pg_cpu_s_per_min", "side by side",
				`<td class="num">0.52</td>`, "No errors counted"}, map[string]int{"svg": 0}},
		{"empty series", Page{Runs: []Run{liveRun(noPoints)}}, []string{"ended before its first progress interval"}, nil},
		{"run failed before measuring", Page{Runs: []Run{{Mode: "push", Err: "push: not ready", Notes: []string{"nothing measured"}}}},
			[]string{"badge fail\">ERROR", "push: not ready", "nothing measured"}, map[string]int{"svg": 0}},
		{"two runs", Page{Runs: []Run{liveRun(synthetic(2)), liveRun(synthetic(1))}}, nil, map[string]int{"details": 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc, elems := render(t, tt.page)
			for _, w := range tt.want {
				if !strings.Contains(doc, w) {
					t.Errorf("page lacks %q", w)
				}
			}
			for e, n := range tt.elems {
				if elems[e] < n || n == 0 && elems[e] != 0 {
					t.Errorf("%d <%s>, want %d", elems[e], e, n)
				}
			}
			if t.Failed() {
				t.Log(doc)
			}
		})
	}
}

func TestHostileStringsAreEscaped(t *testing.T) {
	t.Parallel()
	s := synthetic(4)
	s.Mode = hostile
	s.Series.Counters[1] = hostile // a counter name reaches a legend
	s.Series.Gauges[0] = hostile   // and a chart title
	s.Totals[hostile] = 1
	s.Extra[hostile] = hostile
	r := liveRun(s)
	r.Name, r.Target, r.Command, r.Err = hostile, hostile, hostile, hostile
	r.Flags = append(r.Flags, Flag{Name: hostile, Value: hostile, Default: hostile, Usage: hostile, Set: true})
	r.Machine.Host = hostile
	r.Verdict = &Verdict{Line: hostile, Counts: []Count{{Name: hostile, Value: 1, Fatal: true}}, Notes: []string{hostile},
		Tables: []Table{{Caption: hostile, Header: []string{hostile}, Rows: [][]string{{hostile}}}}}
	doc, elems := render(t, Page{Title: hostile, Source: hostile, Notes: []string{hostile}, Runs: []Run{r},
		Tables: []Table{{Caption: hostile, Header: []string{hostile}, Rows: [][]string{{hostile}}}}})
	if elems["img"] != 0 || elems["script"] != 0 || strings.Contains(doc, "<svg onload") {
		t.Fatalf("markup got through: %v", elems)
	}
	if !strings.Contains(doc, "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;") {
		t.Fatal("the hostile string is not shown escaped")
	}
}

func TestEmptyAndDegenerateSeriesRender(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	point := func(at time.Duration, counts []int64, lat load.LatencyPoint) load.Point {
		return load.Point{At: at, Span: time.Second, Counts: counts, Lat: lat}
	}
	tests := []struct {
		name   string
		series *load.Series
		hist   []load.Bucket
	}{
		{"no series", nil, nil},
		{"no points", &load.Series{Counters: []string{"msgs"}, Stride: 1}, nil},
		{"one point, no latency", &load.Series{Counters: []string{"msgs"}, Stride: 1,
			Points: []load.Point{point(time.Second, []int64{5}, load.LatencyPoint{P50: nan, P90: nan, P99: nan, Max: nan})}}, nil},
		{"all zero", &load.Series{Counters: []string{"msgs", "errors"}, Errors: []string{"errors"}, Gauges: []string{"g"}, Stride: 4,
			Points: []load.Point{point(time.Second, []int64{0, 0}, load.LatencyPoint{}), point(2*time.Second, []int64{0, 0}, load.LatencyPoint{})}},
			[]load.Bucket{{Lo: 0, Hi: 0.001, Count: 0}}},
		{"zero span", &load.Series{Counters: []string{"msgs"}, Stride: 1, Points: []load.Point{{Counts: []int64{3}}}},
			[]load.Bucket{{Lo: 0, Hi: 0.001, Count: 7}}},
		{"infinite latency", &load.Series{Counters: []string{"msgs"}, Stride: 1,
			Points: []load.Point{point(time.Second, []int64{1}, load.LatencyPoint{N: 1, P50: math.Inf(1), P90: 1, P99: 1e12, Max: 1e12})}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &load.Summary{Mode: "consume", Totals: map[string]int64{"msgs": 0}, Rates: map[string]float64{"msgs": nan},
				P50ms: nan, Series: tt.series, Latency: tt.hist}
			doc, _ := render(t, Page{Runs: []Run{{Mode: "consume", Summary: s}}})
			if strings.Contains(doc, "NaN") || strings.Contains(doc, "ZgotmplZ") {
				t.Fatalf("page shows NaN or a filtered value:\n%s", doc)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"plain value", "64", "64"},
		{"URL without password", "http://127.0.0.1:6632", "http://127.0.0.1:6632"},
		{"database URL", "postgres://queen:s3cret@db:5432/queen", "postgres://queen:xxxxx@db:5432/queen"},
		{"in a command line", "queen-bench idle -pg-url postgres://u:pw@h/db -consumers 5", "queen-bench idle -pg-url postgres://u:xxxxx@h/db -consumers 5"},
		{"flag=value form", "queen-bench soak -pg-url=postgres://u:pw@h/db", "queen-bench soak -pg-url=postgres://u:xxxxx@h/db"},
		{"key=value connection string", "host=db user=q password=s3cret dbname=queen", "host=db user=q password=xxxxx dbname=queen"},
		{"quoted password", "host=db password='a b' user=q", "host=db password=xxxxx user=q"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Redact(tt.in); got != tt.want {
				t.Fatalf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestMarkdownTable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		ok   bool
		rows int
	}{
		{"load.Report's table", "| scenario | on/off |\n|---|---:|\n| idle | 0.52 |\n| rss | - |\n", true, 2},
		{"header only", "| a | b |\n|---|---|\n", true, 0},
		{"not a table", "hello\nworld\n", false, 0},
		{"ragged row", "| a | b |\n|---|---|\n| 1 |\n", false, 0},
		{"no separator", "| a | b |\n| 1 | 2 |\n", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tb, ok := MarkdownTable("c", tt.in)
			if ok != tt.ok || len(tb.Rows) != tt.rows {
				t.Fatalf("ok %v rows %d (%+v)", ok, len(tb.Rows), tb)
			}
		})
	}
}

func TestFigures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		fn   func(float64) string
		in   float64
		want string
	}{
		{"large", figure, 41234.4, "41,234"},
		{"whole", figure, 7, "7"},
		{"tens", figure, 41.23, "41.2"},
		{"units", figure, 4.123, "4.12"},
		{"fraction", figure, 0.4123, "0.412"},
		{"NaN", figure, math.NaN(), "–"},
		{"tick without rounding noise", tickLabel, 3 * 0.1, "0.3"},
		{"big tick", tickLabel, 12000, "12,000"},
		{"seconds", secondsLabel, 45, "45s"},
		{"minutes", secondsLabel, 150, "2m30s"},
		{"hours", secondsLabel, 3900, "1h05m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.fn(tt.in); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAxes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		hi       float64
		wantTop  float64
		wantTick int
	}{
		{"round", 100, 100, 6},
		{"just above a step", 101, 150, 4},
		{"small", 0.37, 0.4, 5},
		{"zero", 0, 1, 6},
		{"NaN", math.NaN(), 1, 6},
		{"infinite", math.Inf(1), 1, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			vs, ls, top := linearTicks(tt.hi, 5, tickLabel)
			if math.Abs(top-tt.wantTop) > 1e-9 || len(vs) != tt.wantTick || len(ls) != len(vs) {
				t.Fatalf("top %v ticks %v %v", top, vs, ls)
			}
		})
	}
	logs := []struct {
		name          string
		lo, hi        float64
		wantLo, wantH float64
		wantTicks     int
	}{
		{"three decades: powers of ten", 0.3, 40, 0.1, 100, 4},
		{"two decades: 1, 2, 5", 0.3, 4, 0.1, 10, 7},
		{"one value", 2, 2, 1, 100, 7},
		{"infinite top", 1, math.Inf(1), 1, 10, 4},
		{"absurd span", 1e-3, 1e300, 1e-3, 1e12, 16},
	}
	for _, tt := range logs {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			vs, lo, hi := logTicks(tt.lo, tt.hi)
			if math.Abs(lo-tt.wantLo) > 1e-12*tt.wantLo || math.Abs(hi-tt.wantH) > 1e-9*tt.wantH || len(vs) != tt.wantTicks {
				t.Fatalf("log ticks %v over [%v, %v]", vs, lo, hi)
			}
		})
	}
}

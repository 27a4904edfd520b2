package report

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/queen-go/queen/bench/load"
)

// Page is one HTML report: a live run, or the runs of a saved results file.
type Page struct {
	Title     string
	Source    string   // the saved results file the runs come from ("": a live run)
	Notes     []string // said at the top of the page
	Runs      []Run
	Tables    []Table // page-level tables, after the runs (the hot-list side-by-side table)
	Generated time.Time
}

// Run is one run of a mode: how it was made and what it measured.
type Run struct {
	Name    string // the section's heading ("": the mode)
	Mode    string
	Target  string        // the broker's URL
	Command string        // the command line, as given (Redact it first)
	Started time.Time     // zero: unknown
	Wall    time.Duration // start to end with setup, warm-up and drain; 0: unknown
	Machine *Machine      // nil: unknown (saved results)
	Flags   []Flag
	Summary *load.Summary // nil: the run ended before it measured anything
	Verdict *Verdict      // nil: the mode has no verifier
	Err     string        // why the run failed ("": it did not)
	Notes   []string
}

// Flag is one flag of the mode and its value in the run.
type Flag struct {
	Name, Value, Default, Usage string
	Set                         bool // given on the command line
}

// Machine is where the load ran.
type Machine struct {
	Cores, GOMAXPROCS    int
	GoVersion, OS, Arch  string
	Host                 string
	Kernel, CPUModelName string // "" when unknown
}

// ThisMachine describes the machine the process runs on.
func ThisMachine() *Machine {
	m := &Machine{Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(),
		OS: runtime.GOOS, Arch: runtime.GOARCH}
	m.Host, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for l := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModelName = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// Verdict is a verifier's outcome.
type Verdict struct {
	Pass   bool
	Line   string // the verifier's verdict line
	Counts []Count
	Tables []Table // per stage or group; the soak's criteria
	Notes  []string
}

// Count is one figure of a verdict; Fatal ones fail the run when not zero.
type Count struct {
	Name  string
	Value int64
	Fatal bool
}

// Table is a plain table of strings; numeric-looking cells are right-aligned.
type Table struct {
	Caption string
	Header  []string
	Rows    [][]string
}

// dsnPassword is the password of a key=value connection string (pgx accepts
// "host=db user=queen password=secret" as well as a URL).
var dsnPassword = regexp.MustCompile(`(?i)\b(password\s*=\s*)('[^']*'|\S+)`)

// Redact replaces the password of every URL in s (a flag value or a command line), and
// of a key=value connection string, by "xxxxx": -pg-url carries the database's
// credentials, and a report is meant to be shared.
func Redact(s string) string {
	out := dsnPassword.ReplaceAllString(s, "${1}xxxxx")
	fields := strings.Fields(out)
	for _, f := range fields {
		f = strings.Trim(f, `"'`)
		if k, v, ok := strings.Cut(f, "="); ok && strings.HasPrefix(k, "-") {
			f = v // -pg-url=postgres://...
		}
		u, err := url.Parse(f)
		if err != nil || u.User == nil {
			continue
		}
		if _, ok := u.User.Password(); ok {
			out = strings.ReplaceAll(out, f, u.Redacted())
		}
	}
	return out
}

//go:embed page.html.tmpl
var pageTemplate string

var page = template.Must(template.New("page").Parse(pageTemplate))

// Write renders p as one self-contained HTML document.
func Write(w io.Writer, p Page) error {
	v := buildPage(p)
	if err := page.Execute(w, v); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// The view: what the template shows, every figure already formatted.
type (
	pageView struct {
		Title, Source, Generated string
		Notes                    []string
		Runs                     []runView
		Tables                   []tableView
		Open                     bool // one run: its section open
	}
	runView struct {
		Name, Mode, Err string
		Open            bool   // the section starts unfolded (a page of one run)
		Headline        string // the messages' rate and the p99, for the section's summary line
		Verdict         *verdictView
		Config          []kv
		Flags           []Flag
		Notes           []string
		HasSummary      bool
		Counters        []counterView
		Gauges          []kv
		Throughput      *chart
		NoSeries        string // why there are no charts over time
		Latency         []kv   // p50 ... max
		LatencyOf       string
		LatencyChart    *chart
		Histogram       *chart
		Errors          []kv
		ErrorChart      *chart
		NoErrors        bool
		GaugeCharts     []*chart
		CPU             []cpuView
		CPUBars         *hbars
		CPUNote         string
		Extra           []kv
		JSON            string
	}
	kv          struct{ K, V string }
	counterView struct {
		Name, Total, Rate string
		Error             bool
	}
	cpuView struct {
		Name, UsPerMsg, Seconds string
	}
	verdictView struct {
		Status string // PASS, FAIL
		Pass   bool
		Line   string
		Counts []countView
		Tables []tableView
		Notes  []string
	}
	countView struct {
		Name, Value string
		Fatal, Bad  bool
	}
	tableView struct {
		Caption string
		Header  []string
		Rows    [][]cellView
	}
	cellView struct {
		Text string
		Num  bool
	}
	cpuRow struct {
		name           string
		usPerMsg, secs float64
		hasSecs        bool
	}
)

func buildPage(p Page) pageView {
	v := pageView{Title: p.Title, Source: p.Source, Notes: p.Notes, Open: len(p.Runs) == 1}
	if v.Title == "" {
		v.Title = "queen-bench report"
	}
	gen := p.Generated
	if gen.IsZero() {
		gen = time.Now()
	}
	v.Generated = gen.UTC().Format(time.RFC3339)
	for _, r := range p.Runs {
		rv := buildRun(r)
		rv.Open = v.Open
		v.Runs = append(v.Runs, rv)
	}
	for _, t := range p.Tables {
		v.Tables = append(v.Tables, buildTable(t))
	}
	return v
}

// latencyOf says what each mode's latency figures measure.
var latencyOf = map[string]string{
	"push":     "push request round trip (send to answer)",
	"consume":  "pop request round trip, pops that returned messages",
	"latency":  "push to pop: from each message's scheduled instant to its delivery",
	"pipeline": "end to end: from each event's scheduled ingress instant to its delivery at a fan-out stage",
	"prefill":  "none recorded",
	"idle":     "none recorded",
	"rss":      "none recorded",
}

// cpuProcs are the processes whose CPU per message a summary may carry.
var cpuProcs = []struct{ key, name string }{
	{"pg", "PostgreSQL (pg_us_per_msg)"}, {"broker", "broker (broker_us_per_msg)"}, {"bench", "queen-bench (bench_us_per_msg)"},
}

func buildRun(r Run) runView {
	v := runView{Name: r.Name, Mode: r.Mode, Err: r.Err, Flags: sortFlags(r.Flags), Notes: r.Notes}
	if v.Name == "" {
		v.Name = r.Mode
	}
	v.Config = config(r)
	if r.Verdict != nil {
		v.Verdict = buildVerdict(r.Verdict)
	}
	s := r.Summary
	if s == nil {
		return v
	}
	v.HasSummary = true
	extra := maps.Clone(s.Extra)
	if extra == nil {
		extra = map[string]any{}
	}
	buildCounters(&v, s)
	v.Latency = []kv{{"p50", ms(s.P50ms)}, {"p90", ms(s.P90ms)}, {"p99", ms(s.P99ms)}, {"max", ms(s.MaxMs)}}
	v.LatencyOf = latencyOf[s.Mode]
	if lo, ok := extra["latency_of"].(string); ok {
		v.LatencyOf = lo
		delete(extra, "latency_of")
	}
	if sr := s.Series; sr != nil && len(sr.Points) > 0 {
		var counters []string
		for _, c := range sr.Counters {
			if !slices.Contains(sr.Errors, c) && sr.Total(c) > 0 {
				counters = append(counters, c)
			}
		}
		if len(counters) > 0 {
			v.Throughput = throughputChart("Throughput per interval", sr, counters)
		}
		v.LatencyChart = latencyChart(sr)
		v.ErrorChart = errorChart(sr)
		for i := range sr.Gauges {
			v.GaugeCharts = append(v.GaugeCharts, gaugeChart(sr, i))
		}
	} else {
		v.NoSeries = "This run's time series is not available: saved results hold each run's JSON summary line only, " +
			"so there is no throughput, latency or error chart over time. Run the mode with -report FILE to get them."
		if s.Series != nil {
			v.NoSeries = "The run ended before its first progress interval: no point to draw over time."
		}
	}
	v.Histogram = histogramChart(s.Latency)
	buildCPU(&v, extra)
	keys := slices.Sorted(maps.Keys(extra))
	for _, k := range keys {
		v.Extra = append(v.Extra, kv{k, value(extra[k])})
	}
	if b, err := json.Marshal(s); err == nil {
		v.JSON = string(b)
	}
	return v
}

// buildCounters fills the totals, the errors and the gauges at the end.
func buildCounters(v *runView, s *load.Summary) {
	names := slices.Sorted(maps.Keys(s.Totals))
	if s.Series != nil { // the mode's own order: the headline counter first
		order := slices.Clone(s.Series.Counters)
		for _, n := range names {
			if !slices.Contains(order, n) {
				order = append(order, n)
			}
		}
		names = order
	}
	for _, n := range names {
		t, ok := s.Totals[n]
		if !ok {
			continue
		}
		if v.Headline == "" {
			v.Headline = fmt.Sprintf("%s %s/s, p99 %s", n, figure(s.Rates[n]), ms(s.P99ms))
		}
		isErr := isErrorName(n)
		if s.Series != nil && slices.Contains(s.Series.Counters, n) {
			isErr = slices.Contains(s.Series.Errors, n) // the Meter's own rule
		}
		v.Counters = append(v.Counters, counterView{Name: n, Total: grouped(t), Rate: figure(s.Rates[n]), Error: isErr})
		if isErr {
			v.Errors = append(v.Errors, kv{n, grouped(t)})
		}
	}
	v.NoErrors = true
	for _, e := range v.Errors {
		if e.V != "0" {
			v.NoErrors = false
		}
	}
	for _, n := range slices.Sorted(maps.Keys(s.Gauges)) {
		v.Gauges = append(v.Gauges, kv{n, grouped(s.Gauges[n])})
	}
}

// isErrorName is the Meter's rule for failure counters, and the soak's push_errors.
func isErrorName(n string) bool {
	return n == "errors" || strings.HasSuffix(n, "Err") || strings.HasSuffix(n, "_errors")
}

// buildCPU takes the CPU figures out of extra.
func buildCPU(v *runView, extra map[string]any) {
	var rows []cpuRow
	for _, p := range cpuProcs {
		us, ok := extra[p.key+"_us_per_msg"].(float64)
		if !ok {
			continue
		}
		r := cpuRow{name: p.name, usPerMsg: us}
		r.secs, r.hasSecs = extra[p.key+"_cpu_s"].(float64)
		delete(extra, p.key+"_us_per_msg")
		delete(extra, p.key+"_cpu_s")
		rows = append(rows, r)
		cv := cpuView{Name: r.name, UsPerMsg: figure(r.usPerMsg)}
		if r.hasSecs {
			cv.Seconds = figure(r.secs)
		}
		v.CPU = append(v.CPU, cv)
	}
	switch {
	case len(rows) == 0:
		v.CPUNote = "Not measured in this run. push and consume report the CPU per message of PostgreSQL (-pg-pid, " +
			"the postmaster) and of the broker (-broker-pid) when both run on this machine, and always their own."
	case len(rows) < len(cpuProcs):
		v.CPUNote = "Only the processes listed were measured: -pg-pid and -broker-pid name the others."
	}
	if len(rows) > 0 {
		v.CPUBars = cpuBars(rows)
	}
}

// config is the run's configuration rows.
func config(r Run) []kv {
	var c []kv
	add := func(k, v string) {
		if v != "" {
			c = append(c, kv{k, v})
		}
	}
	add("mode", r.Mode)
	add("target", r.Target)
	add("command", r.Command)
	if !r.Started.IsZero() {
		add("started", r.Started.UTC().Format("2006-01-02 15:04:05 MST"))
	}
	if r.Summary != nil && r.Summary.Seconds > 0 {
		add("measured", secondsLabel(math.Round(r.Summary.Seconds*10)/10))
	}
	if r.Wall > 0 {
		add("wall time", secondsLabel(math.Round(r.Wall.Seconds()*10)/10)+" (setup, warm-up and drain included)")
	}
	if m := r.Machine; m != nil {
		add("cores", fmt.Sprintf("%d (GOMAXPROCS %d)", m.Cores, m.GOMAXPROCS))
		add("cpu", m.CPUModelName)
		add("go", m.GoVersion)
		add("os/arch", m.OS+"/"+m.Arch)
		add("kernel", m.Kernel)
		add("host", m.Host)
	}
	return c
}

// sortFlags puts the flags given on the command line first, each group by name.
func sortFlags(fs []Flag) []Flag {
	out := slices.Clone(fs)
	slices.SortStableFunc(out, func(a, b Flag) int {
		if a.Set != b.Set {
			if a.Set {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

func buildVerdict(vd *Verdict) *verdictView {
	v := &verdictView{Status: "FAIL", Pass: vd.Pass, Line: vd.Line, Notes: vd.Notes}
	if vd.Pass {
		v.Status = "PASS"
	}
	for _, c := range vd.Counts {
		v.Counts = append(v.Counts, countView{Name: c.Name, Value: grouped(c.Value), Fatal: c.Fatal, Bad: c.Fatal && c.Value != 0})
	}
	for _, t := range vd.Tables {
		v.Tables = append(v.Tables, buildTable(t))
	}
	return v
}

func buildTable(t Table) tableView {
	v := tableView{Caption: t.Caption, Header: t.Header}
	for _, r := range t.Rows {
		row := make([]cellView, len(r))
		for i, c := range r {
			row[i] = cellView{Text: c, Num: numeric(c)}
		}
		v.Rows = append(v.Rows, row)
	}
	return v
}

// numeric reports whether a cell reads as a number (for right alignment).
func numeric(s string) bool {
	s = strings.TrimSpace(strings.ReplaceAll(s, ",", ""))
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// value renders an "extra" value: numbers as figures, maps as sorted k=v pairs.
func value(x any) string {
	switch t := x.(type) {
	case float64:
		return figure(t)
	case int:
		return grouped(int64(t))
	case int64:
		return grouped(t)
	case bool:
		return strconv.FormatBool(t)
	case string:
		return t
	case map[string]string:
		parts := make([]string, 0, len(t))
		for _, k := range slices.Sorted(maps.Keys(t)) {
			parts = append(parts, k+"="+t[k])
		}
		return strings.Join(parts, ", ")
	case map[string]any:
		parts := make([]string, 0, len(t))
		for _, k := range slices.Sorted(maps.Keys(t)) {
			parts = append(parts, k+"="+value(t[k]))
		}
		return strings.Join(parts, ", ")
	default:
		b, err := json.Marshal(t)
		if err != nil {
			return fmt.Sprint(t)
		}
		return string(b)
	}
}

func ms(v float64) string { return figure(v) + " ms" }

// figure renders a number with three significant digits or more: 41,200, 412, 41.2,
// 4.12, 0.412; whole numbers as integers with separators.
func figure(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v):
		return "–"
	case math.IsInf(v, 0):
		return strconv.FormatFloat(v, 'f', -1, 64)
	case a >= 100 || v == math.Trunc(v) && a < 1e15:
		return grouped(int64(math.Round(v)))
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a >= 0.001:
		return strconv.FormatFloat(v, 'f', 3, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

// grouped renders n with thousands separators.
func grouped(n int64) string {
	s := strconv.FormatInt(n, 10)
	sign := ""
	if s[0] == '-' {
		sign, s = "-", s[1:]
	}
	var b strings.Builder
	b.WriteString(sign)
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

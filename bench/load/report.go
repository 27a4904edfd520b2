package load

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Result is one line of a side-by-side run (scripts/bench-hotlist.sh): the JSON summary
// of one queen-bench step of one scenario, in one round, with the hot-list on or off.
type Result struct {
	Scenario string          `json:"scenario"`
	Step     string          `json:"step"`
	Round    int             `json:"round"`
	Hotlist  int             `json:"hotlist"` // 1 = QUEEN_HOTLIST=1, 0 = off
	Summary  json.RawMessage `json:"summary"`
}

// figure is one row of the report: a label and where a mode's summary holds the value
// (dotted JSON paths, the first present one wins).
type figure struct {
	label string
	paths []string
}

// reportFigures are the figures the report shows, per mode of the summary.
var reportFigures = map[string][]figure{
	"prefill": {{"push msgs/s", []string{"rates.msgs"}}},
	"consume": {
		{"pop+ack msgs/s", []string{"extra.msgs_per_s_to_count", "rates.msgs"}},
		{"pop p50 ms", []string{"p50_ms"}},
		{"pop p99 ms", []string{"p99_ms"}},
	},
	"idle": {
		{"SQL calls/s (queen_db_commits_total)", []string{"extra.sql_calls_per_s"}},
		{"SQL calls/s (pg_stat_database)", []string{"extra.pg_xacts_per_s"}},
		{"broker CPU s/min", []string{"extra.broker_cpu_s_per_min"}},
		{"PostgreSQL CPU s/min", []string{"extra.pg_cpu_s_per_min"}},
	},
	"latency": {
		{"push-to-pop p50 ms", []string{"p50_ms"}},
		{"push-to-pop p99 ms", []string{"p99_ms"}},
		{"push-to-pop max ms", []string{"p100_ms"}},
		{"backlog at the end", []string{"gauges.backlog"}},
	},
	"rss": {
		{"RSS before MiB", []string{"extra.rss_base_mb"}},
		{"RSS seeded MiB", []string{"extra.rss_seeded_mb"}},
		{"RSS drained MiB", []string{"extra.rss_drained_mb"}},
		{"RSS after the sweep wait MiB", []string{"extra.rss_swept_mb"}},
		{"RSS after the next GC MiB", []string{"extra.rss_gc_mb"}},
		// The heap in use only means the live heap right after a GC: the other readings
		// hold whatever garbage the last cycle left, and stay in the JSON line only.
		{"heap in use after the next GC MiB", []string{"extra.heap_gc_mb"}},
		{"hot-list partitions ready after the drain, most seen", []string{"extra.hotlist_ready_stale_max"}},
		{"hot-list state dropped after s", []string{"extra.swept_after_s"}},
		{"seed msgs/s", []string{"extra.seed_msgs_per_s"}},
		{"drain msgs/s", []string{"extra.drain_msgs_per_s"}},
	},
}

// ReadResults reads result lines; blank lines are skipped, any other unreadable line is
// an error naming it.
func ReadResults(r io.Reader) ([]Result, error) {
	var out []Result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var res Result
		if err := json.Unmarshal([]byte(line), &res); err != nil {
			return nil, fmt.Errorf("report: line %d: %w", n, err)
		}
		if res.Scenario == "" || len(res.Summary) == 0 {
			return nil, fmt.Errorf("report: line %d: no scenario or summary", n)
		}
		out = append(out, res)
	}
	return out, sc.Err()
}

// lookup returns the number at a dotted path of a JSON object.
func lookup(obj map[string]any, path string) (float64, bool) {
	var cur any = obj
	for part := range strings.SplitSeq(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return 0, false
		}
		if cur, ok = m[part]; !ok {
			return 0, false
		}
	}
	v, ok := cur.(float64)
	return v, ok
}

// reportRow is one (scenario, step, figure) and its values by round and setting.
type reportRow struct {
	scenario, step, label string
	order                 [3]int               // first appearance of scenario and step, figure index
	vals                  map[int]*[2]*float64 // round -> [off, on]
}

// Report prints the side-by-side table (Markdown): per scenario, step and figure, one
// line per round with the figure with the hot-list on, off and their ratio on/off, and
// the median ratio over the rounds.
func Report(out io.Writer, results []Result) error {
	var rows []*reportRow
	index := map[string]*reportRow{}
	seen := map[string]int{} // scenario, and scenario + step -> first appearance
	for _, res := range results {
		for _, k := range []string{res.Scenario, res.Scenario + "\x00" + res.Step} {
			if _, ok := seen[k]; !ok {
				seen[k] = len(seen)
			}
		}
		var obj map[string]any
		if err := json.Unmarshal(res.Summary, &obj); err != nil {
			return fmt.Errorf("report: %s round %d: summary: %w", res.Scenario, res.Round, err)
		}
		mode, _ := obj["mode"].(string)
		for fi, f := range reportFigures[mode] {
			v, ok := 0.0, false
			for _, p := range f.paths {
				if v, ok = lookup(obj, p); ok {
					break
				}
			}
			if !ok {
				continue
			}
			key := res.Scenario + "\x00" + res.Step + "\x00" + f.label
			row := index[key]
			if row == nil {
				row = &reportRow{scenario: res.Scenario, step: res.Step, label: f.label, vals: map[int]*[2]*float64{},
					order: [3]int{seen[res.Scenario], seen[res.Scenario+"\x00"+res.Step], fi}}
				index[key] = row
				rows = append(rows, row)
			}
			if row.vals[res.Round] == nil {
				row.vals[res.Round] = new([2]*float64)
			}
			row.vals[res.Round][min(max(res.Hotlist, 0), 1)] = &v
		}
	}
	// Rows in the order of the figure table, whichever run first had a figure.
	slices.SortStableFunc(rows, func(a, b *reportRow) int {
		for i := range a.order {
			if a.order[i] != b.order[i] {
				return a.order[i] - b.order[i]
			}
		}
		return 0
	})
	fmt.Fprintln(out, "| scenario | figure | round | hot-list on | hot-list off | on/off |")
	fmt.Fprintln(out, "|---|---|---:|---:|---:|---:|")
	for _, row := range rows {
		name := row.scenario
		if row.step != "" && row.step != row.scenario {
			name += " (" + row.step + ")"
		}
		rounds := make([]int, 0, len(row.vals))
		for r := range row.vals {
			rounds = append(rounds, r)
		}
		slices.Sort(rounds)
		var ratios []float64
		for _, r := range rounds {
			v := row.vals[r]
			ratio, ok := ratioOf(v[1], v[0])
			if ok {
				ratios = append(ratios, ratio)
			}
			fmt.Fprintf(out, "| %s | %s | %d | %s | %s | %s |\n", name, row.label, r, num(v[1]), num(v[0]), fmtRatio(ratio, ok, v))
		}
		if len(ratios) > 1 {
			fmt.Fprintf(out, "| %s | %s | median | | | %s |\n", name, row.label, fmtRatio(median(ratios), true, nil))
		}
	}
	return nil
}

func ratioOf(on, off *float64) (float64, bool) {
	if on == nil || off == nil || *off == 0 {
		return 0, false
	}
	return *on / *off, true
}

func fmtRatio(r float64, ok bool, v *[2]*float64) string {
	if !ok {
		if v != nil && v[0] != nil && v[1] != nil && *v[0] == 0 {
			if *v[1] == 0 {
				return "="
			}
			return "inf"
		}
		return "-"
	}
	return strconv.FormatFloat(r, 'f', 2, 64)
}

// num renders a figure with three significant digits or more: 412, 41.2, 4.12, 0.412.
func num(v *float64) string {
	if v == nil {
		return "-"
	}
	a := math.Abs(*v)
	switch {
	case a >= 100:
		return strconv.FormatFloat(*v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(*v, 'f', 1, 64)
	case a >= 1 || a == 0:
		return strconv.FormatFloat(*v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(*v, 'f', 3, 64)
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

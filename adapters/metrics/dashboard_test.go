package metrics

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// dashboardPath is the Grafana dashboard shipped for the broker (deploy/grafana).
var dashboardPath = filepath.Join("..", "..", "deploy", "grafana", "queen.json")

// TestDashboardNamesExportedMetrics: every PromQL expression of the Grafana dashboard
// (panel targets and template variable queries) names only series this exporter serves,
// built as the broker builds it; every panel states its unit. A renamed family breaks
// this test, not a dashboard in production.
func TestDashboardNamesExportedMetrics(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatalf("read the dashboard: %v", err)
	}
	exported := scrape(t, Handler(fullSources())).names()
	problems, err := checkDashboard(raw, exported)
	if err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", dashboardPath, p)
	}
}

// TestCheckDashboardCatches: the check itself reports an unknown metric naming its
// panel, a panel without a unit, a dashboard without a Prometheus data source variable,
// and an unparsable file.
func TestCheckDashboardCatches(t *testing.T) {
	t.Parallel()
	exported := map[string]bool{"queen_uptime_seconds": true, "queen_http_requests_total": true}
	good := `{"schemaVersion":39,"templating":{"list":[{"name":"datasource","type":"datasource","query":"prometheus"},
		{"name":"instance","type":"query","query":{"query":"label_values(queen_uptime_seconds, instance)"}}]},
		"panels":[{"type":"row","title":"Row","panels":[
		  {"type":"timeseries","title":"Rate","fieldConfig":{"defaults":{"unit":"reqps"}},
		   "targets":[{"expr":"sum by (code) (rate(queen_http_requests_total{instance=~\"$instance\"}[$__rate_interval]))"}]}]}]}`
	for _, tc := range []struct {
		name, dashboard string
		want            []string // substrings of the problems, in order; nil: none
		wantErr         bool
	}{
		{name: "valid", dashboard: good},
		{name: "bogus metric", dashboard: strings.Replace(good, "rate(queen_http_requests_total", "rate(queen_bogus_total", 1),
			want: []string{`panel "Rate"`, "queen_bogus_total"}},
		{name: "bogus variable metric", dashboard: strings.Replace(good, "label_values(queen_uptime_seconds", "label_values(queen_gone", 1),
			want: []string{`variable "instance"`, "queen_gone"}},
		{name: "no unit", dashboard: strings.Replace(good, `"unit":"reqps"`, `"unit":""`, 1),
			want: []string{`panel "Rate"`, "no unit"}},
		{name: "no data source variable", dashboard: strings.Replace(good, `"query":"prometheus"`, `"query":"loki"`, 1),
			want: []string{"prometheus"}},
		{name: "no expressions", dashboard: `{"schemaVersion":39,"panels":[]}`, wantErr: true},
		{name: "unparsable", dashboard: good[:len(good)-3], wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			problems, err := checkDashboard([]byte(tc.dashboard), exported)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if len(tc.want) == 0 && len(problems) > 0 {
				t.Fatalf("problems %q, want none", problems)
			}
			if len(tc.want) > 0 {
				if len(problems) != 1 {
					t.Fatalf("problems %q, want one", problems)
				}
				for _, w := range tc.want {
					if !strings.Contains(problems[0], w) {
						t.Fatalf("problem %q does not say %q", problems[0], w)
					}
				}
			}
		})
	}
}

// grafanaPanel is what the check reads of a panel (rows nest panels).
type grafanaPanel struct {
	Type        string `json:"type"`
	Title       string `json:"title"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"`
}

type grafanaDashboard struct {
	SchemaVersion int            `json:"schemaVersion"`
	Panels        []grafanaPanel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"` // a string, or {"query": "..."}
		} `json:"list"`
	} `json:"templating"`
}

// checkDashboard returns what is wrong with a dashboard: expressions naming series not
// in exported, panels without a unit, no Prometheus data source variable. The error is
// for a dashboard that cannot be read at all (or has no expression to check).
func checkDashboard(raw []byte, exported map[string]bool) ([]string, error) {
	var d grafanaDashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	if d.SchemaVersion == 0 {
		return nil, fmt.Errorf("no schemaVersion: not a Grafana dashboard model")
	}
	var problems []string
	exprs := 0
	check := func(where, expr string) {
		exprs++
		for _, name := range metricNames(expr) {
			if !exported[name] {
				problems = append(problems, fmt.Sprintf("%s names %s, which the broker does not export: %s", where, name, expr))
			}
		}
	}
	prometheusVariable := false
	for _, v := range d.Templating.List {
		switch v.Type {
		case "datasource":
			var q string
			prometheusVariable = prometheusVariable || (json.Unmarshal(v.Query, &q) == nil && q == "prometheus")
		case "query":
			var q string
			if json.Unmarshal(v.Query, &q) != nil {
				var obj struct{ Query string }
				if err := json.Unmarshal(v.Query, &obj); err != nil {
					return nil, fmt.Errorf("variable %q: query: %w", v.Name, err)
				}
				q = obj.Query
			}
			check(fmt.Sprintf("variable %q", v.Name), variableSelector(q))
		}
	}
	if !prometheusVariable {
		problems = append(problems, "no data source variable of type prometheus (the panels' ${datasource})")
	}
	var walk func([]grafanaPanel)
	walk = func(panels []grafanaPanel) {
		for _, p := range panels {
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if p.FieldConfig.Defaults.Unit == "" {
				problems = append(problems, fmt.Sprintf("panel %q has no unit", p.Title))
			}
			for _, tg := range p.Targets {
				check(fmt.Sprintf("panel %q", p.Title), tg.Expr)
			}
		}
	}
	walk(d.Panels)
	if exprs == 0 {
		return problems, fmt.Errorf("no PromQL expression found")
	}
	return problems, nil
}

// variableSelector is the PromQL part of a Grafana Prometheus variable query:
// label_values(selector, label) and query_result(expr) hold one; label_values(label),
// label_names() and metrics(regex) name no series.
func variableSelector(q string) string {
	q = strings.TrimSpace(q)
	for _, fn := range []string{"label_values(", "query_result("} {
		inner, ok := strings.CutPrefix(q, fn)
		if !ok {
			continue
		}
		inner = strings.TrimSuffix(inner, ")")
		if fn == "query_result(" {
			return inner
		}
		if i := strings.LastIndexByte(inner, ','); i >= 0 {
			return inner[:i]
		}
		return ""
	}
	return ""
}

// promqlWords are PromQL's keywords and the aggregation operators, which may stand
// without a parenthesis right after them (sum by (x) (...), a and b, offset 5m).
var promqlWords = []string{"and", "or", "unless", "bool", "offset", "inf", "nan", "by", "without", "on", "ignoring",
	"group_left", "group_right", "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
	"bottomk", "topk", "quantile", "limitk", "limit_ratio"}

// labelLists are the words followed by a parenthesised list of label names.
var labelLists = []string{"by", "without", "on", "ignoring", "group_left", "group_right"}

// metricNames returns the metric names a PromQL expression selects, in order of first
// appearance. It is a tokenizer, not a parser: an identifier is a metric name unless a
// '(' follows it (a function), it is a keyword or aggregation, or it stands in a label
// list (by (...)); label matchers {...}, ranges [...], strings, numbers and durations,
// and Grafana variables ($x, ${x}) are skipped. {__name__="x"} names x.
func metricNames(expr string) []string {
	var out []string
	add := func(n string) {
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	s := expr
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(s, i)
		case c == '#': // a comment, to the end of the line
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '{':
			end := closing(s, i, '{', '}')
			add(nameMatcher(s[i+1 : end]))
			i = end + 1
		case c == '[':
			i = closing(s, i, '[', ']') + 1
		case c == '$':
			i++
			if i < len(s) && s[i] == '{' {
				i = closing(s, i, '{', '}') + 1
			} else {
				i = identEnd(s, i)
			}
		case c >= '0' && c <= '9' || c == '.':
			for i < len(s) && (isIdent(s[i]) || s[i] == '.') { // 0.99, 5m, 1e3, 0x1f
				i++
			}
		case isIdentStart(c):
			end := identEnd(s, i)
			word := s[i:end]
			next := end
			for next < len(s) && (s[next] == ' ' || s[next] == '\t' || s[next] == '\n' || s[next] == '\r') {
				next++
			}
			switch {
			case slices.Contains(labelLists, word) && next < len(s) && s[next] == '(':
				end = closing(s, next, '(', ')') + 1
			case next < len(s) && s[next] == '(': // a function call
			case slices.Contains(promqlWords, strings.ToLower(word)):
			default:
				add(word)
			}
			i = end
		default:
			i++
		}
	}
	return out
}

// nameMatcher returns the metric a label matcher list names with __name__="x", if any.
func nameMatcher(matchers string) string {
	for _, m := range strings.Split(matchers, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(m), "=")
		if ok && strings.TrimSpace(name) == "__name__" && !strings.HasPrefix(value, "~") {
			return strings.Trim(strings.TrimSpace(value), "\"'`")
		}
	}
	return ""
}

// closing returns the index of the bracket closing the one at s[open] (nesting counted,
// strings skipped), or len(s)-1 when it is never closed.
func closing(s string, open int, left, right byte) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '"', '\'', '`':
			i = skipString(s, i) - 1
		case left:
			depth++
		case right:
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return len(s) - 1
}

// skipString returns the index just past the string literal starting at s[i].
func skipString(s string, i int) int {
	quote := s[i]
	for i++; i < len(s); i++ {
		if s[i] == '\\' && quote != '`' {
			i++
			continue
		}
		if s[i] == quote {
			return i + 1
		}
	}
	return len(s)
}

func identEnd(s string, i int) int {
	for i < len(s) && isIdent(s[i]) {
		i++
	}
	return i
}

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdent(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

// TestMetricNames: the tokenizer finds the metric names of PromQL expressions, and only
// them.
func TestMetricNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, expr string
		want       []string
	}{
		{"bare", "go_goroutines", []string{"go_goroutines"}},
		{"matchers and range", `rate(queen_http_requests_total{code=~"5..",route!="/x{y}"}[5m])`, []string{"queen_http_requests_total"}},
		{"aggregation before by", `sum by (le, route) (rate(a_bucket{instance=~"$instance"}[$__rate_interval]))`, []string{"a_bucket"}},
		{"aggregation after by", `sum(rate(a_total[1m])) by (route) / sum without (code) (b_total)`, []string{"a_total", "b_total"}},
		{"histogram_quantile", `histogram_quantile(0.99, sum by (le) (rate(d_bucket[5m])))`, []string{"d_bucket"}},
		{"binary operators and keywords", `a > bool 3 and on (instance) b or ignoring (x) group_left (y) c unless d offset 5m`,
			[]string{"a", "b", "c", "d"}},
		{"grafana variables", `rate(x_total[$__rate_interval]) * ${factor} + $scale`, []string{"x_total"}},
		{"name matcher", `{__name__="queen_uptime_seconds", instance="a"}`, []string{"queen_uptime_seconds"}},
		{"strings", `label_replace(up, "dst", "$1", "src", "(.*) rate(fake)")`, []string{"up"}},
		{"numbers", `1e3 * 0.5 + 0x1f - .5 + Inf + NaN`, nil},
		{"colons", `job:queen_requests:rate5m`, []string{"job:queen_requests:rate5m"}},
		{"repeated", `a / a`, []string{"a"}},
		{"subquery and at", `max_over_time(rate(a_total[1m])[10m:1m] @ end())`, []string{"a_total"}},
		{"comment", "a # b\n+ c", []string{"a", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := metricNames(tc.expr); !slices.Equal(got, tc.want) {
				t.Fatalf("metricNames(%q) = %q, want %q", tc.expr, got, tc.want)
			}
		})
	}
}

// TestVariableSelector: the PromQL part of Grafana's variable queries.
func TestVariableSelector(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ query, want string }{
		{"label_values(queen_uptime_seconds, instance)", "queen_uptime_seconds"},
		{`label_values(up{job="queen"}, instance)`, `up{job="queen"}`},
		{"label_values(instance)", ""},
		{"query_result(topk(5, x_total))", "topk(5, x_total)"},
		{"label_names()", ""},
	} {
		if got := variableSelector(tc.query); got != tc.want {
			t.Errorf("variableSelector(%q) = %q, want %q", tc.query, got, tc.want)
		}
	}
}

package report

import (
	"maps"
	"slices"
	"strings"

	"github.com/queen-go/queen/bench/load"
	"github.com/queen-go/queen/bench/verify"
)

// FromPipeline is the pipeline verifier's verdict (bench/verify.Check): gaps below the
// frontier (lost messages) always fail, order violations fail unless acks failed,
// duplicates and messages in flight at the cutoff are reported only.
func FromPipeline(r verify.Report) *Verdict {
	t := r.Total
	v := &Verdict{Pass: r.Pass, Line: r.VerdictLine(), Counts: []Count{
		{Name: "delivered", Value: t.Msgs},
		{Name: "unique", Value: t.Unique},
		{Name: "lost (gaps below the frontier)", Value: t.Gaps, Fatal: true},
		{Name: "order violations", Value: t.Violations, Fatal: r.AckErrors == 0},
		{Name: "duplicates", Value: t.Dups},
		{Name: "in flight at the cutoff", Value: t.InFlight},
		{Name: "outside the produced ground truth", Value: t.Unproduced},
		{Name: "ack errors", Value: r.AckErrors},
	}}
	tb := Table{Caption: "Per stage (queue_group)", Header: []string{"stage", "msgs", "unique", "dups", "gaps", "viols", "inflight", "verdict"}}
	for _, s := range r.Stages {
		c := s.Counts
		tb.Rows = append(tb.Rows, []string{s.Name, grouped(c.Msgs), grouped(c.Unique), grouped(c.Dups), grouped(c.Gaps),
			grouped(c.Violations), grouped(c.InFlight), verdictWord(s.Pass)})
	}
	tb.Rows = append(tb.Rows, []string{"TOTAL", grouped(t.Msgs), grouped(t.Unique), grouped(t.Dups), grouped(t.Gaps),
		grouped(t.Violations), grouped(t.InFlight), verdictWord(r.Pass)})
	v.Tables = append(v.Tables, tb)
	if r.AckErrors > 0 {
		v.Notes = append(v.Notes, "Acks failed during the run, so order violations are reported but not fatal: a failed ack redelivers a span.")
	}
	return v
}

// FromFault is the fault load's verdict (bench/verify.CheckLedger, the soak's): every
// accepted message delivered to every group, in order, never stored twice; criteria,
// when given, are the soak's leak criteria, and with them the verdict is the soak's.
func FromFault(r verify.FaultReport, criteria []load.Criterion, line string, pass bool) *Verdict {
	var sum verify.FaultCounts
	tb := Table{Caption: "Per consumer group", Header: []string{"group", "acknowledged", "delivered", "lost", "order violations",
		"relaxed violations", "stored duplicates", "gaps", "in flight", "redeliveries", "verdict"}}
	for _, g := range r.Groups {
		c := g.FaultCounts
		sum.Acknowledged = max(sum.Acknowledged, c.Acknowledged)
		sum.Delivered += c.Delivered
		sum.Lost += c.Lost
		sum.Violations += c.Violations
		sum.StoredDuplicates += c.StoredDuplicates
		sum.Gaps += c.Gaps
		sum.InFlight += c.InFlight
		sum.Redeliveries += c.Redeliveries
		sum.Unproduced += c.Unproduced
		tb.Rows = append(tb.Rows, []string{g.Group, grouped(c.Acknowledged), grouped(c.Delivered), grouped(c.Lost),
			grouped(c.Violations), grouped(c.RelaxedViolations), grouped(c.StoredDuplicates), grouped(c.Gaps),
			grouped(c.InFlight), grouped(c.Redeliveries), verdictWord(g.Pass)})
	}
	v := &Verdict{Pass: r.Pass, Line: "VERIFIER: " + verdictWord(r.Pass), Notes: r.Details, Counts: []Count{
		{Name: "acknowledged", Value: sum.Acknowledged},
		{Name: "delivered (all groups)", Value: sum.Delivered},
		{Name: "lost", Value: sum.Lost, Fatal: true},
		{Name: "order violations", Value: sum.Violations, Fatal: true},
		{Name: "stored duplicates", Value: sum.StoredDuplicates, Fatal: true},
		{Name: "gaps", Value: sum.Gaps, Fatal: true},
		{Name: "in flight after the drain", Value: sum.InFlight, Fatal: true},
		{Name: "outside the ledger", Value: sum.Unproduced, Fatal: true},
		{Name: "redeliveries", Value: sum.Redeliveries},
	}}
	v.Tables = append(v.Tables, tb)
	if criteria != nil {
		v.Pass, v.Line = pass, line
		ct := Table{Caption: "Leak criteria (after the warm-up)", Header: []string{"criterion", "measured", "limit", "verdict"}}
		for _, c := range criteria {
			ct.Rows = append(ct.Rows, []string{c.Name, c.Measured, c.Limit, c.Status})
		}
		v.Tables = append(v.Tables, ct)
	}
	return v
}

// FromSummary is the verdict a saved summary line still holds without its verifier's
// counts: the pipeline's extra.pass or the soak's extra.verdict; nil when none.
func FromSummary(s load.Summary) *Verdict {
	note := "Only the verdict was saved with this summary: the verifier's counts are in the run's output."
	if p, ok := s.Extra["pass"].(bool); ok {
		return &Verdict{Pass: p, Line: "VERDICT: " + verdictWord(p), Notes: []string{note}}
	}
	if p, ok := s.Extra["verdict"].(string); ok && (p == "PASS" || p == "FAIL") {
		v := &Verdict{Pass: p == "PASS", Line: "SOAK VERDICT: " + p, Notes: []string{note}}
		if cs, ok := s.Extra["criteria"].(map[string]any); ok {
			t := Table{Caption: "Leak criteria", Header: []string{"criterion", "verdict"}}
			for _, k := range slices.Sorted(maps.Keys(cs)) {
				st, _ := cs[k].(string)
				t.Rows = append(t.Rows, []string{k, st})
			}
			v.Tables = append(v.Tables, t)
		}
		return v
	}
	return nil
}

// MarkdownTable reads a Markdown table (header, separator, rows) such as load.Report
// prints; ok is false when s is not one, or a row has another number of cells.
func MarkdownTable(caption, s string) (Table, bool) {
	var lines []string
	for l := range strings.SplitSeq(strings.TrimSpace(s), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) < 2 {
		return Table{}, false
	}
	cells := func(l string) ([]string, bool) {
		if !strings.HasPrefix(l, "|") || !strings.HasSuffix(l, "|") || len(l) < 2 {
			return nil, false
		}
		cs := strings.Split(l[1:len(l)-1], "|")
		for i := range cs {
			cs[i] = strings.TrimSpace(cs[i])
		}
		return cs, true
	}
	head, ok := cells(lines[0])
	if !ok {
		return Table{}, false
	}
	if sep, ok := cells(lines[1]); !ok || len(sep) != len(head) || strings.Trim(strings.Join(sep, ""), "-:") != "" {
		return Table{}, false
	}
	t := Table{Caption: caption, Header: head}
	for _, l := range lines[2:] {
		r, ok := cells(l)
		if !ok || len(r) != len(head) {
			return Table{}, false
		}
		t.Rows = append(t.Rows, r)
	}
	return t, true
}

func verdictWord(pass bool) string {
	if pass {
		return "PASS"
	}
	return "FAIL"
}

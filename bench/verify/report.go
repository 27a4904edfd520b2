package verify

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Counts are the figures of one stage, or their sums.
type Counts struct {
	Msgs       int64 `json:"msgs"`
	Unique     int64 `json:"unique"`
	Dups       int64 `json:"dups"`
	Gaps       int64 `json:"gaps"`
	Violations int64 `json:"viols"`
	InFlight   int64 `json:"inflight"`
	Unproduced int64 `json:"unproduced"`
}

func (c *Counts) add(o Counts) {
	c.Msgs += o.Msgs
	c.Unique += o.Unique
	c.Dups += o.Dups
	c.Gaps += o.Gaps
	c.Violations += o.Violations
	c.InFlight += o.InFlight
	c.Unproduced += o.Unproduced
}

// StageReport is one row of the table.
type StageReport struct {
	Name string `json:"stage"`
	Counts
	Pass bool `json:"pass"`
}

// Report is the outcome of Check: per-stage rows in the order given, their total, and
// the verdict.
type Report struct {
	Stages    []StageReport `json:"stages"`
	Total     Counts        `json:"total"`
	AckErrors int64         `json:"ack_errors"`
	Pass      bool          `json:"pass"`
}

// Column layout of the verdict table of Queen's ordered-pipeline benchmark: the name column is
// 27 wide, then right-aligned numbers ending at columns 37, 48, 57, 66, 75 and 86, then
// two spaces and the verdict. Every number is printed as one space plus a field one
// narrower, so a number wider than its column still stays separated.
const (
	nameWidth = 27
	rowFormat = "%-*s %9v %10v %8v %8v %8v %10v"
)

// Table renders the report as the benchmark prints it: header, one row per stage,
// TOTAL, notes when there is something to note, and the VERDICT line last (scripts may
// take the last line).
func (r Report) Table() string {
	w := nameWidth
	for _, s := range r.Stages {
		w = max(w, len(s.Name)+1)
	}
	var b strings.Builder
	fmt.Fprintf(&b, rowFormat+"  %s\n", w, "stage(queue_group)", "msgs", "unique", "dups", "gaps", "viols", "inflight", "verdict")
	for _, s := range r.Stages {
		c := s.Counts
		fmt.Fprintf(&b, rowFormat+"  %s\n", w, s.Name, c.Msgs, c.Unique, c.Dups, c.Gaps, c.Violations, c.InFlight, verdict(s.Pass))
	}
	t := r.Total
	fmt.Fprintf(&b, rowFormat+"\n", w, "TOTAL", t.Msgs, t.Unique, t.Dups, t.Gaps, t.Violations, t.InFlight)
	if r.AckErrors > 0 {
		fmt.Fprintf(&b, "note: ackErr=%d, so order-violations are reported but not fatal\n", r.AckErrors)
	}
	if t.Unproduced > 0 {
		fmt.Fprintf(&b, "note: %d messages outside the produced ground truth (unknown entity, or sequence below base or above the produced maximum)\n", t.Unproduced)
	}
	b.WriteString(r.VerdictLine())
	b.WriteByte('\n')
	return b.String()
}

// Verdict is "PASS" or "FAIL".
func (r Report) Verdict() string { return verdict(r.Pass) }

// VerdictLine is the last line of Table, without its newline.
func (r Report) VerdictLine() string {
	t := r.Total
	return fmt.Sprintf("VERDICT: %s  (%d gaps below frontier, %d order-violations, %d dups, %d in-flight at cutoff)",
		r.Verdict(), t.Gaps, t.Violations, t.Dups, t.InFlight)
}

// JSON renders the report as one line of JSON (no trailing newline), for scripts.
func (r Report) JSON() string {
	if r.Stages == nil {
		r.Stages = []StageReport{} // "stages":[] rather than null
	}
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // unreachable: the report holds only strings, integers and booleans
	}
	return string(b)
}

func verdict(pass bool) string {
	if pass {
		return "PASS"
	}
	return "FAIL"
}

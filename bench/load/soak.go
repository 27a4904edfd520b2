package load

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// The soak (docs/reliability.md, load profile L3): samples of the broker's resources and the
// load's latencies every few seconds, the CSV they are kept in, and the leak criteria
// checked over them. Everything here is pure; RunSoak (soak_run.go) takes the samples.

// HotTables are the tables whose dead tuples the soak watches: the ones every push, pop
// and ack updates, and the segments retention deletes.
var HotTables = [...]string{"log_partitions", "log_consumers", "log_segments"}

// Tuples are one table's n_dead_tup and n_live_tup (pg_stat_user_tables: estimates) and
// its size on disk in bytes, indexes and TOAST included (pg_total_relation_size): a table
// of a few pages updated thousands of times a second has a dead/live ratio far above one
// most of the time, and what tells bloat from churn is whether its size stays bounded.
// NaN when not read.
type Tuples struct{ Dead, Live, Bytes float64 }

// ratio is dead / live; a table with no live tuple counts as one, so a handful of dead
// tuples in an empty table do not read as infinite bloat.
func (t Tuples) ratio() float64 { return t.Dead / max(t.Live, 1) }

// SoakSample is one row of the soak's CSV. Figures that could not be read are NaN and
// leave their cell empty.
type SoakSample struct {
	Elapsed      time.Duration // since the load started
	Accepted     int64         // items the broker accepted so far
	Delivered    int64         // deliveries so far, over every group, redeliveries included
	PushP50      float64       // ms, push calls that completed in the interval; NaN: none
	PushP99      float64       // ms
	PopAckP99    float64       // ms, pop answer to ack answer, batches acked in the interval
	RSS          float64       // bytes, the broker's resident set
	Goroutines   float64       // the broker's go_goroutines
	FDs          float64       // the broker's open file descriptors
	Threads      float64       // the broker's OS threads
	PGConns      float64       // backends of the broker's database connections (pg_stat_activity)
	Backlog      int64         // Accepted minus the slowest group's first deliveries
	Tuples       [len(HotTables)]Tuples
	SpoolPending float64 // records (queen_file_buffer_pending)
}

// soakColumns are the CSV's header cells, units in the names, in SoakSample's order.
func soakColumns() []string {
	cols := []string{"elapsed_s", "accepted_msgs", "delivered_msgs", "push_p50_ms", "push_p99_ms", "pop_ack_p99_ms",
		"rss_bytes", "goroutines", "open_fds", "threads", "pg_conns", "backlog_msgs"}
	for _, t := range HotTables {
		cols = append(cols, t+"_dead_tup", t+"_live_tup", t+"_bytes")
	}
	return append(cols, "spool_pending_records")
}

// cells renders the sample as CSV cells.
func (s SoakSample) cells() []string {
	c := []string{fnum(s.Elapsed.Seconds(), 1), strconv.FormatInt(s.Accepted, 10), strconv.FormatInt(s.Delivered, 10),
		fnum(s.PushP50, 2), fnum(s.PushP99, 2), fnum(s.PopAckP99, 2),
		fnum(s.RSS, 0), fnum(s.Goroutines, 0), fnum(s.FDs, 0), fnum(s.Threads, 0), fnum(s.PGConns, 0),
		strconv.FormatInt(s.Backlog, 10)}
	for _, t := range s.Tuples {
		c = append(c, fnum(t.Dead, 0), fnum(t.Live, 0), fnum(t.Bytes, 0))
	}
	return append(c, fnum(s.SpoolPending, 0))
}

// fnum formats v with prec decimals; "" for NaN (not read).
func fnum(v float64, prec int) string {
	if math.IsNaN(v) {
		return ""
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// SoakCSV writes the soak's samples, one row each, flushed at once: a run that is
// killed keeps every sample taken so far.
type SoakCSV struct{ w *csv.Writer }

// NewSoakCSV writes the header row to w.
func NewSoakCSV(w io.Writer) (*SoakCSV, error) {
	c := &SoakCSV{w: csv.NewWriter(w)}
	if err := c.write(soakColumns()); err != nil {
		return nil, fmt.Errorf("soak csv: header: %w", err)
	}
	return c, nil
}

// Write appends one sample's row.
func (c *SoakCSV) Write(s SoakSample) error {
	if err := c.write(s.cells()); err != nil {
		return fmt.Errorf("soak csv: row at %v: %w", s.Elapsed, err)
	}
	return nil
}

func (c *SoakCSV) write(cells []string) error {
	if err := c.w.Write(cells); err != nil {
		return err
	}
	c.w.Flush()
	return c.w.Error()
}

// SoakLimits are the soak thresholds of docs/reliability.md and how this tool reads the ones it
// leaves open (see DefaultSoakLimits).
type SoakLimits struct {
	RSSGrowth      float64 // last sample over the warm-up's end, as a fraction
	GoroutineBand  float64 // every sample within ± this fraction of the warm-up's end...
	GoroutineFloor float64 // ...or within this many goroutines of it, whichever is wider
	FDBand         float64 // max - min over the samples at most this fraction of the warm-up's end...
	FDFloor        float64 // ...or this many descriptors, whichever is more
	PGConns        float64 // most broker connections allowed (its pool, plus its hint listener)
	PushP99        float64 // ms, over every push after the warm-up
	PopAckP99      float64 // ms, over every acked batch after the warm-up
	BacklogSlope   float64 // most backlog growth, as a fraction of Rate (msg/s per msg/s)
	Rate           float64 // the offered rate, msg/s
	DeadLive       float64 // n_dead_tup / n_live_tup of each hot table at the end, below this
}

// DefaultSoakLimits are the soak limits of docs/reliability.md for a broker with a pool of poolSize
// connections under rate msg/s:
//   - the pool plus one connection: the broker's hint listener (adapters/postgres,
//     Listen) holds a connection of its own, outside the pool;
//   - goroutines: ±10 %, or ±10 goroutines when that is wider: every query in flight
//     has a context-watching goroutine of pgx, so a broker of a few dozen goroutines
//     swings by several between two samples without leaking any;
//   - FDs "flat": max - min at most 10 % of the warm-up's value, and at least 5 (a
//     connection or a spool file opened at the moment of a sample);
//   - backlog "not trending up": the least-squares slope of the backlog over the samples
//     after the warm-up below 1 % of the offered rate (a backlog that grows by 1 % of a
//     minute's messages every minute: the consumers fall 1 % short). Over 25 minutes the
//     noise of a backlog that swings by a second's worth of messages moves the slope by
//     about 0.01 % of the rate, so 1 % is a real trend; in a run of a few minutes the
//     noise approaches the threshold.
func DefaultSoakLimits(rate float64, poolSize int) SoakLimits {
	return SoakLimits{RSSGrowth: 0.10, GoroutineBand: 0.10, GoroutineFloor: 10, FDBand: 0.10, FDFloor: 5,
		PGConns: float64(poolSize + 1), PushP99: 100, PopAckP99: 500, BacklogSlope: 0.01, Rate: rate, DeadLive: 0.2}
}

// SoakOutcome is what the criteria are checked against: every sample, the latencies over
// the whole run after the warm-up, and the end of the run.
type SoakOutcome struct {
	Samples      []SoakSample
	Warmup       time.Duration // samples before it are not checked
	PushP99      float64       // ms, every push call completed after the warm-up; NaN: none
	PopAckP99    float64       // ms, every batch acked after the warm-up; NaN: none
	SpoolPending float64       // records after the final drain; NaN: not exported
	Verifier     bool          // the verifier's verdict after the final drain
	VerifierNote string        // its counts, shown as measured
}

// Criterion statuses.
const (
	SoakPass = "PASS"
	SoakFail = "FAIL"
	SoakNA   = "N/A" // not measured (the broker does not export it, no -pg-url, ...)
)

// Criterion is one row of the soak's table.
type Criterion struct {
	Name, Measured, Limit, Status string
}

// CheckSoak checks the soak criteria of docs/reliability.md over the samples taken
// after the warm-up (the first of them is the warm-up's end, the reference of RSS,
// goroutines and FDs). Fewer than two such samples fail every criterion that needs
// them.
func CheckSoak(o SoakOutcome, l SoakLimits) []Criterion {
	var after []SoakSample
	for _, s := range o.Samples {
		if s.Elapsed >= o.Warmup {
			after = append(after, s)
		}
	}
	cs := make([]Criterion, 0, 10)
	if len(after) < 2 {
		for _, name := range []string{"RSS growth", "goroutines", "open FDs", "PG connections", "backlog trend", "dead/live tuples"} {
			cs = append(cs, Criterion{name, fmt.Sprintf("%d samples after the warm-up", len(after)), "at least 2", SoakFail})
		}
	} else {
		cs = append(cs, checkRSS(after, l), checkGoroutines(after, l), checkFDs(after, l), checkPGConns(after, l),
			checkBacklog(after, l), checkDeadLive(after, l))
	}
	cs = append(cs, checkMax("push p99", o.PushP99, l.PushP99, "ms"), checkMax("pop-to-ack p99", o.PopAckP99, l.PopAckP99, "ms"),
		checkSpool(o.SpoolPending), checkVerifier(o))
	return cs
}

// series returns one figure of every sample, without the unread ones.
func series(ss []SoakSample, f func(SoakSample) float64) []float64 {
	var out []float64
	for _, s := range ss {
		if v := f(s); !math.IsNaN(v) {
			out = append(out, v)
		}
	}
	return out
}

func status(ok bool) string {
	if ok {
		return SoakPass
	}
	return SoakFail
}

func notMeasured(name, why, limit string) Criterion {
	return Criterion{name, "not measured: " + why, limit, SoakNA}
}

func checkRSS(after []SoakSample, l SoakLimits) Criterion {
	limit := fmt.Sprintf("<= +%.0f %%", l.RSSGrowth*100)
	v := series(after, func(s SoakSample) float64 { return s.RSS })
	if len(v) < 2 || v[0] <= 0 {
		return notMeasured("RSS growth", "no broker RSS (-broker-pid, process_resident_memory_bytes)", limit)
	}
	g := v[len(v)-1]/v[0] - 1
	return Criterion{"RSS growth", fmt.Sprintf("%+.1f %% (%s -> %s, max %s)", g*100, mb(v[0]), mb(v[len(v)-1]), mb(maxOf(v))),
		limit, status(g <= l.RSSGrowth)}
}

func checkGoroutines(after []SoakSample, l SoakLimits) Criterion {
	v := series(after, func(s SoakSample) float64 { return s.Goroutines })
	if len(v) < 2 {
		return notMeasured("goroutines", "the broker exports no go_goroutines", fmt.Sprintf("±%.0f %%", l.GoroutineBand*100))
	}
	band := max(v[0]*l.GoroutineBand, l.GoroutineFloor)
	lo, hi := minOf(v), maxOf(v)
	return Criterion{"goroutines", fmt.Sprintf("%.0f..%.0f (warm-up end %.0f)", lo, hi, v[0]),
		fmt.Sprintf("%.0f±%.0f (±%.0f %%, at least ±%.0f)", v[0], band, l.GoroutineBand*100, l.GoroutineFloor),
		status(lo >= v[0]-band && hi <= v[0]+band)}
}

func checkFDs(after []SoakSample, l SoakLimits) Criterion {
	v := series(after, func(s SoakSample) float64 { return s.FDs })
	if len(v) < 2 {
		return notMeasured("open FDs", "no broker FD count (-broker-pid, process_open_fds)", "flat")
	}
	spread := max(v[0]*l.FDBand, l.FDFloor)
	lo, hi := minOf(v), maxOf(v)
	return Criterion{"open FDs", fmt.Sprintf("%.0f..%.0f (spread %.0f, warm-up end %.0f)", lo, hi, hi-lo, v[0]),
		fmt.Sprintf("spread <= %.0f (%.0f %%, at least %.0f)", spread, l.FDBand*100, l.FDFloor), status(hi-lo <= spread)}
}

func checkPGConns(after []SoakSample, l SoakLimits) Criterion {
	limit := fmt.Sprintf("<= %.0f (pool + hint listener)", l.PGConns)
	v := series(after, func(s SoakSample) float64 { return s.PGConns })
	if len(v) == 0 {
		return notMeasured("PG connections", "no -pg-url", limit)
	}
	hi := maxOf(v)
	return Criterion{"PG connections", fmt.Sprintf("max %.0f", hi), limit, status(hi <= l.PGConns)}
}

// checkBacklog fits the backlog (messages) against time (seconds) by least squares: the
// slope is how many messages per second the consumers fall behind.
func checkBacklog(after []SoakSample, l SoakLimits) Criterion {
	limit := fmt.Sprintf("slope < %.2g %% of rate (%.1f msg/s)", l.BacklogSlope*100, l.BacklogSlope*l.Rate)
	xs, ys := make([]float64, len(after)), make([]float64, len(after))
	for i, s := range after {
		xs[i], ys[i] = s.Elapsed.Seconds(), float64(s.Backlog)
	}
	slope := Slope(xs, ys)
	if math.IsNaN(slope) {
		return Criterion{"backlog trend", "no slope (every sample at one instant)", limit, SoakFail}
	}
	measured := fmt.Sprintf("%+.2f msg/s (%+.3f %% of rate; backlog %d -> %d)", slope, 100*slope/l.Rate,
		after[0].Backlog, after[len(after)-1].Backlog)
	return Criterion{"backlog trend", measured, limit, status(slope < l.BacklogSlope*l.Rate)}
}

// Slope is the least-squares slope of ys over xs; NaN when the xs do not vary.
func Slope(xs, ys []float64) float64 {
	n := float64(len(xs))
	var sx, sy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
	}
	mx, my := sx/n, sy/n
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	if sxx == 0 {
		return math.NaN()
	}
	return sxy / sxx
}

// checkDeadLive checks the last sample's ratios; the most dead tuples of each table after
// the warm-up are shown too, to tell a table autovacuum keeps bounded (the hot tables
// are vacuumed at a fixed threshold of dead tuples, schema/001_tables.sql) from one it
// does not.
func checkDeadLive(after []SoakSample, l SoakLimits) Criterion {
	limit := fmt.Sprintf("< %.2g each", l.DeadLive)
	last := after[len(after)-1]
	var parts []string
	ok, read := true, false
	for i, t := range last.Tuples {
		if math.IsNaN(t.Dead) || math.IsNaN(t.Live) {
			continue
		}
		read = true
		r := t.ratio()
		ok = ok && r < l.DeadLive
		most := maxOf(series(after, func(s SoakSample) float64 { return s.Tuples[i].Dead }))
		parts = append(parts, fmt.Sprintf("%s %.3f (%.0f/%.0f, max dead %.0f)", HotTables[i], r, t.Dead, t.Live, most))
	}
	if !read {
		return notMeasured("dead/live tuples", "no -pg-url", limit)
	}
	return Criterion{"dead/live tuples", strings.Join(parts, ", ") + " at the end", limit, status(ok)}
}

func checkMax(name string, v, limit float64, unit string) Criterion {
	lim := fmt.Sprintf("<= %g %s", limit, unit)
	if math.IsNaN(v) {
		return Criterion{name, "no call completed after the warm-up", lim, SoakFail}
	}
	return Criterion{name, fmt.Sprintf("%.1f %s", v, unit), lim, status(v <= limit)}
}

func checkSpool(pending float64) Criterion {
	if math.IsNaN(pending) {
		return notMeasured("spool empty", "the broker exports no queen_file_buffer_pending", "0 records")
	}
	return Criterion{"spool empty", fmt.Sprintf("%.0f records after the drain", pending), "0 records", status(pending == 0)}
}

func checkVerifier(o SoakOutcome) Criterion {
	v := "FAIL"
	if o.Verifier {
		v = "PASS"
	}
	if o.VerifierNote != "" {
		v += " (" + o.VerifierNote + ")"
	}
	return Criterion{"verifier", v, "PASS", status(o.Verifier)}
}

func minOf(v []float64) float64 {
	m := v[0]
	for _, x := range v[1:] {
		m = min(m, x)
	}
	return m
}

func maxOf(v []float64) float64 {
	m := v[0]
	for _, x := range v[1:] {
		m = max(m, x)
	}
	return m
}

// SoakVerdict is the one-line verdict: PASS when no criterion failed (criteria not
// measured are named), and whether it passed.
func SoakVerdict(cs []Criterion) (string, bool) {
	var failed, na []string
	for _, c := range cs {
		switch c.Status {
		case SoakFail:
			failed = append(failed, c.Name)
		case SoakNA:
			na = append(na, c.Name)
		}
	}
	line := "SOAK VERDICT: PASS"
	if len(failed) > 0 {
		line = "SOAK VERDICT: FAIL (" + strings.Join(failed, ", ") + ")"
	}
	if len(na) > 0 {
		line += "; not measured: " + strings.Join(na, ", ")
	}
	return line, len(failed) == 0
}

// SoakTable renders the criteria as a markdown table.
func SoakTable(cs []Criterion) string {
	var b strings.Builder
	b.WriteString("| criterion | measured | limit | verdict |\n|---|---|---|---|\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", c.Name, c.Measured, c.Limit, c.Status)
	}
	return b.String()
}

package faults

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/bench/load"
	"github.com/queen-go/queen/bench/verify"
	"go.uber.org/goleak"
)

// fullEnv selects the whole matrix at docs/reliability.md's sizes (make faults); without it the
// scenarios run smaller and shorter, to fit CI.
const fullEnv = "QUEEN_FAULTS_FULL"

// tableEnv names a file the results table is also written to (make faults keeps it for
// docs/reliability.md).
const tableEnv = "QUEEN_FAULTS_TABLE"

// pg is the package's own cluster (see cluster).
var pg *cluster

// TestMain runs the scenarios; with QUEEN_FAULTS_COPIER set the binary is an L2 copier
// process instead (l2_test.go).
func TestMain(m *testing.M) {
	if url := os.Getenv(copierEnv); url != "" {
		os.Exit(runCopier(url))
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "queen-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if brokerBin, err = buildBroker(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if pg, err = startCluster(filepath.Join(dir, "pg")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if err := pg.stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	printResults()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "faults: goroutines left behind:", err)
			code = 1
		}
	}
	return code
}

// sized picks a scenario's figure: ci in make test, plan (docs/reliability.md's own size) when the
// whole matrix runs.
func sized[T any](ci, plan T) T {
	if os.Getenv(fullEnv) != "" {
		return plan
	}
	return ci
}

// result is one row of the fault table.
type result struct {
	Fault        string
	Acknowledged int64 // accepted push results (the ledger)
	Delivered    int64 // first deliveries over every group
	Lost         int64
	Violations   int64
	StoredDups   int64
	Recovery     time.Duration // from the end of the fault to traffic flowing again (0: not measured)
	Pass         bool
}

// failoverRow is one row of the failover table (docs/reliability.md, "Failover").
type failoverRow struct {
	Fault        string
	Acknowledged int64
	NoQueued     time.Duration // the longest stretch without a queued answer, from the fault on
	Spooled      int64         // items answered buffered (each replayed: the drain empties the spool)
	Redeliveries int64
	Lost         int64
	Violations   int64
	StoredDups   int64
	Verdict      string // PASS, FAIL, or measured (a loss documented, not judged)
}

var (
	resultsMu sync.Mutex
	results   []result
	failovers []failoverRow
)

// recordFailover adds a failover scenario's row: its verifier report and what its load
// saw from injected on. It returns the row's longest stretch without a queued answer.
func recordFailover(fault string, rep verify.FaultReport, r *load.FaultRun, injected time.Time, measured bool) time.Duration {
	row := failoverRow{Fault: fault, Spooled: r.Ledger.Count("buffered"), Verdict: "PASS",
		NoQueued: longestWithoutQueued(r.PushSamples(injected, time.Now().Add(time.Hour)), injected)}
	sum := totals(rep)
	row.Acknowledged, row.Redeliveries, row.Lost = sum.Acknowledged, sum.Redeliveries, sum.Lost
	row.Violations, row.StoredDups = sum.Violations, sum.StoredDuplicates
	switch {
	case measured:
		row.Verdict = "measured"
	case !rep.Pass:
		row.Verdict = "FAIL"
	}
	resultsMu.Lock()
	failovers = append(failovers, row)
	resultsMu.Unlock()
	return row.NoQueued
}

// longestWithoutQueued is the longest time from since, or from a queued answer (a push
// accepted and not wholly buffered), to the next queued answer, or to the start of the
// last push sampled: a broker that never answers queued again shows the whole stretch,
// not the last gap before the fault.
func longestWithoutQueued(samples []load.PushSample, since time.Time) time.Duration {
	var done []time.Time
	end := since
	for _, s := range samples {
		if s.OK && !s.Buffered {
			done = append(done, s.At.Add(s.Took))
		}
		if s.At.After(end) {
			end = s.At
		}
	}
	slices.SortFunc(done, time.Time.Compare)
	longest, prev := time.Duration(0), since
	for _, at := range done {
		longest = max(longest, at.Sub(prev))
		prev = at
	}
	return max(longest, end.Sub(prev))
}

// totals adds up the report's groups: the counts of every group summed, the
// acknowledged count (the same ledger for all) once.
func totals(rep verify.FaultReport) verify.FaultCounts {
	var sum verify.FaultCounts
	for i, g := range rep.Groups {
		if i == 0 {
			sum.Acknowledged = g.Acknowledged
		}
		sum.Unique += g.Unique
		sum.Redeliveries += g.Redeliveries
		sum.Lost += g.Lost
		sum.Violations += g.Violations
		sum.StoredDuplicates += g.StoredDuplicates
	}
	return sum
}

// record adds a scenario's row from its verifier report.
func record(fault string, rep verify.FaultReport, recovery time.Duration, pass bool) {
	sum := totals(rep)
	r := result{Fault: fault, Recovery: recovery, Pass: pass && rep.Pass, Acknowledged: sum.Acknowledged,
		Delivered: sum.Unique, Lost: sum.Lost, Violations: sum.Violations, StoredDups: sum.StoredDuplicates}
	resultsMu.Lock()
	results = append(results, r)
	resultsMu.Unlock()
}

// recordTargeted adds the row of a scenario without the load: its own counts of accepted
// pushes and of messages delivered.
func recordTargeted(fault string, acknowledged, delivered int64, recovery time.Duration, pass bool) {
	resultsMu.Lock()
	results = append(results, result{Fault: fault, Acknowledged: acknowledged, Delivered: delivered, Recovery: recovery, Pass: pass})
	resultsMu.Unlock()
}

// printResults prints the fault table (and writes it to QUEEN_FAULTS_TABLE's file).
func printResults() {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	if len(results)+len(failovers) == 0 {
		return
	}
	var b strings.Builder
	if len(results) > 0 {
		b.WriteString("| fault | acknowledged | delivered (first, all groups) | lost | order violations | stored duplicates | time to recover | verdict |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---|\n")
	}
	for _, r := range results {
		rec := "-"
		if r.Recovery > 0 {
			rec = r.Recovery.Round(10 * time.Millisecond).String()
		}
		verdict := "PASS"
		if !r.Pass {
			verdict = "FAIL"
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %s | %s |\n", r.Fault, r.Acknowledged, r.Delivered, r.Lost,
			r.Violations, r.StoredDups, rec, verdict)
	}
	if len(failovers) > 0 {
		b.WriteString("\n| failover | acknowledged | longest without queued | spooled (all replayed) | redeliveries | lost | order violations | stored duplicates | verdict |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
		for _, r := range failovers {
			fmt.Fprintf(&b, "| %s | %d | %s | %d | %d | %d | %d | %d | %s |\n", r.Fault, r.Acknowledged,
				r.NoQueued.Round(10*time.Millisecond), r.Spooled, r.Redeliveries, r.Lost, r.Violations, r.StoredDups, r.Verdict)
		}
	}
	fmt.Print("\n" + b.String())
	if path := os.Getenv(tableEnv); path != "" {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
}

package porttest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

// The tables of the metrics history (schema/016_metrics.sql) the fixture's hooks name.
const (
	HistoryQueueMinutes  = "metrics_queue_minutes"
	HistoryQueueRollups  = "metrics_queue_rollups" // AddHistory adds hourly buckets starting at its at
	HistoryBrokerMinutes = "metrics_broker_minutes"
	HistoryFlushes       = "metrics_flushes"
	HistoryRuns          = "retention_runs"
)

// RecordedRun is a row of retention_runs: a run and when it ran.
type RecordedRun struct {
	RanAt time.Time
	ports.RetentionRun
}

// queueRun is a run of the default tenant's queue; wantRuns ignores its bytes.
func queueRun(job, queue string, rows int64) ports.RetentionRun {
	return ports.RetentionRun{Job: job, Tenant: tenant, Queue: queue, Rows: rows}
}

// wantRuns checks got against want by job, tenant, queue and rows, in any order; each
// run's bytes must be positive when bytes says they are measured, else 0.
func wantRuns(t *testing.T, what string, got []ports.RetentionRun, bytes bool, want ...ports.RetentionRun) {
	t.Helper()
	key := func(rs []ports.RetentionRun) []string {
		var out []string
		for _, r := range rs {
			out = append(out, fmt.Sprintf("%s %s/%s %d", r.Job, r.Tenant, r.Queue, r.Rows))
		}
		slices.Sort(out)
		return out
	}
	if !slices.Equal(key(got), key(want)) {
		t.Fatalf("%s removed %v, want %v", what, key(got), key(want))
	}
	for _, r := range got {
		if bytes && r.Bytes <= 0 || !bytes && r.Bytes != 0 {
			t.Fatalf("%s: run %+v: bytes measured %v", what, r, bytes)
		}
	}
}

// wantRemovalsAddUp checks a trim's removals against its totals: the segment jobs'
// rows are the messages removed and their bytes the segments', the hash rows' are the
// hash rows and bytes.
func wantRemovalsAddUp(t *testing.T, st ports.TrimStep) {
	t.Helper()
	var msgs, segBytes, hashes, hashBytes int64
	for _, r := range st.Removals {
		switch r.Job {
		case ports.JobRetention, ports.JobEviction, ports.JobCompletedRetention:
			msgs, segBytes = msgs+r.Rows, segBytes+r.Bytes
		case ports.JobHashRows:
			hashes, hashBytes = hashes+r.Rows, hashBytes+r.Bytes
		default:
			t.Fatalf("trim removal of job %q", r.Job)
		}
		if r.Tenant != tenant || r.Queue == "" || r.Rows <= 0 {
			t.Fatalf("trim removal %+v", r)
		}
	}
	if msgs != st.Messages || segBytes != st.SegmentBytes || hashes != st.HashRows || hashBytes != st.HashBytes {
		t.Fatalf("trim removals %+v do not add up to its totals %+v", st.Removals, st)
	}
}

// testRetentionAgeRules: of the two age rules, the shorter removes, and names the job:
// maxWaitTimeSeconds (eviction) or retentionSeconds (retention); a segment past an age
// rule and the completed rule counts for the age rule.
func testRetentionAgeRules(t *testing.T, f RetentionFixture) {
	k := newAdminKit(t, f.AdminWorld)
	f.Configure(t, tenant, queueConfig("wait", func(c *ports.QueueConfig) {
		c.RetentionEnabled, c.RetentionSeconds, c.MaxWaitTimeSeconds = true, 3600, 60
	}))
	f.Configure(t, tenant, queueConfig("ret", func(c *ports.QueueConfig) {
		c.RetentionEnabled, c.RetentionSeconds, c.MaxWaitTimeSeconds = true, 60, 3600
	}))
	f.Configure(t, tenant, queueConfig("both", func(c *ports.QueueConfig) {
		c.RetentionEnabled, c.RetentionSeconds, c.CompletedRetentionSeconds = true, 60, 60
	}))
	oldThenNew(k, "wait")
	oldThenNew(k, "ret")
	both := k.pushEach("both", "p", "b0", "b1")
	k.age(both, 2*time.Minute)
	k.take("both", "p", ports.QueueModeGroup, 0, 0, true)
	st := trimAll(t, f, 1000)
	wantTrim(t, st, 6, 6, 0)
	wantRuns(t, "trim", st.Removals, true,
		queueRun(ports.JobEviction, "wait", 2), queueRun(ports.JobRetention, "ret", 2), queueRun(ports.JobRetention, "both", 2))
}

// testRetentionHistory: PurgeHistory removes rows dated before its cutoff only (a
// rollup once its whole bucket is), table after table, at most rows per call.
func testRetentionHistory(t *testing.T, f RetentionFixture) {
	ctx := context.Background()
	now := time.Now().Truncate(time.Minute)
	old, young, before := now.AddDate(0, 0, -100), now.AddDate(0, 0, -1), now.AddDate(0, 0, -90)
	for _, h := range []struct {
		table string
		old   int
	}{{HistoryQueueMinutes, 5}, {HistoryQueueRollups, 2}, {HistoryBrokerMinutes, 3}, {HistoryFlushes, 2}} {
		f.AddHistory(t, h.table, old, h.old)
		f.AddHistory(t, h.table, young, 2)
	}
	// An hour that began before the cutoff and ends after it keeps its rollup.
	f.AddHistory(t, HistoryQueueRollups, before.Add(-30*time.Minute), 1)
	if err := f.Store.RecordRuns(ctx, old, []ports.RetentionRun{queueRun(ports.JobRetention, "q", 1), {Job: ports.JobTraces, Rows: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := f.Store.RecordRuns(ctx, young, []ports.RetentionRun{queueRun(ports.JobRetention, "q", 1)}); err != nil {
		t.Fatal(err)
	}
	// 14 old rows: four steps of 4, 4, 4 and 2, the first all queue minutes but one.
	for i, want := range []int64{4, 4, 4, 2, 0} {
		r, err := f.Store.PurgeHistory(ctx, before, 4)
		if err != nil || r.Rows != want || r.Bytes < 0 || r.Queues != nil {
			t.Fatalf("step %d: %+v, %v; want %d rows", i, r, err, want)
		}
		if i == 0 {
			if n := f.HistoryRows(t, HistoryQueueMinutes); n != 3 {
				t.Fatalf("%d queue minutes after the first step, want 3 (1 old, 2 young)", n)
			}
		}
	}
	for table, want := range map[string]int{HistoryQueueMinutes: 2, HistoryQueueRollups: 3, HistoryBrokerMinutes: 2, HistoryFlushes: 2, HistoryRuns: 1} {
		if n := f.HistoryRows(t, table); n != want {
			t.Errorf("%s: %d rows left, want %d", table, n, want)
		}
	}
	if runs := f.Runs(t); len(runs) != 1 || !runs[0].RanAt.Equal(young) {
		t.Fatalf("runs left %+v, want the young one", runs)
	}
}

// testRetentionRecordRuns: RecordRuns stores every run as given (no tenant: none), dated
// as given; no runs, no row.
func testRetentionRecordRuns(t *testing.T, f RetentionFixture) {
	ctx := context.Background()
	at := time.Now().Truncate(time.Second)
	want := []ports.RetentionRun{
		{Job: ports.JobEviction, Tenant: tenant, Queue: "q", Rows: 3, Bytes: 120},
		{Job: ports.JobCompletedRetention, Tenant: tenant, Queue: "q", Rows: 2, Bytes: 80},
		{Job: ports.JobMetricsHistory, Rows: 10},
	}
	if err := f.Store.RecordRuns(ctx, at, nil); err != nil {
		t.Fatalf("RecordRuns(nil): %v", err)
	}
	if err := f.Store.RecordRuns(ctx, at, want); err != nil {
		t.Fatal(err)
	}
	got := f.Runs(t)
	for _, r := range got {
		if !r.RanAt.Equal(at) {
			t.Fatalf("run %+v dated %v, want %v", r, r.RanAt, at)
		}
	}
	sorted := func(rs []ports.RetentionRun) []ports.RetentionRun {
		rs = slices.Clone(rs)
		slices.SortFunc(rs, func(a, b ports.RetentionRun) int { return cmp.Compare(a.Job, b.Job) })
		return rs
	}
	var runs []ports.RetentionRun
	for _, r := range got {
		runs = append(runs, r.RetentionRun)
	}
	if !slices.Equal(sorted(runs), sorted(want)) {
		t.Fatalf("runs recorded %+v, want %+v", runs, want)
	}
}

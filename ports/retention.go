package ports

import (
	"context"
	"time"
)

// RetentionStore removes what the queues' retention rules and the broker's housekeeping
// say has expired, in bounded steps: each call visits at most the partitions or rows it
// is given and commits on its own, and none waits for a lock a push, pop or ack holds
// (what they hold is left for a later call).
type RetentionStore interface {
	// Lead runs fn if this broker can take the retention lead, which one broker of the
	// database holds at a time, and holds it while fn runs. ran is false when another
	// broker leads now (fn did not run).
	Lead(ctx context.Context, fn func(context.Context) error) (ran bool, err error)
	// Trim walks at most partitions partitions after after ("" = from the first), in
	// the store's partition order, and removes at most rows rows of expired segments
	// (moving log_start) and hash rows (moving txns_start).
	Trim(ctx context.Context, after string, partitions, rows int) (TrimStep, error)
	// PurgeDeadLetters removes at most rows dead letters older than their queue's
	// retentionSeconds (when retentionEnabled).
	PurgeDeadLetters(ctx context.Context, rows int) (Removed, error)
	// PurgeTraces removes at most rows traces whose lifetime ended.
	PurgeTraces(ctx context.Context, rows int) (Removed, error)
	// DropEmptyPartitions deletes at most rows partitions that retain nothing (no
	// message, no hash row) and were last written more than idle ago, with their
	// cursors.
	DropEmptyPartitions(ctx context.Context, idle time.Duration, rows int) (Removed, error)
	// PurgeHistory removes at most rows rows of the metrics history dated before before:
	// minutes of queen.metrics_queue_minutes and queen.metrics_broker_minutes, rollups
	// of queen.metrics_queue_rollups whose bucket ended by before, flushes of
	// queen.metrics_flushes by applied_at, runs of queen.retention_runs by ran_at.
	// Bytes are the rows' stored size, estimated (0 where not measured).
	PurgeHistory(ctx context.Context, before time.Time, rows int) (Removed, error)
	// RecordRuns stores what one retention cycle removed, one row of
	// queen.retention_runs per run, dated ranAt, in one statement. No runs, no write.
	RecordRuns(ctx context.Context, ranAt time.Time, runs []RetentionRun) error
}

// The jobs of queen.retention_runs: what a retention run removed, and by which rule. The
// analytics of retention (docs/api.md §5.11a) read retentionMsgs, evictionMsgs and
// completedRetentionMsgs from the first three.
const (
	// JobRetention: messages of segments older than retentionSeconds (retentionEnabled).
	JobRetention = "retention"
	// JobEviction: messages of segments older than maxWaitTimeSeconds, the age rule
	// when it is shorter than retentionSeconds or the only one.
	JobEviction = "eviction"
	// JobCompletedRetention: messages of segments every group consumed, older than
	// completedRetentionSeconds, that no age rule removed.
	JobCompletedRetention = "completed_retention"
	JobHashRows           = "hash_rows"    // hash sidecar rows past the resolution window
	JobDeadLetters        = "dead_letters" // dead letters past retentionSeconds
	JobTraces             = "traces"       // traces whose lifetime ended
	JobPartitions         = "partitions"   // empty idle partitions deleted
	// JobMetricsHistory: rows of the metrics history and of retention_runs itself past
	// METRICS_RETENTION_DAYS (no queue).
	JobMetricsHistory = "metrics_history"
)

// RetentionRun is what retention removed for one job and queue: rows (messages for the
// segment jobs) and their stored bytes (0 where not measured). Tenant and Queue are ""
// when the rows belong to no queue (the metrics history, a trace of a deleted
// partition).
type RetentionRun struct {
	Job           string
	Tenant, Queue string
	Rows, Bytes   int64
}

// TrimStep is what one Trim call did.
type TrimStep struct {
	// Last is the last partition the walk is done with: the next call's after. A
	// partition the row budget cut short is not done. "" when nothing was walked.
	Last string
	// Walked counts the partitions visited; fewer than asked: the walk reached the end.
	Walked int
	// Trimmed counts the partitions whose watermarks moved.
	Trimmed int
	// Segments, Messages and SegmentBytes were removed from the log (bytes of the
	// stored blobs); HashRows and HashBytes from the hash sidecar.
	Segments, Messages, SegmentBytes int64
	HashRows, HashBytes              int64
	// Removals split what was removed by queue and rule, one entry per (tenant, queue,
	// job) that removed something: JobRetention, JobEviction and JobCompletedRetention
	// (a segment past both an age and the completed rule counts for the age rule) count
	// the messages and bytes of the removed segments, JobHashRows the hash rows.
	Removals []RetentionRun
}

// Removed counts rows removed and their stored bytes (0 where not measured).
type Removed struct {
	Rows, Bytes int64
	// Queues splits Rows and Bytes by queue, one entry per (tenant, queue) with the
	// call's job, where the store can tell (PurgeDeadLetters, PurgeTraces,
	// DropEmptyPartitions); nil for PurgeHistory.
	Queues []RetentionRun
}

// RunTally sums retention runs per (job, tenant, queue), keeping the order each was
// first seen. The zero value is empty and ready.
type RunTally struct {
	runs []RetentionRun
	at   map[runKey]int
}

type runKey struct{ job, tenant, queue string }

// Add adds r's rows and bytes to its (job, tenant, queue); a run that removed no rows
// is left out.
func (t *RunTally) Add(r RetentionRun) {
	if r.Rows == 0 {
		return
	}
	k := runKey{r.Job, r.Tenant, r.Queue}
	if i, ok := t.at[k]; ok {
		t.runs[i].Rows += r.Rows
		t.runs[i].Bytes += r.Bytes
		return
	}
	if t.at == nil {
		t.at = make(map[runKey]int)
	}
	t.at[k] = len(t.runs)
	t.runs = append(t.runs, r)
}

// Runs returns the sums (nil: nothing was removed). The slice is the tally's own.
func (t *RunTally) Runs() []RetentionRun { return t.runs }

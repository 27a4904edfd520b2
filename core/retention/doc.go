// Package retention runs the broker's retention and housekeeping cycle (docs/api.md §5.6,
// §6.4): it removes messages past their queue's retention rules, hash sidecar rows past
// the dedup resolution window, dead letters and traces past their lifetime, partitions
// that have held nothing for a long time, and the metrics history past
// METRICS_RETENTION_DAYS; and it records what each cycle removed.
//
// The rules, per queue:
//
//   - retentionSeconds (with retentionEnabled) and maxWaitTimeSeconds (even without it):
//     segments older than that go, consumed or not (data loss by design);
//   - completedRetentionSeconds (with retentionEnabled): segments older than that go
//     once every group consumed them;
//   - hash rows go past max(dedupWindowSeconds, completedRetentionSeconds, 900 s), never
//     inside the dedup window, so dedup stays exact inside it;
//   - dead letters go retentionSeconds after they failed (with retentionEnabled);
//   - traces go when their lifetime, fixed when recorded (core/admin.TraceLifetime),
//     ends;
//   - a partition that retains nothing and was last written more than
//     PARTITION_CLEANUP_DAYS ago is deleted with its cursors (at most every
//     CleanupEvery), and Activity hears of it per queue.
//
// The broker's own history goes too: rows of the metrics history (queue and broker
// minutes, flushes applied) and of the record of retention runs older than
// MetricsRetention, at most every minute, in the same bounded steps.
//
// The record. A cycle sums what it removed per (job, tenant, queue) in memory and
// writes it once, at its end and under the lead, as rows of queen.retention_runs (the
// analytics of retention read them): one per job and queue that removed something,
// nothing for an idle cycle. The jobs are ports.JobRetention, JobEviction and
// JobCompletedRetention (messages of removed segments, by the rule that removed them:
// an age rule first), JobHashRows, JobDeadLetters, JobTraces, JobPartitions and
// JobMetricsHistory (no queue). A cycle a Stop interrupts still writes what it removed.
//
// Invariants. Retention only ever moves a partition's log_start and txns_start forward,
// to segment boundaries, and deletes what lies below them, so counts (watermark
// arithmetic), pops and admin listings stay consistent at every instant. Every store
// call is one bounded step (at most BatchSize rows) in its own transaction that takes
// no lock it would wait for: retention never holds a long transaction and never makes a
// push, pop or ack wait more than one step. One broker of a database runs the cycle at
// a time (the store's Lead, an advisory lock); the others skip their cycles meanwhile.
//
// A cycle walks at most DueCap partitions and removes at most DueCap rows of segments
// and hash rows, continuing next cycle where it stopped, so a backlog of expired data
// drains at a bounded rate (DueCap rows per Interval) instead of in one burst.
package retention

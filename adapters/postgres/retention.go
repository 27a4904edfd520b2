package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/ports"
)

// RetentionLockKey is the session advisory lock the retention lead holds (docs/api.md §6.4:
// one broker of the database runs the retention cycle at a time).
const RetentionLockKey = 737001

// Lead implements ports.RetentionStore: a session advisory lock on a connection held
// for fn's run, released after it (or by PostgreSQL when the connection dies).
func (s *Store) Lead(ctx context.Context, fn func(context.Context) error) (bool, error) {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, translate("retention lead: acquire", err)
	}
	defer c.Release()
	var ok bool
	if err := c.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, RetentionLockKey).Scan(&ok); err != nil {
		return false, translate("retention lead", err)
	}
	if !ok {
		return false, nil
	}
	ferr := fn(ctx)
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := c.Exec(uctx, `SELECT pg_advisory_unlock($1)`, RetentionLockKey); err != nil {
		// The lock must not outlive the cycle on a pooled connection: drop the connection.
		_ = c.Conn().Close(uctx)
		return true, errors.Join(ferr, translate("retention lead: unlock", err))
	}
	return true, ferr
}

// Trim implements ports.RetentionStore (log_retention_step_v2).
func (s *Store) Trim(ctx context.Context, after string, partitions, rows int) (ports.TrimStep, error) {
	var st ports.TrimStep
	var last *string
	var from any
	if after != "" {
		from = after
	}
	var per trimmed
	err := s.run(ctx, "retention trim", func(ctx context.Context, c *pgxpool.Conn) error {
		return c.QueryRow(ctx, `SELECT last_pid::text, walked, trimmed, segments, messages, segment_bytes, hash_rows, hash_bytes,
				tenant_ids, queue_names, age_jobs, aged_msgs, aged_bytes, done_msgs, done_bytes, part_hash_rows, part_hash_bytes
			FROM queen.log_retention_step_v2($1::uuid, $2, $3)`, from, partitions, rows).
			Scan(&last, &st.Walked, &st.Trimmed, &st.Segments, &st.Messages, &st.SegmentBytes, &st.HashRows, &st.HashBytes,
				&per.tenants, &per.queues, &per.ageJobs, &per.aged, &per.agedBytes, &per.done, &per.doneBytes,
				&per.hashes, &per.hashBytes)
	})
	if last != nil {
		st.Last = *last
	}
	if err == nil {
		st.Removals = per.removals()
	}
	return st, err
}

// trimmed is log_retention_step_v2's record: one entry per partition trimmed.
type trimmed struct {
	tenants, queues, ageJobs []string
	aged, agedBytes          []int64
	done, doneBytes          []int64
	hashes, hashBytes        []int64
}

// removals sums the partitions' entries per (tenant, queue, job).
func (t trimmed) removals() []ports.RetentionRun {
	var sum ports.RunTally
	for i := range t.tenants {
		tenant, queue := t.tenants[i], t.queues[i]
		sum.Add(ports.RetentionRun{Job: t.ageJobs[i], Tenant: tenant, Queue: queue, Rows: t.aged[i], Bytes: t.agedBytes[i]})
		sum.Add(ports.RetentionRun{Job: ports.JobCompletedRetention, Tenant: tenant, Queue: queue, Rows: t.done[i], Bytes: t.doneBytes[i]})
		sum.Add(ports.RetentionRun{Job: ports.JobHashRows, Tenant: tenant, Queue: queue, Rows: t.hashes[i], Bytes: t.hashBytes[i]})
	}
	return sum.Runs()
}

// PurgeDeadLetters implements ports.RetentionStore (log_purge_dead_letters_v2).
func (s *Store) PurgeDeadLetters(ctx context.Context, rows int) (ports.Removed, error) {
	return s.removedPerQueue(ctx, "retention dead letters", ports.JobDeadLetters,
		`SELECT tenant_id::text, queue_name, removed, bytes FROM queen.log_purge_dead_letters_v2($1)`, rows)
}

// PurgeTraces implements ports.RetentionStore (log_purge_traces_v2).
func (s *Store) PurgeTraces(ctx context.Context, rows int) (ports.Removed, error) {
	return s.removedPerQueue(ctx, "retention traces", ports.JobTraces,
		`SELECT tenant_id::text, queue_name, removed, bytes FROM queen.log_purge_traces_v2($1)`, rows)
}

// DropEmptyPartitions implements ports.RetentionStore (log_drop_empty_partitions_v2).
func (s *Store) DropEmptyPartitions(ctx context.Context, idle time.Duration, rows int) (ports.Removed, error) {
	secs := fmt.Sprintf("%f seconds", idle.Seconds())
	return s.removedPerQueue(ctx, "retention empty partitions", ports.JobPartitions,
		`SELECT tenant_id::text, queue_name, removed, 0::bigint FROM queen.log_drop_empty_partitions_v2($2::interval, $1)`, rows, secs)
}

// PurgeHistory implements ports.RetentionStore (log_purge_history_v1).
func (s *Store) PurgeHistory(ctx context.Context, before time.Time, rows int) (ports.Removed, error) {
	var r ports.Removed
	err := s.run(ctx, "retention metrics history", func(ctx context.Context, c *pgxpool.Conn) error {
		return c.QueryRow(ctx, `SELECT removed, bytes FROM queen.log_purge_history_v1($1, $2)`, before, rows).Scan(&r.Rows, &r.Bytes)
	})
	return r, err
}

// RecordRuns implements ports.RetentionStore: one INSERT of every run (a tenant of ""
// is NULL).
func (s *Store) RecordRuns(ctx context.Context, ranAt time.Time, runs []ports.RetentionRun) error {
	if len(runs) == 0 {
		return nil
	}
	jobs, tenants, queues := make([]string, len(runs)), make([]string, len(runs)), make([]string, len(runs))
	rows, bytes := make([]int64, len(runs)), make([]int64, len(runs))
	for i, r := range runs {
		jobs[i], tenants[i], queues[i], rows[i], bytes[i] = r.Job, r.Tenant, r.Queue, r.Rows, r.Bytes
	}
	return s.run(ctx, "retention runs", func(ctx context.Context, c *pgxpool.Conn) error {
		_, err := c.Exec(ctx, `INSERT INTO queen.retention_runs (ran_at, job, tenant_id, queue_name, rows_removed, bytes_removed)
			SELECT $1, r.job, nullif(r.tenant, '')::uuid, r.queue, r.n, r.b
			  FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[]) AS r(job, tenant, queue, n, b)`,
			ranAt, jobs, tenants, queues, rows, bytes)
		return err
	})
}

// removedPerQueue runs q, whose rows are (tenant, queue, rows, bytes) of one job, and
// sums them.
func (s *Store) removedPerQueue(ctx context.Context, op, job, q string, args ...any) (ports.Removed, error) {
	var r ports.Removed
	err := s.run(ctx, op, func(ctx context.Context, c *pgxpool.Conn) error {
		rs, err := c.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var tenant *string
			run := ports.RetentionRun{Job: job}
			if err := rs.Scan(&tenant, &run.Queue, &run.Rows, &run.Bytes); err != nil {
				return err
			}
			if tenant != nil {
				run.Tenant = *tenant
			}
			r.Rows += run.Rows
			r.Bytes += run.Bytes
			r.Queues = append(r.Queues, run)
		}
		return rs.Err()
	})
	if err != nil {
		return ports.Removed{}, err
	}
	return r, nil
}

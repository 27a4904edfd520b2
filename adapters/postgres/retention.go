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

// Trim implements ports.RetentionStore (log_retention_step_v1).
func (s *Store) Trim(ctx context.Context, after string, partitions, rows int) (ports.TrimStep, error) {
	var st ports.TrimStep
	var last *string
	var from any
	if after != "" {
		from = after
	}
	err := s.run(ctx, "retention trim", func(ctx context.Context, c *pgxpool.Conn) error {
		return c.QueryRow(ctx, `SELECT last_pid::text, walked, trimmed, segments, messages, segment_bytes, hash_rows, hash_bytes
			FROM queen.log_retention_step_v1($1::uuid, $2, $3)`, from, partitions, rows).
			Scan(&last, &st.Walked, &st.Trimmed, &st.Segments, &st.Messages, &st.SegmentBytes, &st.HashRows, &st.HashBytes)
	})
	if last != nil {
		st.Last = *last
	}
	return st, err
}

// PurgeDeadLetters implements ports.RetentionStore (log_purge_dead_letters_v1).
func (s *Store) PurgeDeadLetters(ctx context.Context, rows int) (ports.Removed, error) {
	return s.removed(ctx, "retention dead letters", `SELECT removed, bytes FROM queen.log_purge_dead_letters_v1($1)`, rows)
}

// PurgeTraces implements ports.RetentionStore (log_purge_traces_v1).
func (s *Store) PurgeTraces(ctx context.Context, rows int) (ports.Removed, error) {
	return s.removed(ctx, "retention traces", `SELECT removed, bytes FROM queen.log_purge_traces_v1($1)`, rows)
}

// DropEmptyPartitions implements ports.RetentionStore (log_drop_empty_partitions_v1).
func (s *Store) DropEmptyPartitions(ctx context.Context, idle time.Duration, rows int) (ports.Removed, error) {
	secs := fmt.Sprintf("%f seconds", idle.Seconds())
	return s.removed(ctx, "retention empty partitions",
		`SELECT removed, 0::bigint FROM queen.log_drop_empty_partitions_v1($2::interval, $1)`, rows, secs)
}

func (s *Store) removed(ctx context.Context, op, q string, args ...any) (ports.Removed, error) {
	var r ports.Removed
	err := s.run(ctx, op, func(ctx context.Context, c *pgxpool.Conn) error {
		return c.QueryRow(ctx, q, args...).Scan(&r.Rows, &r.Bytes)
	})
	return r, err
}

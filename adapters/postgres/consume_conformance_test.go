package postgres

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
	"github.com/queen-go/queen/ports/porttest"
)

// consumeFixture is a migrated store on a fresh database with the hooks of the consume
// suites, which arrange by SQL what the ports cannot express.
func consumeFixture(t *testing.T) porttest.ConsumeFixture {
	s := newStore(t, Options{PoolSize: 10})
	t.Cleanup(func() { checkCursorInvariants(t, s) })
	return porttest.ConsumeFixture{
		Segments:     s,
		Consume:      s,
		Transactions: s,
		Streams:      s,
		TwoPhase:     s,
		Configure: func(t *testing.T, tenant string, cfg ports.QueueConfig) {
			t.Helper()
			o := cfg.QueueOptions
			s.exec(t, `INSERT INTO queen.queues AS q (tenant_id, name, namespace, task, configured, priority, lease_time,
				retry_limit, retry_delay, max_size, ttl, dead_letter_queue, dlq_after_max_retries, delayed_processing,
				window_buffer, retention_seconds, completed_retention_seconds, retention_enabled, encryption_enabled,
				max_wait_time_seconds, min_pop_wait_time, dedup_window_seconds, retention_sink_hold,
				retention_sink_hold_max_seconds)
				VALUES ($1, $2, $3, $4, true, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)
				ON CONFLICT (tenant_id, name) DO UPDATE SET namespace = EXCLUDED.namespace, task = EXCLUDED.task,
				configured = true, priority = EXCLUDED.priority, lease_time = EXCLUDED.lease_time,
				retry_limit = EXCLUDED.retry_limit, retry_delay = EXCLUDED.retry_delay, max_size = EXCLUDED.max_size,
				ttl = EXCLUDED.ttl, dead_letter_queue = EXCLUDED.dead_letter_queue,
				dlq_after_max_retries = EXCLUDED.dlq_after_max_retries, delayed_processing = EXCLUDED.delayed_processing,
				window_buffer = EXCLUDED.window_buffer, retention_seconds = EXCLUDED.retention_seconds,
				completed_retention_seconds = EXCLUDED.completed_retention_seconds,
				retention_enabled = EXCLUDED.retention_enabled, encryption_enabled = EXCLUDED.encryption_enabled,
				max_wait_time_seconds = EXCLUDED.max_wait_time_seconds, min_pop_wait_time = EXCLUDED.min_pop_wait_time,
				dedup_window_seconds = EXCLUDED.dedup_window_seconds, retention_sink_hold = EXCLUDED.retention_sink_hold,
				retention_sink_hold_max_seconds = EXCLUDED.retention_sink_hold_max_seconds, updated_at = now()`,
				tenant, cfg.Name, cfg.Namespace, cfg.Task, o.Priority, o.LeaseTime, o.RetryLimit, o.RetryDelay, o.MaxSize,
				o.TTL, o.DeadLetterQueue, o.DLQAfterMaxRetries, o.DelayedProcessing, o.WindowBuffer, o.RetentionSeconds,
				o.CompletedRetentionSeconds, o.RetentionEnabled, o.EncryptionEnabled, o.MaxWaitTimeSeconds,
				o.MinPopWaitTime, o.DedupWindowSeconds, o.RetentionSinkHold, o.RetentionSinkHoldMaxSeconds)
		},
		Age: func(t *testing.T, pid string, d time.Duration) {
			t.Helper()
			s.exec(t, `UPDATE queen.log_segments SET created_at = created_at - $2::interval WHERE partition_id = $1`, pid, d)
			s.exec(t, `UPDATE queen.log_txns SET created_at = created_at - $2::interval WHERE partition_id = $1`, pid, d)
			s.exec(t, `UPDATE queen.log_partitions SET last_write_at = last_write_at - $2::interval WHERE id = $1`, pid, d)
		},
		ExpireLease: func(t *testing.T, pid, group string) {
			t.Helper()
			tag, err := s.pool.Exec(context.Background(), `UPDATE queen.log_consumers
				SET lease_expires_at = clock_timestamp() - interval '1 second'
				WHERE partition_id = $1 AND consumer_group = $2 AND lease_expires_at IS NOT NULL`, pid, group)
			if err != nil || tag.RowsAffected() != 1 {
				t.Fatalf("expire the lease of %s on %s: %v (%d rows)", group, pid, err, tag.RowsAffected())
			}
		},
		DeadLetters: func(t *testing.T, pid string) []ports.DeadLetter {
			t.Helper()
			rows, err := s.pool.Query(context.Background(), `SELECT d.id::text, q.name, lp.name, d.partition_id::text,
				d.consumer_group, d.transaction_id, d.error_message, d.retry_count, d.created_at, d.failed_at,
				d.msg_offset, d.frame_index, d.blob
				FROM queen.dlq d JOIN queen.queues q ON q.id = d.queue_id JOIN queen.log_partitions lp ON lp.id = d.partition_id
				WHERE d.partition_id = $1 ORDER BY d.msg_offset, d.failed_at`, pid)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var out []ports.DeadLetter
			for rows.Next() {
				var d ports.DeadLetter
				var retries, frame int32
				if err := rows.Scan(&d.ID, &d.Queue, &d.Partition, &d.PartitionID, &d.ConsumerGroup, &d.TransactionID,
					&d.ErrorMessage, &retries, &d.CreatedAt, &d.FailedAt, &d.Offset, &frame, &d.Blob); err != nil {
					t.Fatal(err)
				}
				d.RetryCount, d.FrameIndex = int(retries), int(frame)
				out = append(out, d)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			return out
		},
		HoldCursor: func(t *testing.T, pid, group string) func() {
			t.Helper()
			return holdCursor(t, s, pid, group)
		},
		EmptyPartition: func(t *testing.T, tenant, queue, partition string) string {
			t.Helper()
			var id string
			if err := s.pool.QueryRow(context.Background(), `INSERT INTO queen.log_partitions (queue_id, name)
				VALUES (queen.log_queue_id_v1($1::uuid, $2), $3) RETURNING id::text`, tenant, queue, partition).Scan(&id); err != nil {
				t.Fatal(err)
			}
			return id
		},
		Hotlist: s,
	}
}

// holdCursor holds (partition, group)'s cursor in a transaction of its own, as a pop or
// an ack under way does: the row FOR UPDATE when it exists, else the advisory lock that
// guards its creation (log_pop_v2). The transaction ends at release or with the test.
func holdCursor(t *testing.T, s *Store, pid, group string) (release func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(func() { _ = tx.Rollback(ctx) }) }
	t.Cleanup(release)
	var rows int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM queen.log_consumers
		WHERE partition_id = $1 AND consumer_group = $2 FOR UPDATE) x`, pid, group).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows == 0 {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('queen.consumer:' || $1::uuid::text || ':' || $2, 0))`,
			pid, group); err != nil {
			t.Fatal(err)
		}
	}
	return release
}

func TestConsumeStoreConformance(t *testing.T) {
	porttest.ConsumeStore(t, consumeFixture)
}

package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/adapters/admin"
	"github.com/queen-go/queen/ports"
	"github.com/queen-go/queen/ports/porttest"
)

// TestRetentionStoreConformance runs the port's suite on the store (the retention
// functions of schema/012_retention.sql) on a fresh database per case. The consume
// suites' hooks arrange the world; the admin adapter on the same pool, wired as the
// broker wires it, shows what retention left (messages, dead letters, traces).
func TestRetentionStoreConformance(t *testing.T) {
	porttest.RetentionStore(t, func(t *testing.T) porttest.RetentionFixture {
		cf := consumeFixture(t)
		s := cf.Segments.(*Store)
		db := s.DB()
		// The handle's connection opener is a goroutine of its own (pgtest.Main fails the
		// package on leaked goroutines); closing it leaves the pool to s.Close.
		t.Cleanup(func() { _ = db.Close() })
		a := admin.New(db, admin.Options{Discard: DiscardConn, BindOptions: PlanEachStatement})
		return porttest.RetentionFixture{Store: s, Messages: a, Traces: a, AdminWorld: porttest.AdminWorld{
			Segments:       s,
			Consume:        s,
			Configure:      cf.Configure,
			EmptyPartition: cf.EmptyPartition,
			Age:            cf.Age,
			ExpireLease:    cf.ExpireLease,
			Trim: func(t *testing.T, pid string, logStart, txnsStart int64) {
				t.Helper()
				s.exec(t, `UPDATE queen.log_partitions SET log_start = greatest(log_start, $2), txns_start = greatest(txns_start, $3)
					WHERE id = $1`, pid, logStart, txnsStart)
			},
			DeleteQueue: func(t *testing.T, tenant, queue string) {
				t.Helper()
				if existed, err := a.DeleteQueue(t.Context(), tenant, queue); err != nil || !existed {
					t.Fatalf("delete queue %s: %v, %v", queue, existed, err)
				}
			},
		},
			AddHistory:  func(t *testing.T, table string, at time.Time, n int) { addHistory(t, s, table, at, n) },
			HistoryRows: func(t *testing.T, table string) int { return historyRows(t, s, table) },
			Runs:        func(t *testing.T) []porttest.RecordedRun { return retentionRuns(t, s) },
		}
	})
}

// addHistory inserts n rows dated at into a table of the metrics history, each of a
// key of its own.
func addHistory(t *testing.T, s *Store, table string, at time.Time, n int) {
	t.Helper()
	q, ok := map[string]string{
		porttest.HistoryQueueMinutes: `INSERT INTO queen.metrics_queue_minutes (minute, tenant_id, queue_name)
			SELECT $1, gen_random_uuid(), 'q' FROM generate_series(1, $2)`,
		porttest.HistoryQueueRollups: `INSERT INTO queen.metrics_queue_rollups (width, bucket, tenant_id, queue_name)
			SELECT 60, $1, gen_random_uuid(), 'q' FROM generate_series(1, $2)`,
		porttest.HistoryBrokerMinutes: `INSERT INTO queen.metrics_broker_minutes (minute, broker)
			SELECT $1, gen_random_uuid()::text FROM generate_series(1, $2)`,
		porttest.HistoryFlushes: `INSERT INTO queen.metrics_flushes (instance, seq, applied_at)
			SELECT gen_random_uuid(), 1, $1 FROM generate_series(1, $2)`,
	}[table]
	if !ok {
		t.Fatalf("addHistory: no history table %q", table)
	}
	s.exec(t, q, at, n)
}

func historyRows(t *testing.T, s *Store, table string) int {
	t.Helper()
	var n int
	if err := s.pool.QueryRow(t.Context(), `SELECT count(*) FROM queen.`+pgx.Identifier{table}.Sanitize()).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

func retentionRuns(t *testing.T, s *Store) []porttest.RecordedRun {
	t.Helper()
	rows, err := s.pool.Query(t.Context(), `SELECT ran_at, job, coalesce(tenant_id::text, ''), queue_name, rows_removed, bytes_removed
		FROM queen.retention_runs ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (porttest.RecordedRun, error) {
		var x porttest.RecordedRun
		err := r.Scan(&x.RanAt, &x.Job, &x.Tenant, &x.Queue, &x.Rows, &x.Bytes)
		return x, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRetentionV1Functions: the v1 retention functions older brokers sharing the
// database call answer the sums of their v2.
func TestRetentionV1Functions(t *testing.T) {
	t.Parallel()
	s := newStore(t, Options{PoolSize: 2})
	ctx := context.Background()
	s.exec(t, `INSERT INTO queen.queues (name, retention_enabled, retention_seconds) VALUES ('q', true, 60)`)
	for i, n := range []int{1, 2} {
		hs := make([]byte, 16*n)
		for m := range n {
			hs[16*m], hs[16*m+1] = byte(i+1), byte(m+1)
		}
		res, err := s.PushSegments(ctx, []ports.Segment{{Tenant: ports.DefaultTenant, Queue: "q", Partition: "p",
			Count: n, Hashes: hs, Verified: -1, Blob: []byte("blob")}})
		if err != nil || res[0].Status != ports.SegmentQueued {
			t.Fatalf("push: %+v, %v", res, err)
		}
	}
	s.exec(t, `UPDATE queen.log_segments SET created_at = created_at - interval '1 hour'`)
	var segments, messages, bytes int64
	if err := s.pool.QueryRow(ctx, `SELECT segments, messages, segment_bytes FROM queen.log_retention_step_v1(NULL, 10, 10)`).
		Scan(&segments, &messages, &bytes); err != nil || segments != 2 || messages != 3 || bytes != 8 {
		t.Fatalf("log_retention_step_v1: %d segments, %d messages, %d bytes, %v; want 2, 3, 8", segments, messages, bytes, err)
	}
	for _, q := range []string{
		`SELECT removed, bytes FROM queen.log_purge_dead_letters_v1(10)`,
		`SELECT removed, bytes FROM queen.log_purge_traces_v1(10)`,
		`SELECT removed, 0::bigint FROM queen.log_drop_empty_partitions_v1(interval '1 day', 10)`,
	} {
		var removed, bytes int64
		if err := s.pool.QueryRow(ctx, q).Scan(&removed, &bytes); err != nil || removed != 0 || bytes != 0 {
			t.Fatalf("%s: %d, %d, %v; want nothing removed", q, removed, bytes, err)
		}
	}
}

package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

// waitForLockWaiter polls until a session of this test's database waits for a lock of
// locktype ("" for any; pg_locks.locktype): a bounded poll, what is the write started just
// before, named in the failure.
func waitForLockWaiter(t *testing.T, s *Store, locktype, what string) {
	t.Helper()
	for range 500 {
		var n int
		if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_locks l
			JOIN pg_stat_activity a ON a.pid = l.pid AND a.datname = current_database()
			WHERE NOT l.granted AND ($1 = '' OR l.locktype = $1)`, locktype).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %s waited for a lock within 5 s", what)
}

// TestWritesOutliveTheirPartitionsDeletion: a write whose partition is deleted while it
// waits for the partition's lock runs again, and its new run creates the partition anew,
// as a write to a partition that does not exist yet does. Before, the write failed
// (P0002 "partition not found"), and a push failed that way was spooled as though the
// database were away.
func TestWritesOutliveTheirPartitionsDeletion(t *testing.T) {
	t.Parallel()
	s := newStore(t, Options{PoolSize: 6})
	ctx := context.Background()
	writes := []struct {
		name  string
		write func(seg ports.Segment) ([]ports.SegmentResult, error)
	}{
		{"fused push", func(seg ports.Segment) ([]ports.SegmentResult, error) {
			return s.PushSegments(ctx, []ports.Segment{seg})
		}},
		{"transaction", func(seg ports.Segment) ([]ports.SegmentResult, error) {
			res, _, err := s.Transaction(ctx, []ports.Segment{seg}, nil, "")
			return res, err
		}},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			queue := "undone-" + map[string]string{"fused push": "push", "transaction": "txn"}[w.name]
			if _, err := s.PushSegments(ctx, []ports.Segment{oneFrame(queue, "p", "first")}); err != nil {
				t.Fatal(err)
			}
			var pid string
			if err := s.pool.QueryRow(ctx, `SELECT lp.id::text FROM queen.log_partitions lp
				JOIN queen.queues q ON q.id = lp.queue_id WHERE q.name = $1 AND lp.name = 'p'`, queue).Scan(&pid); err != nil {
				t.Fatal(err)
			}
			// A deletion holding the partition, as DeleteQueue does.
			del, err := s.pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = del.Rollback(ctx) }()
			if _, err := del.Exec(ctx, `SELECT 1 FROM queen.log_partitions WHERE id = $1::uuid FOR UPDATE`, pid); err != nil {
				t.Fatal(err)
			}
			type answer struct {
				res []ports.SegmentResult
				err error
			}
			done := make(chan answer, 1)
			go func() {
				res, err := w.write(oneFrame(queue, "p", "second"))
				done <- answer{res, err}
			}()
			waitForLockWaiter(t, s, "", w.name)
			for _, table := range []string{"queen.log_segments", "queen.log_txns", "queen.log_consumers", "queen.log_partitions"} {
				col := "partition_id"
				if table == "queen.log_partitions" {
					col = "id"
				}
				if _, err := del.Exec(ctx, "DELETE FROM "+table+" WHERE "+col+" = $1::uuid", pid); err != nil {
					t.Fatal(err)
				}
			}
			if err := del.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			a := <-done
			if a.err != nil {
				t.Fatalf("a write whose partition was deleted under it failed: %v", a.err)
			}
			if len(a.res) != 1 || a.res[0].Status != ports.SegmentQueued || a.res[0].PartitionID == pid || a.res[0].BaseOffset != 0 {
				t.Fatalf("result %+v, want queued at offset 0 of a new partition (the deleted one was %s)", a.res, pid)
			}
		})
	}
}

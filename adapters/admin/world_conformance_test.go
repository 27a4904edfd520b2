package admin

import (
	"context"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
	"github.com/queen-go/queen/ports/porttest"
)

// adminWorld is the world of the admin suites on f's database: pushes, pops and acks
// through the hot-path store, configuration and deletion through the Admin, and SQL for
// what no port expresses.
func adminWorld(f *fixture) porttest.AdminWorld {
	ctx := context.Background()
	return porttest.AdminWorld{
		Segments: f.store,
		Consume:  f.store,
		Configure: func(t *testing.T, tenant string, cfg ports.QueueConfig) {
			t.Helper()
			if _, err := f.admin.Configure(ctx, tenant, cfg, ports.AllQueueOptions); err != nil {
				t.Fatalf("configure %s: %v", cfg.Name, err)
			}
		},
		EmptyPartition: func(t *testing.T, tenant, queue, partition string) string {
			t.Helper()
			var id string
			if err := f.db.QueryRow(`INSERT INTO queen.log_partitions (queue_id, name)
				VALUES (queen.log_queue_id_v1($1::uuid, $2), $3) RETURNING id::text`, tenant, queue, partition).Scan(&id); err != nil {
				t.Fatal(err)
			}
			return id
		},
		Age: func(t *testing.T, pid string, d time.Duration) {
			t.Helper()
			f.exec(t, `UPDATE queen.log_segments SET created_at = created_at - $2::interval WHERE partition_id = $1`, pid, d)
			f.exec(t, `UPDATE queen.log_txns SET created_at = created_at - $2::interval WHERE partition_id = $1`, pid, d)
			f.exec(t, `UPDATE queen.log_partitions SET last_write_at = last_write_at - $2::interval WHERE id = $1`, pid, d)
		},
		Trim: func(t *testing.T, pid string, logStart, txnsStart int64) {
			t.Helper()
			f.exec(t, `UPDATE queen.log_partitions SET log_start = greatest(log_start, $2), txns_start = greatest(txns_start, $3)
				WHERE id = $1`, pid, logStart, txnsStart)
		},
		ExpireLease: func(t *testing.T, pid, group string) {
			t.Helper()
			res, err := f.db.Exec(`UPDATE queen.log_consumers SET lease_expires_at = clock_timestamp() - interval '1 second'
				WHERE partition_id = $1 AND consumer_group = $2 AND lease_expires_at IS NOT NULL`, pid, group)
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := res.RowsAffected(); n != 1 {
				t.Fatalf("no lease of %s on %s to expire", group, pid)
			}
		},
		DeleteQueue: func(t *testing.T, tenant, queue string) {
			t.Helper()
			if existed, err := f.admin.DeleteQueue(ctx, tenant, queue); err != nil || !existed {
				t.Fatalf("delete queue %s: %v, %v", queue, existed, err)
			}
		},
	}
}

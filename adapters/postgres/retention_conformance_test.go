package postgres

import (
	"testing"

	"github.com/queen-go/queen/adapters/admin"
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
		}}
	})
}

package memory

import (
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
	"github.com/queen-go/queen/ports/porttest"
)

// adminWorld is the world of the admin suites over s: its own pushes, pops and acks,
// and hooks that change its state directly (no clock is moved).
func adminWorld(s *Store) porttest.AdminWorld {
	return porttest.AdminWorld{
		Segments: s,
		Consume:  s,
		Configure: func(_ *testing.T, tenant string, cfg ports.QueueConfig) {
			s.SetQueueConfig(tenant, cfg)
		},
		EmptyPartition: func(_ *testing.T, tenant, queue, partition string) string {
			return s.EmptyPartition(tenant, queue, partition)
		},
		Age:  func(_ *testing.T, pid string, d time.Duration) { s.Age(pid, d) },
		Trim: func(_ *testing.T, pid string, logStart, txnsStart int64) { s.Trim(pid, logStart, txnsStart) },
		ExpireLease: func(t *testing.T, pid, group string) {
			t.Helper()
			if !s.ExpireLease(pid, group) {
				t.Fatalf("no lease of %s on %s to expire", group, pid)
			}
		},
		DeleteQueue: func(t *testing.T, tenant, queue string) {
			t.Helper()
			if !s.DeleteQueue(tenant, queue) {
				t.Fatalf("no queue %s to delete", queue)
			}
		},
	}
}

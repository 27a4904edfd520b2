package admin

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/queen-go/queen/ports"
)

// TestDeleteQueueRacingPushesAndPopsLeavesNoOrphans deletes a queue again and again while
// pushes create partitions of it and pops create cursors on them. No foreign key ties
// partitions, cursors, segments or hash rows to what they belong to (the push path would
// pay for it on every push): the locks that stand in for the keys must still leave no
// row behind whose owner is gone. (Moved from the root package's HTTP tests: orphan rows
// are invisible to clients.)
func TestDeleteQueueRacingPushesAndPopsLeavesNoOrphans(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	const queue, rounds, partitions = "orphans", 8, 6
	for round := range rounds {
		var wg sync.WaitGroup
		for p := range partitions {
			wg.Go(func() {
				part := fmt.Sprintf("r%d-p%d", round, p)
				for i := range 3 {
					// Any outcome will do (a push or pop that loses the race to a deletion
					// may fail, and the broker spools such a push): this test is about what
					// stays in the tables.
					h := []byte(fmt.Sprintf("%-16.16s", fmt.Sprint(part, i)))
					_, _ = f.store.PushSegments(ctx, []ports.Segment{{Tenant: tenant, Queue: queue, Partition: part,
						Count: 1, Hashes: h, Verified: -1, Blob: []byte{1}}})
					_, _, _ = f.store.Pop(ctx, ports.PopRequest{Tenant: tenant, Queue: queue, Partition: part, Group: "g",
						Batch: 10, Partitions: 1, LeaseID: fmt.Sprintf("0191d7a2-0000-7000-8000-%012d", round*100+p*10+i),
						SubscribeMode: ports.SubscribeAll})
				}
			})
		}
		wg.Go(func() {
			for range 2 {
				_, _ = f.admin.DeleteQueue(ctx, tenant, queue)
			}
		})
		wg.Wait()
	}
	for _, tc := range []struct{ name, sql string }{
		{"partitions without a queue", `SELECT count(*) FROM queen.log_partitions lp
			WHERE NOT EXISTS (SELECT 1 FROM queen.queues q WHERE q.id = lp.queue_id)`},
		{"cursors without a partition", `SELECT count(*) FROM queen.log_consumers c
			WHERE NOT EXISTS (SELECT 1 FROM queen.log_partitions lp WHERE lp.id = c.partition_id)`},
		{"segments without a partition", `SELECT count(*) FROM queen.log_segments s
			WHERE NOT EXISTS (SELECT 1 FROM queen.log_partitions lp WHERE lp.id = s.partition_id)`},
		{"hash rows without a partition", `SELECT count(*) FROM queen.log_txns x
			WHERE NOT EXISTS (SELECT 1 FROM queen.log_partitions lp WHERE lp.id = x.partition_id)`},
	} {
		if n := f.count(t, tc.sql); n != 0 {
			t.Errorf("%s: %d", tc.name, n)
		}
	}
}

package queen

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestDeleteQueueRacingPushesAndPopsLeavesNoOrphans deletes a queue again and again while
// pushes create partitions of it and pops create cursors on them. No foreign key ties
// partitions, cursors, segments or hash rows to what they belong to (the push path would
// pay for it on every push): the locks that stand in for the keys must still leave no
// row behind whose owner is gone.
func TestDeleteQueueRacingPushesAndPopsLeavesNoOrphans(t *testing.T) {
	t.Parallel()
	a := startApp(t, nil)
	db := openPushLogDB(t, a)
	const queue, rounds, partitions = "orphans", 8, 6
	for round := range rounds {
		var wg sync.WaitGroup
		for p := range partitions {
			wg.Go(func() {
				for i := range 3 {
					// Any answer will do (a push that loses the race is spooled and
					// replayed): this test is about what stays in the tables.
					a.do(t, http.MethodPost, "/api/v1/push", fmt.Sprintf(
						`{"items":[{"queue":%q,"partition":"r%d-p%d","payload":{"i":%d}}]}`, queue, round, p, i))
					a.do(t, http.MethodGet, fmt.Sprintf(
						"/api/v1/pop/queue/%s/partition/r%d-p%d?consumerGroup=g&subscriptionMode=all&wait=false", queue, round, p), "")
				}
			})
		}
		wg.Go(func() {
			for range 2 {
				a.do(t, http.MethodDelete, "/api/v1/resources/queues/"+queue, "")
			}
		})
		wg.Wait()
	}
	a.waitDrained(t, 30*time.Second)
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
		if n := db.count(t, tc.sql); n != 0 {
			t.Errorf("%s: %d", tc.name, n)
		}
	}
}

package admin

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/queen-go/queen/ports"
	"github.com/queen-go/queen/ports/porttest"
)

// TestQueueAdminConformance runs the port's suite on a fresh database per case. Dead
// letters are arranged as the consume path leaves them: the queue and partition come
// from a push through the hot-path store (which creates them as a producer's push
// would), the row is inserted into queen.dlq with the values the suite gives.
func TestQueueAdminConformance(t *testing.T) {
	porttest.QueueAdmin(t, func(t *testing.T) porttest.QueueAdminFixture {
		f := newFixture(t, Options{})
		var pushes atomic.Int64 // distinct hashes: every push is new, never a duplicate
		return porttest.QueueAdminFixture{
			Admin: f.admin,
			AddDeadLetter: func(t *testing.T, tenant string, d ports.DeadLetter) ports.DeadLetter {
				t.Helper()
				ctx := context.Background()
				h := []byte(fmt.Sprintf("%-16.16s", fmt.Sprint("dlq-", pushes.Add(1))))
				res, err := f.store.PushSegments(ctx, []ports.Segment{{Tenant: tenant, Queue: d.Queue,
					Partition: d.Partition, Count: 1, Hashes: h, Verified: -1, Blob: []byte{1}}})
				if err != nil {
					t.Fatalf("push to create %s/%s: %v", d.Queue, d.Partition, err)
				}
				if len(res) != 1 || res[0].Status != ports.SegmentQueued {
					t.Fatalf("push to create %s/%s: %+v", d.Queue, d.Partition, res)
				}
				d.PartitionID = res[0].PartitionID
				err = f.db.QueryRowContext(ctx, `INSERT INTO queen.dlq (queue_id, partition_id, consumer_group, msg_offset,
					transaction_id, error_message, retry_count, created_at, failed_at, frame_index, blob)
					SELECT lp.queue_id, lp.id, $2, $3, $4, $5, $6, $7, $8, $9, $10
					  FROM queen.log_partitions lp WHERE lp.id = $1
					RETURNING id::text`,
					d.PartitionID, d.ConsumerGroup, d.Offset, d.TransactionID, d.ErrorMessage, d.RetryCount,
					d.CreatedAt, d.FailedAt, d.FrameIndex, d.Blob).Scan(&d.ID)
				if err != nil {
					t.Fatalf("insert dead letter: %v", err)
				}
				return d
			},
		}
	})
}

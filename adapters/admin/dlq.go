package admin

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/queen-go/queen/ports"
)

// dlqRow is one dead-letter row with its queue and partition names.
type dlqRow struct {
	ID            string    `bun:"id"`
	Queue         string    `bun:"queue"`
	Partition     string    `bun:"partition"`
	PartitionID   string    `bun:"partition_id"`
	ConsumerGroup string    `bun:"consumer_group"`
	Offset        int64     `bun:"msg_offset"`
	TransactionID string    `bun:"transaction_id"`
	ErrorMessage  *string   `bun:"error_message"`
	RetryCount    int       `bun:"retry_count"`
	CreatedAt     time.Time `bun:"created_at"`
	FailedAt      time.Time `bun:"failed_at"`
	FrameIndex    int       `bun:"frame_index"`
	Blob          []byte    `bun:"blob"`
}

func (r *dlqRow) port() ports.DeadLetter {
	return ports.DeadLetter{
		DeadLetterInfo: ports.DeadLetterInfo{ID: r.ID, Queue: r.Queue, Partition: r.Partition,
			PartitionID: r.PartitionID, ConsumerGroup: r.ConsumerGroup, TransactionID: r.TransactionID,
			ErrorMessage: r.ErrorMessage, RetryCount: r.RetryCount, CreatedAt: r.CreatedAt, FailedAt: r.FailedAt},
		Offset: r.Offset, FrameIndex: r.FrameIndex, Blob: r.Blob,
	}
}

// selectDeadLetters is a query of st selecting the tenant's dead-letter rows (alias d)
// with their queue (q) and partition (p) names, as dlqRow.
func selectDeadLetters(st *stmt, tenant string) *bun.SelectQuery {
	return st.NewSelect().
		TableExpr("queen.dlq AS d").
		Join("JOIN queen.queues AS q ON q.id = d.queue_id").
		Join("JOIN queen.log_partitions AS p ON p.id = d.partition_id").
		ColumnExpr("d.id::text AS id, q.name AS queue, p.name AS partition, d.partition_id::text AS partition_id").
		ColumnExpr("d.consumer_group, d.msg_offset, d.transaction_id, d.error_message, d.retry_count").
		ColumnExpr("d.created_at, d.failed_at, d.frame_index, d.blob").
		Where("q.tenant_id = ?::uuid", st.arg(tenant))
}

// DeadLetters implements ports.QueueAdmin: newest failure first (dlq_queue index order
// when a queue is given), ties broken by id so pages do not overlap.
func (a *Admin) DeadLetters(ctx context.Context, tenant string, f ports.DeadLetterFilter) ([]ports.DeadLetter, error) {
	if f.Limit <= 0 {
		return nil, nil // bun reads LIMIT 0 as "no limit"
	}
	var rows []dlqRow
	err := a.read(ctx, "dead letters", func(ctx context.Context, c bun.Conn) error {
		st := newStmt(c)
		q := selectDeadLetters(st, tenant)
		if f.Queue != "" {
			q = q.Where("q.name = ?", st.arg(f.Queue))
		}
		if f.ConsumerGroup != "" {
			q = q.Where("d.consumer_group = ?", st.arg(f.ConsumerGroup))
		}
		return q.OrderExpr("d.failed_at DESC, d.id DESC").Limit(int64(f.Limit)).Offset(int64(f.Offset)).Scan(ctx, &rows)
	})
	if err != nil {
		return nil, err
	}
	out := make([]ports.DeadLetter, len(rows))
	for i := range rows {
		out[i] = rows[i].port()
	}
	return out, nil
}

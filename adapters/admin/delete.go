package admin

import (
	"context"
	"database/sql"
	"errors"

	"github.com/uptrace/bun"
)

// deleteAttempts bounds the runs of a queue deletion that PostgreSQL aborted to resolve
// a deadlock with a concurrent transaction.
const deleteAttempts = 3

// DeleteQueue implements ports.QueueAdmin (see doc.go for the lock order).
func (a *Admin) DeleteQueue(ctx context.Context, tenant, queue string) (bool, error) {
	var existed bool
	var err error
	for range deleteAttempts {
		err = a.run(ctx, "delete queue", func(ctx context.Context, c bun.Conn) error {
			return inTx(ctx, c, func(tx bun.Tx) error {
				var e error
				existed, e = deleteQueue(ctx, tx, tenant, queue)
				return e
			})
		})
		if err == nil || !retryable(err) {
			break
		}
		a.opts.Logger.Info("admin: queue deletion collided with a concurrent transaction, retrying", "queue", queue, "err", err)
	}
	if err != nil {
		return false, err
	}
	return existed, nil
}

func deleteQueue(ctx context.Context, tx bun.Tx, tenant, queue string) (bool, error) {
	// The queue row first: partitions are created under a key-share lock of it (taken by
	// the push function), so none can appear while it is held, and the partition list
	// below is complete; cursors are created under a key-share lock of their partition
	// (the pop function), so none can appear once the partitions are held.
	var qid string
	st := newStmt(tx)
	err := st.NewSelect().Table("queen.queues").Column("id").
		Where("tenant_id = ?::uuid AND name = ?", st.arg(tenant), st.arg(queue)).For("UPDATE").
		Scan(ctx, &qid)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	// Its partitions, and those left without a queue by brokers of an older version (the
	// foreign key that removed them with their queue is gone): all in ascending id, the
	// global lock order.
	var pids []string
	st = newStmt(tx)
	if err := st.NewSelect().TableExpr("queen.log_partitions AS lp").Column("lp.id").
		Where("lp.queue_id = ?::uuid OR NOT EXISTS (SELECT 1 FROM queen.queues q WHERE q.id = lp.queue_id)", st.arg(qid)).
		OrderExpr("lp.id").For("UPDATE OF lp").
		Scan(ctx, &pids); err != nil {
		return false, err
	}
	if len(pids) > 0 {
		// No foreign key ties these to their partition (the hot path would pay for it on
		// every push, see schema/001_tables.sql): they go explicitly, then the partitions.
		// Dead letters go with the queue row (their queue key cascades). Stream state goes
		// before the cursors: a streams cycle writes state and then locks its source
		// cursor, and the same order here keeps the two from deadlocking.
		for _, table := range []string{"queen.stream_state", "queen.log_segments", "queen.log_txns", "queen.log_consumers"} {
			st := newStmt(tx)
			if _, err := st.NewDelete().TableExpr(table).
				Where("partition_id = ANY (?::uuid[])", st.arg(pids)).Exec(ctx); err != nil {
				return false, err
			}
		}
		st := newStmt(tx)
		if _, err := st.NewDelete().TableExpr("queen.log_partitions").
			Where("id = ANY (?::uuid[])", st.arg(pids)).Exec(ctx); err != nil {
			return false, err
		}
	}
	st = newStmt(tx)
	if _, err := st.NewDelete().TableExpr("queen.queues").Where("id = ?::uuid", st.arg(qid)).Exec(ctx); err != nil {
		return false, err
	}
	return true, nil
}

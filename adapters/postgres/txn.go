package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/ports"
)

// Transaction implements ports.TransactionStore: pushes first (the bundle function
// pre-locks their partition rows in ascending id, as every push does), then the acks
// (consumer rows, in ascending partition id), in one database transaction.
func (s *Store) Transaction(ctx context.Context, segs []ports.Segment, acks []ports.AckItem, hint string) ([]ports.SegmentResult, []ports.AckResult, error) {
	return s.transaction(ctx, "transaction", segs, acks, hint, func(ctx context.Context, tx pgx.Tx) error {
		return tx.Commit(ctx)
	})
}

// transaction runs a transaction's statements (applyTransaction) in a database
// transaction that finish ends (a commit, or a PREPARE TRANSACTION), again when it was
// undone by a serialisation failure or a deadlock; a rollback the client caused is
// returned as the *RollbackError, with nothing applied.
func (s *Store) transaction(ctx context.Context, op string, segs []ports.Segment, acks []ports.AckItem, hint string,
	finish func(context.Context, pgx.Tx) error) ([]ports.SegmentResult, []ports.AckResult, error) {
	var (
		pushed []ports.SegmentResult
		acked  []ports.AckResult
		rb     *ports.RollbackError
	)
	err := s.runAgainIfUndone(ctx, op, func(ctx context.Context, c *pgxpool.Conn) error {
		tx, err := c.Begin(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
		if pushed, acked, rb, err = applyTransaction(ctx, tx, segs, acks, hint); err != nil || rb != nil {
			return err
		}
		return finish(ctx, tx)
	})
	if err != nil {
		return nil, nil, err
	}
	if rb != nil {
		return nil, nil, rb
	}
	return pushed, acked, nil
}

// applyTransaction runs a transaction's pushes and then its acks in tx; a *RollbackError
// (with no error) is a rollback the client caused, after which tx must not commit.
func applyTransaction(ctx context.Context, tx pgx.Tx, segs []ports.Segment, acks []ports.AckItem, hint string) (
	pushed []ports.SegmentResult, acked []ports.AckResult, rb *ports.RollbackError, err error) {
	if len(segs) > 0 {
		if pushed, err = pushBundle(ctx, tx, segs); err != nil {
			return nil, nil, nil, err
		}
		for i, r := range pushed {
			if r.Status == ports.SegmentEncrypted {
				return nil, nil, ports.PlainRefusal(segs[i]), nil
			}
			if r.Status == ports.SegmentDuplicate {
				return nil, nil, &ports.RollbackError{Reason: "duplicate", Msg: fmt.Sprintf(
					"QDUP transactionId already exists in partition %s/%s (frame %d); transaction rolled back",
					segs[i].Queue, segs[i].Partition, r.Dups[0].Index)}, nil
			}
		}
	}
	if len(acks) > 0 {
		acked, err = ackQuery(ctx, tx, acks, true, hint)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && (strings.HasPrefix(pgErr.Message, "QTXN") || strings.HasPrefix(pgErr.Message, "QLEASE")) {
			return nil, nil, &ports.RollbackError{Reason: "ack_rejected", Msg: pgErr.Message}, nil
		}
		if err != nil {
			return nil, nil, nil, err
		}
	}
	return pushed, acked, nil, nil
}

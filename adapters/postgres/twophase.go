package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/ports"
)

var (
	_ ports.TwoPhaseStore = (*Store)(nil)
	_ ports.DecisionLog   = (*Store)(nil)
)

// undefinedObject is SQLSTATE 42704: COMMIT PREPARED or ROLLBACK PREPARED of a gid
// that is not prepared (resolved already).
const undefinedObject = "42704"

// Prepare implements ports.TwoPhaseStore: Transaction's statements, then PREPARE
// TRANSACTION instead of COMMIT. The server needs max_prepared_transactions > 0.
func (s *Store) Prepare(ctx context.Context, gid string, segs []ports.Segment, acks []ports.AckItem, hint string) ([]ports.SegmentResult, []ports.AckResult, error) {
	pushed, acked, err := s.transaction(ctx, "prepare transaction", segs, acks, hint, func(ctx context.Context, tx pgx.Tx) error {
		// PREPARE ends the session's transaction: the deferred ROLLBACK finds none.
		_, err := tx.Exec(ctx, "PREPARE TRANSACTION "+quoteLiteral(gid))
		return err
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == prerequisiteState && strings.Contains(pgErr.Message, "prepared transactions are disabled") {
		// Nothing was applied: the client's answer is a rollback that says what to change.
		return nil, nil, &ports.RollbackError{Reason: "prepared_transactions_disabled", Msg: fmt.Sprintf(
			"this transaction spans shards, and shard %d's PostgreSQL has max_prepared_transactions = 0: raise it (a restart) to commit across shards; nothing was applied",
			s.opts.Shard)}
	}
	return pushed, acked, err
}

// prerequisiteState is SQLSTATE 55000 (object_not_in_prerequisite_state): PREPARE
// TRANSACTION with max_prepared_transactions = 0.
const prerequisiteState = "55000"

// CommitPrepared implements ports.TwoPhaseStore.
func (s *Store) CommitPrepared(ctx context.Context, gid string) error {
	return s.resolvePrepared(ctx, "COMMIT PREPARED ", gid)
}

// RollbackPrepared implements ports.TwoPhaseStore.
func (s *Store) RollbackPrepared(ctx context.Context, gid string) error {
	return s.resolvePrepared(ctx, "ROLLBACK PREPARED ", gid)
}

func (s *Store) resolvePrepared(ctx context.Context, stmt, gid string) error {
	return s.run(ctx, "resolve prepared transaction", func(ctx context.Context, c *pgxpool.Conn) error {
		_, err := c.Exec(ctx, stmt+quoteLiteral(gid))
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == undefinedObject {
			return nil // resolved already
		}
		return err
	})
}

// InDoubt implements ports.TwoPhaseStore: the database's prepared transactions under
// prefix, prepared before before.
func (s *Store) InDoubt(ctx context.Context, prefix string, before time.Time) ([]string, error) {
	var gids []string
	err := s.run(ctx, "prepared transactions", func(ctx context.Context, c *pgxpool.Conn) error {
		rows, err := c.Query(ctx, `SELECT gid FROM pg_prepared_xacts
			WHERE database = current_database() AND starts_with(gid, $1) AND prepared < $2 ORDER BY gid`, prefix, before)
		if err != nil {
			return err
		}
		gids, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	return gids, err
}

// Decide implements ports.DecisionLog on queen.xact_decisions.
func (s *Store) Decide(ctx context.Context, gid string, commit bool) (bool, error) {
	var recorded bool
	err := s.run(ctx, "decide", func(ctx context.Context, c *pgxpool.Conn) error {
		tx, err := c.Begin(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
		// A decision answered and then lost would let the recovery decide otherwise for
		// the parts not yet committed: it waits for the flush (and for a synchronous
		// standby, when there is one) whatever the session's default.
		if _, err := tx.Exec(ctx, "SET LOCAL synchronous_commit = on"); err != nil {
			return err
		}
		// The insert and, when another outcome was there first, its read in one
		// statement (a row inserted by this statement is invisible to its own SELECT).
		err = firstWriter(func() error {
			return tx.QueryRow(ctx, `WITH ins AS (
					INSERT INTO queen.xact_decisions (gid, commit) VALUES ($1, $2)
					ON CONFLICT (gid) DO NOTHING RETURNING commit)
				SELECT commit FROM ins UNION ALL SELECT commit FROM queen.xact_decisions WHERE gid = $1 LIMIT 1`,
				gid, commit).Scan(&recorded)
		})
		if err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
	if err != nil {
		return false, fmt.Errorf("postgres: decide %s: %w", gid, err)
	}
	return recorded, nil
}

// quoteLiteral is s as an SQL string literal (PREPARE TRANSACTION and its resolution
// take no parameters); standard_conforming_strings is on, so only quotes are doubled.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// Expire implements ports.DecisionLog.
func (s *Store) Expire(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := s.run(ctx, "expire decisions", func(ctx context.Context, c *pgxpool.Conn) error {
		tag, err := c.Exec(ctx, `DELETE FROM queen.xact_decisions WHERE decided_at < $1`, before)
		n = tag.RowsAffected()
		return err
	})
	return int(n), err
}

// MaxPreparedTransactions is the server's max_prepared_transactions: 0 turns two-phase
// commit off, and with it transactions across shards.
func (s *Store) MaxPreparedTransactions(ctx context.Context) (int, error) {
	var n int
	err := s.run(ctx, "max_prepared_transactions", func(ctx context.Context, c *pgxpool.Conn) error {
		return c.QueryRow(ctx, `SELECT current_setting('max_prepared_transactions')::int`).Scan(&n)
	})
	return n, err
}

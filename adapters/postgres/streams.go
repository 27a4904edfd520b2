package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/ports"
)

// streamLockSpace is the first key of the two-key advisory lock of a (query, partition)
// shard (the second is a hash of the shard): other advisory locks of the broker use
// single keys, so the two spaces never collide.
const streamLockSpace = 737021

// resolveRounds bounds the pushes of one cycle's segments: the first bundle, then one of
// the frames left after duplicates. Under the partition locks the first bundle holds,
// a second round cannot find new duplicates; a third round means a broken store.
const resolveRounds = 3

// RegisterQuery implements ports.StreamStore: one statement decides, under the row's
// lock (or the unique index's, for a new name).
func (s *Store) RegisterQuery(ctx context.Context, q ports.StreamQuery, reset bool) (ports.Registration, error) {
	var out ports.Registration
	err := s.run(ctx, "register stream query", func(ctx context.Context, c *pgxpool.Conn) error {
		tx, err := c.Begin(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
		var sink *string
		if q.SinkQueue != "" {
			sink = &q.SinkQueue
		}
		// Insert or lock the existing row: ON CONFLICT DO NOTHING returns nothing for an
		// existing name, which is then read FOR UPDATE.
		var id string
		err = tx.QueryRow(ctx, `INSERT INTO queen.stream_queries (name, source_queue, sink_queue, config_hash)
			VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO NOTHING RETURNING id::text`,
			q.Name, q.SourceQueue, sink, q.ConfigHash).Scan(&id)
		switch {
		case err == nil:
			out = ports.Registration{Query: q, Fresh: true}
			out.Query.ID = id
			return tx.Commit(ctx)
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		var old ports.StreamQuery
		var oldSink *string
		if err := tx.QueryRow(ctx, `SELECT id::text, name, source_queue, sink_queue, config_hash
			FROM queen.stream_queries WHERE name = $1 FOR UPDATE`, q.Name).
			Scan(&old.ID, &old.Name, &old.SourceQueue, &oldSink, &old.ConfigHash); err != nil {
			return err
		}
		if oldSink != nil {
			old.SinkQueue = *oldSink
		}
		if old.ConfigHash != q.ConfigHash && !reset {
			out = ports.Registration{Query: old, Mismatch: true}
			return nil
		}
		out = ports.Registration{Query: q}
		out.Query.ID = old.ID
		if old.ConfigHash != q.ConfigHash {
			if _, err := tx.Exec(ctx, `DELETE FROM queen.stream_state WHERE query_id = $1::uuid`, old.ID); err != nil {
				return err
			}
			out.Reset = true
		}
		if _, err := tx.Exec(ctx, `UPDATE queen.stream_queries SET source_queue = $2, sink_queue = $3,
			config_hash = $4, updated_at = now() WHERE id = $1::uuid`, old.ID, q.SourceQueue, sink, q.ConfigHash); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
	return out, err
}

// streamStateSQL reads one shard through the primary key; the filters apply to the
// shard's rows only. $3 NULL = every key; $5 NULL = no ripe filter. A prefix also
// bounds the index range from below (key is COLLATE "C": every key starting with the
// prefix sorts at or after it; ” bounds nothing).
const streamStateSQL = `SELECT key, value, updated_at FROM queen.stream_state
	WHERE query_id = $1::uuid AND partition_id = $2::uuid AND key >= $4::text
	  AND ($3::text[] IS NULL OR key = ANY ($3::text[]))
	  AND ($4::text = '' OR starts_with(key, $4::text))
	  AND ($5::numeric IS NULL OR (jsonb_typeof(value -> 'windowEnd') = 'number'
	                               AND (value ->> 'windowEnd')::numeric <= $5::numeric))
	ORDER BY key`

// StreamState implements ports.StreamStore.
func (s *Store) StreamState(ctx context.Context, queryID, partitionID string, f ports.StateFilter) ([]ports.StateRow, error) {
	var keys []string
	if len(f.Keys) > 0 {
		keys = f.Keys
	}
	var ripe *float64
	if f.Ripe {
		ripe = &f.RipeAtOrBefore
	}
	out := []ports.StateRow{}
	err := s.run(ctx, "stream state", func(ctx context.Context, c *pgxpool.Conn) error {
		rows, err := c.Query(ctx, streamStateSQL, queryID, partitionID, keys, f.Prefix, ripe)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r ports.StateRow
			var v []byte
			if err := rows.Scan(&r.Key, &v, &r.UpdatedAt); err != nil {
				return err
			}
			r.Value = append([]byte(nil), v...)
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Cycle implements ports.StreamStore. Lock order: the shard's advisory lock, then the
// sink partitions (ascending id, in the push function), then the source consumer row (the
// ack): the order of a transaction (pushes, then acks) behind a lock only cycles take.
func (s *Store) Cycle(ctx context.Context, c ports.Cycle) (ports.CycleResult, error) {
	var (
		out ports.CycleResult
		rb  *ports.RollbackError
	)
	err := s.runAgainIfUndone(ctx, "stream cycle", func(ctx context.Context, conn *pgxpool.Conn) error {
		out, rb = ports.CycleResult{}, nil
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
		var queue *string
		if err := tx.QueryRow(ctx, `SELECT pg_advisory_xact_lock($1::int4, hashtext($2::text)),
			(SELECT q.name FROM queen.log_partitions lp JOIN queen.queues q ON q.id = lp.queue_id WHERE lp.id = $3::uuid)`,
			streamLockSpace, c.QueryID+":"+c.PartitionID, c.PartitionID).Scan(nil, &queue); err != nil {
			return err
		}
		if queue != nil {
			out.Queue = *queue
		}
		if rb, err = applyStateOps(ctx, tx, c); rb != nil || err != nil {
			return err
		}
		if out.Pushed, err = pushCycle(ctx, tx, c); err != nil {
			return err
		}
		for i, r := range out.Pushed {
			if r.Status == ports.SegmentEncrypted { // plaintext for a queue that encrypts
				rb = ports.PlainRefusal(c.Segments[i])
				return nil
			}
		}
		if c.Ack != nil {
			if out.Ack, rb, err = ackCycle(ctx, tx, *c.Ack, c.ReleaseLease); rb != nil || err != nil {
				return err
			}
		}
		return tx.Commit(ctx)
	})
	if err != nil {
		return ports.CycleResult{}, err
	}
	if rb != nil {
		return ports.CycleResult{}, rb
	}
	return out, nil
}

// applyStateOps deletes, then upserts, the shard's keys (each named once, so the order
// between the two statements does not matter). An upsert for a query that is not
// registered breaks the foreign key: the cycle rolls back.
func applyStateOps(ctx context.Context, tx pgx.Tx, c ports.Cycle) (*ports.RollbackError, error) {
	var dels, keys []string
	var vals [][]byte
	for _, op := range c.Ops {
		if op.Delete {
			dels = append(dels, op.Key)
		} else {
			keys, vals = append(keys, op.Key), append(vals, op.Value)
		}
	}
	if len(dels) > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM queen.stream_state
			WHERE query_id = $1::uuid AND partition_id = $2::uuid AND key = ANY ($3::text[])`,
			c.QueryID, c.PartitionID, dels); err != nil {
			return nil, err
		}
	}
	if len(keys) > 0 {
		_, err := tx.Exec(ctx, `INSERT INTO queen.stream_state AS s (query_id, partition_id, key, value, updated_at)
			SELECT $1::uuid, $2::uuid, u.k, convert_from(u.v, 'UTF8')::jsonb, now()
			  FROM unnest($3::text[], $4::bytea[]) AS u(k, v)
			ON CONFLICT (query_id, partition_id, key) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at`,
			c.QueryID, c.PartitionID, keys, vals)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23503" {
			return &ports.RollbackError{Reason: "unknown_query", Msg: "unknown query_id " + c.QueryID + ": register the query first"}, nil
		}
		if errors.As(err, &pgErr) && (pgErr.Code == "22P02" || pgErr.Code == "22021" || pgErr.Code == "22P05") {
			return &ports.RollbackError{Reason: "bad_value", Msg: "state value is not valid JSON: " + pgErr.Message}, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// pushCycle pushes c's segments through the allocator (pushBundle, as every push), then
// what Resolve leaves of the segments answered duplicate, until nothing is left.
func pushCycle(ctx context.Context, tx pgx.Tx, c ports.Cycle) ([]ports.SegmentResult, error) {
	if len(c.Segments) == 0 {
		return nil, nil
	}
	out := make([]ports.SegmentResult, len(c.Segments))
	slots := make([]int, len(c.Segments))
	segs := append([]ports.Segment(nil), c.Segments...)
	for i := range slots {
		slots[i] = i
	}
	for round := 0; len(segs) > 0; round++ {
		if round == resolveRounds {
			return nil, fmt.Errorf("stream cycle: segments still duplicate after %d rounds: %w", round, ports.ErrInvalid)
		}
		res, err := pushBundle(ctx, tx, segs)
		if err != nil {
			return nil, err
		}
		var next []ports.Segment
		var nextSlots []int
		for k, r := range res {
			out[slots[k]] = r
			if r.Status != ports.SegmentDuplicate || c.Resolve == nil {
				continue
			}
			if rest, ok := c.Resolve(slots[k], r); ok {
				next, nextSlots = append(next, rest), append(nextSlots, slots[k])
			}
		}
		segs, slots = next, nextSlots
	}
	return out, nil
}

// cursorOnly applies a cycle's completed ack on a partition its group has no cursor on
// (docs/streams.md §3.2, 6.5: Queen inserts a cursor-only row): a cursor at the acked message,
// no lease, taken under the partition's KEY SHARE lock as a pop's first contact takes it
// (retention trims only partitions whose cursors it can lock). A message the partition
// does not hold, an ack naming a lease (no cursor holds one) or another status (a
// dead-letter ack needs the group's cursor) is refused. It reports false without a
// refusal when a pop inserted the cursor first.
func cursorOnly(ctx context.Context, tx pgx.Tx, it ports.AckItem) (bool, *ports.RollbackError, error) {
	var off pgtype.Int8
	// p_after -1: every retained hash row of the partition, whatever its age.
	if err := tx.QueryRow(ctx, `SELECT queen.log_resolve_v1($1::uuid, $2, -1, 0)`, it.PartitionID, it.Hash[:]).Scan(&off); err != nil {
		return false, nil, err
	}
	switch {
	case !off.Valid:
		return false, &ports.RollbackError{Reason: "ack_rejected", Msg: "Message not found"}, nil
	case it.LeaseID != "": // no cursor holds it
		return false, &ports.RollbackError{Reason: "ack_rejected", Msg: "Invalid or expired lease"}, nil
	case it.Status != ports.AckCompleted:
		return false, noCursor(it), nil
	}
	tag, err := tx.Exec(ctx, `INSERT INTO queen.log_consumers AS lc (partition_id, consumer_group, committed, batch_end, last_consumed_at)
		SELECT lp.id, $2, greatest($3, lp.log_start - 1), greatest($3, lp.log_start - 1), clock_timestamp()
		  FROM queen.log_partitions lp WHERE lp.id = $1::uuid FOR KEY SHARE OF lp
		ON CONFLICT ON CONSTRAINT log_consumers_pkey DO NOTHING`, it.PartitionID, it.Group, off.Int64)
	return err == nil && tag.RowsAffected() == 1, nil, err
}

// noCursor refuses a cycle's ack that needs a cursor its group does not have there.
func noCursor(it ports.AckItem) *ports.RollbackError {
	return &ports.RollbackError{Reason: "ack_rejected",
		Msg: "Message not found: no consumer of group " + it.Group + " on partition " + it.PartitionID}
}

// ackCycle applies the cycle's ack with the transaction route's strict rules
// (log_ack_v2), then makes the lease what the cycle asked: released, or kept as it was.
// The consumer row is locked first so that its lease can be put back.
func ackCycle(ctx context.Context, tx pgx.Tx, it ports.AckItem, release bool) (ports.AckResult, *ports.RollbackError, error) {
	var (
		lease   pgtype.UUID
		expires pgtype.Timestamptz
	)
	lock := func() error {
		return tx.QueryRow(ctx, `SELECT lease_id, lease_expires_at FROM queen.log_consumers
			WHERE partition_id = $1::uuid AND consumer_group = $2 FOR UPDATE`, it.PartitionID, it.Group).Scan(&lease, &expires)
	}
	err := lock()
	if errors.Is(err, pgx.ErrNoRows) {
		inserted, rb, err := cursorOnly(ctx, tx, it)
		if inserted || rb != nil || err != nil {
			return ports.AckResult{OK: inserted, LeaseReleased: inserted && release}, rb, err
		}
		// A pop made the group's cursor meanwhile: ack through it.
		if err = lock(); errors.Is(err, pgx.ErrNoRows) {
			return ports.AckResult{}, noCursor(it), nil
		}
	}
	if err != nil {
		return ports.AckResult{}, nil, err
	}
	res, err := ackQuery(ctx, tx, []ports.AckItem{it}, true, "")
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Message, "QLEASE"):
			return ports.AckResult{}, &ports.RollbackError{Reason: "ack_rejected", Msg: "Invalid or expired lease"}, nil
		case strings.HasPrefix(pgErr.Message, "QTXN"):
			return ports.AckResult{}, &ports.RollbackError{Reason: "ack_rejected", Msg: "Message not found"}, nil
		}
	}
	if err != nil {
		return ports.AckResult{}, nil, err
	}
	r := res[0]
	if !r.OK {
		return ports.AckResult{}, &ports.RollbackError{Reason: "ack_rejected", Msg: r.Error}, nil
	}
	switch {
	case r.DLQ:
	case release && !r.LeaseReleased:
		if _, err := tx.Exec(ctx, `UPDATE queen.log_consumers SET lease_id = NULL, lease_expires_at = NULL,
			batch_end = committed WHERE partition_id = $1::uuid AND consumer_group = $2`, it.PartitionID, it.Group); err != nil {
			return ports.AckResult{}, nil, err
		}
		r.LeaseReleased = true
	case !release && r.LeaseReleased:
		// The ack completed the whole span and released the lease: the worker keeps it
		// until it expires (a gate that denied keeps its partition), so it is put back.
		if lease.Valid && expires.Valid {
			if _, err := tx.Exec(ctx, `UPDATE queen.log_consumers SET lease_id = $3, lease_expires_at = $4
				WHERE partition_id = $1::uuid AND consumer_group = $2 AND $4 > clock_timestamp()`,
				it.PartitionID, it.Group, lease, expires); err != nil {
				return ports.AckResult{}, nil, err
			}
		}
		r.LeaseReleased = false
	}
	return r, nil, nil
}

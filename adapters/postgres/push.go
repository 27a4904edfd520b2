package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/ports"
)

// pushStmt is the whole fused bundle: one round trip, one commit, one row per segment.
// It is prepared once per connection. It is the only allocator path (fused pushes,
// transactions, streams cycles): log_push_multi_v4, the set-based log_push_multi_v3
// refusing plain segments of queues that encrypt (ports.SegmentEncrypted). v3's
// per-segment reference log_push_multi_v2 only the equivalence test calls
// (allocator_equiv_test.go).
var pushStmt = bundleStmt{name: "queen_push_multi_v4",
	sql: `SELECT ord, partition_id::text, base_offset, created_at, window_seconds, dup_idx, dup_off
	FROM queen.log_push_multi_v4($1::text[], $2::text[], $3::int4[], $4::bytea[], $5::int8[], $6::bytea[], $7::uuid[], $8::bool[])`}

// bundleStmt is a bundle function's statement and the name it is prepared under.
type bundleStmt struct{ name, sql string }

// conner is a pooled connection or a transaction.
type conner interface{ Conn() *pgx.Conn }

// pushBundle runs log_push_multi_v4 on q and returns one result per segment, in input
// order.
func pushBundle(ctx context.Context, q conner, segs []ports.Segment) ([]ports.SegmentResult, error) {
	return pushBundleWith(ctx, q, pushStmt, segs)
}

// pushBundleWith runs st, a bundle function's statement with pushStmt's parameters and
// result columns (the equivalence test passes the per-segment reference's), with the
// parameters and rows in binary form (pushwire.go).
func pushBundleWith(ctx context.Context, q conner, st bundleStmt, segs []ports.Segment) ([]ports.SegmentResult, error) {
	conn := q.Conn()
	sd, err := conn.Prepare(ctx, st.name, st.sql)
	if err != nil {
		return nil, err
	}
	if err := checkPushFields(sd); err != nil {
		return nil, err
	}
	params, err := encodePushParams(segs)
	if err != nil {
		return nil, err
	}
	defer params.release()
	rr := conn.PgConn().ExecPrepared(ctx, sd.Name, params.values[:], paramFormats[:], resultFormats[:])
	out := make([]ports.SegmentResult, len(segs))
	got := 0
	var bad error
	for rr.NextRow() {
		if bad != nil {
			continue // read to the end: the connection stays usable
		}
		ord, r, err := decodePushRow(rr.Values())
		switch {
		case err != nil:
			bad = err
		case ord < 1 || int(ord) > len(segs) || out[ord-1].Status != 0:
			bad = fmt.Errorf("postgres: push: result for ordinal %d of %d: %w", ord, len(segs), ports.ErrInvalid)
		default:
			out[ord-1] = r
			got++
		}
	}
	if _, err := rr.Close(); err != nil {
		return nil, err
	}
	if bad != nil {
		return nil, bad
	}
	if got != len(segs) {
		return nil, fmt.Errorf("postgres: push: %d results for %d segments: %w", got, len(segs), ports.ErrInvalid)
	}
	return out, nil
}

// pushRuns bounds the runs of one bundle whose transaction a concurrent one undid: a
// queue or partition of its segments deleted under it, or a deadlock PostgreSQL broke.
// A failed run stored nothing, and the next one is a new transaction whose provisioning
// creates what is missing again, as for a push to a queue that does not exist yet: a
// queue deleted while it is pushed to is not a database outage (nothing is spooled).
// Every run but the first needs another deletion landing inside the bundle's few
// milliseconds, so four runs are three such coincidences.
const pushRuns = 4

// PushSegments implements ports.SegmentStore. A bundle a concurrent transaction undid
// runs again (pushRuns); one undone every time fails with ports.ErrConflict.
func (s *Store) PushSegments(ctx context.Context, segs []ports.Segment) ([]ports.SegmentResult, error) {
	var out []ports.SegmentResult
	err := s.runAgainIfUndone(ctx, "push", func(ctx context.Context, c *pgxpool.Conn) error {
		var err error
		out, err = pushBundle(ctx, c, segs)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// runAgainIfUndone is run for a transaction that writes segments (a push bundle, a
// transaction, a streams cycle): one that a concurrent transaction undid (undoneBy) runs
// again, up to pushRuns runs, and one undone every time fails with ports.ErrConflict.
// fn must start from scratch on every run: nothing of a failed run was stored.
func (s *Store) runAgainIfUndone(ctx context.Context, op string, fn func(context.Context, *pgxpool.Conn) error) error {
	for run := 1; ; run++ {
		err := s.run(ctx, op, fn)
		undone := undoneBy(err)
		switch {
		case undone == "" || ctx.Err() != nil:
			return err
		case run == pushRuns:
			return fmt.Errorf("postgres: %s: %s during each of %d runs: %w", op, undone, run, ports.ErrConflict)
		}
	}
}

// undoneBy names the concurrent change that undid a bundle's transaction ("" when err
// is no such failure). The bundle functions raise P0002 for exactly one thing: a queue
// or partition of the bundle that vanished between its resolution and its row lock, or
// between the provisioning of the queue and that of its partition (013_push_set.sql).
func undoneBy(err error) string {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return ""
	}
	switch pgErr.Code {
	case "P0002":
		return "a queue or partition of the bundle was deleted"
	case "40P01", "40001":
		return "a conflicting transaction aborted the bundle"
	}
	return ""
}

// SegmentAt implements ports.SegmentStore. This is the rare duplicate path: a plain,
// uncached query.
func (s *Store) SegmentAt(ctx context.Context, partitionID string, off int64) (ports.StoredSegment, bool, error) {
	var seg ports.StoredSegment
	found := false
	err := s.run(ctx, "segment at", func(ctx context.Context, c *pgxpool.Conn) error {
		err := c.QueryRow(ctx, `SELECT base_offset, msg_count, created_at, blob FROM queen.log_segment_at_v1($1::uuid, $2::int8)`,
			pgx.QueryExecModeExec, partitionID, off).Scan(&seg.BaseOffset, &seg.Count, &seg.CreatedAt, &seg.Blob)
		if err == pgx.ErrNoRows {
			return nil
		}
		found = err == nil
		return err
	})
	return seg, found, err
}

// EncryptionEnabled implements ports.QueueSettings.
func (s *Store) EncryptionEnabled(ctx context.Context, tenant, queue string) (bool, error) {
	on := false
	err := s.run(ctx, "queue settings", func(ctx context.Context, c *pgxpool.Conn) error {
		err := c.QueryRow(ctx, `SELECT encryption_enabled FROM queen.queues WHERE tenant_id = $1::uuid AND name = $2`,
			tenant, queue).Scan(&on)
		if err == pgx.ErrNoRows {
			return nil
		}
		return err
	})
	return on, err
}

// recentHashesSQL reads a partition's dedup history in one statement, hence one
// snapshot: the hash rows are exactly those at or below the last offset it reports. It
// reads at most max + 1 rows, each once, and ships them only when they fit, so a
// history too large for the cache costs no transfer. One round trip matters: after a
// restart the reads run while cold partitions make pushes probe their whole window, and
// a read that waits on several round trips of a busy server keeps those probes going
// longer.
const recentHashesSQL = `
WITH p AS (
    SELECT lp.id, lp.last_offset, q.dedup_window_seconds AS win
      FROM queen.log_partitions lp JOIN queen.queues q ON q.id = lp.queue_id
     WHERE lp.id = $1::uuid
), r AS (
    SELECT t.end_offset, t.base_offset, t.created_at, t.hashes
      FROM p, queen.log_txns t
     WHERE t.partition_id = p.id AND t.end_offset <= p.last_offset
       AND t.created_at >= now() - make_interval(secs => p.win)
     ORDER BY t.end_offset
     LIMIT $2::bigint + 1
)
SELECT p.last_offset, p.win, count(r.end_offset),
       CASE WHEN count(r.end_offset) <= $2::bigint THEN
            array_agg(r.base_offset ORDER BY r.end_offset) FILTER (WHERE r.end_offset IS NOT NULL) END,
       CASE WHEN count(r.end_offset) <= $2::bigint THEN
            array_agg(r.created_at ORDER BY r.end_offset) FILTER (WHERE r.end_offset IS NOT NULL) END,
       CASE WHEN count(r.end_offset) <= $2::bigint THEN
            array_agg(r.hashes ORDER BY r.end_offset) FILTER (WHERE r.end_offset IS NOT NULL) END
  FROM p LEFT JOIN r ON true
 GROUP BY p.last_offset, p.win`

// RecentHashes implements ports.SegmentStore (see recentHashesSQL).
func (s *Store) RecentHashes(ctx context.Context, partitionID string, maxSegments int) (ports.RecentHashes, error) {
	out := ports.RecentHashes{LastOffset: -1}
	err := s.run(ctx, "recent hashes", func(ctx context.Context, c *pgxpool.Conn) error {
		var (
			windowSeconds, n int64
			bases            []int64
			times            []time.Time
			hashes           [][]byte
		)
		err := c.QueryRow(ctx, recentHashesSQL, partitionID, maxSegments).
			Scan(&out.LastOffset, &windowSeconds, &n, &bases, &times, &hashes)
		if err == pgx.ErrNoRows {
			return nil
		}
		if err != nil {
			return err
		}
		out.Window = time.Duration(windowSeconds) * time.Second
		if n > int64(maxSegments) {
			out.TooLarge = true
			return nil
		}
		if len(times) != len(bases) || len(hashes) != len(bases) {
			return fmt.Errorf("postgres: recent hashes: %d bases, %d times, %d hash rows: %w",
				len(bases), len(times), len(hashes), ports.ErrInvalid)
		}
		out.Segments = make([]ports.HashedSegment, len(bases))
		for i := range bases {
			out.Segments[i] = ports.HashedSegment{BaseOffset: bases[i], CreatedAt: times[i], Hashes: hashes[i]}
		}
		return nil
	})
	return out, err
}

package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/ports"
)

// pushSQL is the whole fused bundle: one round trip, one commit, one typed row per
// segment. The statement is prepared once per connection and cached by pgx. It is the
// only allocator path (fused pushes and transactions): the set-based
// log_push_multi_v3, whose per-segment reference log_push_multi_v2 only the
// equivalence test calls (allocator_equiv_test.go).
const pushSQL = `SELECT ord, partition_id::text, base_offset, created_at, window_seconds, dup_idx, dup_off
	FROM queen.log_push_multi_v3($1::text[], $2::text[], $3::int4[], $4::bytea[], $5::int8[], $6::bytea[], $7::uuid[])`

// pushArgs are log_push_multi_v3's parallel arrays.
type pushArgs struct {
	queues, parts []string
	tenants       []string // nil when every segment is the default tenant's
	counts        []int32
	verified      []int64
	hashes, blobs [][]byte
}

func newPushArgs(segs []ports.Segment) pushArgs {
	n := len(segs)
	a := pushArgs{queues: make([]string, n), parts: make([]string, n), tenants: make([]string, n),
		counts: make([]int32, n), verified: make([]int64, n), hashes: make([][]byte, n), blobs: make([][]byte, n)}
	defaultTenant := true
	for i, sg := range segs {
		a.queues[i], a.parts[i], a.tenants[i] = sg.Queue, sg.Partition, sg.Tenant
		if a.tenants[i] == "" {
			a.tenants[i] = ports.DefaultTenant
		}
		defaultTenant = defaultTenant && a.tenants[i] == ports.DefaultTenant
		a.counts[i], a.verified[i] = int32(sg.Count), sg.Verified
		a.hashes[i], a.blobs[i] = sg.Hashes, sg.Blob
	}
	if defaultTenant {
		a.tenants = nil // NULL: the function fills in the default tenant without parsing n UUIDs
	}
	return a
}

// querier is a connection or a transaction.
type querier interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}

// pushBundle runs log_push_multi_v3 on q and returns one result per segment, in input
// order.
func pushBundle(ctx context.Context, q querier, segs []ports.Segment) ([]ports.SegmentResult, error) {
	return pushBundleWith(ctx, q, pushSQL, segs)
}

// pushBundleWith runs sql, a bundle function's query with pushSQL's parameters and
// result columns (the equivalence test passes the per-segment reference's).
func pushBundleWith(ctx context.Context, q querier, sql string, segs []ports.Segment) ([]ports.SegmentResult, error) {
	a := newPushArgs(segs)
	rows, err := q.Query(ctx, sql, textArray(a.queues), textArray(a.parts), int4Array(a.counts), byteaArray(a.hashes),
		int8Array(a.verified), byteaArray(a.blobs), a.tenants)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]ports.SegmentResult, len(segs))
	got := 0
	// One set of scan targets for every row: declared in the loop, each would escape to
	// the heap per row (eight allocations per segment).
	var (
		ord      int32
		base     pgtype.Int8
		window   int32
		idx      []int32
		dupOff   []int64
		pid      string
		creation time.Time
	)
	dest := [...]any{&ord, &pid, &base, &creation, &window, &idx, &dupOff}
	for rows.Next() {
		if err := rows.Scan(dest[:]...); err != nil {
			return nil, err
		}
		if ord < 1 || int(ord) > len(segs) || out[ord-1].Status != 0 || len(idx) != len(dupOff) {
			return nil, fmt.Errorf("postgres: push: result for ordinal %d of %d (%d duplicates, %d offsets): %w",
				ord, len(segs), len(idx), len(dupOff), ports.ErrInvalid)
		}
		r := ports.SegmentResult{PartitionID: pid}
		if base.Valid {
			r.Status, r.BaseOffset, r.CreatedAt = ports.SegmentQueued, base.Int64, creation
			r.Window = time.Duration(window) * time.Second
		} else {
			r.Status = ports.SegmentDuplicate
			r.Dups = make([]ports.Dup, len(idx))
			for k := range idx {
				r.Dups[k] = ports.Dup{Index: int(idx[k]), Offset: dupOff[k]}
			}
		}
		out[ord-1] = r
		got++
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if got != len(segs) {
		return nil, fmt.Errorf("postgres: push: %d results for %d segments: %w", got, len(segs), ports.ErrInvalid)
	}
	return out, nil
}

// PushSegments implements ports.SegmentStore.
func (s *Store) PushSegments(ctx context.Context, segs []ports.Segment) ([]ports.SegmentResult, error) {
	var out []ports.SegmentResult
	err := s.run(ctx, "push", func(ctx context.Context, c *pgxpool.Conn) error {
		var err error
		out, err = pushBundle(ctx, c, segs)
		return err
	})
	return out, err
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

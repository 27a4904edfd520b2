package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/ports"
)

// pushSQL is the whole fused bundle: one round trip, one commit. The statement is
// prepared once per connection and cached by pgx.
const pushSQL = `SELECT queen.log_push_multi_v1($1::text[], $2::text[], $3::int4[], $4::bytea[], $5::int8[], $6::bytea[], $7::uuid[])`

// segResult is one element of log_push_multi_v1's result array.
type segResult struct {
	S    string    `json:"s"`
	P    string    `json:"p"`
	B    int64     `json:"b"`
	T    time.Time `json:"t"`
	W    int64     `json:"w"` // dedup window, seconds
	Dups []struct {
		I   int   `json:"i"`
		Off int64 `json:"off"`
	} `json:"dups"`
}

// pushArgs are log_push_multi_v1's parallel arrays.
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

// pushBundle runs log_push_multi_v1 on q (a connection or a transaction) and returns the
// raw result array.
func pushBundle(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, segs []ports.Segment) ([]ports.SegmentResult, error) {
	a := newPushArgs(segs)
	var raw []byte
	if err := q.QueryRow(ctx, pushSQL, a.queues, a.parts, a.counts, a.hashes, a.verified, a.blobs, a.tenants).Scan(&raw); err != nil {
		return nil, err
	}
	return parsePushResults(raw, len(segs))
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

// parsePushResults decodes log_push_multi_v1's jsonb result array.
func parsePushResults(raw []byte, n int) ([]ports.SegmentResult, error) {
	var rs []segResult
	if err := json.Unmarshal(raw, &rs); err != nil {
		return nil, fmt.Errorf("postgres: push: unparseable result: %w: %w", ports.ErrInvalid, err)
	}
	if len(rs) != n {
		return nil, fmt.Errorf("postgres: push: %d results for %d segments: %w", len(rs), n, ports.ErrInvalid)
	}
	out := make([]ports.SegmentResult, n)
	for i, r := range rs {
		switch r.S {
		case "q":
			out[i] = ports.SegmentResult{Status: ports.SegmentQueued, PartitionID: r.P, BaseOffset: r.B,
				CreatedAt: r.T, Window: time.Duration(r.W) * time.Second}
		case "d":
			dups := make([]ports.Dup, len(r.Dups))
			for k, d := range r.Dups {
				dups[k] = ports.Dup{Index: d.I, Offset: d.Off}
			}
			out[i] = ports.SegmentResult{Status: ports.SegmentDuplicate, PartitionID: r.P, Dups: dups}
		default:
			return nil, fmt.Errorf("postgres: push: result %d has status %q: %w", i, r.S, ports.ErrInvalid)
		}
	}
	return out, nil
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

// RecentHashes implements ports.SegmentStore: one REPEATABLE READ snapshot, so the hash
// rows are exactly those at or below the last offset it reports.
func (s *Store) RecentHashes(ctx context.Context, partitionID string, maxSegments int) (ports.RecentHashes, error) {
	out := ports.RecentHashes{LastOffset: -1}
	err := s.run(ctx, "recent hashes", func(ctx context.Context, c *pgxpool.Conn) error {
		tx, err := c.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
		var windowSeconds int64
		err = tx.QueryRow(ctx, `SELECT p.last_offset, q.dedup_window_seconds
			FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
			WHERE p.id = $1::uuid`, partitionID).Scan(&out.LastOffset, &windowSeconds)
		if err == pgx.ErrNoRows {
			return nil
		}
		if err != nil {
			return err
		}
		out.Window = time.Duration(windowSeconds) * time.Second
		window := out.Window
		// Count first (the rows are small and hot): a window too large for the cache is
		// not worth shipping.
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM queen.log_txns
			WHERE partition_id = $1::uuid AND end_offset <= $2 AND created_at >= now() - $3::interval
			LIMIT $4) c`, partitionID, out.LastOffset, window, maxSegments+1).Scan(&n); err != nil {
			return err
		}
		if n > maxSegments {
			out.TooLarge = true
			return tx.Commit(ctx)
		}
		rows, err := tx.Query(ctx, `SELECT base_offset, created_at, hashes FROM queen.log_txns
			WHERE partition_id = $1::uuid AND end_offset <= $2 AND created_at >= now() - $3::interval
			ORDER BY end_offset`, partitionID, out.LastOffset, window)
		if err != nil {
			return err
		}
		for rows.Next() {
			var h ports.HashedSegment
			if err := rows.Scan(&h.BaseOffset, &h.CreatedAt, &h.Hashes); err != nil {
				return err
			}
			out.Segments = append(out.Segments, h)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
	return out, err
}

package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/ports"
)

// popQueueSQL pops from one queue (pinned or wildcard), provisioning the queue row.
const popQueueSQL = `SELECT partition_id::text, partition_name, queue_name, span_start, span_end, attempt,
	lease_expires_at, seg_base, seg_count, seg_created_at, seg_blob
	FROM queen.log_pop_v1(ARRAY[queen.log_queue_id_v1($1::uuid, $2::text)], $3::text, $4::uuid[], $5::text,
		$6::int4, $7::int4, $8::int4, $9::bool, $10::uuid, $11::text, $12::timestamptz)`

// popDiscoverySQL pops from every queue of the tenant matching namespace and task ("" =
// any; the route requires at least one).
const popDiscoverySQL = `SELECT partition_id::text, partition_name, queue_name, span_start, span_end, attempt,
	lease_expires_at, seg_base, seg_count, seg_created_at, seg_blob
	FROM queen.log_pop_v1(ARRAY(SELECT id FROM queen.queues WHERE tenant_id = $1::uuid
			AND ($2::text = '' OR namespace = $2) AND ($13::text = '' OR task = $13)),
		$3::text, $4::uuid[], $5::text, $6::int4, $7::int4, $8::int4, $9::bool, $10::uuid, $11::text, $12::timestamptz)`

// Pop implements ports.ConsumeStore: one round trip, one transaction.
func (s *Store) Pop(ctx context.Context, req ports.PopRequest) ([]ports.Claim, error) {
	tenant := req.Tenant
	if tenant == "" {
		tenant = ports.DefaultTenant
	}
	var partition, leaseID, subFrom any
	if req.Partition != "" {
		partition = req.Partition
	}
	if !req.AutoAck {
		leaseID = req.LeaseID
	}
	if req.SubscribeMode == ports.SubscribeTimestamp {
		subFrom = req.SubscribeFrom
	}
	var cands any
	if req.Candidates != nil {
		cands = req.Candidates
	}
	sql, first := popQueueSQL, req.Queue
	args := []any{tenant, first, partition, cands, req.Group, int32(req.Batch), int32(req.Partitions),
		int32(req.LeaseSeconds), req.AutoAck, leaseID, req.SubscribeMode, subFrom}
	if req.Queue == "" {
		sql = popDiscoverySQL
		args[1] = req.Namespace
		args = append(args, req.Task)
	}
	var claims []ports.Claim
	err := s.run(ctx, "pop", func(ctx context.Context, c *pgxpool.Conn) error {
		claims = claims[:0]
		rows, err := c.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				pid, pname, qname string
				start, end        int64
				attempt           int32
				expires           pgtype.Timestamptz
				seg               ports.StoredSegment
				count             int32
			)
			if err := rows.Scan(&pid, &pname, &qname, &start, &end, &attempt, &expires,
				&seg.BaseOffset, &count, &seg.CreatedAt, &seg.Blob); err != nil {
				return err
			}
			seg.Count = int(count)
			if n := len(claims); n == 0 || claims[n-1].PartitionID != pid {
				claims = append(claims, ports.Claim{Queue: qname, Partition: pname, PartitionID: pid,
					Start: start, End: end, Attempt: int(attempt)})
				if expires.Valid {
					claims[len(claims)-1].LeaseExpires = expires.Time
				}
			}
			cl := &claims[len(claims)-1]
			cl.Segments = append(cl.Segments, seg)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return claims, nil
}

const ackSQL = `SELECT idx, ok, err, released, dlq, noop, coalesce(queue_name, ''), coalesce(partition_name, '') FROM queen.log_ack_v2(
	$1::uuid[], $2::text[], $3::bytea[], $4::text[], $5::text[], $6::uuid[], $7::text[], $8::bool, $9::uuid)`

// ackArgs are log_ack_v2's parallel arrays. Partition and lease ids go as pgtype.UUID:
// pgx has no binary encoding of []string into uuid[], and its fallback to text formats
// the whole rejected slice into an error first, on every ack (docs/benchmarks.md).
type ackArgs struct {
	groups, txns, statuses, errs []string
	hashes                       [][]byte
	pids, leases                 []pgtype.UUID // an invalid lease is NULL: no lease check
}

// newAckArgs converts items (whose ids consume.AckInput.Item checked) into the arrays.
func newAckArgs(items []ports.AckItem) (ackArgs, error) {
	n := len(items)
	a := ackArgs{pids: make([]pgtype.UUID, n), groups: make([]string, n), txns: make([]string, n),
		statuses: make([]string, n), errs: make([]string, n), hashes: make([][]byte, n), leases: make([]pgtype.UUID, n)}
	for i := range items {
		it := &items[i]
		pid, err := uuid.Parse(it.PartitionID)
		if err != nil {
			return ackArgs{}, fmt.Errorf("ack: partition id %q: %w", it.PartitionID, ports.ErrInvalid)
		}
		a.pids[i] = pgtype.UUID{Bytes: pid, Valid: true}
		a.groups[i], a.txns[i] = it.Group, it.TransactionID
		a.statuses[i], a.errs[i] = string(it.Status), it.Error
		a.hashes[i] = it.Hash[:]
		if it.LeaseID != "" {
			lease, err := uuid.Parse(it.LeaseID)
			if err != nil {
				return ackArgs{}, fmt.Errorf("ack: lease id %q: %w", it.LeaseID, ports.ErrInvalid)
			}
			a.leases[i] = pgtype.UUID{Bytes: lease, Valid: true}
		}
	}
	return a, nil
}

// ackQuery runs log_ack_v2 on q (a connection or a transaction).
func ackQuery(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, items []ports.AckItem, strict bool, hint string) ([]ports.AckResult, error) {
	a, err := newAckArgs(items)
	if err != nil {
		return nil, err
	}
	var hintArg any
	if hint != "" {
		hintArg = hint
	}
	rows, err := q.Query(ctx, ackSQL, a.pids, a.groups, a.hashes, a.txns, a.statuses, a.leases, a.errs, strict, hintArg)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]ports.AckResult, len(items))
	for rows.Next() {
		var (
			idx int32
			r   ports.AckResult
			msg *string
		)
		if err := rows.Scan(&idx, &r.OK, &msg, &r.LeaseReleased, &r.DLQ, &r.Noop, &r.Queue, &r.Partition); err != nil {
			return nil, err
		}
		if idx < 1 || int(idx) > len(out) {
			return nil, fmt.Errorf("ack: result index %d out of range: %w", idx, ports.ErrInvalid)
		}
		if msg != nil {
			r.Error = *msg
		}
		out[idx-1] = r
	}
	return out, rows.Err()
}

// Ack implements ports.ConsumeStore. Items whose partition id is not a UUID never reach
// the database: they cannot name a partition.
func (s *Store) Ack(ctx context.Context, items []ports.AckItem) ([]ports.AckResult, error) {
	if len(items) == 0 {
		return nil, nil
	}
	var out []ports.AckResult
	err := s.run(ctx, "ack", func(ctx context.Context, c *pgxpool.Conn) error {
		var err error
		out, err = ackQuery(ctx, c, items, false, "")
		return err
	})
	return out, err
}

// Release implements ports.ConsumeStore.
func (s *Store) Release(ctx context.Context, group, leaseID string, autoAck bool, claims []ports.Claim) error {
	pids, starts, ends := make([]string, len(claims)), make([]int64, len(claims)), make([]int64, len(claims))
	for i, c := range claims {
		pids[i], starts[i], ends[i] = c.PartitionID, c.Start, c.End
	}
	return s.run(ctx, "release", func(ctx context.Context, c *pgxpool.Conn) error {
		if autoAck {
			_, err := c.Exec(ctx, `UPDATE queen.log_consumers lc
				SET committed = u.start - 1, batch_end = u.start - 1, delivery_attempt = greatest(lc.delivery_attempt - 1, 0)
				FROM unnest($1::uuid[], $2::int8[], $3::int8[]) AS u(pid, start, fin)
				WHERE lc.partition_id = u.pid AND lc.consumer_group = $4 AND lc.committed = u.fin AND lc.lease_id IS NULL`,
				pids, starts, ends, group)
			return err
		}
		_, err := c.Exec(ctx, `UPDATE queen.log_consumers lc
			SET lease_id = NULL, lease_expires_at = NULL, batch_end = lc.committed,
			    delivery_attempt = greatest(lc.delivery_attempt - 1, 0)
			WHERE lc.partition_id = ANY ($1::uuid[]) AND lc.consumer_group = $2 AND lc.lease_id = $3::uuid`,
			pids, group, leaseID)
		return err
	})
}

// ExtendLease implements ports.ConsumeStore.
func (s *Store) ExtendLease(ctx context.Context, leaseID string, d time.Duration) (int, time.Time, error) {
	var (
		n       int32
		expires pgtype.Timestamptz
	)
	err := s.run(ctx, "extend lease", func(ctx context.Context, c *pgxpool.Conn) error {
		return c.QueryRow(ctx, `SELECT renewed, expires_at FROM queen.log_extend_lease_v1($1::uuid, $2::int4)`,
			leaseID, int32(d/time.Second)).Scan(&n, &expires)
	})
	if err != nil {
		return 0, time.Time{}, err
	}
	return int(n), expires.Time, nil
}

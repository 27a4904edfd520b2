package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/ports"
)

// popColumns are log_pop_v2's columns as the adapter reads them.
const popColumns = `cand_ord, verdict, drained, not_before, partition_id::text, partition_name, queue_name,
	span_start, span_end, attempt, lease_expires_at, seg_base, seg_count, seg_created_at, seg_blob`

// popQueueSQL pops from one queue (pinned or wildcard), provisioning the queue row.
const popQueueSQL = `SELECT ` + popColumns + `
	FROM queen.log_pop_v2(ARRAY[queen.log_queue_id_v1($1::uuid, $2::text)], $3::text, $4::uuid[], $5::text,
		$6::int4, $7::int4, $8::int4, $9::bool, $10::uuid, $11::text, $12::timestamptz)`

// popDiscoverySQL pops from every queue of the tenant matching namespace and task ("" =
// any; the route requires at least one).
const popDiscoverySQL = `SELECT ` + popColumns + `
	FROM queen.log_pop_v2(ARRAY(SELECT id FROM queen.queues WHERE tenant_id = $1::uuid
			AND ($2::text = '' OR namespace = $2) AND ($13::text = '' OR task = $13)),
		$3::text, $4::uuid[], $5::text, $6::int4, $7::int4, $8::int4, $9::bool, $10::uuid, $11::text, $12::timestamptz)`

// verdictKinds maps log_pop_v2's verdict numbers (schema/004_pop.sql) to the port's.
var verdictKinds = [...]ports.VerdictKind{1: ports.VerdictTook, 2: ports.VerdictEmpty, 3: ports.VerdictLeased,
	4: ports.VerdictBusy, 5: ports.VerdictGone}

// popCandidates converts a pop's candidates for log_pop_v2: the distinct well-formed ids
// in order (pgtype.UUID: pgx has no binary encoding of []string into uuid[], see
// ackArgs), and for each the position of the candidate it stands for. It also returns
// the verdicts the database will not give: every candidate starts as skipped (not
// evaluated), one that is not a UUID is gone (it names no partition), and a repeat stays
// skipped (it is tried once, at its first position).
func popCandidates(cands []string) (ids []pgtype.UUID, pos []int, verdicts []ports.Verdict) {
	verdicts = make([]ports.Verdict, len(cands))
	ids, pos = make([]pgtype.UUID, 0, len(cands)), make([]int, 0, len(cands))
	var seen map[[16]byte]bool
	if len(cands) > 8 {
		seen = make(map[[16]byte]bool, len(cands)) // a linear search is cheaper below that
	}
	for i, c := range cands {
		verdicts[i] = ports.Verdict{PartitionID: c, Kind: ports.VerdictSkipped}
		u, err := uuid.Parse(c)
		if err != nil {
			verdicts[i].Kind = ports.VerdictGone
			continue
		}
		if seen != nil {
			if seen[u] {
				continue
			}
			seen[u] = true
		} else if slices.ContainsFunc(ids, func(id pgtype.UUID) bool { return id.Bytes == u }) {
			continue
		}
		ids, pos = append(ids, pgtype.UUID{Bytes: u, Valid: true}), append(pos, i)
	}
	return ids, pos, verdicts
}

// Pop implements ports.ConsumeStore: one round trip, one transaction. With candidates
// it answers one verdict per candidate, in candidate order, decoded from typed columns.
func (s *Store) Pop(ctx context.Context, req ports.PopRequest) ([]ports.Claim, []ports.Verdict, error) {
	tenant := tenantOr(req.Tenant)
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
	var (
		cands    []pgtype.UUID // nil: NULL, the scan
		pos      []int
		verdicts []ports.Verdict
	)
	if req.Candidates != nil {
		cands, pos, verdicts = popCandidates(req.Candidates)
		if req.Partition != "" {
			cands = nil // a pinned pop evaluates none: all stay skipped
		}
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
				ord                pgtype.Int4
				kind               int16
				drained            pgtype.Bool
				notBefore, expires pgtype.Timestamptz
				pid, pname, qname  pgtype.Text
				start, end, base   pgtype.Int8
				attempt, count     pgtype.Int4
				created            pgtype.Timestamptz
				blob               []byte
			)
			if err := rows.Scan(&ord, &kind, &drained, &notBefore, &pid, &pname, &qname, &start, &end, &attempt,
				&expires, &base, &count, &created, &blob); err != nil {
				return err
			}
			if int(kind) >= len(verdictKinds) || verdictKinds[kind] == ports.VerdictSkipped {
				return fmt.Errorf("pop: unknown verdict %d: %w", kind, ports.ErrInvalid)
			}
			var v *ports.Verdict
			if ord.Valid {
				if ord.Int32 < 1 || int(ord.Int32) > len(pos) {
					return fmt.Errorf("pop: candidate ordinal %d out of range: %w", ord.Int32, ports.ErrInvalid)
				}
				v = &verdicts[pos[ord.Int32-1]]
			}
			if verdictKinds[kind] != ports.VerdictTook {
				if v != nil {
					v.Kind = verdictKinds[kind]
					v.NotBefore, v.LeaseExpires = notBefore.Time, expires.Time
				}
				continue
			}
			if n := len(claims); n == 0 || claims[n-1].PartitionID != pid.String {
				claims = append(claims, ports.Claim{Queue: qname.String, Partition: pname.String, PartitionID: pid.String,
					Start: start.Int64, End: end.Int64, Attempt: int(attempt.Int32), LeaseExpires: expires.Time})
				if v != nil {
					v.Kind, v.Drained, v.LeaseExpires = ports.VerdictTook, drained.Bool, expires.Time
				}
			}
			cl := &claims[len(claims)-1]
			cl.Segments = append(cl.Segments, ports.StoredSegment{BaseOffset: base.Int64, Count: int(count.Int32),
				CreatedAt: created.Time, Blob: blob})
		}
		return rows.Err()
	})
	if err != nil {
		return nil, nil, err
	}
	return claims, verdicts, nil
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

// Release implements ports.ConsumeStore. A released first delivery was never seen: the
// highest delivered offset goes back to the cursor with it, so its next delivery says
// deliveryAttempt 1 again (a released redelivery leaves it: those messages were seen).
func (s *Store) Release(ctx context.Context, group, leaseID string, autoAck bool, claims []ports.Claim) error {
	pids, starts, ends := make([]string, len(claims)), make([]int64, len(claims)), make([]int64, len(claims))
	for i, c := range claims {
		pids[i], starts[i], ends[i] = c.PartitionID, c.Start, c.End
	}
	return s.run(ctx, "release", func(ctx context.Context, c *pgxpool.Conn) error {
		if autoAck {
			_, err := c.Exec(ctx, `UPDATE queen.log_consumers lc
				SET committed = u.start - 1, batch_end = u.start - 1, delivery_attempt = greatest(lc.delivery_attempt - 1, 0),
				    delivered_end = CASE WHEN lc.delivery_attempt <= 1 THEN u.start - 1 ELSE lc.delivered_end END
				FROM unnest($1::uuid[], $2::int8[], $3::int8[]) AS u(pid, start, fin)
				WHERE lc.partition_id = u.pid AND lc.consumer_group = $4 AND lc.committed = u.fin AND lc.lease_id IS NULL`,
				pids, starts, ends, group)
			return err
		}
		_, err := c.Exec(ctx, `UPDATE queen.log_consumers lc
			SET lease_id = NULL, lease_expires_at = NULL, batch_end = lc.committed,
			    delivery_attempt = greatest(lc.delivery_attempt - 1, 0),
			    delivered_end = CASE WHEN lc.delivery_attempt <= 1 THEN lc.committed ELSE lc.delivered_end END
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

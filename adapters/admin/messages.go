package admin

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/queen-go/queen/ports"
)

var _ ports.MessageStore = (*Admin)(nil)

// msgWriteSlack bounds how far a partition's last_write_at may lag behind the commit time
// of its last segment: the allocator refreshes it only when it is more than one second
// old (schema/002_push.sql), so a partition with a segment committed at or after T has
// last_write_at >= T - 1 s. Two seconds leave a margin.
const msgWriteSlack = 2 * time.Second

// dlqPurgeBatch is how many dead letters one statement of a purge deletes: each batch is
// its own short transaction, so a large purge never holds many row locks for long.
const dlqPurgeBatch = 5000

// msgQueueOptionColumns lists the queue option columns (alias q), in the order of columns.
var msgQueueOptionColumns = func() string {
	var cols []string
	for _, c := range columns {
		if c.col != "namespace" && c.col != "task" {
			cols = append(cols, "q."+c.col)
		}
	}
	return strings.Join(cols, ", ")
}()

// msgPartitionRow is a partition with its queue's identity and options.
type msgPartitionRow struct {
	ID         string `bun:"id"`
	Name       string `bun:"name"`
	LastOffset int64  `bun:"last_offset"`
	First      int64  `bun:"first"`
	QueueID    string `bun:"queue_id"`
	QueueName  string `bun:"queue_name"`
	Namespace  string `bun:"namespace"`
	Task       string `bun:"task"`
	ports.QueueOptions
}

// msgCursorRow is one cursor of a partition.
type msgCursorRow struct {
	PartitionID  string     `bun:"partition_id"`
	Group        string     `bun:"consumer_group"`
	Committed    int64      `bun:"committed"`
	BatchEnd     int64      `bun:"batch_end"`
	LeaseExpires *time.Time `bun:"lease_expires_at"`
}

// loadMsgPartitions reads the tenant's partitions among pids with their queues and cursors,
// in pids' order; unknown ids are left out. Primary-key reads.
func loadMsgPartitions(ctx context.Context, db bun.IDB, tenant string, pids []string) ([]ports.MessagePartition, error) {
	if len(pids) == 0 {
		return nil, nil
	}
	var rows []msgPartitionRow
	st := newStmt(db)
	if err := st.NewSelect().
		TableExpr("queen.log_partitions AS lp").
		Join("JOIN queen.queues AS q ON q.id = lp.queue_id").
		ColumnExpr("lp.id::text AS id, lp.name, lp.last_offset, greatest(lp.log_start, lp.txns_start) AS first").
		ColumnExpr("q.id::text AS queue_id, q.name AS queue_name, q.namespace, q.task").
		ColumnExpr(msgQueueOptionColumns).
		Where("q.tenant_id = ?::uuid", st.arg(tenant)).
		Where("lp.id = ANY (?::uuid[])", st.arg(pids)).
		Scan(ctx, &rows); err != nil {
		return nil, err
	}
	var cursors []msgCursorRow
	st = newStmt(db)
	if err := st.NewSelect().
		TableExpr("queen.log_consumers AS lc").
		ColumnExpr("lc.partition_id::text AS partition_id, lc.consumer_group, lc.committed, lc.batch_end, lc.lease_expires_at").
		Where("lc.partition_id = ANY (?::uuid[])", st.arg(pids)).
		OrderExpr("lc.partition_id, lc.consumer_group").
		Scan(ctx, &cursors); err != nil {
		return nil, err
	}
	byID := make(map[string]*ports.MessagePartition, len(rows))
	for _, r := range rows {
		byID[r.ID] = &ports.MessagePartition{ID: r.ID, Name: r.Name, First: r.First, LastOffset: r.LastOffset,
			Queue: ports.QueueConfig{ID: r.QueueID, Name: r.QueueName, Namespace: r.Namespace, Task: r.Task,
				QueueOptions: r.QueueOptions}}
	}
	for _, c := range cursors {
		p := byID[c.PartitionID]
		if p == nil {
			continue
		}
		gc := ports.GroupCursor{Group: c.Group, Committed: c.Committed, BatchEnd: c.BatchEnd}
		if c.LeaseExpires != nil {
			gc.LeaseExpires = *c.LeaseExpires
		}
		p.Cursors = append(p.Cursors, gc)
	}
	out := make([]ports.MessagePartition, 0, len(rows))
	for _, id := range pids {
		if p := byID[id]; p != nil {
			out = append(out, *p)
		}
	}
	return out, nil
}

// filterMsgPartitions narrows a query of st over partitions (lp) and queues (q) to f's
// names.
func filterMsgPartitions(st *stmt, q *bun.SelectQuery, tenant string, f ports.MessageFilter) *bun.SelectQuery {
	q = whereQueues(st, q, tenant, f.Queue, f.Namespace, f.Task)
	if f.Partition != "" {
		q = q.Where("lp.name = ?", st.arg(f.Partition))
	}
	return q
}

// msgSegmentRow is a segment's place, as the browse reads it from the hash sidecar.
type msgSegmentRow struct {
	PartitionID string    `bun:"partition_id"`
	BaseOffset  int64     `bun:"base_offset"`
	EndOffset   int64     `bun:"end_offset"`
	CreatedAt   time.Time `bun:"created_at"`
}

// BrowseSegments implements ports.MessageStore. The segments come from the hash sidecar
// (log_txns, without its hash bytes): a row there is exactly a segment whose messages
// are inside the txn-hash window. Partitions are narrowed first: by the filter, by
// last_write_at (no partition idle since before From - msgWriteSlack can hold a segment
// committed after From; the log_partitions_recent index serves it per queue) and to
// those with retained messages. Each partition's rows are then read backwards through
// the primary key (partition_id, end_offset), at most limit of them: commit times grow
// with offsets in a partition (the allocator takes them under the partition lock), so
// its newest rows in the window are its first in browse order. Blobs are not read.
func (a *Admin) BrowseSegments(ctx context.Context, tenant string, f ports.MessageFilter, after *ports.BrowseKey, limit int) (ports.BrowsePage, error) {
	var page ports.BrowsePage
	if limit <= 0 {
		return page, nil
	}
	err := a.read(ctx, "browse segments", func(ctx context.Context, c bun.Conn) error {
		return snapshot(ctx, c, func(tx bun.Tx) error {
			page = ports.BrowsePage{}
			if err := tx.NewSelect().ColumnExpr("now()").Scan(ctx, &page.Now); err != nil {
				return err
			}
			st := newStmt(tx)
			recent := st.NewSelect().
				TableExpr("queen.log_txns AS t").
				ColumnExpr("t.partition_id, t.base_offset, t.end_offset, t.created_at").
				Where("t.partition_id = lp.id").
				Where("t.end_offset >= greatest(lp.log_start, lp.txns_start)").
				Where("t.created_at >= ?", st.arg(f.From))
			if !f.To.IsZero() {
				recent = recent.Where("t.created_at <= ?", st.arg(f.To))
			}
			if after != nil {
				at, pid := st.arg(after.CreatedAt), st.arg(after.PartitionID)
				recent = recent.Where("(t.created_at < ? OR (t.created_at = ? AND (t.partition_id > ?::uuid OR (t.partition_id = ?::uuid AND t.end_offset < ?))))",
					at, at, pid, pid, st.arg(after.EndOffset))
			}
			recent = recent.OrderExpr("t.end_offset DESC").Limit(int64(limit))
			q := st.NewSelect().
				TableExpr("queen.log_partitions AS lp").
				Join("JOIN queen.queues AS q ON q.id = lp.queue_id").
				Join("CROSS JOIN LATERAL (?) AS t", recent).
				ColumnExpr("t.partition_id::text AS partition_id, t.base_offset, t.end_offset, t.created_at").
				Where("lp.last_write_at >= ?", st.arg(f.From.Add(-msgWriteSlack))).
				Where("lp.last_offset >= greatest(lp.log_start, lp.txns_start)")
			var rows []msgSegmentRow
			if err := filterMsgPartitions(st, q, tenant, f).
				OrderExpr("t.created_at DESC, t.partition_id, t.end_offset DESC").
				Limit(int64(limit)).
				Scan(ctx, &rows); err != nil {
				return err
			}
			if len(rows) == 0 {
				return nil
			}
			var pids []string
			seen := make(map[string]bool)
			for _, r := range rows {
				page.Segments = append(page.Segments, ports.BrowseSegment{PartitionID: r.PartitionID,
					BaseOffset: r.BaseOffset, EndOffset: r.EndOffset, CreatedAt: r.CreatedAt})
				if !seen[r.PartitionID] {
					seen[r.PartitionID] = true
					pids = append(pids, r.PartitionID)
				}
			}
			var err error
			if page.Partitions, err = loadMsgPartitions(ctx, tx, tenant, pids); err != nil {
				return err
			}
			page.DeadLetters, err = msgDeadOffsets(ctx, tx, rows)
			return err
		})
	})
	return page, err
}

// msgDeadOffsets returns the messages of segs that have a dead-letter row: one range of the
// dlq_offset index per segment.
func msgDeadOffsets(ctx context.Context, db bun.IDB, segs []msgSegmentRow) ([]ports.MessageAddr, error) {
	pids := make([]string, len(segs))
	los := make([]int64, len(segs))
	his := make([]int64, len(segs))
	for i, s := range segs {
		pids[i], los[i], his[i] = s.PartitionID, s.BaseOffset, s.EndOffset
	}
	var rows []struct {
		PartitionID string `bun:"partition_id"`
		Offset      int64  `bun:"msg_offset"`
	}
	st := newStmt(db)
	if err := st.NewSelect().
		TableExpr("queen.dlq AS d").
		Join("JOIN unnest(?::uuid[], ?::int8[], ?::int8[]) AS r(pid, lo, hi) ON d.partition_id = r.pid AND d.msg_offset BETWEEN r.lo AND r.hi",
			st.arg(pids), st.arg(los), st.arg(his)).
		Distinct().
		ColumnExpr("d.partition_id::text AS partition_id, d.msg_offset").
		Scan(ctx, &rows); err != nil {
		return nil, err
	}
	out := make([]ports.MessageAddr, len(rows))
	for i, r := range rows {
		out[i] = ports.MessageAddr{PartitionID: r.PartitionID, Offset: r.Offset}
	}
	return out, nil
}

// BrowseModes implements ports.MessageStore: one pass over the cursors of the matching
// partitions (their primary key), without locks.
func (a *Admin) BrowseModes(ctx context.Context, tenant string, f ports.MessageFilter) (ports.GroupModes, error) {
	var m struct {
		QueueMode bool `bun:"queue_mode"`
		Named     int  `bun:"named"`
	}
	err := a.read(ctx, "browse modes", func(ctx context.Context, c bun.Conn) error {
		st := newStmt(c)
		mode := st.arg(ports.QueueModeGroup)
		q := st.NewSelect().
			TableExpr("queen.log_consumers AS lc").
			Join("JOIN queen.log_partitions AS lp ON lp.id = lc.partition_id").
			Join("JOIN queen.queues AS q ON q.id = lp.queue_id").
			ColumnExpr("coalesce(bool_or(lc.consumer_group = ?), false) AS queue_mode", mode).
			ColumnExpr("count(DISTINCT lc.consumer_group) FILTER (WHERE lc.consumer_group <> ?) AS named", mode)
		return filterMsgPartitions(st, q, tenant, f).Scan(ctx, &m)
	})
	return ports.GroupModes{QueueMode: m.QueueMode, NamedGroups: m.Named}, err
}

// msgBlobRow is a stored segment with its blob.
type msgBlobRow struct {
	PartitionID string    `bun:"partition_id"`
	BaseOffset  int64     `bun:"base_offset"`
	Count       int       `bun:"msg_count"`
	CreatedAt   time.Time `bun:"created_at"`
	Blob        []byte    `bun:"blob"`
}

func (r *msgBlobRow) stored() ports.StoredSegment {
	return ports.StoredSegment{BaseOffset: r.BaseOffset, Count: r.Count, CreatedAt: r.CreatedAt, Blob: r.Blob}
}

// SegmentBlobs implements ports.MessageStore: one primary-key lookup per segment.
func (a *Admin) SegmentBlobs(ctx context.Context, refs []ports.SegmentRef) ([]ports.SegmentBlob, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	pids := make([]string, len(refs))
	bases := make([]int64, len(refs))
	for i, r := range refs {
		pids[i], bases[i] = r.PartitionID, r.BaseOffset
	}
	var rows []msgBlobRow
	err := a.read(ctx, "segment blobs", func(ctx context.Context, c bun.Conn) error {
		st := newStmt(c)
		return st.NewSelect().
			TableExpr("queen.log_segments AS s").
			Join("JOIN unnest(?::uuid[], ?::int8[]) AS r(pid, base) ON s.partition_id = r.pid AND s.base_offset = r.base",
				st.arg(pids), st.arg(bases)).
			ColumnExpr("s.partition_id::text AS partition_id, s.base_offset, s.msg_count, s.created_at, s.blob").
			Scan(ctx, &rows)
	})
	if err != nil {
		return nil, err
	}
	out := make([]ports.SegmentBlob, len(rows))
	for i := range rows {
		out[i] = ports.SegmentBlob{PartitionID: rows[i].PartitionID, StoredSegment: rows[i].stored()}
	}
	return out, nil
}

// msgSegmentCovering reads the segment of partition pid covering offset off (a backward
// primary-key probe); found is false when there is none.
func msgSegmentCovering(ctx context.Context, db bun.IDB, pid string, off int64) (ports.StoredSegment, bool, error) {
	var r msgBlobRow
	st := newStmt(db)
	err := st.NewSelect().
		TableExpr("queen.log_segments AS s").
		ColumnExpr("s.partition_id::text AS partition_id, s.base_offset, s.msg_count, s.created_at, s.blob").
		Where("s.partition_id = ?::uuid AND s.base_offset <= ?", st.arg(pid), st.arg(off)).
		OrderExpr("s.base_offset DESC").
		Limit(1).
		Scan(ctx, &r)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && r.BaseOffset+int64(r.Count) <= off) {
		return ports.StoredSegment{}, false, nil
	}
	if err != nil {
		return ports.StoredSegment{}, false, err
	}
	return r.stored(), true, nil
}

// FindMessage implements ports.MessageStore, from one snapshot. The hash is looked for
// in the partition's sidecar rows of the retained window: position() screens each row's
// hash bytes in C, and only a row that contains them is expanded to its frames to find
// the aligned match (as the ack path resolves transaction ids).
func (a *Admin) FindMessage(ctx context.Context, tenant, partitionID string, hash [16]byte) (ports.StoredMessage, bool, error) {
	var (
		sm    ports.StoredMessage
		found bool
	)
	err := a.read(ctx, "find message", func(ctx context.Context, c bun.Conn) error {
		return snapshot(ctx, c, func(tx bun.Tx) error {
			found = false
			parts, err := loadMsgPartitions(ctx, tx, tenant, []string{partitionID})
			if err != nil || len(parts) == 0 {
				return err
			}
			p := parts[0]
			var off int64
			st := newStmt(tx)
			first, h := st.arg(p.First), st.arg(hash[:])
			err = st.NewSelect().
				TableExpr("queen.log_txns AS t").
				Join("CROSS JOIN LATERAL generate_series(0, (t.end_offset - t.base_offset)::integer) AS k(k)").
				ColumnExpr("t.base_offset + k.k AS off").
				Where("t.partition_id = ?::uuid AND t.end_offset >= ?", st.arg(partitionID), first).
				Where("position(?::bytea IN t.hashes) > 0", h).
				Where("substring(t.hashes FROM k.k * 16 + 1 FOR 16) = ?::bytea", h).
				Where("t.base_offset + k.k BETWEEN ? AND ?", first, st.arg(p.LastOffset)).
				OrderExpr("off DESC").
				Limit(1).
				Scan(ctx, &off)
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			if err != nil {
				return err
			}
			seg, ok, err := msgSegmentCovering(ctx, tx, partitionID, off)
			if err != nil || !ok {
				return err
			}
			var dead []dlqRow
			st = newStmt(tx)
			if err := st.NewSelect().
				TableExpr("queen.dlq AS d").
				ColumnExpr("d.id::text AS id, d.partition_id::text AS partition_id, d.consumer_group, d.msg_offset").
				ColumnExpr("d.transaction_id, d.error_message, d.retry_count, d.created_at, d.failed_at").
				Where("d.partition_id = ?::uuid AND d.msg_offset = ?", st.arg(partitionID), st.arg(off)).
				OrderExpr("d.failed_at DESC, d.id DESC").
				Scan(ctx, &dead); err != nil {
				return err
			}
			sm = ports.StoredMessage{Partition: p, Offset: off, Segment: seg}
			for i := range dead {
				dead[i].Queue, dead[i].Partition = p.Queue.Name, p.Name
				sm.Dead = append(sm.Dead, dead[i].port().DeadLetterInfo)
			}
			found = true
			return tx.NewSelect().ColumnExpr("now()").Scan(ctx, &sm.Now)
		})
	})
	return sm, found && err == nil, err
}

// SegmentAt implements ports.MessageStore.
func (a *Admin) SegmentAt(ctx context.Context, tenant, partitionID string, offset int64) (ports.StoredSegment, bool, error) {
	var (
		seg   ports.StoredSegment
		found bool
	)
	err := a.run(ctx, "segment at", func(ctx context.Context, c bun.Conn) error {
		var first int64
		st := newStmt(c)
		err := st.NewSelect().
			TableExpr("queen.log_partitions AS lp").
			Join("JOIN queen.queues AS q ON q.id = lp.queue_id").
			ColumnExpr("lp.log_start").
			Where("lp.id = ?::uuid AND q.tenant_id = ?::uuid", st.arg(partitionID), st.arg(tenant)).
			Scan(ctx, &first)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && offset < first) {
			return nil
		}
		if err != nil {
			return err
		}
		seg, found, err = msgSegmentCovering(ctx, c, partitionID, offset)
		return err
	})
	return seg, found && err == nil, err
}

// NewestDeadLetter implements ports.MessageStore (the dlq_message index).
func (a *Admin) NewestDeadLetter(ctx context.Context, tenant, partitionID, transactionID string) (string, bool, error) {
	var id string
	err := a.run(ctx, "newest dead letter", func(ctx context.Context, c bun.Conn) error {
		st := newStmt(c)
		return st.NewSelect().
			TableExpr("queen.dlq AS d").
			Join("JOIN queen.queues AS q ON q.id = d.queue_id").
			ColumnExpr("d.id::text").
			Where("q.tenant_id = ?::uuid AND d.partition_id = ?::uuid AND d.transaction_id = ?",
				st.arg(tenant), st.arg(partitionID), st.arg(transactionID)).
			OrderExpr("d.failed_at DESC, d.id DESC").
			Limit(1).
			Scan(ctx, &id)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return id, err == nil, err
}

// MoveDeadLetter implements ports.MessageStore in one transaction. Concurrent moves of
// one row take turns on a transaction-scoped advisory lock keyed by the row id, not on
// the row's lock: move pushes through fusion on other connections, and a queue deletion
// holding that partition's lock while it waits for the dead-letter row (its cascade)
// would otherwise close a cycle PostgreSQL cannot see. The row is locked only by the
// final DELETE, after the push.
func (a *Admin) MoveDeadLetter(ctx context.Context, tenant, id string, move func(context.Context, ports.DeadLetter) (bool, error)) (ports.DeadLetterMove, error) {
	var (
		res     ports.DeadLetterMove
		moveErr error
	)
	err := a.run(ctx, "move dead letter", func(ctx context.Context, c bun.Conn) error {
		res = ports.DeadLetterMove{}
		return inTx(ctx, c, func(tx bun.Tx) error {
			lock := newStmt(tx)
			if _, err := lock.NewRaw("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", lock.arg("queen.dlq-move:"+id)).Exec(ctx); err != nil {
				return err
			}
			var row dlqRow
			st := newStmt(tx)
			err := selectDeadLetters(st, tenant).Where("d.id = ?::uuid", st.arg(id)).Scan(ctx, &row)
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			if err != nil {
				return err
			}
			res.Found = true
			remove, err := move(ctx, row.port())
			if err != nil {
				moveErr = err
				return err
			}
			if !remove {
				return nil
			}
			del := newStmt(tx)
			r, err := del.NewDelete().TableExpr("queen.dlq").Where("id = ?::uuid", del.arg(id)).Exec(ctx)
			if err != nil {
				return err
			}
			n, err := r.RowsAffected()
			res.Removed = err == nil && n > 0
			return err
		})
	})
	switch {
	case moveErr != nil:
		return ports.DeadLetterMove{Found: true}, moveErr
	case err != nil:
		return ports.DeadLetterMove{Found: res.Found}, err
	}
	return res, nil
}

// DeleteDeadLetters implements ports.MessageStore: one statement through dlq_message.
func (a *Admin) DeleteDeadLetters(ctx context.Context, tenant, partitionID, transactionID string) (int64, error) {
	var n int64
	err := a.run(ctx, "delete dead letters", func(ctx context.Context, c bun.Conn) error {
		st := newStmt(c)
		r, err := st.NewDelete().
			TableExpr("queen.dlq AS d").
			Where("d.partition_id = ?::uuid AND d.transaction_id = ?", st.arg(partitionID), st.arg(transactionID)).
			Where("EXISTS (SELECT 1 FROM queen.queues AS q WHERE q.id = d.queue_id AND q.tenant_id = ?::uuid)", st.arg(tenant)).
			Exec(ctx)
		if err != nil {
			return err
		}
		n, err = r.RowsAffected()
		return err
	})
	return n, err
}

// PurgeDeadLetters implements ports.MessageStore in batches of dlqPurgeBatch rows, each its
// own statement (and transaction) under its own timeout, through the dlq_queue index.
func (a *Admin) PurgeDeadLetters(ctx context.Context, tenant, queue, group string) (int64, error) {
	var total int64
	for {
		var n int64
		err := a.run(ctx, "purge dead letters", func(ctx context.Context, c bun.Conn) error {
			st := newStmt(c)
			batch := st.NewSelect().
				TableExpr("queen.dlq AS d").
				Join("JOIN queen.queues AS q ON q.id = d.queue_id").
				Column("d.id").
				Where("q.tenant_id = ?::uuid AND q.name = ?", st.arg(tenant), st.arg(queue)).
				Limit(int64(dlqPurgeBatch))
			if group != "" {
				batch = batch.Where("d.consumer_group = ?", st.arg(group))
			}
			r, err := st.NewDelete().TableExpr("queen.dlq").Where("id IN (?)", batch).Exec(ctx)
			if err != nil {
				return err
			}
			n, err = r.RowsAffected()
			return err
		})
		total += n
		if err != nil {
			return total, err
		}
		if n < dlqPurgeBatch {
			return total, nil
		}
	}
}

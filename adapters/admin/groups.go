package admin

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/uptrace/bun"

	"github.com/queen-go/queen/ports"
)

// The GroupStore (docs/api.md §5.9). Reads are single statements over
// queen.log_group_positions_v1 (schema/010_groups.sql): plain MVCC reads, no row lock.
// Cursor moves (deletion, subscription update, seek) are one transaction each and lock
// what they change in the global order (doc.go, "Consumer groups").

var _ ports.GroupStore = (*Admin)(nil)

// groupAttempts bounds the runs of a cursor move that PostgreSQL aborted to resolve a
// deadlock with a concurrent transaction (a queue deletion waiting on an ack that waits
// on the queue row, see doc.go).
const groupAttempts = 3

// groupPairs is the tenant's (group, queue) pairs, as a subquery of st with columns grp
// and queue_id: every pair where the group has a subscription or a cursor. group "" =
// every group.
func groupPairs(st *stmt, tenant, group string) *bun.SelectQuery {
	t := st.arg(tenant)
	subs := st.NewSelect().TableExpr("queen.consumer_groups AS cg").
		Join("JOIN queen.queues AS q ON q.id = cg.queue_id").
		ColumnExpr("cg.name AS grp, cg.queue_id").
		Where("q.tenant_id = ?::uuid", t)
	cursors := st.NewSelect().TableExpr("queen.log_consumers AS lc").
		Join("JOIN queen.log_partitions AS lp ON lp.id = lc.partition_id").
		Join("JOIN queen.queues AS q ON q.id = lp.queue_id").
		ColumnExpr("lc.consumer_group AS grp, lp.queue_id").
		Where("q.tenant_id = ?::uuid", t)
	if group != "" {
		g := st.arg(group)
		subs = subs.Where("cg.name = ?", g)
		cursors = cursors.Where("lc.consumer_group = ?", g)
	}
	return subs.Union(cursors)
}

// groupSummaryRow is one (group, queue) aggregate.
type groupSummaryRow struct {
	Group              string     `bun:"group_name"`
	Queue              string     `bun:"queue_name"`
	Cursors            int        `bun:"cursors"`
	PartitionsWithLag  int        `bun:"partitions_with_lag"`
	TotalLag           int64      `bun:"total_lag"`
	OldestUnconsumedAt *time.Time `bun:"oldest_unconsumed_at"`
	LiveLeases         int        `bun:"live_leases"`
	LastActivity       *time.Time `bun:"last_activity"`
	SubscriptionMode   *string    `bun:"subscription_mode"`
	SubscribedFrom     *time.Time `bun:"subscribed_from"`
	SubscribedAt       *time.Time `bun:"subscribed_at"`
	AsOf               time.Time  `bun:"as_of"`
}

// GroupSummaries implements ports.GroupStore: one statement. The page of pairs is taken
// first, then only its queues' partitions are read.
func (a *Admin) GroupSummaries(ctx context.Context, tenant string, page ports.GroupPage) (time.Time, []ports.GroupSummary, error) {
	var rows []groupSummaryRow
	err := a.groupRead(ctx, "group summaries", func(ctx context.Context, tx bun.Tx) error {
		st := newStmt(tx)
		return st.NewRaw(`
WITH pairs AS (?0),
page AS (
    SELECT p.grp, p.queue_id, q.name AS queue_name
      FROM pairs p JOIN queen.queues q ON q.id = p.queue_id
     ORDER BY p.grp COLLATE "C", q.name COLLATE "C"
     LIMIT ?1 OFFSET ?2)
SELECT pg.grp AS group_name, pg.queue_name,
       count(*) FILTER (WHERE x.has_cursor) AS cursors,
       count(*) FILTER (WHERE x.lag > 0) AS partitions_with_lag,
       coalesce(sum(x.lag), 0)::bigint AS total_lag,
       min(x.oldest_unconsumed_at) AS oldest_unconsumed_at,
       count(*) FILTER (WHERE x.lease_id IS NOT NULL) AS live_leases,
       greatest(max(x.last_consumed_at), max(x.cursor_created_at), cg.created_at) AS last_activity,
       cg.subscription_mode, cg.subscribed_from, cg.created_at AS subscribed_at,
       now() AS as_of
  FROM page pg
  LEFT JOIN LATERAL queen.log_group_positions_v1(ARRAY[pg.grp], ARRAY[pg.queue_id]) x ON true
  LEFT JOIN queen.consumer_groups cg ON cg.queue_id = pg.queue_id AND cg.name = pg.grp
 GROUP BY pg.grp, pg.queue_name, pg.queue_id, cg.subscription_mode, cg.subscribed_from, cg.created_at
 ORDER BY pg.grp COLLATE "C", pg.queue_name COLLATE "C"`,
			groupPairs(st, tenant, ""), st.arg(page.Limit), st.arg(page.Offset)).Scan(ctx, &rows)
	})
	if err != nil {
		return time.Time{}, nil, err
	}
	out := make([]ports.GroupSummary, len(rows))
	var asOf time.Time
	for i, r := range rows {
		asOf = r.AsOf
		out[i] = ports.GroupSummary{
			Group: r.Group, Queue: r.Queue, Cursors: r.Cursors, PartitionsWithLag: r.PartitionsWithLag,
			TotalLag: r.TotalLag, OldestUnconsumedAt: r.OldestUnconsumedAt, LiveLeases: r.LiveLeases,
			LastActivity: r.LastActivity,
		}
		if r.SubscriptionMode != nil && r.SubscribedAt != nil {
			out[i].Subscription = &ports.GroupSubscription{Mode: *r.SubscriptionMode, From: r.SubscribedFrom,
				CreatedAt: *r.SubscribedAt}
		}
	}
	return asOf, out, nil
}

// groupPositionRow is one row of log_group_positions_v1 with its queue's name.
type groupPositionRow struct {
	Group              string     `bun:"group_name"`
	Queue              string     `bun:"queue_name"`
	PartitionID        string     `bun:"partition_id"`
	Partition          string     `bun:"partition_name"`
	HasCursor          bool       `bun:"has_cursor"`
	Committed          int64      `bun:"committed"`
	LastOffset         int64      `bun:"last_offset"`
	Lag                int64      `bun:"lag"`
	OldestUnconsumedAt *time.Time `bun:"oldest_unconsumed_at"`
	LeaseID            *string    `bun:"lease_id"`
	LeaseExpiresAt     *time.Time `bun:"lease_expires_at"`
	LastConsumedAt     *time.Time `bun:"last_consumed_at"`
	AsOf               time.Time  `bun:"as_of"`
}

// groupPositionColumns are the columns of groupPositionRow, read from log_group_positions_v1
// (alias x) and the queue (alias q).
const groupPositionColumns = `x.group_name, q.name AS queue_name, x.partition_id::text AS partition_id, x.partition_name,
       x.has_cursor, x.committed, x.last_offset, x.lag, x.oldest_unconsumed_at,
       x.lease_id::text AS lease_id, x.lease_expires_at, x.last_consumed_at, now() AS as_of`

func groupPositionsOf(rows []groupPositionRow) (time.Time, []ports.GroupPosition) {
	var asOf time.Time
	out := make([]ports.GroupPosition, len(rows))
	for i, r := range rows {
		asOf = r.AsOf
		out[i] = ports.GroupPosition{
			Group: r.Group, Queue: r.Queue, Partition: r.Partition, PartitionID: r.PartitionID,
			Cursor: r.HasCursor, Committed: r.Committed, LastOffset: r.LastOffset, Lag: r.Lag,
			OldestUnconsumedAt: r.OldestUnconsumedAt, LeaseExpiresAt: r.LeaseExpiresAt, LastConsumedAt: r.LastConsumedAt,
		}
		if r.LeaseID != nil {
			out[i].LeaseID = *r.LeaseID
		}
	}
	return asOf, out
}

// groupPositionsOfPairs is the start of a positions read: ?0 is the (group, queue)
// pairs to read (groupPairs), each expanded to its partitions' positions (x).
const groupPositionsOfPairs = `
WITH pairs AS (?0)
SELECT ` + groupPositionColumns + `
  FROM pairs p
  JOIN queen.queues q ON q.id = p.queue_id
 CROSS JOIN LATERAL queen.log_group_positions_v1(ARRAY[p.grp], ARRAY[p.queue_id]) x`

// GroupPositions implements ports.GroupStore: one statement.
func (a *Admin) GroupPositions(ctx context.Context, tenant, group string, page ports.GroupPage) (time.Time, []ports.GroupPosition, error) {
	var rows []groupPositionRow
	err := a.groupRead(ctx, "group positions", func(ctx context.Context, tx bun.Tx) error {
		st := newStmt(tx)
		return st.NewRaw(groupPositionsOfPairs+`
 WHERE x.has_cursor OR x.lag > 0
 ORDER BY q.name COLLATE "C", x.partition_name COLLATE "C"
 LIMIT ?1 OFFSET ?2`,
			groupPairs(st, tenant, group), st.arg(page.Limit), st.arg(page.Offset)).Scan(ctx, &rows)
	})
	if err != nil {
		return time.Time{}, nil, err
	}
	asOf, out := groupPositionsOf(rows)
	return asOf, out, nil
}

// LaggingPositions implements ports.GroupStore: one statement over every pair.
func (a *Admin) LaggingPositions(ctx context.Context, tenant string, minLag time.Duration, limit int) (time.Time, []ports.GroupPosition, error) {
	var rows []groupPositionRow
	err := a.groupRead(ctx, "lagging positions", func(ctx context.Context, tx bun.Tx) error {
		st := newStmt(tx)
		return st.NewRaw(groupPositionsOfPairs+`
 WHERE x.oldest_unconsumed_at <= now() - make_interval(secs => ?1)
 ORDER BY x.oldest_unconsumed_at, x.group_name COLLATE "C", q.name COLLATE "C", x.partition_name COLLATE "C"
 LIMIT ?2`,
			groupPairs(st, tenant, ""), st.arg(minLag.Seconds()), st.arg(limit)).Scan(ctx, &rows)
	})
	if err != nil {
		return time.Time{}, nil, err
	}
	asOf, out := groupPositionsOf(rows)
	return asOf, out, nil
}

// groupNoJIT turns PostgreSQL's JIT compilation off for the rest of a transaction. The
// reads join every partition of a page's queues with a few index probes each, which the
// planner prices high enough to JIT-compile: on 3,000 partitions compiling took 1.5 s of
// a 1.66 s listing that runs in about 100 ms without it.
const groupNoJIT = "SET LOCAL jit = off"

// groupRead runs fn in a read-only transaction on its own connection, without JIT.
func (a *Admin) groupRead(ctx context.Context, op string, fn func(context.Context, bun.Tx) error) error {
	return a.readTx(ctx, op, groupNoJIT, fn)
}

// readTx runs fn in a read-only transaction on its own connection, after the SET LOCAL
// statement settings (the planner settings the reads need); on the replica when the
// reads go there (replica.go).
func (a *Admin) readTx(ctx context.Context, op, settings string, fn func(context.Context, bun.Tx) error) error {
	return a.read(ctx, op, settingsTxFn(&sql.TxOptions{ReadOnly: true}, settings, fn))
}

// settingsTx runs fn in a transaction of opts on its own connection of the primary,
// after the SET LOCAL statement settings.
func (a *Admin) settingsTx(ctx context.Context, op string, opts *sql.TxOptions, settings string, fn func(context.Context, bun.Tx) error) error {
	return a.run(ctx, op, settingsTxFn(opts, settings, fn))
}

// settingsTxFn is what settingsTx runs on its connection.
func settingsTxFn(opts *sql.TxOptions, settings string, fn func(context.Context, bun.Tx) error) func(context.Context, bun.Conn) error {
	return func(ctx context.Context, c bun.Conn) error {
		return runTx(ctx, c, opts, func(tx bun.Tx) error {
			if _, err := tx.ExecContext(ctx, settings); err != nil {
				return err
			}
			return fn(ctx, tx)
		})
	}
}

// inGroupTx runs fn in a transaction on its own connection (without JIT, see
// groupNoJIT), again (up to groupAttempts runs) when PostgreSQL aborted it to resolve a
// deadlock.
func (a *Admin) inGroupTx(ctx context.Context, op string, fn func(context.Context, bun.Tx) error) error {
	var err error
	for range groupAttempts {
		err = a.settingsTx(ctx, op, nil, groupNoJIT, fn)
		if err == nil || !retryable(err) {
			return err
		}
		a.opts.Logger.Info("admin: a consumer-group change collided with a concurrent transaction, retrying", "op", op, "err", err)
	}
	return err
}

// groupQueueID returns the id of the tenant's queue, "" when there is none. No lock: what
// the callers lock next is what they change, and a queue deletion waits for those locks.
func groupQueueID(ctx context.Context, tx bun.Tx, tenant, queue string) (string, error) {
	var id string
	st := newStmt(tx)
	err := st.NewSelect().Table("queen.queues").ColumnExpr("id::text").
		Where("tenant_id = ?::uuid AND name = ?", st.arg(tenant), st.arg(queue)).Scan(ctx, &id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return id, err
}

// DeleteGroup implements ports.GroupStore. It locks the group's cursor rows in ascending
// partition id (the global lock order, as acks take them), deletes them, then locks and
// deletes its subscription rows in ascending queue id.
func (a *Admin) DeleteGroup(ctx context.Context, tenant, group, queue string, subscriptions bool) (ports.GroupDeletion, error) {
	var d ports.GroupDeletion
	err := a.inGroupTx(ctx, "delete group", func(ctx context.Context, tx bun.Tx) error {
		d = ports.GroupDeletion{QueueFound: true}
		var qid string
		if queue != "" {
			var err error
			if qid, err = groupQueueID(ctx, tx, tenant, queue); err != nil || qid == "" {
				d.QueueFound = false
				return err
			}
		}
		var err error
		if d.Cursors, err = groupCursors.deleteInOrder(ctx, tx, tenant, group, qid); err != nil || !subscriptions {
			return err
		}
		d.Subscriptions, err = groupSubscriptions.deleteInOrder(ctx, tx, tenant, group, qid)
		return err
	})
	if err != nil {
		return ports.GroupDeletion{}, err
	}
	return d, nil
}

// groupTable is where a table keeps a consumer group's rows: the group's name column
// and the id column its rows are locked in order of, and deleted by.
type groupTable struct {
	table, alias string
	joins        []string // up to queen.queues AS q
	nameCol      string
	idCol        string
	queueCol     string // the row's queue id (qualified)
}

var (
	// groupCursors are the group's cursor rows, one per partition.
	groupCursors = groupTable{table: "queen.log_consumers", alias: "lc",
		joins:   []string{"JOIN queen.log_partitions AS lp ON lp.id = lc.partition_id", "JOIN queen.queues AS q ON q.id = lp.queue_id"},
		nameCol: "consumer_group", idCol: "partition_id", queueCol: "lp.queue_id"}
	// groupSubscriptions are the group's subscription rows, one per queue.
	groupSubscriptions = groupTable{table: "queen.consumer_groups", alias: "cg",
		joins:   []string{"JOIN queen.queues AS q ON q.id = cg.queue_id"},
		nameCol: "name", idCol: "queue_id", queueCol: "cg.queue_id"}
)

// lockInOrder locks the group's rows of the tenant's queue qid ("": of all its queues)
// in ascending id, the global lock order (acks take cursor rows in ascending partition
// id), and returns their ids.
func (g groupTable) lockInOrder(ctx context.Context, tx bun.Tx, tenant, group, qid string) ([]string, error) {
	st := newStmt(tx)
	q := st.NewSelect().TableExpr(g.table + " AS " + g.alias)
	for _, j := range g.joins {
		q = q.Join(j)
	}
	q = q.ColumnExpr(g.alias+"."+g.idCol+"::text").
		Where("q.tenant_id = ?::uuid AND "+g.alias+"."+g.nameCol+" = ?", st.arg(tenant), st.arg(group))
	if qid != "" {
		q = q.Where(g.queueCol+" = ?::uuid", st.arg(qid))
	}
	var ids []string
	err := q.OrderExpr(g.alias+"."+g.idCol).For("UPDATE OF "+g.alias).Scan(ctx, &ids)
	return ids, err
}

// deleteInOrder locks the group's rows as lockInOrder does, then deletes them; it
// returns how many it deleted.
func (g groupTable) deleteInOrder(ctx context.Context, tx bun.Tx, tenant, group, qid string) (int, error) {
	ids, err := g.lockInOrder(ctx, tx, tenant, group, qid)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	st := newStmt(tx)
	res, err := st.NewDelete().TableExpr(g.table).
		Where(g.nameCol+" = ? AND "+g.idCol+" = ANY (?::uuid[])", st.arg(group), st.arg(ids)).Exec(ctx)
	if err != nil {
		return 0, err
	}
	return groupRowsAffected(res), nil
}

// SetGroupSubscription implements ports.GroupStore: the group's subscription rows, locked
// in ascending queue id, become (timestamp, from). Cursor rows are not touched.
func (a *Admin) SetGroupSubscription(ctx context.Context, tenant, group string, from time.Time) (int, error) {
	var n int
	err := a.inGroupTx(ctx, "set group subscription", func(ctx context.Context, tx bun.Tx) error {
		n = 0
		qids, err := groupSubscriptions.lockInOrder(ctx, tx, tenant, group, "")
		if err != nil || len(qids) == 0 {
			return err
		}
		st := newStmt(tx)
		res, err := st.NewUpdate().TableExpr("queen.consumer_groups").
			Set("subscription_mode = ?", st.arg(ports.SubscribeTimestamp)).
			Set("subscribed_from = ?", st.arg(from)).
			Where("name = ? AND queue_id = ANY (?::uuid[])", st.arg(group), st.arg(qids)).Exec(ctx)
		if err != nil {
			return err
		}
		n = groupRowsAffected(res)
		return nil
	})
	return n, err
}

// SeekGroup implements ports.GroupStore, in one transaction:
//
//  1. the queue's partitions (or the named one) FOR KEY SHARE SKIP LOCKED, in ascending
//     id: a partition a queue deletion holds is left out (it is going away), and the
//     lock keeps the others from being deleted under the cursors created in step 4
//     (there is no foreign key, see schema/001_tables.sql). Pushes take these rows FOR
//     NO KEY UPDATE, which does not conflict: a seek never waits for a push, nor a push
//     for a seek.
//  2. the advisory lock a pop's first contact try-locks before it creates a cursor
//     (log_pop_v2), per partition in ascending id: a pop then skips the partition
//     (busy) instead of inserting the key this seek inserts, so neither waits on the
//     other's uncommitted insert.
//  3. the group's existing cursor rows FOR UPDATE, in ascending partition id, as acks
//     take them; pops skip them (SKIP LOCKED) until the commit.
//  4. one upsert: each cursor becomes the target (committed = batch_end = target), its
//     lease, retry counter and delivery attempt are cleared.
func (a *Admin) SeekGroup(ctx context.Context, tenant string, s ports.GroupSeek) (ports.GroupSeekResult, error) {
	var r ports.GroupSeekResult
	err := a.inGroupTx(ctx, "seek group", func(ctx context.Context, tx bun.Tx) error {
		r = ports.GroupSeekResult{}
		qid, err := groupQueueID(ctx, tx, tenant, s.Queue)
		if err != nil || qid == "" {
			return err
		}
		r.QueueFound = true
		var pids []string
		st := newStmt(tx)
		parts := st.NewSelect().TableExpr("queen.log_partitions AS lp").ColumnExpr("lp.id::text").
			Where("lp.queue_id = ?::uuid", st.arg(qid))
		if s.Partition != "" {
			parts = parts.Where("lp.name = ?", st.arg(s.Partition))
		}
		if err := parts.OrderExpr("lp.id").For("KEY SHARE OF lp SKIP LOCKED").Scan(ctx, &pids); err != nil {
			return err
		}
		r.PartitionFound = s.Partition != "" && len(pids) > 0
		if len(pids) == 0 {
			return nil
		}
		st = newStmt(tx)
		if _, err := st.NewRaw(`
SELECT pg_advisory_xact_lock(hashtextextended('queen.consumer:' || u.pid::text || ':' || ?, 0))
  FROM unnest(?::uuid[]) WITH ORDINALITY AS u(pid, ord)
 ORDER BY u.ord`, st.arg(s.Group), st.arg(pids)).Exec(ctx); err != nil {
			return err
		}
		var live []bool
		st = newStmt(tx)
		if err := st.NewSelect().TableExpr("queen.log_consumers AS lc").
			ColumnExpr("coalesce(lc.lease_expires_at > clock_timestamp(), false)").
			Where("lc.consumer_group = ? AND lc.partition_id = ANY (?::uuid[])", st.arg(s.Group), st.arg(pids)).
			OrderExpr("lc.partition_id").For("UPDATE").Scan(ctx, &live); err != nil {
			return err
		}
		for _, l := range live {
			if l {
				r.LeasesCleared++
			}
		}
		var ts *time.Time // nil with ToEnd
		if !s.ToEnd {
			ts = &s.Timestamp
		}
		st = newStmt(tx)
		res, err := st.NewRaw(`
INSERT INTO queen.log_consumers AS lc (partition_id, consumer_group, committed, batch_end)
SELECT lp.id, ?0, t.target, t.target
  FROM queen.log_partitions lp
 CROSS JOIN LATERAL (
        -- To the end: the last offset. To a timestamp: the last offset of the last
        -- segment committed before it (what a first contact with that subscription
        -- does); nothing before it, or nothing retained, is log_start - 1.
        SELECT greatest(CASE WHEN ?1 THEN lp.last_offset
                             ELSE (SELECT s.base_offset + s.msg_count - 1 FROM queen.log_segments s
                                    WHERE s.partition_id = lp.id AND s.created_at < ?2
                                    ORDER BY s.base_offset DESC LIMIT 1)
                        END, lp.log_start - 1) AS target) t
 WHERE lp.id = ANY (?3::uuid[])
 ORDER BY lp.id
ON CONFLICT ON CONSTRAINT log_consumers_pkey DO UPDATE SET
       committed = EXCLUDED.committed, batch_end = EXCLUDED.batch_end,
       lease_id = NULL, lease_expires_at = NULL, retry_count = 0,
       delivery_start = -1, delivery_attempt = 0, delivered_end = -1`,
			st.arg(s.Group), st.arg(s.ToEnd), st.arg(ts), st.arg(pids)).Exec(ctx)
		if err != nil {
			return err
		}
		r.Partitions = groupRowsAffected(res)
		return nil
	})
	if err != nil {
		return ports.GroupSeekResult{}, err
	}
	return r, nil
}

// groupRowsAffected is the row count of an Exec result (0 when the driver cannot say).
func groupRowsAffected(res sql.Result) int {
	n, err := res.RowsAffected()
	if err != nil {
		return 0
	}
	return int(n)
}

package admin

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/uptrace/bun"

	"github.com/queen-go/queen/ports"
)

// The ResourceStore reads (docs/api.md §5.7, §5.11). Counts come from two SQL functions
// (schema/009_resources.sql), inlined by the planner into each statement below:
// log_partition_counts_v1 per partition of one queue, for a page of queues or of
// partitions (the work grows with the page, not with the tenant), and
// log_queue_counts_v1 per queue of a whole selection, for the tenant-wide sums. Every
// statement is a plain read (no row lock), and each method costs a fixed number of
// statements, whatever the number of queues, partitions and groups.

var _ ports.ResourceStore = (*Admin)(nil)

// resWideSettings are the planner settings of the tenant-wide counts (log_queue_counts_v1
// over every queue): hash joins only, and no JIT. With the statistics of a freshly
// filled database (1,000 queues estimated as 3) the planner put the whole cursor
// aggregate inside a nested loop over the queues and ran it once per queue: the overview
// of 1,000 queues x 100 partitions x 10 groups took over 30 s instead of about 1.3 s.
// Hash joins are the right plan for a whole tenant at every size; JIT only adds its
// compile time to a plan priced high by its row counts (see groupNoJIT).
const resWideSettings = "SET LOCAL enable_nestloop = off; SET LOCAL jit = off"

// resCountColumns are the aggregate columns every per-queue count reads from
// log_partition_counts_v1 (alias pc), in the names of resCounts' fields.
const resCountColumns = `count(*) AS partitions,
	coalesce(sum(pc.total), 0)::bigint AS total,
	coalesce(sum(pc.pending), 0)::bigint AS pending,
	coalesce(sum(pc.processing), 0)::bigint AS processing`

// resCounts are the sums over one queue's partitions.
type resCounts struct {
	Partitions int64 `bun:"partitions"`
	Total      int64 `bun:"total"`
	Pending    int64 `bun:"pending"`
	Processing int64 `bun:"processing"`
	DeadLetter int64 `bun:"dead_letter"`
}

func (c resCounts) counts() ports.WatermarkCounts {
	return ports.WatermarkCounts{Total: c.Total, Pending: c.Pending, Processing: c.Processing, DeadLetter: c.DeadLetter}
}

// resNullIfEmpty is s, or SQL NULL for "" (an argument that selects everything).
func resNullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// resSelectQueues is the tenant's queues matching f, as a subquery (alias q) of st.
func resSelectQueues(st *stmt, tenant string, f ports.ResourceFilter) *bun.SelectQuery {
	q := st.NewSelect().TableExpr("queen.queues AS q").
		Column("q.id", "q.name", "q.namespace", "q.task", "q.created_at")
	return whereQueues(st, q, tenant, f.Queue, f.Namespace, f.Task)
}

// resListRow is one row of ListQueues: the number of matching queues, and one queue of
// the page (NULL columns when the page is empty: the count still comes back).
type resListRow struct {
	Matching  int64      `bun:"matching"`
	ID        *string    `bun:"id"`
	Name      *string    `bun:"name"`
	Namespace *string    `bun:"namespace"`
	Task      *string    `bun:"task"`
	CreatedAt *time.Time `bun:"created_at"`
	resCounts
}

// ListQueues implements ports.ResourceStore: one statement.
func (a *Admin) ListQueues(ctx context.Context, tenant string, f ports.ResourceFilter, p ports.ResourcePage) ([]ports.QueueResource, int64, error) {
	var rows []resListRow
	err := a.read(ctx, "list queues", func(ctx context.Context, c bun.Conn) error {
		st := newStmt(c)
		return st.NewRaw(`
WITH sel AS (?),
page AS (SELECT * FROM sel ORDER BY name COLLATE "C" LIMIT ? OFFSET ?)
SELECT m.matching, q.id::text AS id, q.name, q.namespace, q.task, q.created_at,
       coalesce(n.partitions, 0) AS partitions, coalesce(n.total, 0) AS total,
       coalesce(n.pending, 0) AS pending, coalesce(n.processing, 0) AS processing,
       coalesce(d.dead_letter, 0) AS dead_letter
  FROM (SELECT count(*) AS matching FROM sel) m
  LEFT JOIN page q ON true
  LEFT JOIN LATERAL (SELECT `+resCountColumns+`
                       FROM queen.log_partition_counts_v1(q.id) pc) n ON q.id IS NOT NULL
  LEFT JOIN LATERAL (SELECT count(*) AS dead_letter FROM queen.dlq dl WHERE dl.queue_id = q.id) d ON q.id IS NOT NULL
 ORDER BY q.name COLLATE "C"`,
			resSelectQueues(st, tenant, f), st.arg(p.Limit), st.arg(p.Offset)).Scan(ctx, &rows)
	})
	if err != nil {
		return nil, 0, err
	}
	var matching int64
	out := make([]ports.QueueResource, 0, len(rows))
	for _, r := range rows {
		matching = r.Matching
		if r.ID == nil {
			continue // the empty page's one row
		}
		out = append(out, ports.QueueResource{ID: *r.ID, Name: *r.Name, Namespace: *r.Namespace, Task: *r.Task,
			CreatedAt: *r.CreatedAt, Partitions: r.Partitions, Counts: r.counts()})
	}
	return out, matching, nil
}

// resPartitionRow is one partition of a detail page.
type resPartitionRow struct {
	ID           string     `bun:"id"`
	Name         string     `bun:"name"`
	CreatedAt    time.Time  `bun:"created_at"`
	Total        int64      `bun:"total"`
	Pending      int64      `bun:"pending"`
	Processing   int64      `bun:"processing"`
	DeadLetter   int64      `bun:"dead_letter"`
	Consumed     int64      `bun:"consumed"`
	LastActivity *time.Time `bun:"last_activity"`
	Oldest       *time.Time `bun:"oldest"`
	Newest       *time.Time `bun:"newest"`
}

// QueueDetail implements ports.ResourceStore: three statements in one read-only
// transaction (the queue row, its totals, the page).
func (a *Admin) QueueDetail(ctx context.Context, tenant, queue string, p ports.ResourcePage) (ports.QueueResourceDetail, bool, error) {
	var (
		row    queueRow
		totals resCounts
		page   []resPartitionRow
		found  bool
	)
	err := a.read(ctx, "queue detail", func(ctx context.Context, c bun.Conn) error {
		return snapshot(ctx, c, func(tx bun.Tx) error {
			st := newStmt(tx)
			err := st.NewSelect().Model(&row).Where("tenant_id = ?::uuid AND name = ?", st.arg(tenant), st.arg(queue)).Scan(ctx)
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			if err != nil {
				return err
			}
			found = true
			st = newStmt(tx)
			if err := st.NewRaw(`
SELECT `+resCountColumns+`,
       (SELECT count(*) FROM queen.dlq dl WHERE dl.queue_id = ?0::uuid) AS dead_letter
  FROM queen.log_partition_counts_v1(?0::uuid) pc`, st.arg(row.ID)).Scan(ctx, &totals); err != nil {
				return err
			}
			st = newStmt(tx)
			return st.NewRaw(`
SELECT pc.partition_id::text AS id, pc.name, pc.created_at, pc.total, pc.pending, pc.processing,
       (SELECT count(*) FROM queen.dlq dl WHERE dl.partition_id = pc.partition_id) AS dead_letter,
       pc.consumed, pc.last_activity, rs.oldest, rs.newest
  FROM (SELECT * FROM queen.log_partition_counts_v1(?::uuid) ORDER BY name LIMIT ? OFFSET ?) pc
  LEFT JOIN LATERAL queen.log_retained_span_v1(pc.partition_id, pc.log_start) rs ON pc.total > 0
 ORDER BY pc.name`, st.arg(row.ID), st.arg(p.Limit), st.arg(p.Offset)).Scan(ctx, &page)
		})
	})
	if err != nil || !found {
		return ports.QueueResourceDetail{}, false, err
	}
	d := ports.QueueResourceDetail{Config: row.config(), CreatedAt: row.CreatedAt, Partitions: totals.Partitions,
		Totals: totals.counts(), Page: make([]ports.PartitionResource, len(page))}
	for i, r := range page {
		d.Page[i] = ports.PartitionResource{ID: r.ID, Name: r.Name, CreatedAt: r.CreatedAt,
			Counts:   ports.WatermarkCounts{Total: r.Total, Pending: r.Pending, Processing: r.Processing, DeadLetter: r.DeadLetter},
			Consumed: r.Consumed, LastActivity: r.LastActivity, Oldest: r.Oldest, Newest: r.Newest}
	}
	return d, true, nil
}

// resDepthHead is the queue and its depth totals.
type resDepthHead struct {
	Found             bool    `bun:"found"`
	Pending           int64   `bun:"pending"`
	Processing        int64   `bun:"processing"`
	PartitionsPending int64   `bun:"partitions_pending"`
	PartitionsReady   int64   `bun:"partitions_ready"`
	QueueID           *string `bun:"queue_id"`
}

type resDepthRow struct {
	Name       string `bun:"name"`
	Pending    int64  `bun:"pending"`
	Processing int64  `bun:"processing"`
}

// QueueDepth implements ports.ResourceStore: two statements in one read-only
// transaction (the queue with its totals, the page).
func (a *Admin) QueueDepth(ctx context.Context, tenant, queue, group string, p ports.ResourcePage) (ports.QueueDepthResult, bool, error) {
	g := resNullIfEmpty(group) // NULL: the worst-cursor rule
	var (
		head resDepthHead
		page []resDepthRow
	)
	err := a.read(ctx, "queue depth", func(ctx context.Context, c bun.Conn) error {
		return snapshot(ctx, c, func(tx bun.Tx) error {
			var heads []resDepthHead
			st := newStmt(tx)
			if err := st.NewRaw(`
SELECT true AS found, q.id::text AS queue_id,
       coalesce(sum(pc.pending), 0)::bigint AS pending,
       coalesce(sum(pc.processing), 0)::bigint AS processing,
       count(*) FILTER (WHERE pc.pending > 0) AS partitions_pending,
       count(*) FILTER (WHERE pc.pending > pc.processing) AS partitions_ready
  FROM queen.queues q
  LEFT JOIN LATERAL queen.log_partition_counts_v1(q.id, ?::text) pc ON true
 WHERE q.tenant_id = ?::uuid AND q.name = ?
 GROUP BY q.id`, st.arg(g), st.arg(tenant), st.arg(queue)).Scan(ctx, &heads); err != nil {
				return err
			}
			if len(heads) == 0 {
				return nil
			}
			head = heads[0]
			st = newStmt(tx)
			return st.NewRaw(`
SELECT pc.name, pc.pending, pc.processing
  FROM queen.log_partition_counts_v1(?::uuid, ?::text) pc
 ORDER BY pc.name
 LIMIT ? OFFSET ?`, st.arg(*head.QueueID), st.arg(g), st.arg(p.Limit), st.arg(p.Offset)).Scan(ctx, &page)
		})
	})
	if err != nil || !head.Found {
		return ports.QueueDepthResult{}, false, err
	}
	d := ports.QueueDepthResult{
		Totals:            ports.WatermarkCounts{Pending: head.Pending, Processing: head.Processing},
		PartitionsPending: head.PartitionsPending, PartitionsReady: head.PartitionsReady,
		Page: make([]ports.PartitionDepth, len(page)),
	}
	for i, r := range page {
		d.Page[i] = ports.PartitionDepth{Name: r.Name, Counts: ports.WatermarkCounts{Pending: r.Pending, Processing: r.Processing}}
	}
	return d, true, nil
}

type resKeyRow struct {
	Key    string `bun:"key"`
	Queues int64  `bun:"queues"`
	resCounts
}

// CountsBy implements ports.ResourceStore: one statement (and its planner settings).
func (a *Admin) CountsBy(ctx context.Context, tenant string, key ports.ResourceKey, p ports.ResourcePage) ([]ports.KeyCounts, error) {
	col := "namespace"
	if key == ports.ByTask {
		col = "task"
	}
	var rows []resKeyRow
	err := a.readTx(ctx, "counts by "+col, resWideSettings, func(ctx context.Context, c bun.Tx) error {
		st := newStmt(c)
		return st.NewRaw(`
SELECT c.?0 AS key, count(*) AS queues,
       coalesce(sum(c.partitions), 0)::bigint AS partitions, coalesce(sum(c.total), 0)::bigint AS total,
       coalesce(sum(c.pending), 0)::bigint AS pending, coalesce(sum(c.processing), 0)::bigint AS processing
  FROM queen.log_queue_counts_v1(?1::uuid) c
 WHERE c.?0 <> ''
 GROUP BY c.?0
 ORDER BY c.?0 COLLATE "C"
 LIMIT ?2 OFFSET ?3`, bun.Ident(col), st.arg(tenant), st.arg(p.Limit), st.arg(p.Offset)).Scan(ctx, &rows)
	})
	if err != nil {
		return nil, err
	}
	out := make([]ports.KeyCounts, len(rows))
	for i, r := range rows {
		out[i] = ports.KeyCounts{Key: r.Key, Queues: r.Queues, Partitions: r.Partitions, Counts: r.counts()}
	}
	return out, nil
}

type resOverviewRow struct {
	Queues         int64 `bun:"queues"`
	Namespaces     int64 `bun:"namespaces"`
	Tasks          int64 `bun:"tasks"`
	ConsumerGroups int64 `bun:"consumer_groups"`
	resCounts
}

// Overview implements ports.ResourceStore: one statement (and its planner settings).
func (a *Admin) Overview(ctx context.Context, tenant string) (ports.ResourceOverview, error) {
	var r resOverviewRow
	err := a.readTx(ctx, "overview", resWideSettings, func(ctx context.Context, c bun.Tx) error {
		st := newStmt(c)
		return st.NewRaw(`
SELECT count(*) AS queues,
       count(DISTINCT nullif(c.namespace, '')) AS namespaces,
       count(DISTINCT nullif(c.task, '')) AS tasks,
       coalesce(sum(c.partitions), 0)::bigint AS partitions, coalesce(sum(c.total), 0)::bigint AS total,
       coalesce(sum(c.pending), 0)::bigint AS pending, coalesce(sum(c.processing), 0)::bigint AS processing,
       coalesce(sum(c.dead_letter), 0)::bigint AS dead_letter,
       (SELECT count(DISTINCT cg.name) FROM queen.consumer_groups cg
          JOIN queen.queues cq ON cq.id = cg.queue_id
         WHERE cq.tenant_id = ?0::uuid) AS consumer_groups
  FROM queen.log_queue_counts_v1(?0::uuid) c`, st.arg(tenant)).Scan(ctx, &r)
	})
	if err != nil {
		return ports.ResourceOverview{}, err
	}
	return ports.ResourceOverview{Queues: r.Queues, Partitions: r.Partitions, Namespaces: r.Namespaces, Tasks: r.Tasks,
		ConsumerGroups: r.ConsumerGroups, Counts: r.counts()}, nil
}

type resStatusRow struct {
	Queues          int64 `bun:"queues"`
	Leases          int64 `bun:"leases"`
	LeasePartitions int64 `bun:"lease_partitions"`
	Leased          int64 `bun:"leased"`
	DLQPartitions   int64 `bun:"dlq_partitions"`
	resCounts
}

// Status implements ports.ResourceStore: one statement (and its planner settings).
func (a *Admin) Status(ctx context.Context, tenant string, f ports.ResourceFilter) (ports.ResourceStatus, error) {
	var r resStatusRow
	settings := resWideSettings
	if f.Queue != "" {
		settings = groupNoJIT // one queue: its partitions by index probes (nested loops)
	}
	err := a.readTx(ctx, "status", settings, func(ctx context.Context, c bun.Tx) error {
		st := newStmt(c)
		return st.NewRaw(`
SELECT count(*) AS queues,
       coalesce(sum(c.partitions), 0)::bigint AS partitions, coalesce(sum(c.total), 0)::bigint AS total,
       coalesce(sum(c.pending), 0)::bigint AS pending, coalesce(sum(c.processing), 0)::bigint AS processing,
       coalesce(sum(c.leases), 0)::bigint AS leases, coalesce(sum(c.lease_partitions), 0)::bigint AS lease_partitions,
       coalesce(sum(c.leased), 0)::bigint AS leased, coalesce(sum(c.dlq_partitions), 0)::bigint AS dlq_partitions,
       coalesce(sum(c.dead_letter), 0)::bigint AS dead_letter
  FROM queen.log_queue_counts_v1(?::uuid, ?::text, ?::text, ?::text) c`,
			st.arg(tenant), st.arg(resNullIfEmpty(f.Queue)), st.arg(resNullIfEmpty(f.Namespace)), st.arg(resNullIfEmpty(f.Task))).Scan(ctx, &r)
	})
	if err != nil {
		return ports.ResourceStatus{}, err
	}
	return ports.ResourceStatus{Queues: r.Queues, Partitions: r.Partitions, Counts: r.counts(),
		Leases:      ports.LeaseSummary{Active: r.Leases, Partitions: r.LeasePartitions, Messages: r.Leased},
		DeadLetters: ports.DeadLetterSummary{Current: r.DeadLetter, Partitions: r.DLQPartitions}}, nil
}

// StorageTotals implements ports.ResourceStore: one statement, reading no table but
// log_partitions.
func (a *Admin) StorageTotals(ctx context.Context) (ports.StorageTotals, error) {
	var t struct {
		SegmentBytes int64 `bun:"segment_bytes"`
		Segments     int64 `bun:"segments"`
		Messages     int64 `bun:"messages"`
	}
	err := a.read(ctx, "storage totals", func(ctx context.Context, c bun.Conn) error {
		return c.NewRaw(`SELECT segment_bytes, segments, messages FROM queen.log_storage_totals_v1()`).Scan(ctx, &t)
	})
	if err != nil {
		return ports.StorageTotals{}, err
	}
	return ports.StorageTotals{SegmentBytes: t.SegmentBytes, Segments: t.Segments, Messages: t.Messages}, nil
}

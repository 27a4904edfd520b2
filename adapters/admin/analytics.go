package admin

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/queen-go/queen/ports"
)

// The MetricsReader's reads of the metrics history (schema/016_metrics.sql; docs/api.md
// §5.11a). Each is one statement with no lock: a range scan of the minutes' primary key
// (minute first), grouped in memory by date_bin. A filter by namespace or task joins the
// queue rows by (tenant, name), the history's key; a filter by queue name alone needs no
// join.

var _ ports.MetricsReader = (*Admin)(nil)

// anaEpoch is the origin of every bucket: buckets of the same width fall on the same
// minutes whatever the range asked (ports.MetricsSpan).
const anaEpoch = "timestamptz '1970-01-01 00:00:00+00'"

// anaSpan is a span's bounds as the statements take them: the first and last minute of
// its whole rollups (ports.MetricsSpan.Whole; rows are keyed by their minute's start),
// so that every read of one span covers the minutes its queue figures do, and the
// bucket width in minutes.
func anaSpan(s ports.MetricsSpan) (from, to time.Time, minutes int) {
	w := s.Whole()
	return w.From, w.To, max(int(s.Bucket/time.Minute), 1)
}

// anaCounterColumns are the aggregates of ports.Counters over rows of either history
// table (alias m), in the names of anaCounters' fields.
const anaCounterColumns = `coalesce(sum(m.push_requests), 0)::bigint AS push_requests,
       coalesce(sum(m.push_messages), 0)::bigint AS push_messages,
       coalesce(sum(m.pop_requests), 0)::bigint AS pop_requests,
       coalesce(sum(m.pop_messages), 0)::bigint AS pop_messages,
       coalesce(sum(m.pop_empty), 0)::bigint AS pop_empty,
       coalesce(sum(m.ack_requests), 0)::bigint AS ack_requests,
       coalesce(sum(m.ack_success), 0)::bigint AS ack_success,
       coalesce(sum(m.ack_failed), 0)::bigint AS ack_failed,
       coalesce(sum(m.dlq_moves), 0)::bigint AS dlq_moves,
       coalesce(sum(m.transactions), 0)::bigint AS transactions,
       coalesce(sum(m.lag_count), 0)::bigint AS lag_count,
       coalesce(sum(m.lag_sum_ms), 0)::bigint AS lag_sum_ms,
       coalesce(max(m.lag_max_ms), 0)::bigint AS lag_max_ms,
       coalesce(max(m.parked_max), 0)::bigint AS parked_max`

// anaPartitionColumns are the partition counters, which only the queue rows have.
const anaPartitionColumns = `coalesce(sum(m.partitions_created), 0)::bigint AS partitions_created,
       coalesce(sum(m.partitions_deleted), 0)::bigint AS partitions_deleted`

// anaCounters scans anaCounterColumns (and anaPartitionColumns where read).
type anaCounters struct {
	PushRequests      int64 `bun:"push_requests"`
	PushMessages      int64 `bun:"push_messages"`
	PopRequests       int64 `bun:"pop_requests"`
	PopMessages       int64 `bun:"pop_messages"`
	PopEmpty          int64 `bun:"pop_empty"`
	AckRequests       int64 `bun:"ack_requests"`
	AckSuccess        int64 `bun:"ack_success"`
	AckFailed         int64 `bun:"ack_failed"`
	DLQMoves          int64 `bun:"dlq_moves"`
	Transactions      int64 `bun:"transactions"`
	PartitionsCreated int64 `bun:"partitions_created"`
	PartitionsDeleted int64 `bun:"partitions_deleted"`
	LagCount          int64 `bun:"lag_count"`
	LagSumMs          int64 `bun:"lag_sum_ms"`
	LagMaxMs          int64 `bun:"lag_max_ms"`
	ParkedMax         int64 `bun:"parked_max"`
}

func (c anaCounters) port() ports.Counters {
	return ports.Counters{PushRequests: c.PushRequests, PushMessages: c.PushMessages,
		PopRequests: c.PopRequests, PopMessages: c.PopMessages, PopEmpty: c.PopEmpty,
		AckRequests: c.AckRequests, AckSuccess: c.AckSuccess, AckFailed: c.AckFailed,
		DLQMoves: c.DLQMoves, Transactions: c.Transactions,
		PartitionsCreated: c.PartitionsCreated, PartitionsDeleted: c.PartitionsDeleted,
		LagCount: c.LagCount, LagSumMs: c.LagSumMs, LagMaxMs: c.LagMaxMs, ParkedMax: c.ParkedMax}
}

// anaQueueRows is the FROM and WHERE of a read of the queue rows (alias m) of the
// queues f selects over span's whole rollups (ports.MetricsSpan.Whole): the rollups of
// the span's width (ports.MetricsSpan.Rollup), or the minute rows for width 1; at names
// the rows' time column (their first minute). The queue rows are joined (alias q) only
// for a namespace or task filter.
func anaQueueRows(st *stmt, tenant string, span ports.MetricsSpan, f ports.ResourceFilter) (q *bun.SelectQuery, at string) {
	whole, width := span.Whole(), span.Rollup()
	if width == 1 {
		q, at = st.NewSelect().TableExpr("queen.metrics_queue_minutes AS m"), "m.minute"
	} else {
		// The rollup holding To starts at most width - 1 minutes before it.
		q, at = st.NewSelect().TableExpr("queen.metrics_queue_rollups AS m").Where("m.width = ?", st.arg(width)), "m.bucket"
		whole.To = whole.To.Add(-time.Duration(width-1) * time.Minute)
	}
	q = q.Where("m.tenant_id = ?::uuid", st.arg(tenant)).
		Where("? >= ?", bun.Safe(at), st.arg(whole.From)).Where("? <= ?", bun.Safe(at), st.arg(whole.To))
	if f.Queue != "" {
		q = q.Where("m.queue_name = ?", st.arg(f.Queue))
	}
	if f.Namespace != "" || f.Task != "" {
		q = q.Join("JOIN queen.queues AS q ON q.tenant_id = m.tenant_id AND q.name = m.queue_name")
		if f.Namespace != "" {
			q = q.Where("q.namespace = ?", st.arg(f.Namespace))
		}
		if f.Task != "" {
			q = q.Where("q.task = ?", st.arg(f.Task))
		}
	}
	return q, at
}

type anaQueueBucketRow struct {
	Bucket time.Time `bun:"bucket"`
	Queue  string    `bun:"queue"`
	anaCounters
}

// QueueSeries implements ports.MetricsReader: one statement.
func (a *Admin) QueueSeries(ctx context.Context, tenant string, span ports.MetricsSpan, f ports.ResourceFilter, queues []string) ([]ports.QueueBucket, error) {
	if queues != nil && len(queues) == 0 {
		return nil, nil
	}
	_, _, minutes := anaSpan(span)
	var rows []anaQueueBucketRow
	err := a.read(ctx, "queue series", func(ctx context.Context, c bun.Conn) error {
		st := newStmt(c)
		q, at := anaQueueRows(st, tenant, span, f)
		q = q.ColumnExpr("date_bin(make_interval(mins => ?), ?, "+anaEpoch+") AS bucket", st.arg(minutes), bun.Safe(at)).
			ColumnExpr(anaCounterColumns).ColumnExpr(anaPartitionColumns).
			GroupExpr("1").OrderExpr("1")
		if queues == nil {
			q = q.ColumnExpr("'' AS queue")
		} else {
			q = q.ColumnExpr("m.queue_name AS queue").Where("m.queue_name = ANY (?::text[])", st.arg(queues)).
				GroupExpr("m.queue_name").OrderExpr("m.queue_name")
		}
		return q.Scan(ctx, &rows)
	})
	if err != nil {
		return nil, err
	}
	out := make([]ports.QueueBucket, len(rows))
	for i, r := range rows {
		out[i] = ports.QueueBucket{Bucket: r.Bucket.UTC(), Queue: r.Queue, Counters: r.port()}
	}
	return out, nil
}

type anaQueueTotalRow struct {
	Queue      string `bun:"queue"`
	Partitions int64  `bun:"partitions"`
	anaCounters
}

// QueueTotals implements ports.MetricsReader: one statement; each queue's partitions
// are counted through the partitions' (queue_id, name) key.
func (a *Admin) QueueTotals(ctx context.Context, tenant string, span ports.MetricsSpan, f ports.ResourceFilter) ([]ports.QueueTotal, error) {
	var rows []anaQueueTotalRow
	err := a.read(ctx, "queue totals", func(ctx context.Context, c bun.Conn) error {
		st := newStmt(c)
		sums, _ := anaQueueRows(st, tenant, span, f)
		sums = sums.ColumnExpr("m.queue_name AS queue").ColumnExpr(anaCounterColumns).ColumnExpr(anaPartitionColumns).
			GroupExpr("m.queue_name")
		return st.NewRaw(`
SELECT s.*,
       coalesce((SELECT count(*) FROM queen.queues qq JOIN queen.log_partitions lp ON lp.queue_id = qq.id
                  WHERE qq.tenant_id = ?::uuid AND qq.name = s.queue), 0) AS partitions
  FROM (?) s
 ORDER BY s.queue`, st.arg(tenant), sums).Scan(ctx, &rows)
	})
	if err != nil {
		return nil, err
	}
	out := make([]ports.QueueTotal, len(rows))
	for i, r := range rows {
		out[i] = ports.QueueTotal{Queue: r.Queue, Counters: r.port(), Partitions: r.Partitions}
	}
	return out, nil
}

// anaSampledGauge is a sampled gauge's aggregates over a bucket's minute rows (alias m):
// the samples' sum, the least and most of the minutes that sampled, the latest minute's
// last sample; prefixed name_ for anaGauge.
func anaSampledGauge(name string) string {
	return `coalesce(sum(m.` + name + `_sum), 0)::bigint AS ` + name + `_sum,
       coalesce(min(m.` + name + `_min) FILTER (WHERE m.samples > 0), 0)::bigint AS ` + name + `_min,
       coalesce(max(m.` + name + `_max), 0)::bigint AS ` + name + `_max,
       (array_agg(m.` + name + `_last ORDER BY m.minute DESC))[1] AS ` + name + `_last`
}

// anaMinuteGauge is the same for a figure recorded once per minute row (col): the sum,
// least and most of the minutes' values and the latest minute's.
func anaMinuteGauge(name, col string) string {
	return `coalesce(sum(m.` + col + `), 0)::bigint AS ` + name + `_sum,
       coalesce(min(m.` + col + `), 0)::bigint AS ` + name + `_min,
       coalesce(max(m.` + col + `), 0)::bigint AS ` + name + `_max,
       (array_agg(m.` + col + ` ORDER BY m.minute DESC))[1] AS ` + name + `_last`
}

// anaBrokerColumns are the aggregates of one broker's minute rows in a bucket, in the
// names of anaBrokerRow's fields.
var anaBrokerColumns = `count(*) AS minutes, max(m.minute) AS last_minute,
       coalesce(sum(m.db_errors), 0)::bigint AS db_errors,
       coalesce(sum(m.requests), 0)::bigint AS requests,
       coalesce(sum(m.latency_sum_us), 0)::bigint AS latency_sum_us,
       coalesce(max(m.latency_max_us), 0)::bigint AS latency_max_us,
       coalesce(sum(m.samples), 0)::bigint AS samples,
       coalesce(max(m.spool_pending_max), 0)::bigint AS spool_pending_max,
       coalesce(max(m.goroutines_max), 0)::bigint AS goroutines_max,
       ` + anaSampledGauge("rss") + `,
       ` + anaSampledGauge("pool_idle") + `,
       ` + anaSampledGauge("pool_active") + `,
       ` + anaMinuteGauge("cpu_user", "cpu_user_us") + `,
       ` + anaMinuteGauge("cpu_sys", "cpu_sys_us") + `,
       ` + anaMinuteGauge("vsz", "vsz_last") + `,
       ` + anaMinuteGauge("psize", "pool_size") + `,
       ` + anaMinuteGauge("gor", "goroutines_last") + `,
       ` + anaMinuteGauge("spool", "spool_pending_last")

// anaGauge scans one gauge's four columns (embedded with its name's prefix).
type anaGauge struct {
	Sum  int64 `bun:"sum"`
	Min  int64 `bun:"min"`
	Max  int64 `bun:"max"`
	Last int64 `bun:"last"`
}

func (g anaGauge) port() ports.Gauge {
	return ports.Gauge{Sum: g.Sum, Min: g.Min, Max: g.Max, Last: g.Last}
}

type anaBrokerRow struct {
	Bucket          time.Time `bun:"bucket"`
	Broker          string    `bun:"broker"`
	Hostname        string    `bun:"hostname"`
	Port            int       `bun:"port"`
	Minutes         int64     `bun:"minutes"`
	LastMinute      time.Time `bun:"last_minute"`
	DBErrors        int64     `bun:"db_errors"`
	Requests        int64     `bun:"requests"`
	LatencySumUs    int64     `bun:"latency_sum_us"`
	LatencyMaxUs    int64     `bun:"latency_max_us"`
	Samples         int64     `bun:"samples"`
	SpoolPendingMax int64     `bun:"spool_pending_max"`
	GoroutinesMax   int64     `bun:"goroutines_max"`
	RSS             anaGauge  `bun:"embed:rss_"`
	PoolIdle        anaGauge  `bun:"embed:pool_idle_"`
	PoolActive      anaGauge  `bun:"embed:pool_active_"`
	CPUUser         anaGauge  `bun:"embed:cpu_user_"`
	CPUSys          anaGauge  `bun:"embed:cpu_sys_"`
	Virtual         anaGauge  `bun:"embed:vsz_"`
	PoolSize        anaGauge  `bun:"embed:psize_"`
	Goroutines      anaGauge  `bun:"embed:gor_"`
	Spool           anaGauge  `bun:"embed:spool_"`
	anaCounters
}

func (r anaBrokerRow) port() ports.BrokerBucket {
	return ports.BrokerBucket{Bucket: r.Bucket.UTC(), Broker: r.Broker, Hostname: r.Hostname, Port: r.Port,
		Minutes: r.Minutes, LastMinute: r.LastMinute.UTC(), Counters: r.anaCounters.port(),
		Figures: ports.BrokerFigures{CPUUserUs: r.CPUUser.Sum, CPUSysUs: r.CPUSys.Sum, Requests: r.Requests,
			LatencySumUs: r.LatencySumUs, LatencyMaxUs: r.LatencyMaxUs, DBErrors: r.DBErrors, Samples: r.Samples,
			RSS: r.RSS.port(), PoolIdle: r.PoolIdle.port(), PoolActive: r.PoolActive.port(),
			VirtualBytes: r.Virtual.Last, PoolSize: r.PoolSize.Last,
			SpoolPendingMax: r.SpoolPendingMax, SpoolPendingLast: r.Spool.Last,
			GoroutinesMax: r.GoroutinesMax, GoroutinesLast: r.Goroutines.Last},
		PerMinute: ports.MinuteGauges{CPUUserUs: r.CPUUser.port(), CPUSysUs: r.CPUSys.port(),
			VirtualBytes: r.Virtual.port(), PoolSize: r.PoolSize.port(), Goroutines: r.Goroutines.port(),
			SpoolPending: r.Spool.port()}}
}

// BrokerSeries implements ports.MetricsReader: one statement.
func (a *Admin) BrokerSeries(ctx context.Context, span ports.MetricsSpan, f ports.BrokerFilter) ([]ports.BrokerBucket, error) {
	from, to, minutes := anaSpan(span)
	var rows []anaBrokerRow
	err := a.read(ctx, "broker series", func(ctx context.Context, c bun.Conn) error {
		st := newStmt(c)
		q := st.NewSelect().TableExpr("queen.metrics_broker_minutes AS m").
			ColumnExpr("date_bin(make_interval(mins => ?), m.minute, "+anaEpoch+") AS bucket", st.arg(minutes)).
			ColumnExpr("m.broker, m.hostname, m.port").
			ColumnExpr(anaCounterColumns).ColumnExpr(anaBrokerColumns).
			Where("m.minute >= ?", st.arg(from)).Where("m.minute <= ?", st.arg(to))
		if f.Hostname != "" {
			q = q.Where("m.hostname = ?", st.arg(f.Hostname))
		}
		if f.Broker != "" {
			q = q.Where("m.broker = ?", st.arg(f.Broker))
		}
		return q.GroupExpr("m.broker, m.hostname, m.port, 1").OrderExpr("m.broker, m.hostname, m.port, 1").Scan(ctx, &rows)
	})
	if err != nil {
		return nil, err
	}
	out := make([]ports.BrokerBucket, len(rows))
	for i, r := range rows {
		out[i] = r.port()
	}
	return out, nil
}

type anaParkedRow struct {
	Bucket   time.Time `bun:"bucket"`
	Queue    string    `bun:"queue"`
	Broker   string    `bun:"broker"`
	Hostname string    `bun:"hostname"`
	Parked   int64     `bun:"parked"`
}

// ParkedSeries implements ports.MetricsReader: one statement over the broker rows'
// parked objects ({"queue": n}).
func (a *Admin) ParkedSeries(ctx context.Context, span ports.MetricsSpan, queue string) ([]ports.ParkedBucket, error) {
	from, to, minutes := anaSpan(span)
	var rows []anaParkedRow
	err := a.read(ctx, "parked series", func(ctx context.Context, c bun.Conn) error {
		st := newStmt(c)
		q := st.NewSelect().TableExpr("queen.metrics_broker_minutes AS m").
			// A parked value that is not an object (never written so) reads as none.
			Join("CROSS JOIN LATERAL jsonb_each_text(CASE WHEN jsonb_typeof(m.parked) = 'object' THEN m.parked ELSE '{}' END) AS p").
			ColumnExpr("date_bin(make_interval(mins => ?), m.minute, "+anaEpoch+") AS bucket", st.arg(minutes)).
			ColumnExpr("p.key AS queue, m.broker, m.hostname").
			ColumnExpr("max(p.value::numeric)::bigint AS parked").
			Where("m.minute >= ?", st.arg(from)).Where("m.minute <= ?", st.arg(to))
		if queue != "" {
			q = q.Where("p.key = ?", st.arg(queue))
		}
		return q.GroupExpr("1, p.key, m.broker, m.hostname").OrderExpr("1, p.key, m.broker, m.hostname").Scan(ctx, &rows)
	})
	if err != nil {
		return nil, err
	}
	out := make([]ports.ParkedBucket, len(rows))
	for i, r := range rows {
		out[i] = ports.ParkedBucket{Bucket: r.Bucket.UTC(), Queue: r.Queue, Broker: r.Broker, Hostname: r.Hostname, Parked: r.Parked}
	}
	return out, nil
}

type anaRetentionRow struct {
	Bucket *time.Time `bun:"bucket"`
	Key    string     `bun:"key"`
	Job    string     `bun:"job"`
	Runs   int64      `bun:"runs"`
	Rows   int64      `bun:"rows"`
	Bytes  int64      `bun:"bytes"`
}

func (r anaRetentionRow) port() ports.RetentionRow {
	out := ports.RetentionRow{Key: r.Key, Job: r.Job, Runs: r.Runs, Rows: r.Rows, Bytes: r.Bytes}
	if r.Bucket != nil {
		out.Bucket = r.Bucket.UTC()
	}
	return out
}

// anaRetentionKeys are the group keys of the retention totals: a column of the run
// (alias r) or of its queue (alias q).
var anaRetentionKeys = map[ports.RetentionKey]string{
	ports.RetentionByQueue:     "r.queue_name",
	ports.RetentionByNamespace: "q.namespace",
	ports.RetentionByTask:      "q.task",
}

// anaRetentionRuns is the FROM and WHERE of a read of the retention runs in the span's
// minutes: every run when f is empty (the tenant's and those of no tenant), else the
// runs on the tenant's queues f selects. join adds the queue rows (alias q), which a
// namespace or task needs.
func anaRetentionRuns(st *stmt, tenant string, span ports.MetricsSpan, f ports.ResourceFilter, join bool) *bun.SelectQuery {
	from, to, _ := anaSpan(span)
	q := st.NewSelect().TableExpr("queen.retention_runs AS r").
		Where("r.ran_at >= ?", st.arg(from)).Where("r.ran_at < ?", st.arg(to.Add(time.Minute)))
	if join || f.Namespace != "" || f.Task != "" {
		q = q.Join("JOIN queen.queues AS q ON q.tenant_id = r.tenant_id AND q.name = r.queue_name")
	}
	t := st.arg(tenant)
	if f == (ports.ResourceFilter{}) && !join {
		return q.Where("(r.tenant_id = ?::uuid OR r.tenant_id IS NULL)", t)
	}
	q = q.Where("r.tenant_id = ?::uuid", t)
	if f.Queue != "" {
		q = q.Where("r.queue_name = ?", st.arg(f.Queue))
	}
	if f.Namespace != "" {
		q = q.Where("q.namespace = ?", st.arg(f.Namespace))
	}
	if f.Task != "" {
		q = q.Where("q.task = ?", st.arg(f.Task))
	}
	return q
}

const anaRetentionSums = `r.job, count(*) AS runs, coalesce(sum(r.rows_removed), 0)::bigint AS rows,
       coalesce(sum(r.bytes_removed), 0)::bigint AS bytes`

// Retention implements ports.MetricsReader: two statements in one read-only snapshot
// (one without a key).
func (a *Admin) Retention(ctx context.Context, tenant string, span ports.MetricsSpan, f ports.ResourceFilter, key ports.RetentionKey) (series, groups []ports.RetentionRow, err error) {
	_, _, minutes := anaSpan(span)
	var srows, grows []anaRetentionRow
	err = a.read(ctx, "retention series", func(ctx context.Context, c bun.Conn) error {
		return snapshot(ctx, c, func(tx bun.Tx) error {
			st := newStmt(tx)
			if err := anaRetentionRuns(st, tenant, span, f, false).
				ColumnExpr("date_bin(make_interval(mins => ?), r.ran_at, "+anaEpoch+") AS bucket", st.arg(minutes)).
				ColumnExpr("'' AS key").ColumnExpr(anaRetentionSums).
				GroupExpr("1, r.job").OrderExpr("1, r.job").Scan(ctx, &srows); err != nil {
				return err
			}
			col, ok := anaRetentionKeys[key]
			if !ok {
				return nil
			}
			st = newStmt(tx)
			return anaRetentionRuns(st, tenant, span, f, key != ports.RetentionByQueue).
				ColumnExpr("? AS key", bun.Safe(col)).ColumnExpr(anaRetentionSums).
				Where("? <> ''", bun.Safe(col)).
				GroupExpr("?, r.job", bun.Safe(col)).OrderExpr("?, r.job", bun.Safe(col)).Scan(ctx, &grows)
		})
	})
	if err != nil {
		return nil, nil, err
	}
	series = make([]ports.RetentionRow, len(srows))
	for i, r := range srows {
		series[i] = r.port()
	}
	groups = make([]ports.RetentionRow, len(grows))
	for i, r := range grows {
		groups[i] = r.port()
	}
	return series, groups, nil
}

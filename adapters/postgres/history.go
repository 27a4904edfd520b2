package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/ports"
)

// How a stored row takes a flush's value for a column (schema/016_metrics.sql).
const (
	mergeSum   = iota // adds
	mergeMax          // the larger
	mergeGMin         // a gauge's minimum: the smaller of the sides with samples
	mergeGLast        // a gauge's last: the flush's, unless it has no samples
	mergeLast         // the flush's
)

// metricCol is one bigint column of a metrics table, how it merges, and where its value
// is in a row of type T.
type metricCol[T any] struct {
	name  string
	merge int
	at    func(*T) *int64
}

// queueCols are metrics_queue_minutes' counters. parked_max adds: it is summed over
// brokers, each sending the increase of its maximum in the minute (core/history).
var queueCols = []metricCol[ports.QueueMinute]{
	{"push_requests", mergeSum, func(q *ports.QueueMinute) *int64 { return &q.PushRequests }},
	{"push_messages", mergeSum, func(q *ports.QueueMinute) *int64 { return &q.PushMessages }},
	{"pop_requests", mergeSum, func(q *ports.QueueMinute) *int64 { return &q.PopRequests }},
	{"pop_messages", mergeSum, func(q *ports.QueueMinute) *int64 { return &q.PopMessages }},
	{"pop_empty", mergeSum, func(q *ports.QueueMinute) *int64 { return &q.PopEmpty }},
	{"ack_requests", mergeSum, func(q *ports.QueueMinute) *int64 { return &q.AckRequests }},
	{"ack_success", mergeSum, func(q *ports.QueueMinute) *int64 { return &q.AckSuccess }},
	{"ack_failed", mergeSum, func(q *ports.QueueMinute) *int64 { return &q.AckFailed }},
	{"dlq_moves", mergeSum, func(q *ports.QueueMinute) *int64 { return &q.DLQMoves }},
	{"transactions", mergeSum, func(q *ports.QueueMinute) *int64 { return &q.Transactions }},
	{"partitions_created", mergeSum, func(q *ports.QueueMinute) *int64 { return &q.PartitionsCreated }},
	{"partitions_deleted", mergeSum, func(q *ports.QueueMinute) *int64 { return &q.PartitionsDeleted }},
	{"parked_max", mergeSum, func(q *ports.QueueMinute) *int64 { return &q.ParkedMax }},
	{"lag_count", mergeSum, func(q *ports.QueueMinute) *int64 { return &q.LagCount }},
	{"lag_sum_ms", mergeSum, func(q *ports.QueueMinute) *int64 { return &q.LagSumMs }},
	{"lag_max_ms", mergeMax, func(q *ports.QueueMinute) *int64 { return &q.LagMaxMs }},
}

// brokerCols are metrics_broker_minutes' bigint columns. A broker row is one broker's:
// its maxima take the larger (parked_max too).
var brokerCols = []metricCol[ports.BrokerMinute]{
	{"push_requests", mergeSum, func(b *ports.BrokerMinute) *int64 { return &b.PushRequests }},
	{"push_messages", mergeSum, func(b *ports.BrokerMinute) *int64 { return &b.PushMessages }},
	{"pop_requests", mergeSum, func(b *ports.BrokerMinute) *int64 { return &b.PopRequests }},
	{"pop_messages", mergeSum, func(b *ports.BrokerMinute) *int64 { return &b.PopMessages }},
	{"pop_empty", mergeSum, func(b *ports.BrokerMinute) *int64 { return &b.PopEmpty }},
	{"ack_requests", mergeSum, func(b *ports.BrokerMinute) *int64 { return &b.AckRequests }},
	{"ack_success", mergeSum, func(b *ports.BrokerMinute) *int64 { return &b.AckSuccess }},
	{"ack_failed", mergeSum, func(b *ports.BrokerMinute) *int64 { return &b.AckFailed }},
	{"dlq_moves", mergeSum, func(b *ports.BrokerMinute) *int64 { return &b.DLQMoves }},
	{"transactions", mergeSum, func(b *ports.BrokerMinute) *int64 { return &b.Transactions }},
	{"lag_count", mergeSum, func(b *ports.BrokerMinute) *int64 { return &b.LagCount }},
	{"lag_sum_ms", mergeSum, func(b *ports.BrokerMinute) *int64 { return &b.LagSumMs }},
	{"lag_max_ms", mergeMax, func(b *ports.BrokerMinute) *int64 { return &b.LagMaxMs }},
	{"parked_max", mergeMax, func(b *ports.BrokerMinute) *int64 { return &b.ParkedMax }},
	{"db_errors", mergeSum, func(b *ports.BrokerMinute) *int64 { return &b.Figures.DBErrors }},
	{"requests", mergeSum, func(b *ports.BrokerMinute) *int64 { return &b.Figures.Requests }},
	{"latency_sum_us", mergeSum, func(b *ports.BrokerMinute) *int64 { return &b.Figures.LatencySumUs }},
	{"latency_max_us", mergeMax, func(b *ports.BrokerMinute) *int64 { return &b.Figures.LatencyMaxUs }},
	{"cpu_user_us", mergeSum, func(b *ports.BrokerMinute) *int64 { return &b.Figures.CPUUserUs }},
	{"cpu_sys_us", mergeSum, func(b *ports.BrokerMinute) *int64 { return &b.Figures.CPUSysUs }},
	{"samples", mergeSum, func(b *ports.BrokerMinute) *int64 { return &b.Figures.Samples }},
	{"rss_sum", mergeSum, func(b *ports.BrokerMinute) *int64 { return &b.Figures.RSS.Sum }},
	{"rss_min", mergeGMin, func(b *ports.BrokerMinute) *int64 { return &b.Figures.RSS.Min }},
	{"rss_max", mergeMax, func(b *ports.BrokerMinute) *int64 { return &b.Figures.RSS.Max }},
	{"rss_last", mergeGLast, func(b *ports.BrokerMinute) *int64 { return &b.Figures.RSS.Last }},
	{"vsz_last", mergeLast, func(b *ports.BrokerMinute) *int64 { return &b.Figures.VirtualBytes }},
	{"pool_size", mergeLast, func(b *ports.BrokerMinute) *int64 { return &b.Figures.PoolSize }},
	{"pool_idle_sum", mergeSum, func(b *ports.BrokerMinute) *int64 { return &b.Figures.PoolIdle.Sum }},
	{"pool_idle_min", mergeGMin, func(b *ports.BrokerMinute) *int64 { return &b.Figures.PoolIdle.Min }},
	{"pool_idle_max", mergeMax, func(b *ports.BrokerMinute) *int64 { return &b.Figures.PoolIdle.Max }},
	{"pool_idle_last", mergeGLast, func(b *ports.BrokerMinute) *int64 { return &b.Figures.PoolIdle.Last }},
	{"pool_active_sum", mergeSum, func(b *ports.BrokerMinute) *int64 { return &b.Figures.PoolActive.Sum }},
	{"pool_active_min", mergeGMin, func(b *ports.BrokerMinute) *int64 { return &b.Figures.PoolActive.Min }},
	{"pool_active_max", mergeMax, func(b *ports.BrokerMinute) *int64 { return &b.Figures.PoolActive.Max }},
	{"pool_active_last", mergeGLast, func(b *ports.BrokerMinute) *int64 { return &b.Figures.PoolActive.Last }},
	{"spool_pending_max", mergeMax, func(b *ports.BrokerMinute) *int64 { return &b.Figures.SpoolPendingMax }},
	{"spool_pending_last", mergeLast, func(b *ports.BrokerMinute) *int64 { return &b.Figures.SpoolPendingLast }},
	{"goroutines_max", mergeMax, func(b *ports.BrokerMinute) *int64 { return &b.Figures.GoroutinesMax }},
	{"goroutines_last", mergeLast, func(b *ports.BrokerMinute) *int64 { return &b.Figures.GoroutinesLast }},
}

// writeMetricsSQL is WriteMetrics' one statement. The flush's (instance, seq) goes into
// metrics_flushes first; the upserts run only when that insert did (a retried flush
// adds nothing). Rows come as parallel arrays, upserted in key order so that brokers
// writing the same minute's queue rows lock them in one order (no deadlock).
var writeMetricsSQL = buildWriteMetricsSQL()

// The leading parameters of writeMetricsSQL; the columns' arrays follow in table order.
const (
	queueKeyParams  = 3 // minute, tenant, queue
	brokerKeyParams = 5 // minute, broker, hostname, port, parked
)

func buildWriteMetricsSQL() string {
	var b strings.Builder
	b.WriteString(`WITH flush AS (
    INSERT INTO queen.metrics_flushes (instance, seq) VALUES ($1::uuid, $2::int8)
    ON CONFLICT DO NOTHING
    RETURNING 1
), queues AS (
    INSERT INTO queen.metrics_queue_minutes AS m (minute, tenant_id, queue_name`)
	for _, c := range queueCols {
		b.WriteString(", " + c.name)
	}
	fmt.Fprintf(&b, ")\n    SELECT u.minute, u.tenant::uuid, u.queue_name")
	writeNames(&b, queueCols)
	b.WriteString("\n      FROM ")
	p := writeQueueUnnest(&b, 3)
	b.WriteString(`
     WHERE EXISTS (SELECT 1 FROM flush)
     ORDER BY 1, 2, 3
    ON CONFLICT (minute, tenant_id, queue_name) DO UPDATE SET `)
	writeMerges(&b, queueCols)
	b.WriteString("\n    RETURNING m.minute, m.tenant_id, m.queue_name, m.parked_max\n")
	writeRollups(&b)
	b.WriteString(`
), brokers AS (
    INSERT INTO queen.metrics_broker_minutes AS m (minute, broker, hostname, port, parked`)
	for _, c := range brokerCols {
		b.WriteString(", " + c.name)
	}
	b.WriteString(")\n    SELECT u.minute, u.broker, u.hostname, u.port, u.parked::jsonb")
	writeNames(&b, brokerCols)
	fmt.Fprintf(&b, "\n      FROM unnest($%d::timestamptz[], $%d::text[], $%d::text[], $%d::int4[], $%d::text[]",
		p, p+1, p+2, p+3, p+4)
	p += brokerKeyParams
	writeArrays(&b, p, len(brokerCols))
	b.WriteString(") AS u(minute, broker, hostname, port, parked")
	writeNames(&b, brokerCols)
	b.WriteString(`)
     WHERE EXISTS (SELECT 1 FROM flush)
     ORDER BY 1, 2
    ON CONFLICT (minute, broker) DO UPDATE SET hostname = EXCLUDED.hostname, port = EXCLUDED.port,
        parked = (SELECT coalesce(jsonb_object_agg(k, GREATEST(coalesce((m.parked->>k)::int8, 0), coalesce((EXCLUDED.parked->>k)::int8, 0))), '{}')
                    FROM (SELECT jsonb_object_keys(m.parked) UNION SELECT jsonb_object_keys(EXCLUDED.parked)) AS keys(k)), `)
	writeMerges(&b, brokerCols)
	b.WriteString("\n)\nSELECT EXISTS (SELECT 1 FROM flush)")
	return b.String()
}

// writeQueueUnnest writes the flush's queue rows as a table (alias u) from parameter p
// and returns the number of the parameter after them.
func writeQueueUnnest(b *strings.Builder, p int) int {
	fmt.Fprintf(b, "unnest($%d::timestamptz[], $%d::text[], $%d::text[]", p, p+1, p+2)
	p = writeArrays(b, p+queueKeyParams, len(queueCols))
	b.WriteString(") AS u(minute, tenant, queue_name")
	writeNames(b, queueCols)
	b.WriteString(")")
	return p
}

// rollupWidths are the widths of metrics_queue_rollups, in minutes.
var rollupWidths = []int{5, 60}

// writeRollups writes the rollups CTE: the flush's queue rows summed per bucket of
// each width and upserted into metrics_queue_rollups in key order. It joins the rows
// the queues CTE upserted, so it adds nothing when the flush was applied before, and
// the aggregate reads every one of them before the first rollup is written: a flush
// locks its minute rows, then its rollups, each in key order, as every broker's does.
// parked_max is the largest of the minute rows as upserted (the minute row sums it
// over brokers, the bucket keeps its largest minute); the counters add the deltas and
// lag_max_ms takes the larger, as on the minute rows.
func writeRollups(b *strings.Builder) {
	b.WriteString(`), rollups AS (
    INSERT INTO queen.metrics_queue_rollups AS m (width, bucket, tenant_id, queue_name`)
	writeNames(b, queueCols)
	b.WriteString(")\n    SELECT w.width, date_bin(make_interval(mins => w.width), u.minute, timestamptz '1970-01-01 00:00:00+00'), r.tenant_id, u.queue_name")
	cols := slices.Clone(queueCols)
	for i, c := range cols {
		switch {
		case c.name == "parked_max":
			cols[i].merge = mergeMax
			b.WriteString(",\n           max(r.parked_max)")
		case c.merge == mergeMax:
			fmt.Fprintf(b, ",\n           max(u.%s)", c.name)
		default:
			fmt.Fprintf(b, ",\n           sum(u.%s)::int8", c.name)
		}
	}
	b.WriteString("\n      FROM ")
	writeQueueUnnest(b, 3)
	b.WriteString(`
      JOIN queues r ON r.minute = u.minute AND r.tenant_id = u.tenant::uuid AND r.queue_name = u.queue_name
     CROSS JOIN unnest(ARRAY[`)
	for i, w := range rollupWidths {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(b, "%d", w)
	}
	b.WriteString(`]::int2[]) AS w(width)
     GROUP BY 1, 2, 3, 4
     ORDER BY 1, 2, 3, 4
    ON CONFLICT (width, bucket, tenant_id, queue_name) DO UPDATE SET `)
	writeMerges(b, cols)
}

func writeNames[T any](b *strings.Builder, cols []metricCol[T]) {
	for _, c := range cols {
		b.WriteString(", " + c.name)
	}
}

// writeArrays writes n bigint array parameters from $p and returns the next number.
func writeArrays(b *strings.Builder, p, n int) int {
	for range n {
		fmt.Fprintf(b, ", $%d::int8[]", p)
		p++
	}
	return p
}

func writeMerges[T any](b *strings.Builder, cols []metricCol[T]) {
	for i, c := range cols {
		if i > 0 {
			b.WriteString(",\n        ")
		}
		n := c.name
		switch c.merge {
		case mergeSum:
			fmt.Fprintf(b, "%s = m.%s + EXCLUDED.%s", n, n, n)
		case mergeMax:
			fmt.Fprintf(b, "%s = GREATEST(m.%s, EXCLUDED.%s)", n, n, n)
		case mergeGMin:
			fmt.Fprintf(b, "%s = CASE WHEN m.samples = 0 THEN EXCLUDED.%s WHEN EXCLUDED.samples = 0 THEN m.%s ELSE LEAST(m.%s, EXCLUDED.%s) END",
				n, n, n, n, n)
		case mergeGLast:
			fmt.Fprintf(b, "%s = CASE WHEN EXCLUDED.samples = 0 THEN m.%s ELSE EXCLUDED.%s END", n, n, n)
		case mergeLast:
			fmt.Fprintf(b, "%s = EXCLUDED.%s", n, n)
		}
	}
}

// WriteMetrics implements ports.MetricsWriter in one statement (writeMetricsSQL).
func (s *Store) WriteMetrics(ctx context.Context, f ports.MetricsFlush) error {
	if err := f.Check(); err != nil {
		return fmt.Errorf("postgres: write metrics: %w", err)
	}
	args, err := metricsArgs(f)
	if err != nil {
		return err
	}
	return s.run(ctx, "write metrics", func(ctx context.Context, c *pgxpool.Conn) error {
		var applied bool
		return c.QueryRow(ctx, writeMetricsSQL, args...).Scan(&applied)
	})
}

// metricsArgs are writeMetricsSQL's parameters for f.
func metricsArgs(f ports.MetricsFlush) ([]any, error) {
	args := make([]any, 0, 2+queueKeyParams+len(queueCols)+brokerKeyParams+len(brokerCols))
	args = append(args, f.Instance, f.Seq)
	n := len(f.Queues)
	minutes, tenants, names := make([]time.Time, n), make([]string, n), make([]string, n)
	for i, q := range f.Queues {
		minutes[i], tenants[i], names[i] = q.Minute.UTC(), q.Tenant, q.Queue
	}
	args = append(args, minutes, tenants, names)
	args = appendColumns(args, queueCols, f.Queues)

	n = len(f.Brokers)
	minutes, brokers, hosts, portNums, parked := make([]time.Time, n), make([]string, n), make([]string, n), make([]int32, n), make([]string, n)
	for i, b := range f.Brokers {
		minutes[i], brokers[i], hosts[i], portNums[i] = b.Minute.UTC(), b.Broker, b.Hostname, int32(b.Port)
		p := b.Parked
		if p == nil {
			p = map[string]int64{}
		}
		js, err := json.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("postgres: write metrics: parked of broker %s: %w", b.Broker, err)
		}
		parked[i] = string(js)
	}
	args = append(args, minutes, brokers, hosts, portNums, parked)
	return appendColumns(args, brokerCols, f.Brokers), nil
}

// appendColumns appends one bigint array per column of rows.
func appendColumns[T any](args []any, cols []metricCol[T], rows []T) []any {
	for _, c := range cols {
		vals := make([]int64, len(rows))
		for i := range rows {
			vals[i] = *c.at(&rows[i])
		}
		args = append(args, vals)
	}
	return args
}

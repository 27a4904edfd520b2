package ports

import (
	"context"
	"time"
)

// MetricsSpan selects the rows of the metrics history a read covers and how it groups
// them: the minute rows with From <= minute <= To (both truncated to the minute, UTC),
// summed per bucket of Bucket. Buckets are aligned on the Unix epoch: a bucket starts at
// a multiple of Bucket since 1970-01-01T00:00Z, so the same minute falls in the same
// bucket whatever the range (a chart polled again keeps its points). Bucket is a whole
// number of minutes, at least one.
//
// Queue figures are kept per minute and in rollups of 5 and 60 minutes (schema/
// 016_metrics.sql): a read takes the widest rollup whose width divides Bucket (Rollup)
// and covers whole rollups (Whole), so a series and its totals cover the same minutes.
type MetricsSpan struct {
	From, To time.Time
	Bucket   time.Duration
}

// Rollup is the width in minutes of the rows a read of the span's queue figures takes:
// 60 (the hourly rollups) when Bucket is a whole number of hours, 5 when a whole number
// of 5 minutes, else 1 (the minute rows).
func (s MetricsSpan) Rollup() int {
	m := int(s.Bucket / time.Minute)
	switch {
	case m > 0 && m%60 == 0:
		return 60
	case m > 0 && m%5 == 0:
		return 5
	}
	return 1
}

// Whole is the span widened to whole rollups of Rollup minutes, aligned on the Unix
// epoch: From truncated down to its rollup's first minute, To extended to its rollup's
// last minute (both UTC, truncated to the minute; unchanged beyond that for Rollup 1).
func (s MetricsSpan) Whole() MetricsSpan {
	w := int64(s.Rollup()) * 60
	start := func(t time.Time) time.Time {
		sec := t.UTC().Truncate(time.Minute).Unix()
		return time.Unix(sec-((sec%w)+w)%w, 0).UTC()
	}
	return MetricsSpan{From: start(s.From), To: start(s.To).Add(time.Duration(w-60) * time.Second), Bucket: s.Bucket}
}

// QueueBucket is one bucket of the per-queue history: the counters of the selected
// queues summed (Queue "") or of one queue (Queue its name), over the bucket's minutes.
type QueueBucket struct {
	Bucket time.Time // its first minute
	Queue  string
	Counters
}

// QueueTotal is one queue's counters summed over a span's every minute, with its
// partitions now (0 for a queue deleted since: the history keeps names, not ids).
type QueueTotal struct {
	Queue string
	Counters
	Partitions int64
}

// MinuteGauges are the broker figures recorded once per minute row, each as a Gauge
// over the bucket's minute rows: Sum (avg = Sum / BrokerBucket.Minutes), the smallest
// and largest minute, and the latest minute's.
type MinuteGauges struct {
	CPUUserUs, CPUSysUs Gauge // CPU time used in the minute, µs
	VirtualBytes        Gauge // the minute's last sample, bytes
	PoolSize            Gauge // connections, the minute's last sample
	Goroutines          Gauge // the minute's last sample
	SpoolPending        Gauge // spooled records not yet replayed, the minute's last sample
}

// BrokerBucket is one broker's rows in one bucket. Counters sum every queue's work on
// the broker. Figures follow BrokerFigures over the bucket: CPU, request, latency and
// error figures and Samples summed (LatencyMaxUs the largest), the sampled gauges
// (RSS, PoolIdle, PoolActive) with Sum and Samples summed, Min and Max over the
// samples and Last the latest minute's; VirtualBytes, PoolSize and the *Last figures
// the latest minute's, the *Max figures the largest.
type BrokerBucket struct {
	Bucket           time.Time
	Broker, Hostname string
	Port             int
	Minutes          int64     // minute rows in the bucket
	LastMinute       time.Time // the latest of them
	Counters
	Figures   BrokerFigures
	PerMinute MinuteGauges
}

// BrokerFilter selects brokers by hostname and by id (QUEEN_SERVER_ID); "" = any.
type BrokerFilter struct {
	Hostname, Broker string
}

// ParkedBucket is the most long polls parked at once on one queue by one broker in a
// bucket.
type ParkedBucket struct {
	Bucket           time.Time
	Queue            string
	Broker, Hostname string
	Parked           int64
}

// RetentionKey names what a retention read groups its totals by.
type RetentionKey int

// The groupings of MetricsReader.Retention.
const (
	RetentionNoGroups RetentionKey = iota
	RetentionByQueue
	RetentionByNamespace
	RetentionByTask
)

// RetentionRow is what the retention runs of one job removed: per bucket (Bucket set,
// Key "") or per group over the whole span (Key the queue, namespace or task, Bucket
// zero).
type RetentionRow struct {
	Bucket time.Time
	Key    string
	Job    string
	Runs   int64 // recorded runs (one per run, job and queue that removed something)
	Rows   int64 // messages, or rows of the job's table
	Bytes  int64
}

// DeadLetterError is one error text of the dead letters and how many carry it ("" for
// dead letters recorded without one).
type DeadLetterError struct {
	Error string
	Count int64
}

// LagFigures summarize how far behind consumer groups are, over every (group,
// partition) position of a tenant's queues (ports.GroupPosition: every partition of a
// queue the group is on): offset lag in messages, time lag in seconds (the age of the
// oldest unconsumed message, 0 where none is waiting).
type LagFigures struct {
	Positions                          int64
	OffsetAvg, OffsetMedian, OffsetMax float64
	TimeAvg, TimeMedian, TimeMax       float64
}

// MetricsReader reads the metrics history (schema/016_metrics.sql) and the database's own
// statistics for the analytics routes (docs/api.md §5.11a). Every read is one statement
// and takes no lock; queue rows are scoped to one tenant, broker rows are the brokers'
// own (every tenant's work).
type MetricsReader interface {
	// QueueSeries sums the queue rows of the queues f selects per bucket (queues nil),
	// or per bucket and queue for the queues named (within f); buckets without a row
	// are left out, ordered by bucket then queue.
	QueueSeries(ctx context.Context, tenant string, span MetricsSpan, f ResourceFilter, queues []string) ([]QueueBucket, error)
	// QueueTotals sums the queue rows of the queues f selects per queue over the span
	// (Bucket ignored), every queue with a row, ordered by name.
	QueueTotals(ctx context.Context, tenant string, span MetricsSpan, f ResourceFilter) ([]QueueTotal, error)
	// BrokerSeries reads the broker rows f selects per bucket and broker, ordered by
	// broker then bucket.
	BrokerSeries(ctx context.Context, span MetricsSpan, f BrokerFilter) ([]BrokerBucket, error)
	// ParkedSeries reads the parked long polls of the broker rows per bucket, queue and
	// broker (queue "" = every queue), ordered by bucket, queue, broker.
	ParkedSeries(ctx context.Context, span MetricsSpan, queue string) ([]ParkedBucket, error)
	// Retention reads what the retention runs removed from the queues f selects (f
	// empty: every run, those of no queue too): per bucket and job, and with a key per
	// group and job over the span.
	Retention(ctx context.Context, tenant string, span MetricsSpan, f ResourceFilter, key RetentionKey) (series, groups []RetentionRow, err error)
	// DeadLetterErrors counts the dead letters of the queues f selects per error text,
	// the limit most frequent first.
	DeadLetterErrors(ctx context.Context, tenant string, f ResourceFilter, limit int) ([]DeadLetterError, error)
	// Lag summarizes the consumer groups' lag on the tenant's queues now.
	Lag(ctx context.Context, tenant string) (LagFigures, error)
	// PostgresStats reads the database's statistics views; queries running for less than
	// minQuery are not listed.
	PostgresStats(ctx context.Context, minQuery time.Duration) (PostgresStats, error)
}

// CacheFigures count block reads: found in shared buffers (Hits) or read from the
// operating system (Reads).
type CacheFigures struct {
	Hits, Reads int64
}

// DatabaseFigures are pg_stat_database's figures of the broker's database.
type DatabaseFigures struct {
	Name string
	CacheFigures
	Commits, Rollbacks, Deadlocks, Conflicts int64
	TempFiles, TempBytes                     int64
	SizeBytes                                int64
	Backends                                 int64 // connections to the database
}

// TableCache is one table's heap cache figures (pg_statio_user_tables).
type TableCache struct {
	Table string // schema-qualified
	CacheFigures
}

// IndexCache is one index's cache figures (pg_statio_user_indexes).
type IndexCache struct {
	Index, Table string // schema-qualified
	CacheFigures
}

// Setting is one server setting: as PostgreSQL shows it ("128MB"), and in bytes for
// memory settings (0 for others).
type Setting struct {
	Name, Value string
	Bytes       int64
}

// BufferUse is how much of shared buffers one relation holds (pg_buffercache).
type BufferUse struct {
	Object  string // schema-qualified relation
	Buffers int64
	Bytes   int64
}

// TableSize is one table of schema queen on disk: heap (with TOAST), indexes and total.
type TableSize struct {
	Table                              string
	TableBytes, IndexBytes, TotalBytes int64
}

// TableActivity is one table's row activity and maintenance (pg_stat_user_tables).
// VacuumThreshold is the dead tuples at which autovacuum takes the table, from the
// server-wide settings (a table's own storage parameters are not read).
type TableActivity struct {
	Table                          string
	LiveTuples, DeadTuples         int64
	Updates, HotUpdates            int64
	VacuumThreshold                int64
	VacuumCount, AutovacuumCount   int64
	AnalyzeCount, AutoanalyzeCount int64
	LastVacuum, LastAutovacuum     *time.Time
	LastAnalyze, LastAutoanalyze   *time.Time
}

// ActiveQuery is one statement running on the database (pg_stat_activity), not the
// reader's own.
type ActiveQuery struct {
	PID                      int64
	State                    string
	Query                    string // truncated
	Duration                 time.Duration
	WaitEventType, WaitEvent *string
	ApplicationName          string
}

// PostgresStats is what the database says of itself. BufferUsage is nil when the
// pg_buffercache extension is not installed (it is never created).
type PostgresStats struct {
	Database      DatabaseFigures
	Tables        []TableCache
	Indexes       []IndexCache
	Settings      []Setting
	BufferUsage   []BufferUse
	BufferTotal   int64 // shared buffers, with BufferUsage
	Sizes         []TableSize
	Activity      []TableActivity
	ActiveQueries []ActiveQuery
}

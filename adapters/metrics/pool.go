package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-go/queen/ports"
)

// PoolStat is what a scrape reads of the database pool (the PostgreSQL store's
// PoolStat method; pgx stays in adapters/postgres).
type PoolStat = ports.PoolStat

// registerPool adds the pool's families, read once per scrape. Queen's three gauges keep
// their names (docs/api.md §5.13); the others follow Prometheus' conventions.
func registerPool(reg prometheus.Registerer, read func() PoolStat) {
	c := newSnapshot(read)
	c.gauge("queen_db_pool_size", "Open database connections (idle, in use or being opened).", nil,
		func(s PoolStat) float64 { return float64(s.TotalConns()) })
	c.gauge("queen_db_pool_idle", "Idle database connections.", nil,
		func(s PoolStat) float64 { return float64(s.IdleConns()) })
	c.gauge("queen_db_pool_active", "Database connections in use.", nil,
		func(s PoolStat) float64 { return float64(s.AcquiredConns()) })
	c.gauge("queen_db_pool_constructing", "Database connections being opened.", nil,
		func(s PoolStat) float64 { return float64(s.ConstructingConns()) })
	c.gauge("queen_db_pool_max_size", "Most database connections the pool opens (DB_POOL_SIZE).", nil,
		func(s PoolStat) float64 { return float64(s.MaxConns()) })
	c.counter("queen_db_pool_acquires_total", "Successful connection acquires.", nil,
		func(s PoolStat) float64 { return float64(s.AcquireCount()) })
	c.counter("queen_db_pool_empty_acquires_total", "Acquires that found no idle connection and waited for one.", nil,
		func(s PoolStat) float64 { return float64(s.EmptyAcquireCount()) })
	c.counter("queen_db_pool_canceled_acquires_total", "Acquires given up before a connection came (cancelled or timed out).", nil,
		func(s PoolStat) float64 { return float64(s.CanceledAcquireCount()) })
	c.counter("queen_db_pool_acquire_seconds_total", "Time successful acquires took, summed.", nil,
		func(s PoolStat) float64 { return s.AcquireDuration().Seconds() })
	c.counter("queen_db_pool_acquire_wait_seconds_total", "Time acquires waited for a connection because none was idle, summed.", nil,
		func(s PoolStat) float64 { return s.EmptyAcquireWaitTime().Seconds() })
	reg.MustRegister(c)
}

// dbReading exports one figure read from the database at each scrape. A scrape that
// cannot read it omits the series (a counter must not jump to a placeholder: rate()
// would read the jump as a reset; a gauge's gap says "unknown" better than a zero).
type dbReading struct {
	desc *prometheus.Desc
	kind prometheus.ValueType
	read func(context.Context) (float64, error)
}

var (
	dbCommitsDesc = prometheus.NewDesc("queen_db_commits_total",
		"Transactions committed in the broker's PostgreSQL database by every client (pg_stat_database.xact_commit); absent when unreadable.", nil, nil)
	oldestXactDesc = prometheus.NewDesc("queen_pg_oldest_xact_age_seconds",
		"Age of the oldest transaction holding back vacuum in the broker's PostgreSQL database (any client; 0: none); absent when unreadable. Dead tuples of the hot tables grow behind it: alert when it stays above a few minutes.", nil, nil)
	syncReplicationDesc = prometheus.NewDesc("queen_pg_sync_replication",
		"1 while the broker's PostgreSQL has a synchronous standby attached and synchronous_commit waits for it (an acknowledged push survives a failover to that standby), else 0; absent when unreadable.", nil, nil)
	replicaLagDesc = prometheus.NewDesc("queen_pg_replica_lag_seconds",
		"Replay lag of the standby that answers the admin and dashboard reads (QUEEN_PG_READ_URL), measured every second: 0 when it replayed the primary's current WAL position; absent when it does not answer. Above QUEEN_READ_MAX_LAG_MS the reads answer from the primary.", nil, nil)
)

// errUnknown is a reading that has no value now.
var errUnknown = errors.New("unknown")

func (c dbReading) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c dbReading) Collect(ch chan<- prometheus.Metric) {
	// A scrape must not hang on a stalled database: Prometheus' own scrape timeout is
	// 10 s by default.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	v, err := c.read(ctx)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.desc, c.kind, v)
}

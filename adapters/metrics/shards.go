package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// ShardReading is one shard's figures at a scrape (a broker on several PostgreSQL
// clusters, QUEEN_SHARDS): the families without a shard label describe shard 0, the
// catalogue, or add every shard up (fusion, the spool); these say which shard is which.
type ShardReading struct {
	Shard        int
	Pool         PoolStat
	Commits      uint64 // fusion's bundles committed on the shard
	Frames       uint64 // messages in them
	SpoolPending int64  // records in the shard's spool, not yet replayed
	DBHealthy    bool   // the shard's drain reaches its database
	PushLimit    int    // the shard's push concurrency limit
}

var (
	shardLabel          = []string{"shard"}
	shardPoolActiveDesc = prometheus.NewDesc("queen_shard_db_pool_active",
		"Database connections in use, per shard (QUEEN_SHARDS).", shardLabel, nil)
	shardPoolSizeDesc = prometheus.NewDesc("queen_shard_db_pool_size",
		"Open database connections, per shard.", shardLabel, nil)
	shardCommitsDesc = prometheus.NewDesc("queen_shard_fusion_commits_total",
		"Push bundles committed, per shard.", shardLabel, nil)
	shardFramesDesc = prometheus.NewDesc("queen_shard_fusion_messages_total",
		"Messages in the push bundles committed, per shard.", shardLabel, nil)
	shardSpoolDesc = prometheus.NewDesc("queen_shard_file_buffer_pending",
		"Spooled push records not yet replayed, per shard: a shard that is away spools its own queues' pushes only.", shardLabel, nil)
	shardHealthyDesc = prometheus.NewDesc("queen_shard_db_healthy",
		"1 while the shard's spool replay reaches its database, else 0.", shardLabel, nil)
	shardLimitDesc = prometheus.NewDesc("queen_shard_push_concurrency_limit",
		"The adaptive limit of push commits in flight, per shard.", shardLabel, nil)
)

// shardCollector exports every shard's reading, labelled by its number.
type shardCollector struct{ read func() []ShardReading }

func (c shardCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{shardPoolActiveDesc, shardPoolSizeDesc, shardCommitsDesc, shardFramesDesc,
		shardSpoolDesc, shardHealthyDesc, shardLimitDesc} {
		ch <- d
	}
}

func (c shardCollector) Collect(ch chan<- prometheus.Metric) {
	for _, r := range c.read() {
		healthy := 0.0
		if r.DBHealthy {
			healthy = 1
		}
		for _, m := range []struct {
			desc *prometheus.Desc
			kind prometheus.ValueType
			v    float64
		}{
			{shardPoolActiveDesc, prometheus.GaugeValue, float64(r.Pool.AcquiredConns())},
			{shardPoolSizeDesc, prometheus.GaugeValue, float64(r.Pool.TotalConns())},
			{shardCommitsDesc, prometheus.CounterValue, float64(r.Commits)},
			{shardFramesDesc, prometheus.CounterValue, float64(r.Frames)},
			{shardSpoolDesc, prometheus.GaugeValue, float64(r.SpoolPending)},
			{shardHealthyDesc, prometheus.GaugeValue, healthy},
			{shardLimitDesc, prometheus.GaugeValue, float64(r.PushLimit)},
		} {
			ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.v, strconv.Itoa(r.Shard))
		}
	}
}

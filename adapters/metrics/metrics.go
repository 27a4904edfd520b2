package metrics

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/queen-go/queen/core/consume"
	"github.com/queen-go/queen/core/drain"
	"github.com/queen-go/queen/core/fusion"
	"github.com/queen-go/queen/core/history"
	"github.com/queen-go/queen/core/hotlist"
	"github.com/queen-go/queen/core/peers"
	"github.com/queen-go/queen/core/process"
	"github.com/queen-go/queen/core/push"
	"github.com/queen-go/queen/core/retention"
	"github.com/queen-go/queen/core/stages"
)

// Sources are the readings a scrape takes. Fusion, Push and PushLimit are required; a
// nil optional source leaves its families out.
type Sources struct {
	Fusion    func() fusion.Stats
	Push      func() push.Stats
	PushLimit func() int
	// Consume, when set, counts pops and acks.
	Consume func() consume.Stats
	// Pool, when set, reads the database pool (pgxpool's Stat).
	Pool func() PoolStat
	// DBCommits, when set, reads the database's committed transactions (all clients).
	DBCommits func(context.Context) (int64, error)
	// OldestXact, when set, reads the age of the database's oldest transaction that
	// holds back vacuum (docs/reliability.md F8).
	OldestXact func(context.Context) (time.Duration, error)
	// SyncReplication, when set, reads whether a synchronous standby is attached
	// (core/replication).
	SyncReplication func(context.Context) (bool, error)
	// ReplicaLag, when set, is the replay lag of the standby the admin reads go to
	// (QUEEN_PG_READ_URL) at its last measurement; false when unknown (core/replication
	// ReadRouter.Lag).
	ReplicaLag func() (time.Duration, bool)
	// Maintenance and PopMaintenance report push and pop maintenance; Spool the spool's
	// pending and failed records and whether the drain reaches the database.
	Maintenance    func() bool
	PopMaintenance func() bool
	Spool          func() drain.Status
	// Parked, when set, counts the long polls parked now.
	Parked func() int
	// Hotlist and Peers, when set, report the hot-list and the peer hints.
	Hotlist func() hotlist.Stats
	Peers   func() peers.Stats
	// Retention, when set, reports what the retention cycle removed.
	Retention func() retention.Stats
	// History, when set, reports the metrics history's flushes (core/history).
	History func() history.Stats
	// Requests, when set, are the HTTP request families (the HTTP adapter's observers
	// feed them).
	Requests *Requests
	// Stages, when set, are the push and pop stage histograms (core/stages).
	Stages *stages.Timers
	// Shards, when set, reads every shard's figures (a broker on several PostgreSQL
	// clusters): the queen_shard_* families, labelled by shard.
	Shards func() []ShardReading
}

// Handler returns the /metrics/prometheus handler over a private registry.
func Handler(src Sources) http.Handler {
	h := promhttp.HandlerFor(newRegistry(src), promhttp.HandlerOpts{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache") // docs/api.md §1: scrapes are never cached
		h.ServeHTTP(w, r)
	})
}

// newRegistry returns a registry holding every family src can feed, the Go runtime's
// and the process's.
func newRegistry(src Sources) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	start := time.Now()
	gauge := func(name, help string, f func() float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
	}
	gauge("queen_uptime_seconds", "Seconds since the broker started.",
		func() float64 { return time.Since(start).Seconds() })
	gauge("queen_process_resident_memory_bytes", "Resident set size of the broker process (memory obtained from the OS by the Go runtime where /proc is missing).",
		func() float64 { rss, _ := process.Memory(); return float64(rss) })
	registerPush(reg, src)
	if src.Consume != nil {
		registerConsume(reg, src.Consume)
	}
	if src.Pool != nil {
		registerPool(reg, src.Pool)
	}
	if src.Shards != nil {
		reg.MustRegister(shardCollector{src.Shards})
	}
	if src.DBCommits != nil {
		reg.MustRegister(dbReading{dbCommitsDesc, prometheus.CounterValue, func(ctx context.Context) (float64, error) {
			n, err := src.DBCommits(ctx)
			return float64(n), err
		}})
	}
	if src.OldestXact != nil {
		reg.MustRegister(dbReading{oldestXactDesc, prometheus.GaugeValue, func(ctx context.Context) (float64, error) {
			d, err := src.OldestXact(ctx)
			return d.Seconds(), err
		}})
	}
	if src.SyncReplication != nil {
		reg.MustRegister(dbReading{syncReplicationDesc, prometheus.GaugeValue, func(ctx context.Context) (float64, error) {
			ok, err := src.SyncReplication(ctx)
			return b2f(ok), err
		}})
	}
	if src.ReplicaLag != nil {
		reg.MustRegister(dbReading{replicaLagDesc, prometheus.GaugeValue, func(context.Context) (float64, error) {
			d, ok := src.ReplicaLag()
			if !ok {
				return 0, errUnknown
			}
			return d.Seconds(), nil
		}})
	}
	if src.Parked != nil {
		gauge("queen_pop_parked", "Long-poll pops parked now, waiting for a commit or their re-check.",
			func() float64 { return float64(src.Parked()) })
	}
	if src.Maintenance != nil {
		gauge("queen_maintenance_mode_enabled", "1 while push maintenance routes every push to the spool.",
			func() float64 { return b2f(src.Maintenance()) })
	}
	if src.PopMaintenance != nil {
		gauge("queen_pop_maintenance_mode_enabled", "1 while pop maintenance makes every pop claim nothing.",
			func() float64 { return b2f(src.PopMaintenance()) })
	}
	if src.Spool != nil {
		registerSpool(reg, src.Spool)
	}
	if src.Hotlist != nil {
		reg.MustRegister(hotlistCollector{src.Hotlist, src.Peers})
	}
	if src.Retention != nil {
		registerRetention(reg, src.Retention)
	}
	if src.History != nil {
		registerHistory(reg, src.History)
	}
	if src.Requests != nil {
		reg.MustRegister(src.Requests)
	}
	if src.Stages != nil {
		reg.MustRegister(stagesCollector{src.Stages})
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// registerPush adds the push path's families: requests and messages accepted, and push
// fusion's bundles (Queen's batch families carry op="push": fusion is the only batcher).
func registerPush(reg prometheus.Registerer, src Sources) {
	p := newSnapshot(src.Push)
	p.counter("queen_process_push_requests_total", "Push requests accepted.", nil,
		func(s push.Stats) float64 { return float64(s.Requests) })
	p.counter("queen_process_push_messages_total", "Push items accepted.", nil,
		func(s push.Stats) float64 { return float64(s.Messages) })
	reg.MustRegister(p)

	pushOp := prometheus.Labels{"op": "push"}
	f := newSnapshot(src.Fusion)
	f.counter("queen_batches_fired_total", "Bundles committed, by operation.", pushOp,
		func(s fusion.Stats) float64 { return float64(s.Commits) })
	f.counter("queen_batch_items_fired_total", "Frames carried by committed bundles, by operation.", pushOp,
		func(s fusion.Stats) float64 { return float64(s.Frames) })
	f.gauge("queen_fusion_items_per_batch", "Moving average of frames per committed bundle (over about 16 bundles).", pushOp,
		func(s fusion.Stats) float64 { return s.ItemsPerBatch })
	f.counter("queen_fusion_commits_total", "PostgreSQL commits made by push fusion.", nil,
		func(s fusion.Stats) float64 { return float64(s.Commits) })
	f.counter("queen_fusion_segments_total", "Partition segments carried by push fusion commits.", nil,
		func(s fusion.Stats) float64 { return float64(s.Segments) })
	f.counter("queen_fusion_failed_bundles_total", "Push bundles that failed as a whole.", nil,
		func(s fusion.Stats) float64 { return float64(s.Failed) })
	reg.MustRegister(f)

	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "queen_admission_budget",
		Help: "Current adaptive (Vegas) concurrency limit, by lane.", ConstLabels: prometheus.Labels{"lane": "push"}},
		func() float64 { return float64(src.PushLimit()) }))
}

// registerConsume adds Queen's pop and ack counters.
func registerConsume(reg prometheus.Registerer, read func() consume.Stats) {
	c := newSnapshot(read)
	c.counter("queen_process_pop_requests_total", "Pop requests with a valid query, whether they claimed anything or not.", nil,
		func(s consume.Stats) float64 { return float64(s.PopRequests) })
	c.counter("queen_process_pop_messages_total", "Messages delivered by pops.", nil,
		func(s consume.Stats) float64 { return float64(s.PopMessages) })
	c.counter("queen_process_ack_requests_total", "Acknowledgement requests (ack and ack/batch).", nil,
		func(s consume.Stats) float64 { return float64(s.AckRequests) })
	c.counter("queen_process_ack_messages_total", "Acknowledgements the database applied.", nil,
		func(s consume.Stats) float64 { return float64(s.AckMessages) })
	reg.MustRegister(c)
}

// registerSpool adds the spool's families; Queen's three keep their names.
func registerSpool(reg prometheus.Registerer, read func() drain.Status) {
	c := newSnapshot(read)
	c.gauge("queen_file_buffer_pending", "Records in the spool not yet replayed into PostgreSQL.", nil,
		func(s drain.Status) float64 { return float64(s.Pending) })
	c.gauge("queen_file_buffer_failed", "Spool records quarantined in failed/ (corrupt or rejected).", nil,
		func(s drain.Status) float64 { return float64(s.Failed) })
	c.gauge("queen_file_buffer_db_healthy", "1 while the spool drain reaches PostgreSQL.", nil,
		func(s drain.Status) float64 { return b2f(s.DBHealthy) })
	c.gauge("queen_file_buffer_failed_files", "Files quarantined in the spool's failed/ directory.", nil,
		func(s drain.Status) float64 { return float64(s.FailedFiles) })
	c.gauge("queen_file_buffer_failed_bytes", "Size of the files quarantined in failed/.", nil,
		func(s drain.Status) float64 { return float64(s.FailedBytes) })
	c.gauge("queen_file_buffer_write_failing", "1 while the spool's last write failed (a full disk, an I/O error): pushes that need the spool are refused and /ready may fail.", nil,
		func(s drain.Status) float64 { return b2f(!s.SpoolWriteFailedAt.IsZero()) })
	reg.MustRegister(c)
}

// registerRetention exports what each retention job removed, in rows and stored bytes.
func registerRetention(reg prometheus.Registerer, read func() retention.Stats) {
	c := newSnapshot(read)
	for _, j := range []struct {
		job         string
		rows, bytes func(retention.Stats) int64
	}{
		{"segments", func(s retention.Stats) int64 { return s.Segments }, func(s retention.Stats) int64 { return s.SegBytes }},
		{"messages", func(s retention.Stats) int64 { return s.Messages }, nil},
		{"hashes", func(s retention.Stats) int64 { return s.HashRows }, func(s retention.Stats) int64 { return s.HashBytes }},
		{"dead_letters", func(s retention.Stats) int64 { return s.DeadLetters }, func(s retention.Stats) int64 { return s.DeadLetterBytes }},
		{"traces", func(s retention.Stats) int64 { return s.Traces }, func(s retention.Stats) int64 { return s.TraceBytes }},
		{"partitions", func(s retention.Stats) int64 { return s.Partitions }, nil},
		{"metrics_history", func(s retention.Stats) int64 { return s.History }, func(s retention.Stats) int64 { return s.HistoryBytes }},
	} {
		labels := prometheus.Labels{"job": j.job}
		c.counter("queen_retention_removed_rows_total", "Rows the retention cycle removed, per job (messages: messages in the segments removed).", labels,
			func(s retention.Stats) float64 { return float64(j.rows(s)) })
		if j.bytes != nil {
			c.counter("queen_retention_removed_bytes_total", "Stored bytes the retention cycle removed, per job.", labels,
				func(s retention.Stats) float64 { return float64(j.bytes(s)) })
		}
	}
	c.counter("queen_retention_cycles_total", "Retention cycles this broker ran (it held the lead).", nil,
		func(s retention.Stats) float64 { return float64(s.Cycles) })
	c.counter("queen_retention_errors_total", "Retention steps that failed.", nil,
		func(s retention.Stats) float64 { return float64(s.Errors) })
	reg.MustRegister(c)
}

// registerHistory exports the metrics history's flushes: written, failed (each retry
// counts), dropped unwritten after a long outage, and waiting now.
func registerHistory(reg prometheus.Registerer, read func() history.Stats) {
	c := newSnapshot(read)
	c.counter("queen_history_flushes_total", "Metrics history flushes written to the database.", nil,
		func(s history.Stats) float64 { return float64(s.Flushes) })
	c.counter("queen_history_flush_failures_total", "Metrics history writes that failed (each retry of a pending flush counts).", nil,
		func(s history.Stats) float64 { return float64(s.Failures) })
	c.counter("queen_history_flushes_dropped_total", "Metrics history flushes dropped unwritten: more than 60 were pending (a long database outage).", nil,
		func(s history.Stats) float64 { return float64(s.Dropped) })
	c.gauge("queen_history_flushes_pending", "Metrics history flushes waiting to be written.", nil,
		func(s history.Stats) float64 { return float64(s.Pending) })
	reg.MustRegister(c)
}

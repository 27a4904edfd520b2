package metrics

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/queen-go/queen/core/drain"
	"github.com/queen-go/queen/core/fusion"
	"github.com/queen-go/queen/core/hotlist"
	"github.com/queen-go/queen/core/peers"
	"github.com/queen-go/queen/core/push"
	"github.com/queen-go/queen/core/retention"
)

// Sources are the readings a scrape takes.
type Sources struct {
	Fusion    func() fusion.Stats
	Push      func() push.Stats
	PushLimit func() int
	PoolStats func() (total, idle, acquired int32)
	// DBCommits, when set, reads the database's committed transactions (all clients).
	DBCommits func(context.Context) (int64, error)
	// Maintenance reports push maintenance; Spool the spool's pending and failed
	// records and whether the drain reaches the database.
	Maintenance func() bool
	Spool       func() drain.Status
	// Parked, when set, counts the long polls parked now.
	Parked func() int
	// Hotlist and Peers, when set, report the hot-list and the peer hints.
	Hotlist func() hotlist.Stats
	Peers   func() peers.Stats
	// Retention, when set, reports what the retention cycle removed.
	Retention func() retention.Stats
}

// Handler returns the /metrics/prometheus handler over a private registry.
func Handler(src Sources) http.Handler {
	reg := prometheus.NewRegistry()
	start := time.Now()
	pushOp := prometheus.Labels{"op": "push"}
	counter := func(name, help string, labels prometheus.Labels, f func() float64) {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels}, f))
	}
	gauge := func(name, help string, labels prometheus.Labels, f func() float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels}, f))
	}

	gauge("queen_uptime_seconds", "Seconds since the broker started.", nil,
		func() float64 { return time.Since(start).Seconds() })
	gauge("queen_process_resident_memory_bytes", "Resident set size of the broker process (Memory obtained from the OS by the Go runtime where /proc is missing).", nil,
		func() float64 { return float64(residentBytes()) })
	counter("queen_process_push_requests_total", "Push requests accepted.", nil,
		func() float64 { return float64(src.Push().Requests) })
	counter("queen_process_push_messages_total", "Push items accepted.", nil,
		func() float64 { return float64(src.Push().Messages) })
	counter("queen_batches_fired_total", "Bundles committed, by operation.", pushOp,
		func() float64 { return float64(src.Fusion().Commits) })
	counter("queen_batch_items_fired_total", "Frames carried by committed bundles, by operation.", pushOp,
		func() float64 { return float64(src.Fusion().Frames) })
	gauge("queen_fusion_items_per_batch", "Moving average of frames per committed bundle.", pushOp,
		func() float64 { return src.Fusion().ItemsPerBatch })
	counter("queen_fusion_commits_total", "PostgreSQL commits made by push fusion.", nil,
		func() float64 { return float64(src.Fusion().Commits) })
	counter("queen_fusion_segments_total", "Partition segments carried by push fusion commits.", nil,
		func() float64 { return float64(src.Fusion().Segments) })
	counter("queen_fusion_failed_bundles_total", "Push bundles that failed as a whole.", nil,
		func() float64 { return float64(src.Fusion().Failed) })
	gauge("queen_admission_budget", "Current adaptive (Vegas) push concurrency limit.", prometheus.Labels{"lane": "push"},
		func() float64 { return float64(src.PushLimit()) })
	pool := func(pick func(total, idle, acquired int32) int32) func() float64 {
		return func() float64 { return float64(pick(src.PoolStats())) }
	}
	gauge("queen_db_pool_size", "Open database connections.", nil, pool(func(t, _, _ int32) int32 { return t }))
	gauge("queen_db_pool_idle", "Idle database connections.", nil, pool(func(_, i, _ int32) int32 { return i }))
	gauge("queen_db_pool_active", "Database connections in use.", nil, pool(func(_, _, a int32) int32 { return a }))
	if src.Parked != nil {
		gauge("queen_pop_parked", "Long-poll pops parked now, waiting for a commit or their re-check.", nil,
			func() float64 { return float64(src.Parked()) })
	}
	registerSpoolAndDatabase(src, gauge, counter)
	if src.Hotlist != nil {
		reg.MustRegister(hotlistCollector{src.Hotlist, src.Peers})
	}
	if src.Retention != nil {
		registerRetention(src.Retention, counter)
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache") // api.md §1: scrapes are never cached
		h.ServeHTTP(w, r)
	})
}

// registerSpoolAndDatabase adds the families whose sources are optional: maintenance,
// the spool, and the database's own commit counter.
func registerSpoolAndDatabase(src Sources, gauge, counter func(name, help string, labels prometheus.Labels, f func() float64)) {
	if src.Maintenance != nil {
		gauge("queen_maintenance_mode_enabled", "1 while push maintenance routes every push to the spool.", nil,
			func() float64 { return b2f(src.Maintenance()) })
	}
	if src.Spool != nil {
		gauge("queen_file_buffer_pending", "Records in the spool not yet replayed into PostgreSQL.", nil,
			func() float64 { return float64(src.Spool().Pending) })
		gauge("queen_file_buffer_failed", "Spool records quarantined in failed/ (corrupt or rejected).", nil,
			func() float64 { return float64(src.Spool().Failed) })
		gauge("queen_file_buffer_db_healthy", "1 while the spool drain reaches PostgreSQL.", nil,
			func() float64 { return b2f(src.Spool().DBHealthy) })
	}
	if src.DBCommits != nil {
		counter("queen_db_commits_total", "Transactions committed in the broker's PostgreSQL database by every client (pg_stat_database.xact_commit; -1 when unreadable).", nil,
			func() float64 {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				n, err := src.DBCommits(ctx)
				if err != nil {
					return -1
				}
				return float64(n)
			})
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// residentBytes is the process's resident set size from /proc/self/statm (in pages), or
// the memory the Go runtime obtained from the OS where that cannot be read.
func residentBytes() uint64 {
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		var size, resident uint64
		if _, err := fmt.Sscan(string(b), &size, &resident); err == nil {
			return resident * uint64(os.Getpagesize())
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Sys
}

// registerRetention exports what each retention job removed, in rows and stored bytes.
func registerRetention(stats func() retention.Stats, counter func(string, string, prometheus.Labels, func() float64)) {
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
	} {
		labels := prometheus.Labels{"job": j.job}
		counter("queen_retention_removed_rows_total", "Rows the retention cycle removed, per job (messages: messages in the segments removed).", labels,
			func() float64 { return float64(j.rows(stats())) })
		if j.bytes != nil {
			counter("queen_retention_removed_bytes_total", "Stored bytes the retention cycle removed, per job.", labels,
				func() float64 { return float64(j.bytes(stats())) })
		}
	}
	counter("queen_retention_cycles_total", "Retention cycles this broker ran (it held the lead).", nil,
		func() float64 { return float64(stats().Cycles) })
	counter("queen_retention_errors_total", "Retention steps that failed.", nil,
		func() float64 { return float64(stats().Errors) })
}

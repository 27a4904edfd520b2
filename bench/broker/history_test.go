package broker

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
)

// BenchmarkPushHistoryCost: what the metrics history's counting costs the push path.
// Each round runs a broker with the history on (METRICS_FLUSH_MS at its default, 60 s)
// and one with it off (0), one after the other on the same database, the order swapped
// every round, each warmed up and then measured with 64 single-message clients over
// 1,000 partitions (as BenchmarkPushFusion) for QUEEN_BENCH_SECONDS. One broker at a
// time: two brokers running side by side are not alike (the one holding the retention
// lead and started first pushed 5 to 12 % slower with the history off on both). The
// target is at most 1 % of the broker's CPU. Run with -benchtime 1x (make bench-history).
func BenchmarkPushHistoryCost(b *testing.B) {
	d, rounds := benchDuration(), benchRounds()
	for b.Loop() {
		db := pgtest.NewDatabase(b)
		phase := func(on bool, round int) loadResult {
			env := map[string]string{"DB_POOL_SIZE": "40", "METRICS_FLUSH_MS": "0"}
			if on {
				env["METRICS_FLUSH_MS"] = "60000"
			}
			br := startBrokerOn(b, db, env)
			l := newFusionLoad(b, br.URL, 64, 1, "bench-history")
			l.run(1000+round*2+btoi(on), 2*time.Second) // warm-up: connections, caches (ids apart from the measured ones)
			res := l.run(round*2+btoi(on), d)
			if err := br.stop(); err != nil {
				b.Fatal(err)
			}
			return res
		}
		phase(true, -10) // the partitions are created once, unmeasured
		var with, without loadResult
		for r := range rounds {
			var w, wo loadResult
			if r%2 == 0 {
				w, wo = phase(true, r), phase(false, r)
			} else {
				wo, w = phase(false, r), phase(true, r)
			}
			wm, _ := w.cpuPerMsg()
			wom, _ := wo.cpuPerMsg()
			b.Logf("round %d: history on %.0f msgs/s (%.1f µs CPU/msg), off %.0f msgs/s (%.1f µs CPU/msg): on/off %.3f",
				r, w.rate(), wm, wo.rate(), wom, w.rate()/wo.rate())
			with, without = with.plus(w), without.plus(wo)
		}
		wm, _ := with.cpuPerMsg()
		wom, _ := without.cpuPerMsg()
		b.ReportMetric(with.rate()/without.rate(), "on/off-msgs/s")
		b.ReportMetric(wm/wom, "on/off-cpu/msg")
		b.ReportMetric(with.rate(), "on-msgs/s")
		b.ReportMetric(without.rate(), "off-msgs/s")
		if with.errors > 0 || without.errors > 0 {
			b.Errorf("errors: on %d, off %d", with.errors, without.errors)
		}
	}
}

func btoi(v bool) int {
	if v {
		return 1
	}
	return 0
}

// dashboardPolls are what the dashboard's overview asks every 5 s while it is open: its
// fragment (which reads the analytics and the listings) and the JSON routes Queen's own
// dashboard polls.
var dashboardPolls = []string{
	"/ui/fragments/overview?range=1h",
	"/api/v1/status",
	"/api/v1/resources/overview",
	"/api/v1/analytics/queue-ops",
	"/api/v1/analytics/system-metrics",
}

// BenchmarkPushWithDashboard: push throughput (64 single-message clients over 1,000
// partitions) with a dashboard open, polling dashboardPolls every 5 s, against the same
// without it, alternating in QUEEN_BENCH_ROUNDS rounds of QUEEN_BENCH_SECONDS (at least
// 10 s, two polls) per side on one broker whose history holds a day of 200 queues. The
// target is at most 5 % of the push rate. Run with -benchtime 1x (make bench-history).
func BenchmarkPushWithDashboard(b *testing.B) {
	d := max(benchDuration(), 10*time.Second)
	rounds := benchRounds()
	for b.Loop() {
		br := startBroker(b, map[string]string{"QUEEN_ADMIN_SHARE_MS": "1000", "METRICS_FLUSH_MS": "1000"})
		historyFill(b, br.DB, 200, 24*60)
		f := newFusionLoad(b, br.URL, 64, 1, "bench-dashboard-push")
		f.run(-1, 3*time.Second)
		var with, without loadResult
		var polls, failed atomic.Int64
		for r := range rounds {
			without = without.plus(f.run(2*r, d))
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Go(func() { dashboardPoll(ctx, br.URL, &polls, &failed) })
			with = with.plus(f.run(2*r+1, d))
			cancel()
			wg.Wait()
			b.Logf("round %d: with the dashboard %.0f msgs/s so far, without %.0f", r, with.rate(), without.rate())
		}
		b.Logf("push with a dashboard polling every 5 s: %.0f msgs/s; without: %.0f msgs/s: %.3fx (%d polls, %d failed)",
			with.rate(), without.rate(), with.rate()/without.rate(), polls.Load(), failed.Load())
		b.ReportMetric(with.rate()/without.rate(), "with/without")
		if failed.Load() > 0 {
			b.Errorf("%d dashboard polls failed", failed.Load())
		}
	}
}

// dashboardPoll GETs dashboardPolls at once and then every 5 s until ctx ends.
func dashboardPoll(ctx context.Context, url string, n, failed *atomic.Int64) {
	c := newRawClient(url)
	defer c.close()
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		for _, p := range dashboardPolls {
			code, _, err := c.do(http.MethodGet, p, nil)
			if err != nil || code != http.StatusOK {
				failed.Add(1)
			}
			n.Add(1)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// historyFill writes minutes minutes of metrics history, up to now, for queues queues
// and two brokers straight into the tables, as a day of a busy deployment leaves them.
func historyFill(b *testing.B, db string, queues, minutes int) {
	b.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `
		INSERT INTO queen.metrics_queue_minutes (minute, tenant_id, queue_name, push_requests, push_messages,
			pop_requests, pop_messages, ack_requests, ack_success, lag_count, lag_sum_ms, lag_max_ms)
		SELECT date_trunc('minute', now()) - m * interval '1 minute', '00000000-0000-0000-0000-000000000001',
			'hist-' || lpad(q::text, 4, '0'), 60, 600, 60, 600, 60, 600, 600, 6000, 90
		FROM generate_series(1, $1::int) m, generate_series(1, $2::int) q`, minutes, queues); err != nil {
		b.Fatalf("fill queue minutes: %v", err)
	}
	// The 5- and 60-minute rollups the flush keeps with its minutes (schema/016_metrics.sql).
	if _, err := pool.Exec(ctx, `
		INSERT INTO queen.metrics_queue_rollups (width, bucket, tenant_id, queue_name, push_requests, push_messages,
			pop_requests, pop_messages, pop_empty, ack_requests, ack_success, ack_failed, dlq_moves, transactions,
			partitions_created, partitions_deleted, parked_max, lag_count, lag_sum_ms, lag_max_ms)
		SELECT w.width, date_bin(make_interval(mins => w.width), m.minute, timestamptz '1970-01-01 00:00:00+00'),
			m.tenant_id, m.queue_name, sum(m.push_requests), sum(m.push_messages), sum(m.pop_requests),
			sum(m.pop_messages), sum(m.pop_empty), sum(m.ack_requests), sum(m.ack_success), sum(m.ack_failed),
			sum(m.dlq_moves), sum(m.transactions), sum(m.partitions_created), sum(m.partitions_deleted),
			max(m.parked_max), sum(m.lag_count), sum(m.lag_sum_ms), max(m.lag_max_ms)
		FROM queen.metrics_queue_minutes m CROSS JOIN unnest(ARRAY[5, 60]::int2[]) AS w(width)
		GROUP BY 1, 2, 3, 4`); err != nil {
		b.Fatalf("fill queue rollups: %v", err)
	}
	if _, err := pool.Exec(ctx, `
		INSERT INTO queen.metrics_broker_minutes (minute, broker, hostname, push_requests, push_messages,
			requests, latency_sum_us, cpu_user_us, cpu_sys_us, samples, rss_sum, rss_min, rss_max, rss_last)
		SELECT date_trunc('minute', now()) - m * interval '1 minute', 'fill-' || br, 'fill-' || br,
			6000, 60000, 6000, 600000, 3e7, 1e7, 12, 12 * 5e7, 5e7, 5e7, 5e7
		FROM generate_series(1, $1::int) m, generate_series(1, 2) br`, minutes); err != nil {
		b.Fatalf("fill broker minutes: %v", err)
	}
	// A day written in one go has no planner statistics yet; a day written a minute at a
	// time has autovacuum's. Without them the 5-minute rollups of a day are read by an
	// index scan estimated at one row and sorted on disk (queue-ops 1.2 s instead of
	// about 0.2 s on the reference machine).
	if _, err := pool.Exec(ctx, `ANALYZE queen.metrics_queue_minutes, queen.metrics_queue_rollups, queen.metrics_broker_minutes`); err != nil {
		b.Fatalf("analyze the history: %v", err)
	}
}

// analyticsRoutes are the history's reads a dashboard or queenctl makes, over a range.
var analyticsRoutes = []string{
	"/api/v1/analytics/queue-ops", "/api/v1/analytics/queue-lag", "/api/v1/analytics/worker-metrics",
	"/api/v1/analytics/system-metrics", "/api/v1/analytics/queue-parked-replicas", "/api/v1/status/analytics",
	"/api/v1/status", "/ui/fragments/overview",
}

// BenchmarkAnalyticsDay: each history read over 24 hours of 1,000 queues and two brokers
// (1.44 million queue minutes), answered afresh (QUEEN_ADMIN_SHARE_MS=0), one request at
// a time: ms per answer, by route. The target is under 1 s each. Run with -benchtime 3x
// (make bench-history).
func BenchmarkAnalyticsDay(b *testing.B) {
	br := startBroker(b, map[string]string{"QUEEN_ADMIN_SHARE_MS": "0"})
	historyFill(b, br.DB, 1000, 24*60)
	settle(b, br.DB)
	c := newRawClient(br.URL)
	defer c.close()
	from := time.Now().Add(-24 * time.Hour).UTC().Format(time.RFC3339)
	for _, route := range analyticsRoutes {
		name := route[strings.LastIndex(route, "/")+1:]
		b.Run(name, func(b *testing.B) {
			path := route + "?from=" + from
			if strings.HasPrefix(route, "/ui/") {
				path = route + "?range=24h"
			}
			var worst time.Duration
			for b.Loop() {
				t0 := time.Now()
				code, body, err := c.do(http.MethodGet, path, nil)
				if err != nil || code != http.StatusOK {
					b.Fatalf("GET %s: %d %v %.200s", path, code, err, body)
				}
				worst = max(worst, time.Since(t0))
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/answer")
			b.ReportMetric(float64(worst.Microseconds())/1000, "worst-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

package broker

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// adminListRoutes are the list routes an operator's dashboard polls.
var adminListRoutes = []string{
	"/api/v1/resources/queues?limit=100",
	"/api/v1/consumer-groups",
	"/api/v1/status/queues?limit=100",
	"/api/v1/resources/overview",
}

// BenchmarkAdminLists: the admin list routes on a database of 1,000 queues x 100
// partitions (one message each) with 10 consumer groups holding a cursor on every
// partition. For each route it reports the SQL transactions one call costs (the broker's
// database's xact_commit + xact_rollback before and after, the broker otherwise idle:
// each statement outside a transaction counts one) and the call's time (median of 5).
// Run with -benchtime 1x (make bench-admin).
func BenchmarkAdminLists(b *testing.B) {
	const queues, partitions, groups = 1000, 100, 10
	for b.Loop() {
		br := startBroker(b, map[string]string{"QUEEN_PEER_HINTS": "false",
			"RETENTION_INTERVAL": "86400000", "QUEEN_MAINTENANCE_REFRESH_MS": "3600000"}) // nothing else counts
		db, err := pgxpool.New(context.Background(), br.DB)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		t0 := time.Now()
		adminFill(b, br, db, queues, partitions, groups)
		b.Logf("fill: %d queues x %d partitions, %d groups with a cursor on every partition, in %v",
			queues, partitions, groups, time.Since(t0).Round(time.Millisecond))
		settle(b, br.DB)
		c := newRawClient(br.URL)
		defer c.close()
		for _, route := range adminListRoutes {
			var times []time.Duration
			var xacts int64
			for i := range 5 {
				before := adminXacts(b, db)
				start := time.Now()
				code, body, err := c.do(http.MethodGet, route, nil)
				d := time.Since(start)
				after := adminXacts(b, db)
				if err != nil || code != http.StatusOK {
					b.Fatalf("GET %s: %d %v %.200s", route, code, err, body)
				}
				times = append(times, d)
				if i == 0 {
					xacts = after - before - 1 // the second reading's own transaction
				}
			}
			slices.Sort(times)
			b.Logf("GET %-40s %3d SQL transactions, median %v", route, xacts, times[len(times)/2].Round(10*time.Microsecond))
		}
	}
}

// adminFill creates the queues, partitions and messages through pushes (100 partitions
// of 10 queues per request), then the groups' cursors in SQL: one pop per (queue, group)
// would make the fill, not the listing, the benchmark.
func adminFill(b *testing.B, br *broker, db *pgxpool.Pool, queues, partitions, groups int) {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Pointer[error]
	for range 4 {
		c := newRawClient(br.URL)
		wg.Go(func() {
			defer c.close()
			var body []byte
			for {
				q0 := int(next.Add(10)) - 10
				if q0 >= queues {
					return
				}
				body = append(body[:0], `{"items":[`...)
				for q := q0; q < min(q0+10, queues); q++ {
					for p := range partitions {
						if q > q0 || p > 0 {
							body = append(body, ',')
						}
						body = fmt.Appendf(body, `{"queue":"adm-%04d","partition":"p%d","payload":{"q":%d}}`, q, p, q)
					}
				}
				body = append(body, `]}`...)
				if err := c.push(body); err != nil {
					firstErr.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := firstErr.Load(); err != nil {
		b.Fatalf("fill: %v", *err)
	}
	ctx := context.Background()
	if _, err := db.Exec(ctx, `
		INSERT INTO queen.consumer_groups (queue_id, name, subscription_mode)
		SELECT q.id, 'g' || g, 'all' FROM queen.queues q CROSS JOIN generate_series(1, $1) g
		 WHERE q.name LIKE 'adm-%' ON CONFLICT DO NOTHING`, groups); err != nil {
		b.Fatal(err)
	}
	// Half of each partition's message consumed by half of the groups: some lag to list.
	if _, err := db.Exec(ctx, `
		INSERT INTO queen.log_consumers (partition_id, consumer_group, committed, batch_end, last_consumed_at)
		SELECT p.id, 'g' || g, CASE WHEN g % 2 = 0 THEN p.last_offset ELSE p.log_start - 1 END,
		       CASE WHEN g % 2 = 0 THEN p.last_offset ELSE p.log_start - 1 END, now()
		  FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
		 CROSS JOIN generate_series(1, $1) g
		 WHERE q.name LIKE 'adm-%' ON CONFLICT DO NOTHING`, groups); err != nil {
		b.Fatal(err)
	}
}

// adminXacts reads the transactions committed and rolled back in the database so far
// (statistics are flushed by each backend about once a second: callers read it with
// the broker idle and wait past that first).
func adminXacts(b *testing.B, db *pgxpool.Pool) int64 {
	b.Helper()
	// Let every backend flush what it counted (at most once a second, when idle).
	pause(1100 * time.Millisecond)
	var n int64
	if err := db.QueryRow(context.Background(), `SELECT pg_stat_force_next_flush()`).Scan(new(any)); err != nil {
		b.Fatal(err)
	}
	if err := db.QueryRow(context.Background(), `SELECT xact_commit + xact_rollback FROM pg_stat_database
		WHERE datname = current_database()`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkPushWithAdminPoller: push throughput (64 single-message clients over 1,000
// partitions, as BenchmarkPushFusion) with an admin poller hitting the list routes every
// 100 ms, against the same without it, alternating in rounds on one broker. The poller
// must cost at most 10% of the push rate. Run with -benchtime 1x (make bench-admin).
func BenchmarkPushWithAdminPoller(b *testing.B) {
	d := benchDuration()
	rounds := benchRounds()
	for b.Loop() {
		br := startBroker(b, nil)
		// Something to list: 200 queues of 10 partitions.
		db, err := pgxpool.New(context.Background(), br.DB)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		adminFill(b, br, db, 200, 10, 5)
		f := newFusionLoad(b, br.URL, 64, 1, "bench-admin-push")
		f.run(-1, 3*time.Second) // warm-up
		var with, without loadResult
		var polls atomic.Int64
		for r := range rounds {
			without = without.plus(f.run(2*r, d))
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Go(func() { adminPoll(ctx, br.URL, &polls) })
			with = with.plus(f.run(2*r+1, d))
			cancel()
			wg.Wait()
		}
		ratio := with.rate() / without.rate()
		b.Logf("push with an admin poller: %.0f msgs/s; without: %.0f msgs/s: %.3fx (%d list calls)",
			with.rate(), without.rate(), ratio, polls.Load())
		b.ReportMetric(ratio, "with/without")
		b.ReportMetric(with.rate(), "with-msgs/s")
		b.ReportMetric(without.rate(), "without-msgs/s")
	}
}

// adminPoll GETs the list routes in turn, one every 100 ms, until ctx ends.
func adminPoll(ctx context.Context, url string, n *atomic.Int64) {
	c := newRawClient(url)
	defer c.close()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, _, err := c.do(http.MethodGet, adminListRoutes[i%len(adminListRoutes)], nil); err == nil {
			n.Add(1)
		}
	}
}

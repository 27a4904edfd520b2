package broker

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
	"github.com/queen-go/queen/bench/load"
)

// BenchmarkPushWithReplicaPoller: push throughput (64 single-message clients over 1,000
// partitions, as BenchmarkPushWithAdminPoller) with an admin poller (the list routes,
// one every 100 ms) and a dashboard (dashboardPolls every 5 s) polling a second broker on
// the same database whose QUEEN_PG_READ_URL is a streaming standby of it, against no
// poller, and, as a control, against the same poller on a third broker without
// QUEEN_PG_READ_URL (its reads on the primary); the three alternate in QUEEN_BENCH_ROUNDS
// rounds. The pushes always go to a broker nobody polls, so the three differ only in
// where the polls' reads run. It reports the push rates, the primary cluster's CPU per
// pushed message (its postmaster and backends, /proc) and the transactions the polls
// ran on the standby (they must land there). The promise: a poller on the replica costs
// the primary nothing measurable. Run with -benchtime 1x (docs/benchmarks.md, "Admin
// reads on a replica").
func BenchmarkPushWithReplicaPoller(b *testing.B) {
	d := benchDuration()
	rounds := benchRounds()
	for b.Loop() {
		dbURL := pgtest.NewDatabase(b)
		pg := pgtest.PostmasterPID() // started by NewDatabase; 0 with QUEEN_TEST_PG_URL: no CPU figures
		standby := pgtest.NewStandby(b, dbURL)
		pushed := startBrokerOn(b, dbURL, nil)
		onReplica := startBrokerOn(b, dbURL, map[string]string{"QUEEN_PG_READ_URL": standby.URL, "QUEEN_ADMIN_SHARE_MS": "1000",
			"DB_POOL_SIZE": "10"})
		onPrimary := startBrokerOn(b, dbURL, map[string]string{"QUEEN_ADMIN_SHARE_MS": "1000", "DB_POOL_SIZE": "10"})
		db, err := pgxpool.New(context.Background(), dbURL)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		adminFill(b, pushed, db, 200, 10, 5) // something to list: 200 queues of 10 partitions
		replica, err := pgxpool.New(context.Background(), standby.URL)
		if err != nil {
			b.Fatal(err)
		}
		defer replica.Close()

		f := newFusionLoad(b, pushed.URL, 64, 1, "bench-replica-push")
		f.run(-1, 3*time.Second) // warm-up
		if lag := onReplica.scrape(b, "queen_pg_replica_lag_seconds"); lag > 5 {
			b.Fatalf("the standby lags %v s: the reads would go to the primary", lag)
		}
		type side struct {
			name   string
			polled *broker // nil: no poller
			res    loadResult
			cpu    time.Duration
			polls  atomic.Int64
		}
		sides := []*side{{name: "no poller"}, {name: "poller, reads on the replica", polled: onReplica},
			{name: "poller, reads on the primary", polled: onPrimary}}
		var failed atomic.Int64
		standbyXacts0 := adminXacts(b, replica)
		for r := range rounds {
			for i, s := range sides {
				ctx, cancel := context.WithCancel(context.Background())
				var wg sync.WaitGroup
				if s.polled != nil {
					wg.Go(func() { adminPoll(ctx, s.polled.URL, &s.polls) })
					wg.Go(func() { dashboardPoll(ctx, s.polled.URL, &s.polls, &failed) })
				}
				cpu0 := clusterCPU(b, pg)
				res := f.run(len(sides)*r+i, d)
				s.cpu += clusterCPU(b, pg) - cpu0
				cancel()
				wg.Wait()
				s.res = s.res.plus(res)
			}
			b.Logf("round %d: %.0f / %.0f / %.0f msgs/s so far (%s / %s / %s)", r, sides[0].res.rate(), sides[1].res.rate(),
				sides[2].res.rate(), sides[0].name, sides[1].name, sides[2].name)
		}
		standbyXacts := adminXacts(b, replica) - standbyXacts0
		perMsg := func(s *side) float64 { return 1e6 * s.cpu.Seconds() / float64(max(s.res.msgs, 1)) }
		base := sides[0]
		for _, s := range sides {
			b.Logf("%s: %.0f msgs/s (%.3fx), primary CPU %.1f µs/msg (%.3fx), %d polls", s.name, s.res.rate(),
				s.res.rate()/base.res.rate(), perMsg(s), perMsg(s)/perMsg(base), s.polls.Load())
		}
		b.Logf("%d transactions on the standby, %d polls failed", standbyXacts, failed.Load())
		b.ReportMetric(sides[1].res.rate()/base.res.rate(), "replica-poller/none")
		b.ReportMetric(sides[2].res.rate()/base.res.rate(), "primary-poller/none")
		if pg > 0 {
			b.ReportMetric(perMsg(sides[1])/perMsg(base), "primary-cpu/msg-replica-poller/none")
			b.ReportMetric(perMsg(sides[2])/perMsg(base), "primary-cpu/msg-primary-poller/none")
		}
		if failed.Load() > 0 {
			b.Errorf("%d dashboard polls failed", failed.Load())
		}
	}
}

// clusterCPU is the CPU the cluster of postmaster pg has used so far (0 without one).
func clusterCPU(b *testing.B, pg int) time.Duration {
	if pg == 0 {
		return 0
	}
	d, err := load.ClusterCPU(pg)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

package broker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/adapters/postgres"
	"github.com/queen-go/queen/core/retention"
)

// BenchmarkRetentionCost: push and pop+ack throughput on a broker whose database holds
// a queue of 1,000,000 expired messages (100 partitions x 5,000 segments of 2, two hours
// old, retentionSeconds 60: 500,000 segment rows and as many hash rows, more than the
// with-retention phases can remove at 5,000 rows a second, so the cycle works throughout), with the retention cycle running every second (the
// broker's own code, core/retention over adapters/postgres, run here so it can be
// switched on and off on one broker) against the same without it, alternating in
// QUEEN_BENCH_ROUNDS (4) rounds of QUEEN_BENCH_SECONDS (10) per phase: a push phase (16
// connections, 100 items per request over 1,000 partitions of another queue), then a
// pop+ack phase (8 consumers, batch 100) consuming what was pushed. The target is at
// most 10% lower with retention. Run with -benchtime 1x (make bench-retention).
func BenchmarkRetentionCost(b *testing.B) {
	const live = "bench-ret-live"
	d := benchDuration()
	rounds := benchRounds()
	for b.Loop() {
		br := startBroker(b, map[string]string{"RETENTION_INTERVAL": "86400000"}) // its own cycle stays out of the way
		ctx := context.Background()
		db, err := pgxpool.New(ctx, br.DB)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		retentionFill(b, db)
		store, err := postgres.Open(ctx, br.DB, postgres.Options{PoolSize: 4})
		if err != nil {
			b.Fatal(err)
		}
		defer store.Close()
		settle(b, br.DB)

		pushes := newFusionLoad(b, br.URL, 16, 100, live)
		pushes.run(-1, 2*time.Second) // warm-up: the live queue's partitions exist
		var push, pop [2]loadResult   // [0] without, [1] with
		var removed int64
		for r := range rounds {
			for _, with := range []int{r % 2, 1 - r%2} {
				var job *retention.Job
				if with == 1 {
					job = retention.New(store, retention.Options{Interval: time.Second})
					job.Start()
				}
				push[with] = push[with].plus(pushes.run(2*r+with, d))
				pop[with] = pop[with].plus(retentionPopAck(b, br.URL, live, d))
				if job != nil {
					job.Stop()
					st := job.Stats()
					removed += st.Messages
					b.Logf("round %d: retention removed %d messages (%d segment and %d hash rows) in %d cycles",
						r, st.Messages, st.Segments, st.HashRows, st.Cycles)
				}
			}
		}
		left := retentionLeft(b, db)
		pushRatio, popRatio := push[1].rate()/push[0].rate(), pop[1].rate()/pop[0].rate()
		b.Logf("push %.0f msgs/s with retention, %.0f without: %.3fx; pop+ack %.0f with, %.0f without: %.3fx; "+
			"retention removed %d expired messages while measured, %d left", push[1].rate(), push[0].rate(), pushRatio,
			pop[1].rate(), pop[0].rate(), popRatio, removed, left)
		if left == 0 {
			b.Log("the expired backlog ran out during the run: the last with-phases had less to remove")
		}
		b.ReportMetric(pushRatio, "push-with/without")
		b.ReportMetric(popRatio, "popack-with/without")
		b.ReportMetric(float64(removed), "removed-msgs")
	}
}

// retentionFill writes the expired queue straight into the tables (pushing a million
// messages through the broker would take minutes): segments with a 300-byte blob that
// nobody decodes (150 bytes, about what two small JSON messages compress to), and their
// hash rows.
func retentionFill(b *testing.B, db *pgxpool.Pool) {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	for _, q := range []string{
		`INSERT INTO queen.queues (name, configured, retention_enabled, retention_seconds)
		 VALUES ('bench-expired', true, true, 60)`,
		`INSERT INTO queen.log_partitions (queue_id, name, last_offset, last_write_at)
		 SELECT q.id, 'p' || i, 9999, now() - interval '2 hours'
		   FROM queen.queues q, generate_series(0, 99) i WHERE q.name = 'bench-expired'`,
		`INSERT INTO queen.log_segments (partition_id, base_offset, msg_count, created_at, blob)
		 SELECT lp.id, s * 2, 2, now() - interval '2 hours', decode(repeat('ab', 150), 'hex')
		   FROM queen.log_partitions lp JOIN queen.queues q ON q.id = lp.queue_id, generate_series(0, 4999) s
		  WHERE q.name = 'bench-expired'`,
		`INSERT INTO queen.log_txns (partition_id, end_offset, base_offset, created_at, hashes)
		 SELECT lp.id, s * 2 + 1, s * 2, now() - interval '2 hours', decode(repeat(md5(lp.id::text || s), 2), 'hex')
		   FROM queen.log_partitions lp JOIN queen.queues q ON q.id = lp.queue_id, generate_series(0, 4999) s
		  WHERE q.name = 'bench-expired'`,
		`VACUUM ANALYZE queen.log_segments`,
		`VACUUM ANALYZE queen.log_txns`,
	} {
		if _, err := db.Exec(ctx, q); err != nil {
			b.Fatalf("fill: %v\n%s", err, q)
		}
	}
	b.Logf("filled 1,000,000 expired messages (500,000 segments) in %v", time.Since(start).Round(time.Millisecond))
}

// retentionLeft counts the expired queue's messages still retained.
func retentionLeft(b *testing.B, db *pgxpool.Pool) int64 {
	b.Helper()
	var n int64
	if err := db.QueryRow(context.Background(), `SELECT coalesce(sum(greatest(lp.last_offset - lp.log_start + 1, 0)), 0)::bigint
		FROM queen.log_partitions lp JOIN queen.queues q ON q.id = lp.queue_id WHERE q.name = 'bench-expired'`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

// retentionPopAck consumes queue for d with 8 consumers (batch 100, each batch acked).
func retentionPopAck(b *testing.B, url, queue string, d time.Duration) loadResult {
	b.Helper()
	const consumers = 8
	path := "/api/v1/pop/queue/" + queue + "?batch=100"
	clients := make([]*rawClient, consumers)
	bufs := make([][]byte, consumers)
	for i := range clients {
		clients[i] = newRawClient(url)
		defer clients[i].close()
	}
	var firstErr atomic.Pointer[error]
	res := runLoad(consumers, d, func(w, _ int) (int, error) {
		n, _, _, err := popAndAck(clients[w], &bufs[w], path, nil)
		if err != nil {
			firstErr.CompareAndSwap(nil, &err)
		}
		return n, err
	})
	if err := firstErr.Load(); err != nil {
		b.Errorf("pop+ack: %v", *err)
	}
	return res
}

package queen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
)

const benchPartitions = 1000

// benchPayload is a typical small JSON message (~110 bytes).
func benchPayload(i int) string {
	return fmt.Sprintf(`{"orderId":%d,"customer":"cust-%04d","total":4200,"currency":"EUR","note":"benchmark payload"}`, i, i%10000)
}

// baseline measures plain INSERTs of batch rows per transaction into the same PostgreSQL,
// at the same concurrency: what a one-transaction-per-request design can do at best.
func baseline(b *testing.B, url string, workers, batch int, d time.Duration) loadResult {
	b.Helper()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = int32(workers)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	table := fmt.Sprintf("baseline_%d_%d", batch, time.Now().UnixNano())
	if _, err := pool.Exec(ctx, `CREATE TABLE `+table+` (id bigserial PRIMARY KEY, partition text NOT NULL,
		txn text NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), payload text NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	// Open every connection before the clock starts: the broker's pool is warm too.
	conns := make([]*pgxpool.Conn, workers)
	for i := range conns {
		if conns[i], err = pool.Acquire(ctx); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range conns {
		c.Release()
	}
	if batch == 1 {
		// One row: a plain VALUES insert, about 5% faster for PostgreSQL than unnest of
		// one-element arrays (measured), so the baseline is the best one row can do.
		insert := `INSERT INTO ` + table + ` (partition, txn, payload) VALUES ($1, $2, $3)`
		return runLoad(workers, d, func(w, seq int) (int, error) {
			_, err := pool.Exec(ctx, insert, fmt.Sprint("p", rand.IntN(benchPartitions)),
				fmt.Sprintf("w%d-s%d-i0", w, seq), benchPayload(seq))
			return 1, err
		})
	}
	insert := `INSERT INTO ` + table + ` (partition, txn, payload) SELECT * FROM unnest($1::text[], $2::text[], $3::text[])`
	return runLoad(workers, d, func(w, seq int) (int, error) {
		parts, txns, payloads := make([]string, batch), make([]string, batch), make([]string, batch)
		p := fmt.Sprint("p", rand.IntN(benchPartitions))
		for i := range batch {
			parts[i] = p
			txns[i] = fmt.Sprintf("w%d-s%d-i%d", w, seq, i)
			payloads[i] = benchPayload(seq*batch + i)
		}
		_, err := pool.Exec(ctx, insert, parts, txns, payloads)
		return batch, err
	})
}

// fusionLoad pushes batch items per request over HTTP from workers connections.
func fusionLoad(a *testApp, workers, batch int, d time.Duration, queue string) loadResult {
	clients := make([]*rawClient, workers)
	for i := range clients {
		clients[i] = newRawClient(a)
	}
	defer func() {
		for _, c := range clients {
			c.close()
		}
	}()
	bodies := make([][]byte, workers)
	return runLoad(workers, d, func(w, seq int) (int, error) {
		body := append(bodies[w][:0], `{"items":[`...)
		// Batched requests keep one partition per request, as producers usually do.
		p := rand.IntN(benchPartitions)
		for i := range batch {
			if i > 0 {
				body = append(body, ',')
			}
			body = fmt.Appendf(body, `{"queue":%q,"partition":"p%d","transactionId":"w%d-s%d-i%d","payload":%s}`,
				queue, p, w, seq, i, benchPayload(seq*batch+i))
		}
		body = append(body, `]}`...)
		bodies[w] = body
		code, err := clients[w].post("/api/v1/push", body)
		if err != nil {
			return 0, err
		}
		if code != http.StatusCreated {
			return 0, fmt.Errorf("status %d", code)
		}
		return batch, nil
	})
}

// BenchmarkPushFusion compares push fusion with plain inserts into the same PostgreSQL,
// measured in the same run (the baseline half before, half after the fusion phase): 64 concurrent single-message requests over 1000 partitions,
// then 16 connections pushing 100 items per request. Run with -benchtime 1x; each phase
// lasts QUEEN_BENCH_SECONDS (10 s).
func BenchmarkPushFusion(b *testing.B) {
	d := benchDuration()
	for _, sc := range []struct {
		name           string
		workers, batch int
	}{
		{"single-64conns", 64, 1},
		{"batch100-16conns", 16, 100},
	} {
		b.Run(sc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				env := map[string]string{"DB_POOL_SIZE": "80"}
				for _, k := range []string{"QUEEN_SEG_PUSH_INIT", "QUEEN_SEG_PUSH_MIN", "QUEEN_SEG_PUSH_MAX", "QUEEN_V2_BUNDLE_MAX", "QUEEN_V2_FUSION_SHARDS"} {
					if v := os.Getenv(k); v != "" {
						env[k] = v
					}
				}
				a := startApp(b, env)
				// The baseline runs half before and half after the fusion phase, so drift
				// of this noisy machine during the run weighs on both sides alike.
				baseDB := pgtest.NewDatabase(b)
				settle(b, baseDB)
				base1 := baseline(b, baseDB, sc.workers, sc.batch, d/2)
				settle(b, baseDB)
				before := a.Batcher.Stats()
				fused := fusionLoad(a, sc.workers, sc.batch, d, "bench-"+sc.name)
				after := a.Batcher.Stats()
				settle(b, baseDB)
				base2 := baseline(b, baseDB, sc.workers, sc.batch, d/2)
				base := base1.plus(base2)
				b.Logf("%s: baseline halves %.0f and %.0f msgs/s", sc.name, base1.rate(), base2.rate())
				commits := float64(after.Commits - before.Commits)
				segs := float64(after.Segments - before.Segments)
				b.ReportMetric(fused.rate(), "msgs/s")
				b.ReportMetric(base.rate(), "baseline-msgs/s")
				b.ReportMetric(fused.rate()/base.rate(), "x-baseline")
				b.ReportMetric(segs/commits, "segments/commit")
				b.ReportMetric(float64(after.Frames-before.Frames)/commits, "msgs/commit")
				b.Logf("%s: fusion %.0f msgs/s (%d errors, cpu %.0f%%), baseline %.0f msgs/s (%d errors, cpu %.0f%%): %.2fx; %.0f commits, %.2f segments/commit, push limit %d",
					sc.name, fused.rate(), fused.errors, 100*fused.cpuBusy, base.rate(), base.errors, 100*base.cpuBusy,
					fused.rate()/base.rate(), commits, segs/commits, a.Limit())
				if fused.errors > 0 || base.errors > 0 {
					b.Errorf("errors during the run: fusion %d, baseline %d", fused.errors, base.errors)
				}
			}
		})
	}
}

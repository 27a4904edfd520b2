package broker

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
)

// benchHistory is how many single-message segments per partition the restart benchmark
// writes before it restarts the broker (QUEEN_BENCH_HISTORY, default 300).
func benchHistory() int {
	if n, err := strconv.Atoi(os.Getenv("QUEEN_BENCH_HISTORY")); err == nil && n > 0 {
		return n
	}
	return 300
}

// BenchmarkPushAfterRestart measures what a restart costs pushes. A broker writes
// QUEEN_BENCH_HISTORY single-message segments into each of 1000 partitions (inside the
// default 1 h dedup window), measures its steady single-message push rate (64 clients),
// and stops; a new broker on the same database then takes the same load for
// QUEEN_BENCH_SECONDS, one-second slices logged. The new broker's dedup cache is empty,
// so until it has read each partition's recent history back (warm.go), every push to it
// makes PostgreSQL probe the partition's whole window. Reported: the steady rate, the
// rate in the first second and over the whole phase, and the seconds until a slice
// reaches half the steady rate.
func BenchmarkPushAfterRestart(b *testing.B) {
	const queue = "bench-restart"
	history, secs := benchHistory(), int(benchDuration().Seconds())
	env := map[string]string{"DB_POOL_SIZE": "80"}
	b.ReportAllocs()
	for b.Loop() {
		db := pgtest.NewDatabase(b)
		first := startBrokerOn(b, db, env)
		fillHistory(b, first, queue, history)
		fl := newFusionLoad(b, first.URL, 64, 1, queue)
		fl.run(-1, 3*time.Second)
		steady := fl.run(-2, 5*time.Second).rate()
		if err := first.stop(); err != nil {
			b.Fatal(err)
		}
		second := startBrokerOn(b, db, env)
		sl := newFusionLoad(b, second.URL, 64, 1, queue)
		var total loadResult
		recovered := -1
		rates := make([]string, secs)
		for s := range secs {
			r := sl.run(100+s, time.Second)
			if r.errors > 0 {
				b.Errorf("second %d after the restart: %d errors", s+1, r.errors)
			}
			total = total.plus(r)
			rates[s] = fmt.Sprintf("%.0f", r.rate())
			if recovered < 0 && r.rate() >= steady/2 {
				recovered = s + 1
			}
			if s == 0 {
				b.ReportMetric(r.rate(), "first-second-msgs/s")
			}
		}
		b.ReportMetric(steady, "steady-msgs/s")
		b.ReportMetric(total.rate(), "after-restart-msgs/s")
		if recovered < 0 {
			recovered = secs + 1 // not within the phase
		}
		b.ReportMetric(float64(recovered), "recovery-s")
		b.Logf("%d segments per partition: steady %.0f msgs/s; after the restart, per second: %s msgs/s (%.0f on average); half the steady rate in the slice ending at %d s",
			history, steady, strings.Join(rates, " "), total.rate(), recovered)
	}
}

// fillHistory writes history single-message segments into each of benchPartitions
// partitions of queue: 16 clients, each request one message to each of 50 partitions.
func fillHistory(b *testing.B, a *broker, queue string, history int) {
	b.Helper()
	const perRequest = 50
	requests := benchPartitions / perRequest * history
	clients := make([]*rawClient, 16)
	for i := range clients {
		clients[i] = newRawClient(a.URL)
	}
	defer func() {
		for _, c := range clients {
			c.close()
		}
	}()
	var next atomic.Int64
	res := runLoad(len(clients), time.Hour, func(w, _ int) (int, error) {
		n := int(next.Add(1) - 1)
		if n >= requests {
			return 0, errLoadDone
		}
		first := n % (benchPartitions / perRequest) * perRequest
		body := []byte(`{"items":[`)
		for i := range perRequest {
			if i > 0 {
				body = append(body, ',')
			}
			body = fmt.Appendf(body, `{"queue":%q,"partition":"p%d","transactionId":"h%d-%d","payload":%s}`,
				queue, first+i, n, i, benchPayload(n))
		}
		body = append(body, `]}`...)
		return perRequest, clients[w].push(body)
	})
	if res.errors > 0 {
		b.Fatalf("filling the history: %d errors", res.errors)
	}
	b.Logf("history: %d messages in %.1f s", res.msgs, res.elapsed.Seconds())
}

package queen

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/bench/load"
)

// Helpers shared by the broker benchmarks (bench_test.go, bench_consume_test.go).

// benchDuration is how long each measured phase runs (QUEEN_BENCH_SECONDS, default 10).
func benchDuration() time.Duration {
	if s, err := strconv.Atoi(os.Getenv("QUEEN_BENCH_SECONDS")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 10 * time.Second
}

// loadResult is what one measured phase observed.
type loadResult struct {
	msgs, requests, errors int64
	elapsed                time.Duration
	cpuBusy                float64 // fraction of all cores busy during the phase (from /proc/stat)
}

// cpuTimes reads the machine's busy and total jiffies.
func cpuTimes() (busy, total float64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	var user, nice, system, idle, iowait, irq, softirq, steal float64
	fmt.Sscanf(string(b), "cpu %f %f %f %f %f %f %f %f", &user, &nice, &system, &idle, &iowait, &irq, &softirq, &steal)
	busy = user + nice + system + irq + softirq + steal
	return busy, busy + idle + iowait
}

func (r loadResult) rate() float64 { return float64(r.msgs) / r.elapsed.Seconds() }

// plus combines two phases of the same kind, weighting CPU use by duration.
func (r loadResult) plus(o loadResult) loadResult {
	total := r.elapsed + o.elapsed
	return loadResult{
		msgs: r.msgs + o.msgs, requests: r.requests + o.requests, errors: r.errors + o.errors,
		elapsed: total,
		cpuBusy: (r.cpuBusy*r.elapsed.Seconds() + o.cpuBusy*o.elapsed.Seconds()) / total.Seconds(),
	}
}

// errLoadDone, returned by a load operation, ends its worker early without counting an
// error (the work ran out).
var errLoadDone = errors.New("load done")

// runLoad runs workers until d elapses or every worker is done; each call of op sends
// one request and reports how many messages it carried.
func runLoad(workers int, d time.Duration, op func(worker, seq int) (int, error)) loadResult {
	var msgs, reqs, errs atomic.Int64
	busy0, total0 := cpuTimes()
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for seq := 0; time.Now().Before(deadline); seq++ {
				n, err := op(w, seq)
				if errors.Is(err, errLoadDone) {
					return
				}
				if err != nil {
					errs.Add(1)
					continue
				}
				reqs.Add(1)
				msgs.Add(int64(n))
			}
		})
	}
	wg.Wait()
	busy1, total1 := cpuTimes()
	return loadResult{msgs: msgs.Load(), requests: reqs.Load(), errors: errs.Load(), elapsed: time.Since(start),
		cpuBusy: (busy1 - busy0) / max(total1-total0, 1)}
}

// rawClient is the load tool's minimal keep-alive HTTP/1.1 client (bench/load.Client):
// net/http's client costs more CPU per request than the broker's whole push path, and on
// a 2-core machine the load generator's CPU is taken from the system under test. One
// goroutine sends requests; close may be called from any goroutine to end a parked one.
type rawClient struct{ *load.Client }

func newRawClient(a *testApp) *rawClient {
	c, err := load.NewClient(a.URL, 0)
	if err != nil {
		panic(err) // a.URL is the test broker's own http:// address
	}
	return &rawClient{c}
}

// post sends one POST and returns the status code.
func (c *rawClient) post(path string, body []byte) (int, error) {
	code, _, err := c.Do("POST", path, body)
	return code, err
}

// do sends one request and returns the status code and the response body, valid until
// the next call.
func (c *rawClient) do(method, path string, body []byte) (int, []byte, error) {
	return c.Do(method, path, body)
}

// close ends a request in flight and refuses further requests.
func (c *rawClient) close() { c.Abort() }

// settle lets the background work of the previous phase (checkpoint, autovacuum) finish
// so that it does not weigh on the next one.
func settle(b *testing.B, url string) {
	b.Helper()
	ctx := context.Background()
	conn, err := pgxpool.New(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
		b.Fatal(err)
	}
	time.Sleep(2 * time.Second)
}

// percentile returns the p-quantile (0..1) of sorted durations, in milliseconds.
func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := min(int(p*float64(len(sorted))), len(sorted)-1)
	return float64(sorted[i]) / float64(time.Millisecond)
}

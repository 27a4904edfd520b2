package queen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
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
	cpuSec                 float64 // CPU time the whole machine spent during the phase, s
	goSec                  float64 // of which this process (load generator and broker), s
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

// clockTicks is USER_HZ, the unit of /proc/stat (100 on every Linux the tests run on).
const clockTicks = 100

// processCPU is the CPU time this process has used, user and system, in seconds.
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// cpuPerMsg is the machine's CPU time per message in µs, and this process's part of it.
func (r loadResult) cpuPerMsg() (machine, goProc float64) {
	if r.msgs == 0 {
		return 0, 0
	}
	return 1e6 * r.cpuSec / float64(r.msgs), 1e6 * r.goSec / float64(r.msgs)
}

func (r loadResult) rate() float64 { return float64(r.msgs) / r.elapsed.Seconds() }

// plus combines two phases of the same kind, weighting CPU use by duration.
func (r loadResult) plus(o loadResult) loadResult {
	total := r.elapsed + o.elapsed
	return loadResult{
		msgs: r.msgs + o.msgs, requests: r.requests + o.requests, errors: r.errors + o.errors,
		elapsed: total,
		cpuBusy: (r.cpuBusy*r.elapsed.Seconds() + o.cpuBusy*o.elapsed.Seconds()) / total.Seconds(),
		cpuSec:  r.cpuSec + o.cpuSec, goSec: r.goSec + o.goSec,
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
	go0 := processCPU()
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
		cpuBusy: (busy1 - busy0) / max(total1-total0, 1),
		cpuSec:  (busy1 - busy0) / clockTicks, goSec: processCPU() - go0}
}

// rawClient is the load tool's minimal keep-alive HTTP/1.1 client (bench/load.Client):
// net/http's client costs more CPU per request than the broker's whole push path, and on
// a 2-core machine the load generator's CPU is taken from the system under test. One
// goroutine sends requests; close may be called from any goroutine to end a parked one.
type rawClient struct{ *load.Client }

func newRawClient(url string) *rawClient {
	c, err := load.NewClient(url, 0)
	if err != nil {
		panic(err) // url is a test server's own http:// address
	}
	return &rawClient{c}
}

// post sends one POST and returns the status code.
func (c *rawClient) post(path string, body []byte) (int, error) {
	code, _, err := c.Do("POST", path, body)
	return code, err
}

// push sends one push request and fails unless it was answered 201.
func (c *rawClient) push(body []byte) error {
	code, err := c.post("/api/v1/push", body)
	if err == nil && code != http.StatusCreated {
		err = fmt.Errorf("status %d", code)
	}
	return err
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

// httpFloor is the push benchmark's reference for the HTTP layer alone: net/http, set up
// as the broker's server is, with a push handler that reads the body, waits for a
// simulated bundle commit (a ticker wakes every waiting handler at once, as a commit
// does) and answers 201 with a result of the broker's size. Nothing else: no parsing, no
// database. Its CPU per request under the push benchmark's load generator is what any
// net/http broker pays before doing any work.
type httpFloor struct {
	srv  *httptest.Server
	stop chan struct{}
}

// floorCycle is the simulated commit period, close to fusion's on this machine (3 ms).
const floorCycle = 3 * time.Millisecond

func newHTTPFloor(b *testing.B) *httpFloor {
	f := &httpFloor{stop: make(chan struct{})}
	var mu sync.Mutex
	bundle := make(chan struct{})
	go func() {
		t := time.NewTicker(floorCycle)
		defer t.Stop()
		for {
			select {
			case <-f.stop:
				// Release the waiting handlers, and let later ones through at once:
				// the server's Close waits for every handler to return.
				mu.Lock()
				close(bundle)
				bundle = f.stop
				mu.Unlock()
				return
			case <-t.C:
				mu.Lock()
				close(bundle)
				bundle = make(chan struct{})
				mu.Unlock()
			}
		}
	}()
	answer := []byte(`[{"index":0,"transactionId":"r0-w0-s0-i0","status":"queued","messageId":"019ad4a1-6c2e-7b3a-9f1d-2c4e6a8b0d1f","partitionId":"019ad4a1-6c2e-7b3a-9f1d-2c4e6a8b0d20","queueName":"bench-single-64conns"}]`)
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		wait := bundle
		mu.Unlock()
		<-wait
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write(answer)
	}))
	f.srv.Config.ReadHeaderTimeout, f.srv.Config.IdleTimeout = 10*time.Second, 2*time.Minute
	f.srv.Start()
	b.Cleanup(func() {
		close(f.stop)
		f.srv.Close()
	})
	return f
}

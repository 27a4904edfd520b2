package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
	"github.com/queen-go/queen/bench/load"
	"github.com/queen-go/queen/internal/brokertest"
)

// TestMain runs the benchmarks, stops the throwaway PostgreSQL cluster and fails the run
// when a goroutine is left behind.
func TestMain(m *testing.M) {
	pgtest.Main(m)
}

// broker is one queen-go broker, built and started as queen-server does, serving on a
// loopback port.
type broker struct {
	URL string // http://127.0.0.1:port
	DB  string // its database

	srv *brokertest.Broker
}

// startBroker starts a broker on a fresh database; env adds configuration variables.
func startBroker(b testing.TB, env map[string]string) *broker {
	b.Helper()
	return startBrokerOn(b, pgtest.NewDatabase(b), env)
}

// startBrokerOn starts a broker on database db (which may have been another broker's),
// with a spool directory of its own; it is stopped at the benchmark's cleanup.
func startBrokerOn(b testing.TB, db string, env map[string]string) *broker {
	b.Helper()
	vars := map[string]string{"QUEEN_PG_URL": db, "PORT": "0", "QUEEN_BIND_ADDR": "127.0.0.1",
		"DB_POOL_SIZE": "40", "LOG_LEVEL": "warn", "FILE_BUFFER_DIR": filepath.Join(b.TempDir(), "spool")}
	maps.Copy(vars, env)
	srv, err := brokertest.Start(vars, nil, 2*time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	br := &broker{URL: srv.URL, DB: db, srv: srv}
	b.Cleanup(func() {
		if err := br.stop(); err != nil {
			b.Errorf("stop the broker: %v", err)
		}
	})
	return br
}

// stop shuts the broker down gracefully and releases what it opened; the same error on
// every call.
func (br *broker) stop() error { return br.srv.Stop(time.Minute) }

// scrape reads one sample of the broker's /metrics/prometheus (name with its labels).
func (br *broker) scrape(b testing.TB, sample string) float64 {
	b.Helper()
	c := newRawClient(br.URL)
	defer c.close()
	v, ok := c.Scrape(sample)
	if !ok {
		b.Fatalf("no sample %s in /metrics/prometheus", sample)
	}
	return v
}

// fusionStats are push fusion's counters as the broker exports them.
type fusionStats struct{ commits, segments, frames float64 }

func (br *broker) fusion(b testing.TB) fusionStats {
	b.Helper()
	return fusionStats{commits: br.scrape(b, "queen_fusion_commits_total"),
		segments: br.scrape(b, "queen_fusion_segments_total"),
		frames:   br.scrape(b, `queen_batch_items_fired_total{op="push"}`)}
}

// pushLimit is the adaptive push concurrency limit now.
func (br *broker) pushLimit(b testing.TB) float64 {
	return br.scrape(b, `queen_admission_budget{lane="push"}`)
}

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

// clockTicks is USER_HZ, the unit of /proc/stat (100 on every Linux the benchmarks run on).
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
	pause(2 * time.Second)
}

// pause lets d pass: benchmarks space their phases so that one's background work does
// not weigh on the next.
func pause(d time.Duration) { time.Sleep(d) }

// percentile returns the p-quantile (0..1) of sorted durations, in milliseconds.
func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := min(int(p*float64(len(sorted))), len(sorted)-1)
	return float64(sorted[i]) / float64(time.Millisecond)
}

const benchPartitions = 1000

// benchPayload is a typical small JSON message (~110 bytes).
func benchPayload(i int) string {
	return fmt.Sprintf(`{"orderId":%d,"customer":"cust-%04d","total":4200,"currency":"EUR","note":"benchmark payload"}`, i, i%10000)
}

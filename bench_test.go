package queen

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
)

// benchDuration is how long each measured phase runs (QUEEN_BENCH_SECONDS, default 10).
func benchDuration() time.Duration {
	if s, err := strconv.Atoi(os.Getenv("QUEEN_BENCH_SECONDS")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 10 * time.Second
}

const benchPartitions = 1000

// benchPayload is a typical small JSON message (~110 bytes).
func benchPayload(i int) string {
	return fmt.Sprintf(`{"orderId":%d,"customer":"cust-%04d","total":4200,"currency":"EUR","note":"benchmark payload"}`, i, i%10000)
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

// runLoad runs workers until d elapses; each call of op sends one request of batch
// messages and reports success.
func runLoad(workers, batch int, d time.Duration, op func(worker, seq int) error) loadResult {
	var msgs, reqs, errs atomic.Int64
	busy0, total0 := cpuTimes()
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for seq := 0; time.Now().Before(deadline); seq++ {
				if err := op(w, seq); err != nil {
					errs.Add(1)
					continue
				}
				reqs.Add(1)
				msgs.Add(int64(batch))
			}
		})
	}
	wg.Wait()
	busy1, total1 := cpuTimes()
	return loadResult{msgs: msgs.Load(), requests: reqs.Load(), errors: errs.Load(), elapsed: time.Since(start),
		cpuBusy: (busy1 - busy0) / max(total1-total0, 1)}
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
	insert := `INSERT INTO ` + table + ` (partition, txn, payload) SELECT * FROM unnest($1::text[], $2::text[], $3::text[])`
	return runLoad(workers, batch, d, func(w, seq int) error {
		parts, txns, payloads := make([]string, batch), make([]string, batch), make([]string, batch)
		p := fmt.Sprint("p", rand.IntN(benchPartitions))
		for i := range batch {
			parts[i] = p
			txns[i] = fmt.Sprintf("w%d-s%d-i%d", w, seq, i)
			payloads[i] = benchPayload(seq*batch + i)
		}
		_, err := pool.Exec(ctx, insert, parts, txns, payloads)
		return err
	})
}

// rawClient is a minimal keep-alive HTTP/1.1 client for the load generator: net/http's
// client costs more CPU per request than the broker's whole push path, and on a 2-core
// machine the load generator's CPU is taken from the system under test.
type rawClient struct {
	addr string
	conn net.Conn
	br   *bufio.Reader
	buf  []byte
}

// post sends one request and returns the status code; the body is read and dropped.
func (c *rawClient) post(path string, body []byte) (int, error) {
	if c.conn == nil {
		conn, err := net.Dial("tcp", c.addr)
		if err != nil {
			return 0, err
		}
		c.conn, c.br = conn, bufio.NewReaderSize(conn, 16<<10)
	}
	c.buf = fmt.Appendf(c.buf[:0], "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, c.addr, len(body))
	c.buf = append(c.buf, body...)
	code, err := c.roundTrip()
	if err != nil {
		c.conn.Close()
		c.conn = nil
	}
	return code, err
}

func (c *rawClient) roundTrip() (int, error) {
	if _, err := c.conn.Write(c.buf); err != nil {
		return 0, err
	}
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	var code int
	if _, err := fmt.Sscanf(string(line), "HTTP/1.1 %d", &code); err != nil {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	length := -1
	for {
		h, err := c.br.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if len(h) <= 2 {
			break
		}
		if k, v, ok := strings.Cut(string(h), ":"); ok && strings.EqualFold(k, "Content-Length") {
			length, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if length < 0 {
		return 0, fmt.Errorf("response without Content-Length")
	}
	_, err = c.br.Discard(length)
	return code, err
}

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

// fusionLoad pushes batch items per request over HTTP from workers connections.
func fusionLoad(a *testApp, workers, batch int, d time.Duration, queue string) loadResult {
	clients := make([]*rawClient, workers)
	for i := range clients {
		clients[i] = &rawClient{addr: strings.TrimPrefix(a.URL, "http://")}
	}
	defer func() {
		for _, c := range clients {
			if c.conn != nil {
				c.conn.Close()
			}
		}
	}()
	bodies := make([][]byte, workers)
	return runLoad(workers, batch, d, func(w, seq int) error {
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
			return err
		}
		if code != http.StatusCreated {
			return fmt.Errorf("status %d", code)
		}
		return nil
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

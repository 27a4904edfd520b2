package broker

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
)

// baseline runs plain INSERTs of batch rows per transaction into the same PostgreSQL, at
// the same concurrency: what a one-transaction-per-request design can do at best.
type baseline struct {
	pool           *pgxpool.Pool
	insert         string
	workers, batch int
}

// newBaseline creates the baseline's table and opens its connections (the broker's pool
// is warm too).
func newBaseline(b *testing.B, url string, workers, batch int) *baseline {
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
	b.Cleanup(pool.Close)
	table := fmt.Sprintf("baseline_%d_%d", batch, time.Now().UnixNano())
	if _, err := pool.Exec(ctx, `CREATE TABLE `+table+` (id bigserial PRIMARY KEY, partition text NOT NULL,
		txn text NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), payload text NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	conns := make([]*pgxpool.Conn, workers)
	for i := range conns {
		if conns[i], err = pool.Acquire(ctx); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range conns {
		c.Release()
	}
	// One row: a plain VALUES insert, about 5% faster for PostgreSQL than unnest of
	// one-element arrays (measured), so the baseline is the best one row can do.
	insert := `INSERT INTO ` + table + ` (partition, txn, payload) VALUES ($1, $2, $3)`
	if batch > 1 {
		insert = `INSERT INTO ` + table + ` (partition, txn, payload) SELECT * FROM unnest($1::text[], $2::text[], $3::text[])`
	}
	return &baseline{pool: pool, insert: insert, workers: workers, batch: batch}
}

// run inserts for d; seq numbers continue from earlier runs through round.
func (bl *baseline) run(round int, d time.Duration) loadResult {
	ctx := context.Background()
	if bl.batch == 1 {
		return runLoad(bl.workers, d, func(w, seq int) (int, error) {
			_, err := bl.pool.Exec(ctx, bl.insert, fmt.Sprint("p", rand.IntN(benchPartitions)),
				fmt.Sprintf("r%d-w%d-s%d-i0", round, w, seq), benchPayload(seq))
			return 1, err
		})
	}
	return runLoad(bl.workers, d, func(w, seq int) (int, error) {
		parts, txns, payloads := make([]string, bl.batch), make([]string, bl.batch), make([]string, bl.batch)
		p := fmt.Sprint("p", rand.IntN(benchPartitions))
		for i := range bl.batch {
			parts[i] = p
			txns[i] = fmt.Sprintf("r%d-w%d-s%d-i%d", round, w, seq, i)
			payloads[i] = benchPayload(seq*bl.batch + i)
		}
		_, err := bl.pool.Exec(ctx, bl.insert, parts, txns, payloads)
		return bl.batch, err
	})
}

// fusionLoad pushes batch items per request over HTTP from one keep-alive connection
// per worker.
type fusionLoad struct {
	clients        []*rawClient
	bodies         [][]byte
	queue          string
	workers, batch int
}

func newFusionLoad(b *testing.B, url string, workers, batch int, queue string) *fusionLoad {
	f := &fusionLoad{clients: make([]*rawClient, workers), bodies: make([][]byte, workers),
		queue: queue, workers: workers, batch: batch}
	for i := range f.clients {
		f.clients[i] = newRawClient(url)
	}
	b.Cleanup(func() {
		for _, c := range f.clients {
			c.close()
		}
	})
	return f
}

// run pushes for d; transaction ids are unique across rounds (a repeat would be a
// duplicate, which writes nothing).
func (f *fusionLoad) run(round int, d time.Duration) loadResult {
	return runLoad(f.workers, d, func(w, seq int) (int, error) {
		body := append(f.bodies[w][:0], `{"items":[`...)
		// Batched requests keep one partition per request, as producers usually do.
		p := rand.IntN(benchPartitions)
		for i := range f.batch {
			if i > 0 {
				body = append(body, ',')
			}
			body = fmt.Appendf(body, `{"queue":%q,"partition":"p%d","transactionId":"r%d-w%d-s%d-i%d","payload":%s}`,
				f.queue, p, round, w, seq, i, benchPayload(seq*f.batch+i))
		}
		body = append(body, `]}`...)
		f.bodies[w] = body
		if err := f.clients[w].push(body); err != nil {
			return 0, err
		}
		return f.batch, nil
	})
}

// benchRounds is how many times the baseline and fusion phases alternate
// (QUEEN_BENCH_ROUNDS, default 4).
func benchRounds() int {
	if n, err := strconv.Atoi(os.Getenv("QUEEN_BENCH_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 4
}

// BenchmarkPushFusion compares push fusion with plain inserts into the same PostgreSQL,
// measured in the same run: 64 concurrent single-message requests over 1000 partitions,
// then 16 connections pushing 100 items per request. Run with -benchtime 1x. Each side
// runs QUEEN_BENCH_SECONDS (10 s) in all, in QUEEN_BENCH_ROUNDS (4) alternating slices,
// each round baseline-fusion-baseline: this machine's speed drifts by 20% and more over
// tens of seconds, and the slices make the drift weigh on both sides alike.
func BenchmarkPushFusion(b *testing.B) {
	d, rounds := benchDuration(), benchRounds()
	slice := d / time.Duration(rounds)
	const (
		gap    = 500 * time.Millisecond // between slices: the last requests' background work ends
		warmUp = 5 * time.Second
	)
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
				a := startBroker(b, env)
				baseDB := pgtest.NewDatabase(b)
				bl := newBaseline(b, baseDB, sc.workers, sc.batch)
				fl := newFusionLoad(b, a.URL, sc.workers, sc.batch, "bench-"+sc.name)
				// One checkpoint, before everything, and none between slices: right after
				// a checkpoint every page's first change writes a full-page image to the
				// WAL, and fusion changes many more distinct pages (the index leaves of
				// 1000 partitions) than the baseline's appends. A checkpoint before each
				// slice would make that cost, paid once per checkpoint cycle (5 minutes by
				// default) in production, weigh on every few seconds of fusion.
				settle(b, baseDB)
				// Both sides warm up unmeasured, on the connections they keep: measured,
				// a baseline from 64 new connections runs 12% to 38% slower for its first
				// seconds (the earlier layout of this benchmark measured it so, in two
				// cold halves, which understated it), and fusion's first pushes create
				// the 1000 partitions and fill the dedup caches.
				bl.run(-1, warmUp)
				fl.run(-1, warmUp)
				var fused, base loadResult
				var commits, segs, frames float64
				for r := range rounds {
					b1 := bl.run(2*r, slice/2)
					pause(gap)
					before := a.fusion(b)
					f := fl.run(r, slice)
					after := a.fusion(b)
					pause(gap)
					b2 := bl.run(2*r+1, slice/2)
					pause(gap)
					b.Logf("%s: round %d: baseline %.0f and %.0f msgs/s, fusion %.0f msgs/s", sc.name, r, b1.rate(), b2.rate(), f.rate())
					base, fused = base.plus(b1).plus(b2), fused.plus(f)
					commits += after.commits - before.commits
					segs += after.segments - before.segments
					frames += after.frames - before.frames
				}
				b.ReportMetric(fused.rate(), "msgs/s")
				b.ReportMetric(base.rate(), "baseline-msgs/s")
				b.ReportMetric(fused.rate()/base.rate(), "x-baseline")
				b.ReportMetric(segs/commits, "segments/commit")
				b.ReportMetric(frames/commits, "msgs/commit")
				b.Logf("%s: fusion %.0f msgs/s (%d errors, cpu %.0f%%), baseline %.0f msgs/s (%d errors, cpu %.0f%%): %.2fx; %.0f commits, %.2f segments/commit, push limit %.0f",
					sc.name, fused.rate(), fused.errors, 100*fused.cpuBusy, base.rate(), base.errors, 100*base.cpuBusy,
					fused.rate()/base.rate(), commits, segs/commits, a.pushLimit(b))
				fm, fg := fused.cpuPerMsg()
				bm, bg := base.cpuPerMsg()
				b.ReportMetric(fm, "cpu-µs/msg")
				b.ReportMetric(bm, "baseline-cpu-µs/msg")
				// The CPU budget: with every core busy, 2x the baseline's rate leaves
				// this much machine CPU per message for the broker, its load generator
				// and PostgreSQL together.
				b.Logf("%s: machine CPU per message: fusion %.0f µs (%.0f in this process: load generator and broker; %.0f outside it, mostly PostgreSQL), baseline %.0f µs (%.0f in this process); 2x the baseline with all %d cores busy allows %.0f µs",
					sc.name, fm, fg, fm-fg, bm, bg, runtime.NumCPU(), 1e6*float64(runtime.NumCPU())/(2*base.rate()))
				if sc.batch == 1 {
					// The HTTP layer's floor, measured after the rounds, on the same
					// machine: what net/http and the load generator cost per request
					// before the broker does any work.
					hl := newFusionLoad(b, newHTTPFloor(b).srv.URL, sc.workers, 1, "bench-floor")
					hl.run(-1, time.Second)
					floor := hl.run(0, slice)
					flm, flg := floor.cpuPerMsg()
					b.ReportMetric(flg, "http-floor-cpu-µs/req")
					b.Logf("%s: HTTP floor (net/http, a handler that only waits %v for a simulated commit): %.0f req/s, %.0f µs of this process's CPU per request (%.0f µs machine-wide, %d errors)",
						sc.name, floorCycle, floor.rate(), flg, flm, floor.errors)
				}
				if fused.errors > 0 || base.errors > 0 {
					b.Errorf("errors during the run: fusion %d, baseline %d", fused.errors, base.errors)
				}
			}
		})
	}
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

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/queen-go/queen/bench/load"
)

// config is one run's settings (the flags of main.go).
type config struct {
	DSN           string
	Rate          float64       // jobs per second, one per Insert
	Producers     int           // goroutines the pacer feeds
	Workers       int           // MaxWorkers of the default queue
	FetchCooldown time.Duration // River's FetchCooldown
	FetchPoll     time.Duration // River's FetchPollInterval
	Duration      time.Duration // the paced phase
	Warmup        time.Duration // jobs scheduled in the first Warmup are not measured
	PGPid         int           // the postmaster: the cluster's CPU per worked job (0: not read)
	Migrate       bool          // rivermigrate up before the run
	MaxConns      int32         // the pgx pool's size; 0: Producers + 8
	Out           io.Writer     // progress and summary
	Log           io.Writer     // River's and the migrator's warnings
}

// Drain bounds the wait for the last jobs after the paced phase, and stopTimeout the
// client's graceful stop (then running jobs are cancelled).
const (
	drainTimeout = 5 * time.Second
	stopTimeout  = 10 * time.Second
)

// pgx5Tx is the transaction type of River's pgx v5 driver.
type pgx5Tx = pgx.Tx

// latencyArgs is the job: the instant the pacer scheduled it, Unix ns.
type latencyArgs struct {
	At int64 `json:"at"`
}

func (latencyArgs) Kind() string { return "peer_latency" }

// peer is one run's state, shared by the producers and River's executors.
type peer struct {
	cfg  config
	m    *load.Meter
	from atomic.Int64 // Unix ns: jobs scheduled before it are not measured (set as the phase starts)

	measured          atomic.Int64 // inserted jobs scheduled at or after from
	lat               load.Hist    // the measured jobs' latency (the Meter keeps its own too)
	insertLat, sendLg load.Hist    // Insert round trip; scheduled instant to the Insert's start
}

// worker records each job's latency when River starts working it, and does nothing else.
type worker struct {
	river.WorkerDefaults[latencyArgs]
	p *peer
}

func (w *worker) Work(_ context.Context, job *river.Job[latencyArgs]) error {
	d := time.Since(time.Unix(0, job.Args.At))
	if job.Args.At >= w.p.from.Load() {
		w.p.m.Latency(d)
		w.p.lat.Record(d)
	}
	w.p.m.Add("worked", 1)
	return nil
}

// newPeer returns a run of cfg (not started).
func newPeer(cfg config) *peer {
	if cfg.Log == nil {
		cfg.Log = os.Stderr
	}
	if cfg.Out == nil {
		cfg.Out = os.Stdout
	}
	return &peer{cfg: cfg, m: load.NewMeter("river-latency", cfg.Out, "inserted", "worked", "errors")}
}

// run migrates and empties the database, runs the paced phase against a River client
// and returns the summary (with the CPU per worked job in Extra).
func (p *peer) run(ctx context.Context) (load.Summary, error) {
	cfg := p.cfg
	pcfg, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		return load.Summary{}, fmt.Errorf("dsn: %w", err)
	}
	pcfg.MaxConns = cfg.MaxConns
	if pcfg.MaxConns <= 0 {
		pcfg.MaxConns = int32(cfg.Producers) + 8
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return load.Summary{}, fmt.Errorf("pool: %w", err)
	}
	defer pool.Close()
	logger := slog.New(slog.NewTextHandler(cfg.Log, &slog.HandlerOptions{Level: slog.LevelWarn}))
	driver := riverpgxv5.New(pool)
	if cfg.Migrate {
		mig, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: logger})
		if err != nil {
			return load.Summary{}, fmt.Errorf("migrator: %w", err)
		}
		if _, err := mig.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
			return load.Summary{}, fmt.Errorf("migrate: %w", err)
		}
	}
	// Every run starts on an empty table: an earlier run's completed jobs would weigh on
	// this one's, and its unworked ones would be worked and counted now.
	if _, err := pool.Exec(ctx, "TRUNCATE river_job"); err != nil {
		return load.Summary{}, fmt.Errorf("empty river_job: %w", err)
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &worker{p: p})
	client, err := river.NewClient(driver, &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: cfg.Workers}},
		Workers:           workers,
		FetchCooldown:     cfg.FetchCooldown,
		FetchPollInterval: cfg.FetchPoll,
		Logger:            logger,
	})
	if err != nil {
		return load.Summary{}, fmt.Errorf("river client: %w", err)
	}
	if err := client.Start(ctx); err != nil {
		return load.Summary{}, fmt.Errorf("start river client: %w", err)
	}
	s, err := p.measure(ctx, client)
	if serr := stop(client); err == nil {
		err = serr
	}
	return s, err
}

// stop stops the client gracefully, and after stopTimeout cancels the jobs still running.
func stop(client *river.Client[pgx5Tx]) error {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	err := client.Stop(ctx)
	if err == nil {
		return nil
	}
	hctx, hcancel := context.WithTimeout(context.Background(), stopTimeout)
	defer hcancel()
	if herr := client.StopAndCancel(hctx); herr != nil {
		return fmt.Errorf("stop river client: %w", errors.Join(err, herr))
	}
	return fmt.Errorf("stop river client: graceful stop: %w", err)
}

// measure runs the paced phase and the drain between two CPU readings (the cluster's,
// with -pg-pid, and this process's: queen-bench's readings, so both sides' figures mean
// the same).
func (p *peer) measure(ctx context.Context, client *river.Client[pgx5Tx]) (load.Summary, error) {
	return load.WithCPU(load.CPUPids{PG: p.cfg.PGPid}, p.cfg.Log, "worked", func() (load.Summary, error) {
		return p.paced(ctx, client)
	})
}

// paced is the paced phase and the drain.
func (p *peer) paced(ctx context.Context, client *river.Client[pgx5Tx]) (load.Summary, error) {
	cfg, m := p.cfg, p.m
	m.Gauge("backlog", func() int64 { return max(m.Get("inserted")-m.Get("worked"), 0) })
	m.Start()
	p.from.Store(time.Now().Add(cfg.Warmup).UnixNano())
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	ticks := load.Pace(runCtx, cfg.Rate, 0)
	var wg sync.WaitGroup
	for range cfg.Producers {
		// An Insert in progress when the phase ends completes (ctx, not runCtx): a
		// dropped one would be an error River did not make.
		wg.Go(func() { p.produce(ctx, client, ticks) })
	}
	wg.Wait()
	for deadline := time.Now().Add(drainTimeout); m.Get("worked") < m.Get("inserted") && time.Now().Before(deadline) && ctx.Err() == nil; {
		time.Sleep(10 * time.Millisecond)
	}
	s := m.Stop()
	s.Extra = map[string]any{
		"insert_p50_ms": p.insertLat.Quantile(0.5), "insert_p99_ms": p.insertLat.Quantile(0.99),
		"insert_p999_ms":  p.insertLat.Quantile(0.999),
		"send_lag_p50_ms": p.sendLg.Quantile(0.5), "send_lag_p99_ms": p.sendLg.Quantile(0.99),
		"measured": p.measured.Load(), "latency_count": p.lat.Count(), "producers": cfg.Producers, "workers": cfg.Workers,
		"fetch_cooldown_ms": cfg.FetchCooldown.Seconds() * 1000, "fetch_poll_ms": cfg.FetchPoll.Seconds() * 1000,
	}
	if v := riverVersion(); v != "" {
		s.Extra["river"] = v
	}
	return s, ctx.Err()
}

// produce inserts one job per scheduled instant, carrying that instant.
func (p *peer) produce(ctx context.Context, client *river.Client[pgx5Tx], ticks <-chan time.Time) {
	for at := range ticks {
		t0 := time.Now()
		measured := at.UnixNano() >= p.from.Load()
		if measured {
			p.sendLg.Record(t0.Sub(at))
		}
		_, err := client.Insert(ctx, latencyArgs{At: at.UnixNano()}, nil)
		if measured {
			p.insertLat.Record(time.Since(t0))
		}
		if err != nil {
			p.m.Fail("insert", err)
			continue
		}
		if measured {
			p.measured.Add(1)
		}
		p.m.Add("inserted", 1)
	}
}

// riverVersion is the River module's version in this binary's build information.
func riverVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/riverqueue/river" {
			return d.Version
		}
	}
	return ""
}

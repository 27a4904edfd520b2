package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/queen-go/queen/adapters/httpapi"
	"github.com/queen-go/queen/bench/floor"
	"github.com/queen-go/queen/bench/load"
	"github.com/queen-go/queen/bench/report"
	"github.com/queen-go/queen/bench/rtt"
	"github.com/queen-go/queen/bench/verify"
)

// modeFlags are one mode's flag set and the flags every load mode shares.
type modeFlags struct {
	fs       *flag.FlagSet
	common   load.Common
	ready    time.Duration
	prof     profiles
	progress progressFlag // -progress ("" for a mode without it)
	html     string       // -report: the run's HTML report ("" none)
	out      outcome      // what the run leaves for its report
}

// load declares the flags every load mode has; d is the default measured phase.
func (m *modeFlags) load(d time.Duration) {
	m.fs.StringVar(&m.common.URL, "url", "http://localhost:6632", "broker base URL")
	m.fs.DurationVar(&m.common.Duration, "duration", d, "length of the measured phase")
	m.fs.DurationVar(&m.ready, "ready-timeout", 0, "first wait up to this long for GET /health to answer 200")
	m.fs.StringVar(&m.prof.cpuFile, "cpuprofile", "", "write the tool's own CPU profile of the run to this file")
	m.fs.StringVar(&m.prof.memFile, "memprofile", "", "write the tool's own allocation profile, at the end of the run, to this file")
	m.reportFlags()
}

// summary prints a load mode's summary (none when the run failed before it began): its
// exit code is 0 unless the run failed.
func (m *modeFlags) summary(s load.Summary, err error) (int, error) {
	if s.Mode != "" {
		s.Print(m.common.Out)
		m.out.summary = &s
	}
	return 0, err
}

// modes declare each mode's flags and return the run, called once the flags are parsed.
var modes = map[string]func(ctx context.Context, m *modeFlags) func() (int, error){
	"push": pushMode, "consume": consumeMode, "latency": latencyMode, "pipeline": pipelineMode, "verify": verifyMode,
	"prefill": prefillMode, "idle": idleMode, "rss": rssMode, "report": reportMode, "floor": floorMode,
	"soak": soakMode, "rtt": rttMode,
}

// rttMode serves (-serve) or measures (-addr) loopback round trips (bench/rtt): what
// one write and its short answer cost the writing process on this machine.
func rttMode(ctx context.Context, m *modeFlags) func() (int, error) {
	var serve, addr string
	var n, size int
	var d time.Duration
	m.fs.StringVar(&serve, "serve", "", "answer round trips at this address until interrupted or -duration ends (port 0: a free port, printed)")
	m.fs.StringVar(&addr, "addr", "", "measure round trips to the server at this address")
	m.fs.IntVar(&n, "n", 20000, "round trips to measure")
	m.fs.IntVar(&size, "size", 4096, "request size, bytes (the answer is 64 bytes)")
	m.fs.DurationVar(&d, "duration", 0, "with -serve: serve this long (0: until interrupted)")
	return func() (int, error) {
		switch {
		case serve != "" && addr == "":
			ln, err := net.Listen("tcp", serve)
			if err != nil {
				return 2, err
			}
			fmt.Fprintf(m.common.Out, "rtt: serving %s (pid %d), %d-byte requests\n", ln.Addr(), os.Getpid(), size)
			if d > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, d)
				defer cancel()
			}
			go func() { <-ctx.Done(); ln.Close() }()
			if err := rtt.Serve(ln, size); err != nil {
				return 2, err
			}
			return 0, nil
		case addr != "" && serve == "":
			r, err := rtt.Measure(addr, n, size)
			if err != nil {
				return 2, err
			}
			fmt.Fprintln(m.common.Out, "rtt:", r)
			return 0, nil
		default:
			return 2, errors.New("rtt: give either -serve ADDRESS or -addr ADDRESS")
		}
	}
}

func pushMode(ctx context.Context, m *modeFlags) func() (int, error) {
	c := load.PushConfig{}
	m.load(10 * time.Second)
	m.fs.StringVar(&c.Queue, "queue", "bench-push", "queue")
	m.fs.IntVar(&c.Conns, "conns", 64, "concurrent connections")
	m.fs.IntVar(&c.Batch, "batch", 1, "messages per request (one partition per request)")
	m.fs.IntVar(&c.Partitions, "partitions", 1000, "partitions, chosen at random per request")
	m.fs.IntVar(&c.PayloadBytes, "payload", 110, "payload size, bytes")
	m.fs.Int64Var(&c.Count, "count", 0, "stop after this many messages (0: -duration)")
	cpuFlags(m, &c.CPU)
	return func() (int, error) {
		c.Common = m.common
		return m.summary(load.RunPush(ctx, c))
	}
}

func consumeMode(ctx context.Context, m *modeFlags) func() (int, error) {
	c := load.ConsumeConfig{}
	m.load(10 * time.Second)
	m.fs.StringVar(&c.Queue, "queue", "bench-push", "queue")
	m.fs.IntVar(&c.Consumers, "consumers", 8, "concurrent consumers")
	m.fs.StringVar(&c.Group, "group", "", "consumer group (empty: queue mode)")
	m.fs.IntVar(&c.Batch, "batch", 100, "pop batch")
	m.fs.IntVar(&c.Partitions, "partitions", 1, "partitions per wildcard pop")
	m.fs.IntVar(&c.Pinned, "pinned", 0, "> 0: consumer i pops only partition p(i mod pinned)")
	m.fs.BoolVar(&c.Wait, "wait", true, "long-poll")
	m.fs.IntVar(&c.TimeoutMS, "timeout", 1000, "long-poll timeout, ms")
	m.fs.BoolVar(&c.AutoAck, "autoack", false, "autoAck pops instead of explicit acks")
	m.fs.Float64Var(&c.FailRate, "fail-rate", 0, "fraction of batches acked with one message failed")
	m.fs.Int64Var(&c.Count, "count", 0, "stop after this many messages (0: -duration)")
	cpuFlags(m, &c.CPU)
	return func() (int, error) {
		c.Common = m.common
		return m.summary(load.RunConsume(ctx, c))
	}
}

// cpuFlags declares the processes whose CPU per message a mode reports (this machine
// only; the tool's own CPU is always reported).
func cpuFlags(m *modeFlags, p *load.CPUPids) {
	m.fs.IntVar(&p.PG, "pg-pid", 0, "pid of the postmaster of the broker's PostgreSQL on this machine: the cluster's CPU per message (pg_us_per_msg)")
	m.fs.IntVar(&p.Broker, "broker-pid", 0, "pid of the broker on this machine: its CPU per message (broker_us_per_msg)")
}

func latencyMode(ctx context.Context, m *modeFlags) func() (int, error) {
	c := load.LatencyConfig{}
	m.load(10 * time.Second)
	m.fs.StringVar(&c.Queue, "queue", "bench-latency", "queue")
	m.fs.Float64Var(&c.Rate, "rate", 500, "messages per second, one per request")
	m.fs.IntVar(&c.Producers, "producers", 32, "producer connections (each pushes one message at a time: enough of them that a slow push does not delay the next scheduled ones)")
	m.fs.IntVar(&c.Partitions, "partitions", 100, "partitions")
	m.fs.IntVar(&c.Consumers, "consumers", 8, "long-poll consumers")
	m.fs.IntVar(&c.Batch, "batch", 100, "pop batch")
	m.fs.IntVar(&c.PopParts, "pop-partitions", 10, "partitions per pop")
	m.fs.IntVar(&c.TimeoutMS, "timeout", 5000, "long-poll timeout, ms (parked pops wake on commits; this only bounds an idle wait, and the run's end)")
	m.fs.DurationVar(&c.Warmup, "warmup", 2*time.Second, "messages scheduled in the first warmup are not measured (the queue, partitions and cursors are created then)")
	m.fs.StringVar(&c.PGURL, "pg-url", "", "the broker's database URL: the run's WAL flushes from pg_stat_wal (wal_syncs; wal_sync_mean_ms when track_wal_io_timing is on)")
	cpuFlags(m, &c.CPU)
	return func() (int, error) {
		c.Common = m.common
		return m.summary(load.RunLatency(ctx, c))
	}
}

func pipelineMode(ctx context.Context, m *modeFlags) func() (int, error) {
	c := load.PipelineConfig{}
	m.load(60 * time.Second)
	m.fs.StringVar(&c.Dir, "dir", "", "run directory for stage logs and produced.meta (default: a new temporary directory)")
	m.fs.StringVar(&c.Prefix, "prefix", "", "queue name prefix (default: cm-<unix time>)")
	m.fs.IntVar(&c.Entities, "entities", 100, "entities per flow (one partition each, in every queue)")
	m.fs.Float64Var(&c.Rate, "rate", 500, "ingress events per second, both flows together")
	m.fs.DurationVar(&c.Ramp, "ramp", 5*time.Second, "linear ramp before the measured phase")
	m.fs.IntVar(&c.Fanout, "fanout", 5, "consumer groups on each derived queue")
	m.fs.DurationVar(&c.WorkMin, "work-min", 10*time.Millisecond, "first-stage simulated work, lower bound")
	m.fs.DurationVar(&c.WorkMax, "work-max", 30*time.Millisecond, "first-stage simulated work, upper bound")
	m.fs.IntVar(&c.PopBatch, "pop-batch", 100, "pop batch")
	m.fs.IntVar(&c.PopParts, "pop-partitions", 10, "partitions per wildcard pop")
	m.fs.IntVar(&c.Consumers, "consumers", 2, "consumers per (queue, group)")
	m.fs.IntVar(&c.Producers, "producers", 16, "ingress connections per flow")
	m.fs.DurationVar(&c.Drain, "drain", 5*time.Second, "consumption after the cutoff, before verifying")
	m.fs.IntVar(&c.DedupWindow, "dedup-window", 300, "queues' dedupWindowSeconds")
	m.fs.IntVar(&c.CompletedRetention, "completed-retention", 300, "queues' completedRetentionSeconds")
	m.fs.IntVar(&c.LeaseTime, "lease-time", 60, "queues' leaseTime, seconds")
	return func() (int, error) {
		c.Common = m.common
		if c.Prefix == "" {
			c.Prefix = fmt.Sprintf("cm-%d", time.Now().Unix())
		}
		if c.Dir == "" {
			d, err := os.MkdirTemp("", "queen-pipeline-")
			if err != nil {
				return 2, err
			}
			c.Dir = d
		}
		fmt.Fprintf(m.common.Out, "pipeline: run directory %s, queues %s-*\n", c.Dir, c.Prefix)
		s, rep, err := load.RunPipeline(ctx, c)
		s.Print(m.common.Out)
		if s.Mode != "" {
			m.out.summary = &s
		}
		if err == nil || len(rep.Stages) > 0 {
			m.out.verdict = report.FromPipeline(rep)
		}
		return verdict(m.common.Out, rep, err)
	}
}

func verifyMode(_ context.Context, m *modeFlags) func() (int, error) {
	var dir string
	var ackErrors int64
	m.fs.StringVar(&dir, "dir", "", "run directory of an earlier pipeline run")
	m.fs.Int64Var(&ackErrors, "ack-errors", 0, "ack failures recorded during that run (order violations are then not fatal)")
	m.fs.StringVar(&m.html, "report", "", "write the verdict as a self-contained HTML report to this file too")
	return func() (int, error) {
		if dir == "" {
			return 2, errors.New("-dir is required")
		}
		rep, err := verify.Dir(dir, verify.Options{AckErrors: ackErrors})
		if err == nil {
			m.out.verdict = report.FromPipeline(rep)
		}
		return verdict(m.common.Out, rep, err)
	}
}

func prefillMode(ctx context.Context, m *modeFlags) func() (int, error) {
	c := load.PrefillConfig{}
	m.load(0)
	m.fs.Lookup("duration").Usage = "longest run (0: until every message is stored)"
	m.fs.StringVar(&c.Queue, "queue", "bench-prefill", "queue")
	m.fs.IntVar(&c.Partitions, "partitions", 10000, "partitions p0..p(N-1); message j goes to p(j mod N)")
	m.fs.Int64Var(&c.Messages, "messages", 20000, "messages in all")
	m.fs.IntVar(&c.Batch, "batch", 1000, "messages per request (consecutive partitions: one request covers min(batch, partitions) of them)")
	m.fs.IntVar(&c.Conns, "conns", 8, "concurrent connections")
	m.fs.IntVar(&c.PayloadBytes, "payload", 110, "payload size, bytes")
	return func() (int, error) {
		c.Common = m.common
		return m.summary(load.RunPrefill(ctx, c))
	}
}

func idleMode(ctx context.Context, m *modeFlags) func() (int, error) {
	c := load.IdleConfig{}
	m.load(60 * time.Second)
	m.fs.StringVar(&c.Queue, "queue", "bench-prefill", "queue (existing and drained: see docs/benchmarks.md)")
	m.fs.StringVar(&c.Group, "group", "", "consumer group (empty: queue mode)")
	m.fs.IntVar(&c.Consumers, "consumers", 50, "parked long-poll consumers")
	m.fs.IntVar(&c.Batch, "batch", 100, "pop batch")
	m.fs.IntVar(&c.PopParts, "pop-partitions", 1, "partitions per wildcard pop")
	m.fs.IntVar(&c.TimeoutMS, "timeout", 30000, "long-poll timeout, ms (a consumer polls again when it ends)")
	m.fs.DurationVar(&c.Warmup, "warmup", 10*time.Second, "parked time before the measured phase (re-check backoffs reach their cap, start-up work ends)")
	m.fs.IntVar(&c.PGPid, "pg-pid", 0, "pid of the postmaster of the broker's PostgreSQL on this machine: its CPU (and its children's) from /proc")
	m.fs.StringVar(&c.PGURL, "pg-url", "", "the broker's database URL: SQL calls from pg_stat_database (xact_commit + xact_rollback) too")
	m.fs.IntVar(&c.BrokerPid, "broker-pid", 0, "pid of the broker on this machine: its CPU from /proc when it does not export process_cpu_seconds_total, and per-second progress")
	return func() (int, error) {
		c.Common = m.common
		return m.summary(load.RunIdle(ctx, c))
	}
}

func rssMode(ctx context.Context, m *modeFlags) func() (int, error) {
	c := load.RSSConfig{}
	m.load(5 * time.Minute)
	m.fs.Lookup("duration").Usage = "longest drain (consuming every group's messages)"
	m.fs.StringVar(&c.Queue, "queue", "bench-rss", "queue (a new one: the tool pushes one message per partition)")
	m.fs.IntVar(&c.Partitions, "partitions", 100000, "partitions, one message each")
	m.fs.IntVar(&c.Groups, "groups", 1, "consumer groups (one hot-list ring each)")
	m.fs.IntVar(&c.Conns, "conns", 8, "seeding connections")
	m.fs.IntVar(&c.PushBatch, "push-batch", 1000, "seeding messages per request")
	m.fs.IntVar(&c.Consumers, "consumers", 8, "draining consumers, spread over the groups")
	m.fs.IntVar(&c.Batch, "batch", 1000, "draining pop batch")
	m.fs.IntVar(&c.PopParts, "pop-partitions", 1000, "draining partitions per pop")
	m.fs.DurationVar(&c.Settle, "settle", 60*time.Second, "longest wait for the hot-list's reseeds to read every partition")
	m.fs.DurationVar(&c.SweepWait, "sweep-wait", 130*time.Second, "wait after the drain before the last reading: more than two QUEEN_HOTLIST_IDLE_SWEEP_MS")
	m.fs.BoolVar(&c.Flush, "flush", true, "after the drain, whenever the hot-list shows partitions ready, pop without waiting until it has none (stale entries keep a ring from being swept)")
	m.fs.DurationVar(&c.GCWait, "gc-wait", 130*time.Second, "then wait up to this long for the broker's next garbage collection, and read again (0: do not); an idle Go program collects at least every 2 minutes")
	m.fs.IntVar(&c.BrokerPid, "broker-pid", 0, "pid of the broker on this machine: its RSS from /proc when it does not export process_resident_memory_bytes")
	return func() (int, error) {
		c.Common = m.common
		return m.summary(load.RunRSS(ctx, c))
	}
}

func reportMode(_ context.Context, m *modeFlags) func() (int, error) {
	var file, html string
	m.fs.StringVar(&file, "file", "", "result lines of a side-by-side run ({scenario, step, round, hotlist, summary} per line; - = stdin)")
	m.fs.StringVar(&html, "report", "", "also write an HTML page of every run in -file to this file; -file may then hold JSON summary "+
		"lines as the modes print them (a run's saved output: other lines are skipped)")
	return func() (int, error) {
		if file == "" {
			return 2, errors.New("-file is required")
		}
		in := io.Reader(os.Stdin)
		if file != "-" {
			f, err := os.Open(file)
			if err != nil {
				return 2, err
			}
			defer f.Close()
			in = f
		}
		if html != "" {
			return reportHTML(m.common.Out, in, file, html)
		}
		res, err := load.ReadResults(in)
		if err != nil {
			return 2, err
		}
		return 0, load.Report(m.common.Out, res)
	}
}

// floorMode serves the HTTP floor (bench/floor) until interrupted or -duration
// ends: the broker's router, middleware and push handler with a push use case that only
// waits for a simulated 3 ms commit cycle. Load it with push -broker-pid <its pid>.
func floorMode(ctx context.Context, m *modeFlags) func() (int, error) {
	var addr string
	var cycle, d time.Duration
	m.fs.StringVar(&addr, "addr", "127.0.0.1:6632", "listen address (port 0: a free port, printed)")
	m.fs.DurationVar(&cycle, "cycle", floor.DefaultCycle, "simulated commit cycle: every waiting push is answered at each tick")
	m.fs.DurationVar(&d, "duration", 0, "serve this long (0: until interrupted)")
	var pprofAddr string
	m.fs.StringVar(&pprofAddr, "pprof-addr", "", "serve net/http/pprof at this address too, as queen-server's QUEEN_PPROF_ADDR (empty: off)")
	return func() (int, error) {
		if pprofAddr != "" {
			stop, err := httpapi.ServeProfiles(pprofAddr)
			if err != nil {
				return 2, err
			}
			defer stop()
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return 2, err
		}
		p := floor.NewPusher(cycle)
		p.Start()
		defer p.Stop()
		// As queen-server at LOG_LEVEL=warn: the handler logs nothing on a good push.
		log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		srv := floor.Server(addr, p, log)
		fmt.Fprintf(m.common.Out, "floor: serving http://%s (pid %d), commit cycle %v\n", ln.Addr(), os.Getpid(), cycle)
		failed := make(chan error, 1)
		go func() { failed <- srv.Serve(ln) }()
		if d > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
		select {
		case err := <-failed:
			return 2, err
		case <-ctx.Done():
		}
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return 2, err
		}
		st := p.Stats()
		fmt.Fprintf(m.common.Out, "floor: %d push requests, %d messages\n", st.Requests, st.Messages)
		return 0, nil
	}
}

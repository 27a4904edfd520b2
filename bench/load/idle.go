package load

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// IdleConfig configures the idle mode: Consumers long polls parked on Queue, no traffic,
// for Warmup and then the measured Duration.
type IdleConfig struct {
	Common
	Queue     string
	Group     string // "" = queue mode
	Consumers int
	Batch     int
	PopParts  int // partitions per wildcard pop
	TimeoutMS int // long-poll timeout: a consumer re-polls when it ends
	Warmup    time.Duration
	PGPid     int    // > 0: the postmaster of the broker's PostgreSQL, for its CPU (/proc)
	PGURL     string // != "": the broker's database, for pg_stat_database
	BrokerPid int    // > 0: the broker's process, for its CPU when it does not export it
}

// idleReading is one reading of every figure's counter; ok flags say which were read.
type idleReading struct {
	at                   time.Time
	brokerCPU, dbCommits float64 // s; transactions (queen_db_commits_total)
	pgCPU                float64 // s
	pgXacts              int64
	parked               float64 // queen_pop_parked; -1 when not exported
	okCPU, okCommits     bool
	okPG, okXacts        bool
	cpuFromProc          bool
}

// idleFigures turns two readings into the idle mode's figures, per second or per minute
// of the measured phase. The tool's own SQL is subtracted: a scrape reads
// pg_stat_database through the broker (one transaction, counted by the next reading) and
// so does a direct reading. The order is scrape, direct at the start and direct, scrape
// at the end, so the scrape counter's difference holds the first scrape and both direct
// readings, and the direct counter's the first direct reading.
func idleFigures(a, b idleReading) map[string]any {
	dt := b.at.Sub(a.at).Seconds()
	f := map[string]any{"measured_s": dt}
	if dt <= 0 {
		return f
	}
	ownScrape := 1.0
	if a.okXacts {
		ownScrape += 2
	}
	if b.okCommits && a.okCommits && a.dbCommits >= 0 && b.dbCommits >= 0 {
		f["sql_calls_per_s"] = max(b.dbCommits-a.dbCommits-ownScrape, 0) / dt
	}
	if b.okXacts && a.okXacts {
		f["pg_xacts_per_s"] = max(float64(b.pgXacts-a.pgXacts)-1, 0) / dt
	}
	if b.okCPU && a.okCPU {
		f["broker_cpu_s_per_min"] = (b.brokerCPU - a.brokerCPU) / dt * 60
		f["broker_cpu_source"] = map[bool]string{true: "proc", false: "metrics"}[b.cpuFromProc]
	}
	if b.okPG && a.okPG {
		f["pg_cpu_s_per_min"] = (b.pgCPU - a.pgCPU) / dt * 60
	}
	if a.parked >= 0 && b.parked >= 0 {
		f["parked_start"], f["parked_end"] = a.parked, b.parked
	}
	return f
}

// idleProbe takes the readings.
type idleProbe struct {
	cfg     IdleConfig
	cl      *Client
	pg      *PGStat
	procCPU bool // the broker's CPU comes from /proc (it does not export it)
}

func (p *idleProbe) read(ctx context.Context, start bool) (idleReading, error) {
	r := idleReading{parked: -1}
	scrape := func() {
		s, err := p.cl.Samples()
		if err != nil {
			fmt.Fprintf(p.cfg.Out, "idle: metrics: %v\n", err)
			return
		}
		r.dbCommits, r.okCommits = s.Get(SampleDBCommits)
		if v, ok := s.Get(SamplePopParked); ok {
			r.parked = v
		}
		if !p.procCPU {
			r.brokerCPU, r.okCPU = s.Get(SampleCPU)
		}
	}
	direct := func() error {
		if p.pg == nil {
			return nil
		}
		n, err := p.pg.Xacts(ctx)
		if err != nil {
			return err
		}
		r.pgXacts, r.okXacts = n, true
		return nil
	}
	// Scrape, then direct, at the start; the reverse at the end (idleFigures relies on it).
	if start {
		scrape()
		if err := direct(); err != nil {
			return r, err
		}
	} else {
		if err := direct(); err != nil {
			return r, err
		}
		scrape()
	}
	r.at = time.Now()
	if p.procCPU {
		if d, err := ProcessCPU(p.cfg.BrokerPid); err == nil {
			r.brokerCPU, r.okCPU, r.cpuFromProc = d.Seconds(), true, true
		}
	}
	if p.cfg.PGPid > 0 {
		d, err := ClusterCPU(p.cfg.PGPid)
		if err != nil {
			return r, err
		}
		r.pgCPU, r.okPG = d.Seconds(), true
	}
	return r, nil
}

// RunIdle parks Consumers long polls on an idle queue and measures what the broker and
// its PostgreSQL spend meanwhile: SQL calls/s (queen_db_commits_total; with PGURL also
// xact_commit + xact_rollback read directly), the broker's CPU (process_cpu_seconds_total,
// or /proc with BrokerPid) and PostgreSQL's CPU (/proc, with PGPid), per minute. The
// readings are taken only at the two ends of the measured phase, because on queen-go a
// scrape itself runs SQL; the progress lines show the pops and, from /proc, the CPU.
// The queue should exist and be drained: a message popped meanwhile is counted
// ("msgs"), acked and reported as traffic.
func RunIdle(ctx context.Context, cfg IdleConfig) (Summary, error) {
	counters := []string{"pops", "empty", "msgs", "errors"}
	if cfg.PGPid > 0 {
		counters = append(counters, "pgCPUms")
	}
	if cfg.BrokerPid > 0 {
		counters = append(counters, "brokerCPUms")
	}
	m := NewMeter("idle", cfg.Out, counters...)
	cl, err := NewClient(cfg.URL, 30*time.Second)
	if err != nil {
		return Summary{}, err
	}
	defer cl.Close()
	p := &idleProbe{cfg: cfg, cl: cl}
	if cfg.PGPid > 0 {
		if _, err := ClusterCPU(cfg.PGPid); err != nil {
			return Summary{}, fmt.Errorf("idle: -pg-pid: %w", err)
		}
	}
	if cfg.PGURL != "" {
		if p.pg, err = OpenPGStat(ctx, cfg.PGURL); err != nil {
			return Summary{}, err
		}
		defer p.pg.Close()
	}
	if s, err := cl.Samples(); err == nil {
		if _, ok := s.Get(SampleCPU); !ok && cfg.BrokerPid > 0 {
			p.procCPU = true
		}
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	m.Start()
	var wg sync.WaitGroup
	wg.Go(func() { cpuProgress(runCtx, cfg, m) })
	done := make(chan error, 1)
	go func() { done <- Workers(runCtx, cfg.URL, cfg.Consumers, 0, nil, 0, idleConsumer(cfg, m)) }()

	fmt.Fprintf(cfg.Out, "idle: %d long polls parked on %s; warm-up %s, then %s measured\n",
		cfg.Consumers, cfg.Queue, cfg.Warmup, cfg.Duration)
	var a, b idleReading
	sleepCtx(runCtx, cfg.Warmup)
	if err == nil && ctx.Err() == nil {
		a, err = p.read(ctx, true)
	}
	msgs0 := m.Get("msgs")
	if err == nil && ctx.Err() == nil {
		sleepCtx(runCtx, cfg.Duration)
		b, err = p.read(ctx, false)
	}
	stop()
	werr := <-done
	wg.Wait()
	s := m.Stop()
	if err == nil {
		err = werr
	}
	if err != nil || ctx.Err() != nil {
		return s, errors.Join(err, ctx.Err())
	}
	s.Extra = idleFigures(a, b)
	s.Extra["consumers"] = cfg.Consumers
	if a.parked >= 0 && a.parked < float64(cfg.Consumers) {
		fmt.Fprintf(cfg.Out, "idle: WARNING: %.0f of %d long polls were parked when the measured phase began (a longer -warmup?)\n",
			a.parked, cfg.Consumers)
	}
	if traffic := m.Get("msgs") - msgs0; traffic > 0 {
		s.Extra["traffic_msgs"] = traffic
		fmt.Fprintf(cfg.Out, "idle: WARNING: %d messages were popped during the measured phase: the queue was not idle\n", traffic)
	}
	return s, nil
}

// idleConsumer long-polls until ctx ends, then aborts its parked poll: the queue is idle,
// so a poll dropped by the client holds no lease (one that did get a message has acked it).
func idleConsumer(cfg IdleConfig, m *Meter) func(ctx context.Context, _ int, c *Client) error {
	path := PopParams{Queue: cfg.Queue, Group: cfg.Group, Batch: cfg.Batch, Partitions: cfg.PopParts,
		Wait: true, TimeoutMS: cfg.TimeoutMS, SubscriptionMode: "all"}.Path()
	return func(ctx context.Context, _ int, c *Client) error {
		defer context.AfterFunc(ctx, c.Abort)()
		for ctx.Err() == nil {
			b, err := c.Pop(path)
			if ctx.Err() != nil {
				return nil
			}
			m.Add("pops", 1)
			switch {
			case err != nil:
				m.Fail("pop", err)
				sleepCtx(ctx, 100*time.Millisecond)
			case b == nil:
				m.Add("empty", 1)
			default:
				m.Add("msgs", int64(len(b.Messages)))
				if _, err := c.Ack(b, "", nil); err != nil {
					m.Fail("ack", err)
				}
			}
		}
		return nil
	}
}

// cpuProgress adds the CPU the cluster and the broker used each second to the meter's
// pgCPUms and brokerCPUms counters (their progress rates are then ms of CPU per second),
// from /proc only: no request to the broker.
func cpuProgress(ctx context.Context, cfg IdleConfig, m *Meter) {
	var lastPG, lastBroker time.Duration
	read := func(first bool) {
		if cfg.PGPid > 0 {
			if d, err := ClusterCPU(cfg.PGPid); err == nil {
				if !first {
					m.Add("pgCPUms", (d - lastPG).Milliseconds())
				}
				lastPG = d
			}
		}
		if cfg.BrokerPid > 0 {
			if d, err := ProcessCPU(cfg.BrokerPid); err == nil {
				if !first {
					m.Add("brokerCPUms", (d - lastBroker).Milliseconds())
				}
				lastBroker = d
			}
		}
	}
	read(true)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			read(false)
		}
	}
}

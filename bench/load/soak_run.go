package load

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/bench/verify"
)

// SoakConfig configures the soak (docs/reliability.md, soak criteria): the verified
// load Load for Duration (the warm-up included), a sample every Interval into the CSV
// file, then the final drain, the verifier and the criteria over the samples after
// Warmup.
type SoakConfig struct {
	Common
	Load       FaultConfig
	Warmup     time.Duration
	Interval   time.Duration
	CSV        string // path of the samples' CSV
	BrokerPid  int    // > 0: RSS, FDs and threads from /proc (else the broker's process_* metrics)
	PGURL      string // != "": connections and dead tuples from pg_stat_activity and pg_stat_user_tables
	DrainLimit time.Duration
	Limits     SoakLimits
}

// SoakResult is a soak's end: the summary, the verifier's report and the criteria.
type SoakResult struct {
	Summary  Summary
	Report   verify.FaultReport
	Criteria []Criterion
	Verdict  string
	Pass     bool
}

// brokerAppPrefix starts the application_name of every connection of a queen-go broker
// ("queen-go:<server id>" for the pool, the same plus " hints" for its listener).
const brokerAppPrefix = "queen-go"

// Samples the soak reads from /metrics/prometheus besides SampleRSS.
const (
	sampleGoroutines   = "go_goroutines"
	sampleThreads      = "go_threads"
	sampleOpenFDs      = "process_open_fds"
	sampleSpoolPending = "queen_file_buffer_pending"
)

// soakProbe takes the samples of one soak.
type soakProbe struct {
	cfg     SoakConfig
	run     *FaultRun
	metrics *Client
	pg      *PGStat // nil without PGURL
	start   time.Time

	pushN, ackN     int   // samples of the run read so far
	pushAll, ackAll *Hist // latencies completed after the warm-up
}

// RunSoak runs the soak and checks it; the error is for a run that could not be made
// (bad configuration, the broker or the database unreachable, the CSV not writable),
// never for a criterion that failed.
func RunSoak(ctx context.Context, cfg SoakConfig) (SoakResult, error) {
	if cfg.Interval <= 0 || cfg.Warmup < 0 || cfg.Duration < cfg.Warmup+2*cfg.Interval {
		return SoakResult{}, fmt.Errorf("load: soak: duration %v must hold the warm-up %v and two sample intervals of %v",
			cfg.Duration, cfg.Warmup, cfg.Interval)
	}
	f, err := os.Create(cfg.CSV)
	if err != nil {
		return SoakResult{}, fmt.Errorf("load: soak csv: %w", err)
	}
	defer f.Close()
	w, err := NewSoakCSV(f)
	if err != nil {
		return SoakResult{}, err
	}
	p := &soakProbe{cfg: cfg, pushAll: new(Hist), ackAll: new(Hist)}
	if p.metrics, err = NewClient(cfg.URL, 10*time.Second); err != nil {
		return SoakResult{}, err
	}
	defer p.metrics.Close()
	if cfg.PGURL != "" {
		if p.pg, err = OpenPGStat(ctx, cfg.PGURL); err != nil {
			return SoakResult{}, err
		}
		defer p.pg.Close()
	}
	fmt.Fprintf(cfg.Out, "soak: queue %s, %d partitions, %d msg/s, %v (warm-up %v), a sample every %v into %s\n",
		cfg.Load.Queue, cfg.Load.Partitions, cfg.Load.Rate, cfg.Duration, cfg.Warmup, cfg.Interval, cfg.CSV)
	if p.run, err = StartFaultLoad(cfg.URL, cfg.Load); err != nil {
		return SoakResult{}, err
	}
	p.start = time.Now()
	stopLive := trackLive(cfg.Out, "soak", "accepted", func() (int64, int64) { return p.run.accepted.Load(), p.run.PushErrors() })
	defer stopLive()
	samples, err := p.loop(ctx, w)
	if err != nil {
		p.run.Stop()
		return SoakResult{}, err
	}
	return p.finish(samples), nil
}

// loop samples every Interval until Duration has passed.
func (p *soakProbe) loop(ctx context.Context, w *SoakCSV) ([]SoakSample, error) {
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	var samples []SoakSample
	for time.Since(p.start) < p.cfg.Duration {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("load: soak interrupted after %v (%d samples in %s): %w",
				time.Since(p.start).Round(time.Second), len(samples), p.cfg.CSV, ctx.Err())
		case <-t.C:
		}
		s := p.sample(ctx)
		if err := w.Write(s); err != nil {
			return nil, err
		}
		p.progress(s)
		samples = append(samples, s)
	}
	return samples, nil
}

// finish drains the load, verifies it and checks the criteria.
func (p *soakProbe) finish(samples []SoakSample) SoakResult {
	loaded := time.Since(p.start)
	drained := p.run.Drain(p.spoolEmpty, p.cfg.DrainLimit)
	rep := p.run.Verify()
	spool := math.NaN()
	if v, ok := p.metrics.Scrape(sampleSpoolPending); ok {
		spool = v
	}
	o := SoakOutcome{Samples: samples, Warmup: p.cfg.Warmup, PushP99: quantileOrNaN(p.pushAll, 0.99),
		PopAckP99: quantileOrNaN(p.ackAll, 0.99), SpoolPending: spool, Verifier: rep.Pass, VerifierNote: verifierNote(rep)}
	cs := CheckSoak(o, p.cfg.Limits)
	line, pass := SoakVerdict(cs)
	prog := p.run.Progress()
	sum := Summary{Mode: "soak", Seconds: loaded.Seconds(),
		Totals: map[string]int64{"accepted": prog.Accepted, "delivered": prog.Delivered, "push_errors": p.run.PushErrors()},
		Rates:  map[string]float64{"accepted": float64(prog.Accepted) / loaded.Seconds(), "delivered": float64(prog.Delivered) / loaded.Seconds()},
		P50ms:  p.pushAll.Quantile(0.5), P90ms: p.pushAll.Quantile(0.9), P99ms: p.pushAll.Quantile(0.99),
		P999ms: p.pushAll.Quantile(0.999), MaxMs: p.pushAll.Quantile(1),
		Extra: map[string]any{"latency_of": "push calls after the warm-up", "pop_ack_p99_ms": p.ackAll.Quantile(0.99),
			"drain_s": drained.Seconds(), "samples": len(samples), "csv": p.cfg.CSV, "verdict": status(pass), "criteria": criteriaStatus(cs)},
		Series: soakSeries(samples)}
	return SoakResult{Summary: sum, Report: rep, Criteria: cs, Verdict: line, Pass: pass}
}

// soakSeries is the soak's samples as the report's time series: accepted and delivered
// messages per sample interval; the backlog and the broker's resources as gauges; push
// p50 and p99 as the interval's latency (the soak does not record p90 or max).
func soakSeries(samples []SoakSample) *Series {
	s := newSeries([]string{"accepted", "delivered"},
		[]string{"backlog", "rss_mib", "goroutines", "open_fds", "threads", "pg_conns", "spool_pending"})
	var prev SoakSample
	for _, x := range samples {
		s.add(Point{At: x.Elapsed, Span: x.Elapsed - prev.Elapsed,
			Counts: []int64{x.Accepted - prev.Accepted, x.Delivered - prev.Delivered},
			Gauges: []float64{float64(x.Backlog), x.RSS / (1 << 20), x.Goroutines, x.FDs, x.Threads, x.PGConns, x.SpoolPending},
			Lat:    LatencyPoint{P50: x.PushP50, P90: math.NaN(), P99: x.PushP99, Max: math.NaN()}}, nil)
		prev = x
	}
	s.flush()
	return s
}

// spoolEmpty is the final drain's spool check: queen_file_buffer_pending reads 0. A
// broker that does not export it has nothing to wait for (the criterion says so).
func (p *soakProbe) spoolEmpty() bool {
	v, ok := p.metrics.Scrape(sampleSpoolPending)
	return !ok || v == 0
}

func quantileOrNaN(h *Hist, q float64) float64 {
	if h.Count() == 0 {
		return math.NaN()
	}
	return h.Quantile(q)
}

// verifierNote sums the verifier's fatal counts over the groups.
func verifierNote(rep verify.FaultReport) string {
	var acked, lost, dups, viol, gaps int64
	for _, g := range rep.Groups {
		acked = max(acked, g.Acknowledged)
		lost += g.Lost
		dups += g.StoredDuplicates
		viol += g.Violations
		gaps += g.Gaps
	}
	return fmt.Sprintf("%d acknowledged, %d lost, %d stored duplicates, %d order violations, %d gaps", acked, lost, dups, viol, gaps)
}

func criteriaStatus(cs []Criterion) map[string]string {
	m := make(map[string]string, len(cs))
	for _, c := range cs {
		m[c.Name] = c.Status
	}
	return m
}

// sample reads every figure of one CSV row. A figure that cannot be read stays NaN; a
// scrape or a query that fails is shown, not fatal: one bad second must not end a
// 30-minute run.
func (p *soakProbe) sample(ctx context.Context) SoakSample {
	now := time.Now()
	prog := p.run.Progress()
	s := SoakSample{Elapsed: now.Sub(p.start), Accepted: prog.Accepted, Delivered: prog.Delivered,
		Backlog: prog.Accepted - prog.SlowestFirst}
	s.PushP50, s.PushP99, s.PopAckP99 = p.latencies()
	m, err := p.metrics.Samples()
	if err != nil {
		fmt.Fprintf(p.cfg.Out, "soak: metrics: %v\n", err)
		m = Samples{}
	}
	s.RSS, s.FDs, s.Threads = p.process(m)
	s.Goroutines, s.SpoolPending = metricOrNaN(m, sampleGoroutines), metricOrNaN(m, sampleSpoolPending)
	s.PGConns = math.NaN()
	for i := range s.Tuples {
		s.Tuples[i] = Tuples{math.NaN(), math.NaN(), math.NaN()}
	}
	if p.pg != nil {
		if n, err := p.pg.BrokerConns(ctx, brokerAppPrefix); err == nil {
			s.PGConns = float64(n)
		} else {
			fmt.Fprintf(p.cfg.Out, "soak: %v\n", err)
		}
		if t, err := p.pg.HotTuples(ctx); err == nil {
			s.Tuples = t
		} else {
			fmt.Fprintf(p.cfg.Out, "soak: %v\n", err)
		}
	}
	return s
}

// latencies returns the push p50 and p99 and the pop-to-ack p99 (ms) of the calls that
// completed since the last sample (NaN: none), and adds those completed after the
// warm-up to the whole run's histograms.
func (p *soakProbe) latencies() (pushP50, pushP99, ackP99 float64) {
	warm := p.start.Add(p.cfg.Warmup)
	var push, ack Hist
	var ps []PushSample
	ps, p.pushN = p.run.PushSamplesFrom(p.pushN)
	for _, s := range ps {
		push.Record(s.Took)
		if s.At.Add(s.Took).After(warm) {
			p.pushAll.Record(s.Took)
		}
	}
	var as []AckSample
	as, p.ackN = p.run.AckSamplesFrom(p.ackN)
	for _, s := range as {
		ack.Record(s.Took)
		if s.Popped.Add(s.Took).After(warm) {
			p.ackAll.Record(s.Took)
		}
	}
	return quantileOrNaN(&push, 0.5), quantileOrNaN(&push, 0.99), quantileOrNaN(&ack, 0.99)
}

// process returns the broker's RSS (bytes), open FDs and threads: from /proc with a
// broker pid, else from its process_* and go_threads metrics.
func (p *soakProbe) process(m Samples) (rss, fds, threads float64) {
	rss, fds, threads = metricOrNaN(m, SampleRSS), metricOrNaN(m, sampleOpenFDs), metricOrNaN(m, sampleThreads)
	if p.cfg.BrokerPid <= 0 {
		return rss, fds, threads
	}
	if v, err := ProcessRSS(p.cfg.BrokerPid); err == nil {
		rss = v
	}
	if v, err := ProcessFDs(p.cfg.BrokerPid); err == nil {
		fds = v
	}
	if v, err := ProcessThreads(p.cfg.BrokerPid); err == nil {
		threads = v
	}
	return rss, fds, threads
}

func metricOrNaN(m Samples, name string) float64 {
	if v, ok := m.Get(name); ok {
		return v
	}
	return math.NaN()
}

// progress prints one line per sample.
func (p *soakProbe) progress(s SoakSample) {
	fmt.Fprintf(p.cfg.Out, "[soak %4.0fs] accepted=%d delivered=%d backlog=%d push p50=%sms p99=%sms pop-ack p99=%sms rss=%s goroutines=%s fds=%s threads=%s pg=%s spool=%s\n",
		s.Elapsed.Seconds(), s.Accepted, s.Delivered, s.Backlog, fnum(s.PushP50, 1), fnum(s.PushP99, 1), fnum(s.PopAckP99, 1),
		fnum(s.RSS/(1<<20), 1)+"MiB", fnum(s.Goroutines, 0), fnum(s.FDs, 0), fnum(s.Threads, 0), fnum(s.PGConns, 0), fnum(s.SpoolPending, 0))
}

// ProcessFDs counts one process's open file descriptors (/proc/<pid>/fd).
func ProcessFDs(pid int) (float64, error) {
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, err
	}
	return float64(len(es)), nil
}

// ProcessThreads is one process's thread count (the Threads line of /proc/<pid>/status).
func ProcessThreads(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("Threads:")); ok {
			n, err := strconv.Atoi(string(bytes.TrimSpace(rest)))
			if err != nil {
				return 0, fmt.Errorf("proc status %d: threads %q", pid, rest)
			}
			return float64(n), nil
		}
	}
	return 0, errors.New("proc status: no Threads line")
}

// BrokerConns counts the database backends whose application_name starts with prefix.
func (p *PGStat) BrokerConns(ctx context.Context, prefix string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var n int64
	err := p.conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE starts_with(application_name, $1)`,
		pgx.QueryExecModeSimpleProtocol, prefix).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("load: pg_stat_activity: %w", err)
	}
	return n, nil
}

// HotTuples reads n_dead_tup, n_live_tup and the total size of HotTables (schema queen) in the
// connection's database; a table not found stays NaN.
func (p *PGStat) HotTuples(ctx context.Context) ([len(HotTables)]Tuples, error) {
	var out [len(HotTables)]Tuples
	for i := range out {
		out[i] = Tuples{math.NaN(), math.NaN(), math.NaN()}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rows, err := p.conn.Query(ctx, `SELECT relname::text, n_dead_tup, n_live_tup, pg_total_relation_size(relid) FROM pg_stat_user_tables
		WHERE schemaname = 'queen' AND relname = ANY($1)`, pgx.QueryExecModeSimpleProtocol, HotTables[:])
	if err != nil {
		return out, fmt.Errorf("load: pg_stat_user_tables: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var dead, live, size int64
		if err := rows.Scan(&name, &dead, &live, &size); err != nil {
			return out, fmt.Errorf("load: pg_stat_user_tables: %w", err)
		}
		for i, t := range HotTables {
			if t == name {
				out[i] = Tuples{float64(dead), float64(live), float64(size)}
			}
		}
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("load: pg_stat_user_tables: %w", err)
	}
	return out, nil
}

package load

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// LatencyConfig configures the latency mode.
type LatencyConfig struct {
	Common
	Queue      string
	Rate       float64 // messages per second, one per request
	Producers  int     // connections the pacer feeds
	Partitions int
	Consumers  int // long-poll wildcard consumers
	Batch      int
	PopParts   int // partitions per pop
	TimeoutMS  int
	// Warmup: messages scheduled in the run's first Warmup are pushed and consumed but
	// not measured (the queue, its partitions and the cursors are created then, and the
	// pacer's backlog of those first pushes is not the steady state).
	Warmup time.Duration
	CPU    CPUPids // CPU per consumed message (the whole run's, warm-up included)
	// PGURL, when set, is the broker's database: the run's WAL flushes from pg_stat_wal
	// (their mean duration when track_wal_io_timing is on), the commit stage's share
	// that is the disk's.
	PGURL string
}

// Pace sends on the returned channel the scheduled instant of each event of a steady
// rate (events/s), ramping linearly from 0 over ramp, until ctx ends. Scheduling from
// the start time, not from the previous send, keeps a slow consumer of the channel from
// lowering the offered rate (no coordinated omission): late events carry their original
// instant, so their delay shows up as latency.
func Pace(ctx context.Context, rate float64, ramp time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 4096)
	go func() {
		defer close(ch)
		start := time.Now()
		var sent int64
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				el := now.Sub(start).Seconds()
				due := int64(rate * el)
				if r := ramp.Seconds(); r > 0 && el < r {
					due = int64(rate * el * el / (2 * r)) // integral of a linear ramp
				}
				for ; sent < due; sent++ {
					select {
					case ch <- now:
					case <-ctx.Done():
						return
					}
				}
			}
		}
	}()
	return ch
}

// latencyRun is the state the latency mode's producers and consumers share.
type latencyRun struct {
	cfg              LatencyConfig
	m                *Meter
	ticks            <-chan time.Time
	from             time.Time // messages scheduled before it are not measured (Warmup)
	seq              atomic.Int64
	pushLat, sendLag Hist // push round trip; scheduled instant to send
}

// RunLatency measures push-to-pop latency: a paced producer, parked long-poll consumers;
// with the CPU per consumed message of the processes cfg.CPU names.
func RunLatency(ctx context.Context, cfg LatencyConfig) (Summary, error) {
	return WithCPU(cfg.CPU, cfg.Out, "consumed", func() (Summary, error) { return runLatency(ctx, cfg) })
}

func runLatency(ctx context.Context, cfg LatencyConfig) (Summary, error) {
	r := &latencyRun{cfg: cfg, m: NewMeter("latency", cfg.Out, "pushed", "consumed", "empty", "errors")}
	m := r.m
	// A message can be consumed before its push is answered: the backlog is never negative.
	m.Gauge("backlog", func() int64 { return max(m.Get("pushed")-m.Get("consumed"), 0) })
	scraper, err := NewClient(cfg.URL, 10*time.Second)
	if err != nil {
		return Summary{}, err
	}
	defer scraper.Close()
	before, _ := scraper.ScrapeAll()
	var pg *PGStat
	var walBefore WAL
	if cfg.PGURL != "" {
		if pg, err = OpenPGStat(ctx, cfg.PGURL); err != nil {
			return Summary{}, err
		}
		defer pg.Close()
		if walBefore, err = pg.WAL(ctx); err != nil {
			return Summary{}, err
		}
	}
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	r.from = time.Now().Add(cfg.Warmup)
	r.ticks = Pace(runCtx, cfg.Rate, 0)
	done := make(chan error, 1)
	// Consumers run a little past the producers' end so the tail is measured, and stop
	// on their own deadline (their long polls end at most TimeoutMS later).
	consumeCtx, stopConsumers := context.WithCancel(ctx)
	defer stopConsumers()
	go func() {
		done <- Workers(consumeCtx, cfg.URL, cfg.Consumers, time.Duration(cfg.TimeoutMS)*time.Millisecond+10*time.Second,
			nil, 0, r.consume)
	}()
	err = Workers(runCtx, cfg.URL, cfg.Producers, 30*time.Second, m, 0, r.produce)
	drain := time.Now().Add(5 * time.Second)
	for m.Get("consumed") < m.Get("pushed") && time.Now().Before(drain) {
		time.Sleep(10 * time.Millisecond)
	}
	stopConsumers()
	s := m.Stop()
	s.Extra = map[string]any{"push_p50_ms": r.pushLat.Quantile(0.5), "push_p99_ms": r.pushLat.Quantile(0.99),
		"push_p999_ms":    r.pushLat.Quantile(0.999),
		"send_lag_p50_ms": r.sendLag.Quantile(0.5), "send_lag_p99_ms": r.sendLag.Quantile(0.99)}
	if cerr := <-done; err == nil {
		err = cerr
	}
	if pg != nil {
		if walAfter, werr := pg.WAL(ctx); werr == nil {
			walFigures(walBefore, walAfter, s.Extra)
		} else if err == nil {
			err = werr
		}
	}
	if after, ok := scraper.ScrapeAll(); ok && before != nil {
		// The whole run's stages, warm-up included: the broker's histograms have no
		// notion of the measured window.
		push := Stages(before, after, FamilyPushStages, "read", "wait", "commit", "route", "answer")
		pop := Stages(before, after, FamilyPopStages, "ready", "claim", "answer")
		if len(push) > 0 {
			s.Extra["push_stages"], s.Extra["pop_stages"] = push, pop
			printStages(cfg.Out, "push stages (broker)", push)
			printStages(cfg.Out, "pop stages (broker)", pop)
		}
	}
	return s, err
}

// produce pushes one message per scheduled instant, carrying that instant.
func (r *latencyRun) produce(_ context.Context, _ int, c *Client) error {
	for at := range r.ticks {
		n := r.seq.Add(1)
		body := fmt.Appendf(nil, `{"t":%d}`, at.UnixNano())
		t0 := time.Now()
		measured := !at.Before(r.from)
		if measured {
			r.sendLag.Record(t0.Sub(at))
		}
		bad, _, err := c.Push([]Item{{Queue: r.cfg.Queue, Partition: fmt.Sprintf("p%d", rand.IntN(r.cfg.Partitions)),
			TransactionID: fmt.Sprintf("lat-%d", n), Payload: body}})
		if measured {
			r.pushLat.Record(time.Since(t0))
		}
		if err == nil && bad > 0 {
			err = fmt.Errorf("%d item not stored", bad)
		}
		if err != nil {
			r.m.Fail("push", err)
			continue
		}
		r.m.Add("pushed", 1)
	}
	return nil
}

// consume long-polls, records each message's latency from its scheduled instant, acks.
func (r *latencyRun) consume(ctx context.Context, _ int, c *Client) error {
	path := PopParams{Queue: r.cfg.Queue, Batch: r.cfg.Batch, Partitions: r.cfg.PopParts, Wait: true, TimeoutMS: r.cfg.TimeoutMS}.Path()
	for ctx.Err() == nil {
		b, err := c.Pop(path)
		if err != nil {
			r.m.Fail("pop", err)
			continue
		}
		if b == nil {
			r.m.Add("empty", 1)
			continue
		}
		now := time.Now()
		for _, msg := range b.Messages {
			var d struct {
				T int64 `json:"t"`
			}
			if json.Unmarshal(msg.Data, &d) == nil && d.T > 0 && d.T >= r.from.UnixNano() {
				r.m.Latency(now.Sub(time.Unix(0, d.T)))
			}
		}
		r.m.Add("consumed", int64(len(b.Messages)))
		if _, err := c.Ack(b, "", nil); err != nil {
			r.m.Fail("ack", err)
		}
	}
	return nil
}

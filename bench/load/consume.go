package load

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// ConsumeConfig configures the consume mode.
type ConsumeConfig struct {
	Common
	Queue      string
	Consumers  int
	Group      string // "" = queue mode
	Batch      int    // pop batch
	Partitions int    // partitions per wildcard pop
	Pinned     int    // > 0: consumer i pops only partition p(i mod Pinned)
	Wait       bool
	TimeoutMS  int
	AutoAck    bool
	FailRate   float64 // fraction of acked batches with one message failed
	Count      int64   // stop after this many messages (0 = Duration)
	CPU        CPUPids
}

// RunConsume pops and acknowledges, reporting msgs/s, pop latency, empties and errors,
// and the CPU per message of the processes cfg.CPU names.
func RunConsume(ctx context.Context, cfg ConsumeConfig) (Summary, error) {
	return WithCPU(cfg.CPU, cfg.Out, "msgs", func() (Summary, error) { return runConsume(ctx, cfg) })
}

func runConsume(ctx context.Context, cfg ConsumeConfig) (Summary, error) {
	m := NewMeter("consume", cfg.Out, "msgs", "pops", "empty", "acks", "ackFailed", "ackRefused", "errors")
	timeout := time.Duration(cfg.TimeoutMS)*time.Millisecond + 10*time.Second
	// When Count is reached the other consumers still finish their pops (a long poll on
	// the emptied queue parks up to TimeoutMS): the rate up to that instant is the figure.
	var reachedAt, reachedMsgs atomic.Int64 // ns since the meter's start (0 = not reached), msgs then
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	err := Workers(ctx, cfg.URL, cfg.Consumers, timeout, m, cfg.Duration, func(ctx context.Context, w int, c *Client) error {
		p := PopParams{Queue: cfg.Queue, Group: cfg.Group, Batch: cfg.Batch, Partitions: cfg.Partitions,
			Wait: cfg.Wait, TimeoutMS: cfg.TimeoutMS, AutoAck: cfg.AutoAck, SubscriptionMode: "all"}
		if cfg.Pinned > 0 {
			p.Partition = fmt.Sprintf("p%d", w%cfg.Pinned)
		}
		path := p.Path()
		for ctx.Err() == nil {
			t0 := time.Now()
			b, err := c.Pop(path)
			m.Add("pops", 1)
			if err != nil {
				m.Fail("pop", err)
				continue
			}
			if b == nil {
				m.Add("empty", 1)
				continue
			}
			m.Latency(time.Since(t0))
			m.Add("msgs", int64(len(b.Messages)))
			got := m.Get("msgs")
			if !cfg.AutoAck {
				consumeAck(c, m, b, cfg.FailRate)
			}
			if cfg.Count > 0 && got >= cfg.Count {
				// The batch that reached the count is acked by now: pop+ack is the figure.
				if reachedAt.CompareAndSwap(0, int64(time.Since(m.start))) {
					reachedMsgs.Store(got)
				}
				cancel()
			}
		}
		return nil
	})
	s := m.Stop()
	if at := time.Duration(reachedAt.Load()); at > 0 {
		s.Extra = map[string]any{"count_reached_s": at.Seconds(), "msgs_per_s_to_count": float64(reachedMsgs.Load()) / at.Seconds()}
	}
	return s, err
}

// consumeAck acknowledges b, one message failed in a fraction failRate of the batches.
func consumeAck(c *Client, m *Meter, b *Batch, failRate float64) {
	var failed map[int]bool
	if failRate > 0 && rand.Float64() < failRate {
		failed = map[int]bool{rand.IntN(len(b.Messages)): true}
		m.Add("ackFailed", 1)
	}
	refused, err := c.Ack(b, "", failed)
	m.Add("acks", 1)
	if err != nil {
		m.Fail("ack", err)
		return
	}
	m.Add("ackRefused", int64(refused))
}

package load

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"
)

// PrefillConfig configures the prefill mode: Messages messages spread round robin over
// partitions p0..p(Partitions-1) of Queue, Batch items per request.
type PrefillConfig struct {
	Common
	Queue        string
	Partitions   int
	Messages     int64
	Batch        int // items per request; each request covers min(Batch, Partitions) partitions
	Conns        int
	PayloadBytes int
}

// prefillAttempts bounds the tries of one request: a failed push is retried with the same
// transaction ids, so dedup keeps a retry of a push that did commit from storing twice.
const prefillAttempts = 5

// prefillChunk is request k's slice of the messages: message j goes to partition
// j mod partitions, so a request of batch consecutive messages names batch distinct
// partitions (fusion commits up to QUEEN_V2_BUNDLE_MAX of them at once) and every
// partition ends with total/partitions messages, one more for the first total mod
// partitions.
func prefillChunk(k int64, batch int, total int64) (first, n int64) {
	first = k * int64(batch)
	if first >= total {
		return first, 0
	}
	return first, min(int64(batch), total-first)
}

// RunPrefill fills a queue as fast as the connections allow, with large requests that
// each cover many partitions, and reports msgs/s. Every failed request is counted and
// retried.
func RunPrefill(ctx context.Context, cfg PrefillConfig) (Summary, error) {
	if err := cfg.check(); err != nil {
		return Summary{}, err
	}
	m := NewMeter("prefill", cfg.Out, "msgs", "requests", "retries", "errors", "notStored")
	m.Gauge("left", func() int64 { return max(cfg.Messages-m.Get("msgs")-m.Get("notStored"), 0) })
	err := prefill(ctx, cfg, m)
	s := m.Stop()
	if left := cfg.Messages - s.Totals["msgs"]; left > 0 && err == nil && ctx.Err() == nil {
		err = fmt.Errorf("prefill: %d of %d messages not stored", left, cfg.Messages)
	}
	return s, err
}

func (cfg PrefillConfig) check() error {
	if cfg.Partitions < 1 || cfg.Batch < 1 || cfg.Messages < 0 {
		return fmt.Errorf("prefill: partitions %d, batch %d, messages %d", cfg.Partitions, cfg.Batch, cfg.Messages)
	}
	return nil
}

// prefill pushes cfg's messages with m's counters ("msgs", "requests", "retries",
// "errors", "notStored"); the meter is started here.
func prefill(ctx context.Context, cfg PrefillConfig, m *Meter) error {
	if err := cfg.check(); err != nil {
		return err
	}
	// A run tag in the transaction ids: a second prefill of the same queue adds messages
	// instead of being answered duplicate.
	tag := strconv.FormatInt(time.Now().UnixNano(), 36)
	payloads := make([][]byte, 64) // a few payloads, reused: building them is not what is measured
	for i := range payloads {
		payloads[i] = Payload(int64(i), cfg.PayloadBytes)
	}
	var next atomic.Int64
	return Workers(ctx, cfg.URL, max(cfg.Conns, 1), time.Minute, m, cfg.Duration, func(ctx context.Context, _ int, c *Client) error {
		items := make([]Item, 0, cfg.Batch)
		for ctx.Err() == nil {
			first, n := prefillChunk(next.Add(1)-1, cfg.Batch, cfg.Messages)
			if n == 0 {
				return nil
			}
			items = items[:0]
			for j := first; j < first+n; j++ {
				items = append(items, Item{Queue: cfg.Queue, Partition: "p" + strconv.FormatInt(j%int64(cfg.Partitions), 10),
					TransactionID: tag + "-" + strconv.FormatInt(j, 10), Payload: payloads[j%int64(len(payloads))]})
			}
			for attempt := 1; ; attempt++ {
				t0 := time.Now()
				bad, _, err := c.Push(items)
				m.Add("requests", 1)
				if err == nil && bad == 0 {
					m.Latency(time.Since(t0))
					m.Add("msgs", n)
					break
				}
				if err == nil {
					err = fmt.Errorf("%d of %d items not stored", bad, n)
				}
				m.Fail("push", err)
				if attempt == prefillAttempts || ctx.Err() != nil {
					m.Add("notStored", n)
					break
				}
				m.Add("retries", 1)
				sleepCtx(ctx, time.Duration(attempt)*200*time.Millisecond)
			}
		}
		return nil
	})
}

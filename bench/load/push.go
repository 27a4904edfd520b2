package load

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Common are the flags every mode shares.
type Common struct {
	URL      string        // broker base URL
	Duration time.Duration // measured phase
	Out      io.Writer     // progress and summary
}

// PushConfig configures the push mode.
type PushConfig struct {
	Common
	Queue        string
	Conns        int   // concurrent connections
	Batch        int   // messages per request (one partition per request)
	Partitions   int   // partitions p0..p(N-1), chosen at random per request
	PayloadBytes int   // approximate JSON payload size
	Count        int64 // stop after this many messages (0 = Duration)
	CPU          CPUPids
}

// Payload returns a JSON object of about n bytes carrying seq.
func Payload(seq int64, n int) []byte {
	const head = `{"seq":%d,"pad":"%s"}`
	pad := max(n-len(head)-12, 0)
	return fmt.Appendf(nil, head, seq, strings.Repeat("x", pad))
}

// RunPush pushes as fast as the connections allow and reports msgs/s, request latency
// and errors, and the CPU per message of the processes cfg.CPU names.
func RunPush(ctx context.Context, cfg PushConfig) (Summary, error) {
	return WithCPU(cfg.CPU, cfg.Out, "msgs", func() (Summary, error) { return runPush(ctx, cfg) })
}

func runPush(ctx context.Context, cfg PushConfig) (Summary, error) {
	m := NewMeter("push", cfg.Out, "msgs", "requests", "errors", "buffered", "notStored")
	var seq atomic.Int64
	payloads := make([][]byte, 64) // a few distinct payloads, reused: payload building is not what is measured
	for i := range payloads {
		payloads[i] = Payload(int64(i), cfg.PayloadBytes)
	}
	err := Workers(ctx, cfg.URL, cfg.Conns, 0, m, cfg.Duration, func(ctx context.Context, w int, c *Client) error {
		items := make([]Item, cfg.Batch)
		for ctx.Err() == nil {
			n := seq.Add(int64(cfg.Batch))
			if cfg.Count > 0 && n-int64(cfg.Batch) >= cfg.Count {
				return nil
			}
			part := fmt.Sprintf("p%d", rand.IntN(max(cfg.Partitions, 1)))
			for i := range items {
				items[i] = Item{Queue: cfg.Queue, Partition: part, Payload: payloads[(int(n)+i)%len(payloads)]}
			}
			t0 := time.Now()
			bad, buffered, err := c.Push(items)
			m.Add("requests", 1)
			if err != nil {
				m.Fail("push", err)
				continue
			}
			m.Latency(time.Since(t0))
			m.Add("msgs", int64(cfg.Batch-bad))
			m.Add("notStored", int64(bad))
			m.Add("buffered", int64(buffered))
		}
		return nil
	})
	return m.Stop(), err
}

// Workers runs fn on n workers, each with its own connection, for d (0 = until fn
// returns or ctx ends), with m's progress lines (m may be nil). A worker error stops
// the run. When the run ends, each worker finishes the request in progress (bounded by
// the client timeout) rather than dropping it: a pop dropped by the client still holds
// its lease on the broker, and would block its partitions for the next run.
func Workers(ctx context.Context, url string, n int, timeout time.Duration, m *Meter, d time.Duration,
	fn func(ctx context.Context, w int, c *Client) error) error {
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if m != nil {
		m.Start()
	}
	var wg sync.WaitGroup
	for w := range n {
		c, err := NewClient(url, timeout)
		if err != nil {
			return err
		}
		wg.Go(func() {
			defer c.Close()
			if err := fn(ctx, w, c); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && err != context.Canceled && err != context.DeadlineExceeded {
		return err
	}
	return nil
}

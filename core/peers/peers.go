package peers

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queen-go/queen/core/hotlist"
	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/ports"
)

// Options tunes a Mesh; zero values take the defaults in brackets.
type Options struct {
	// Enabled turns the hints on (QUEEN_PEER_HINTS); off, the Mesh does nothing.
	Enabled    bool
	Tick       time.Duration // [5 ms] at most one published batch per tick
	MaxPending int           // [200,000] hints waiting for the next batch
	// Backoff and MaxBackoff pace the re-listen after the listener failed [1 s, 30 s].
	Backoff, MaxBackoff time.Duration
	Logger              *slog.Logger
}

func (o *Options) defaults() {
	if o.Tick <= 0 {
		o.Tick = 5 * time.Millisecond
	}
	if o.MaxPending <= 0 {
		o.MaxPending = 200_000
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Mesh publishes this broker's hints and delivers the other brokers' to the hot-list.
// Create it with New; it runs from Start until Stop.
type Mesh struct {
	bus  ports.HintBus
	hot  *hotlist.List
	opts Options

	mu      sync.Mutex
	pending map[hintKey]ports.Hint

	sent, received, dropped, batches, failures atomic.Uint64

	stop context.CancelFunc
	done chan struct{}
}

type hintKey struct{ tenant, queue, partition string }

// New returns a Mesh over bus delivering received hints to hot; it starts nothing.
func New(bus ports.HintBus, hot *hotlist.List, opts Options) *Mesh {
	opts.defaults()
	return &Mesh{bus: bus, hot: hot, opts: opts, pending: make(map[hintKey]ports.Hint)}
}

// Committed queues a hint for a local commit (a core/notify subscriber).
func (m *Mesh) Committed(c notify.Commit) {
	if !m.opts.Enabled {
		return
	}
	k := hintKey{c.Tenant, c.Queue, c.Partition}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.pending[k]; ok {
		return
	}
	if len(m.pending) >= m.opts.MaxPending {
		m.dropped.Add(1)
		return
	}
	m.pending[k] = ports.Hint{Tenant: c.Tenant, Queue: c.Queue, Partition: c.Partition, PartitionID: c.PartitionID}
}

// Start launches the publisher and the listener (nothing when the hints are off).
func (m *Mesh) Start() {
	if !m.opts.Enabled || m.stop != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.stop, m.done = cancel, make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { m.publish(ctx) })
	wg.Go(func() { m.listen(ctx) })
	go func() {
		wg.Wait()
		close(m.done)
	}()
}

// Stop ends both and waits for them; hints not yet published are dropped (best effort).
func (m *Mesh) Stop() {
	if m.stop == nil {
		return
	}
	m.stop()
	<-m.done
}

// publish sends what accumulated, once per tick.
func (m *Mesh) publish(ctx context.Context) {
	t := time.NewTicker(m.opts.Tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m.mu.Lock()
		if len(m.pending) == 0 {
			m.mu.Unlock()
			continue
		}
		batch := make([]ports.Hint, 0, len(m.pending))
		for _, h := range m.pending {
			batch = append(batch, h)
		}
		clear(m.pending)
		m.mu.Unlock()
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := m.bus.Publish(pctx, batch)
		cancel()
		if err != nil {
			if ctx.Err() == nil && m.failures.Add(1)%100 == 1 { // one line per hundred failures
				m.opts.Logger.Warn("peers: publishing hints failed; peers rely on their re-checks meanwhile",
					"target", "peers", "hints", len(batch), "err", err)
			}
			continue
		}
		m.sent.Add(uint64(len(batch)))
		m.batches.Add(1)
	}
}

// listen delivers the peers' hints, listening again (with back-off) when it fails.
func (m *Mesh) listen(ctx context.Context) {
	backoff := m.opts.Backoff
	for {
		start := time.Now()
		err := m.bus.Listen(ctx, m.deliver)
		if ctx.Err() != nil {
			return
		}
		m.opts.Logger.Warn("peers: listening for hints failed; listening again", "target", "peers",
			"err", err, "backoff", backoff)
		if time.Since(start) > m.opts.MaxBackoff {
			backoff = m.opts.Backoff // it had worked for a while: start over
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, m.opts.MaxBackoff)
	}
}

func (m *Mesh) deliver(hints []ports.Hint) {
	m.received.Add(uint64(len(hints)))
	m.hot.Hinted(hints)
}

// Stats are the mesh's cumulative counts.
type Stats struct {
	Sent, Received, Dropped, Batches, Failures uint64
}

// Stats returns the counters.
func (m *Mesh) Stats() Stats {
	return Stats{Sent: m.sent.Load(), Received: m.received.Load(), Dropped: m.dropped.Load(),
		Batches: m.batches.Load(), Failures: m.failures.Load()}
}

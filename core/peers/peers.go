package peers

import (
	"context"
	"log/slog"
	"slices"
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
	// Heartbeat is how often this broker tells the others that it listens [1 s]; a
	// broker publishes hints only while it has heard another within PeerTTL [3 x
	// Heartbeat].
	Heartbeat, PeerTTL time.Duration
	Logger             *slog.Logger
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
	if o.Heartbeat <= 0 {
		o.Heartbeat = time.Second
	}
	if o.PeerTTL <= 0 {
		o.PeerTTL = 3 * o.Heartbeat
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

	// lastPeer is when (unix ns) a payload from another broker last arrived; peers says
	// that was within PeerTTL: only then are commits hinted.
	lastPeer atomic.Int64
	peers    atomic.Bool
	heard    chan struct{} // a peer was heard: the publisher, alone until then, acts at once

	sent, received, dropped, batches, failures, heartbeats atomic.Uint64

	stop context.CancelFunc
	done chan struct{}
}

type hintKey struct{ tenant, queue, partition string }

// New returns a Mesh over bus delivering received hints to hot; it starts nothing.
func New(bus ports.HintBus, hot *hotlist.List, opts Options) *Mesh {
	opts.defaults()
	return &Mesh{bus: bus, hot: hot, opts: opts, pending: make(map[hintKey]ports.Hint), heard: make(chan struct{}, 1)}
}

// heartbeat is the hint a broker publishes to say that it listens: no queue is named ""
// (core/names), so it marks nothing, and the receiving Mesh never passes it on.
var heartbeat = ports.Hint{}

// Committed queues a hint for a local commit (a core/notify subscriber), unless no other
// broker has been heard lately: then nobody would read it.
func (m *Mesh) Committed(c notify.Commit) {
	if !m.opts.Enabled || !m.peers.Load() {
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

// publish sends what accumulated, once per tick, while other brokers listen, and this
// broker's heartbeat every Heartbeat (the first at once). Alone, it sleeps from one
// heartbeat to the next (or until a peer is heard): a tick every 5 ms would only cost
// wake-ups.
func (m *Mesh) publish(ctx context.Context) {
	t := time.NewTimer(m.opts.Tick)
	defer t.Stop()
	var nextBeat time.Time
	for {
		now := time.Now()
		peers := now.UnixNano()-m.lastPeer.Load() < int64(m.opts.PeerTTL)
		m.peers.Store(peers)
		var batch []ports.Hint
		m.mu.Lock()
		if peers && len(m.pending) > 0 {
			batch = make([]ports.Hint, 0, len(m.pending)+1)
			for _, h := range m.pending {
				batch = append(batch, h)
			}
		}
		clear(m.pending) // without peers: what a peer missed, its re-checks find
		m.mu.Unlock()
		hints := len(batch)
		if !now.Before(nextBeat) {
			batch = append(batch, heartbeat)
			nextBeat = now.Add(m.opts.Heartbeat)
		}
		if len(batch) > 0 {
			m.send(ctx, batch, hints)
		}
		wait := m.opts.Tick
		if !peers {
			wait = time.Until(nextBeat)
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-m.heard:
		}
	}
}

// send publishes a batch of hints hints, plus the heartbeat when it is longer.
func (m *Mesh) send(ctx context.Context, batch []ports.Hint, hints int) {
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	err := m.bus.Publish(pctx, batch)
	cancel()
	if err != nil {
		if ctx.Err() == nil && m.failures.Add(1)%100 == 1 { // one line per hundred failures
			m.opts.Logger.Warn("peers: publishing hints failed; peers rely on their re-checks meanwhile",
				"target", "peers", "hints", hints, "err", err)
		}
		return
	}
	if hints > 0 {
		m.sent.Add(uint64(hints))
		m.batches.Add(1)
	}
	if len(batch) > hints {
		m.heartbeats.Add(1)
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

// deliver takes a batch from another broker: it listens (its hints are published from
// now on), and its hints other than the heartbeat go to the hot-list.
func (m *Mesh) deliver(hints []ports.Hint) {
	m.lastPeer.Store(time.Now().UnixNano())
	if !m.peers.Swap(true) {
		select {
		case m.heard <- struct{}{}:
		default:
		}
	}
	if slices.Contains(hints, heartbeat) {
		hints = slices.DeleteFunc(slices.Clone(hints), func(h ports.Hint) bool { return h == heartbeat })
	}
	if len(hints) == 0 {
		return
	}
	m.received.Add(uint64(len(hints)))
	m.hot.Hinted(hints)
}

// Stats are the mesh's cumulative counts: hints published (Sent, in Batches), received
// and dropped (a full set), publishes that failed, and heartbeats published; Peers says
// whether another broker was heard within PeerTTL (hints are published).
type Stats struct {
	Sent, Received, Dropped, Batches, Failures, Heartbeats uint64
	Peers                                                  bool
}

// Stats returns the counters.
func (m *Mesh) Stats() Stats {
	return Stats{Sent: m.sent.Load(), Received: m.received.Load(), Dropped: m.dropped.Load(),
		Batches: m.batches.Load(), Failures: m.failures.Load(), Heartbeats: m.heartbeats.Load(), Peers: m.peers.Load()}
}

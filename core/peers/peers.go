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
	// Enabled turns the commit hints on (QUEEN_PEER_HINTS); off, the Mesh exchanges queue
	// changes only.
	Enabled    bool
	Tick       time.Duration // [5 ms] at most one published batch of commit hints per tick
	MaxPending int           // [200,000] commit hints, and queue changes, waiting to be published
	// Backoff and MaxBackoff pace the re-listen after the listener failed [1 s, 30 s].
	Backoff, MaxBackoff time.Duration
	// Heartbeat is how often this broker tells the others that it listens [1 s]; a
	// broker publishes hints only while it has heard another within PeerTTL [3 x
	// Heartbeat].
	Heartbeat, PeerTTL time.Duration
	// Changes is where the queue changes other brokers announce are announced here
	// (marked Remote), so this broker's caches forget the queue; nil ignores them.
	Changes *notify.QueueChanges
	Logger  *slog.Logger
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

// Mesh publishes this broker's hints and queue changes, delivers the other brokers'
// hints to the hot-list and announces their queue changes here. Create it with New; it
// runs from Start until Stop.
type Mesh struct {
	bus  ports.HintBus
	hot  *hotlist.List
	opts Options

	mu      sync.Mutex
	pending map[hintKey]ports.Hint
	changes []ports.Hint  // queue changes to publish, in announce order
	kick    chan struct{} // a queue change waits: the publisher sends it at once

	// lastPeer is when (unix ns) a payload from another broker last arrived; peers says
	// that was within PeerTTL: only then are commits hinted.
	lastPeer atomic.Int64
	peers    atomic.Bool
	heard    chan struct{} // a peer was heard: the publisher, alone until then, acts at once

	sent, received, dropped, batches, failures, heartbeats atomic.Uint64
	changesSent, changesReceived                           atomic.Uint64

	stop context.CancelFunc
	done chan struct{}
}

type hintKey struct{ tenant, queue, partition string }

// New returns a Mesh over bus delivering received hints to hot; it starts nothing.
func New(bus ports.HintBus, hot *hotlist.List, opts Options) *Mesh {
	opts.defaults()
	return &Mesh{bus: bus, hot: hot, opts: opts, pending: make(map[hintKey]ports.Hint), heard: make(chan struct{}, 1),
		kick: make(chan struct{}, 1)}
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

// QueueChanged queues a queue change this broker made (a core/notify subscriber) for
// every other broker, whether or not one was heard lately: a broker that listens but was
// not heard yet (it just started, or its commit hints are off) must still forget the
// queue, and a configure is rare. A change heard from another broker is not sent on.
func (m *Mesh) QueueChanged(c notify.QueueChange) {
	if c.Remote {
		return
	}
	h := ports.Hint{Tenant: c.Tenant, Queue: c.Queue, Kind: ports.HintQueueConfigured}
	if c.Deleted {
		h.Kind = ports.HintQueueDeleted
	}
	m.mu.Lock()
	if len(m.changes) >= m.opts.MaxPending {
		m.mu.Unlock()
		m.dropped.Add(1)
		return
	}
	m.changes = append(m.changes, h)
	m.mu.Unlock()
	select {
	case m.kick <- struct{}{}:
	default: // the publisher is already due
	}
}

// Start launches the publisher and the listener.
func (m *Mesh) Start() {
	if m.stop != nil {
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

// publish sends the queue changes as soon as they are announced, and, with the commit
// hints on, what accumulated once per tick while other brokers listen, and this broker's
// heartbeat every Heartbeat (the first at once). Alone, it sleeps from one heartbeat to
// the next (or until a peer is heard or a queue changes): a tick every 5 ms would only
// cost wake-ups. With the commit hints off it sleeps until a queue changes.
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
		changes := m.changes
		m.changes = nil
		if peers && len(m.pending) > 0 && m.opts.Enabled {
			batch = make([]ports.Hint, 0, len(m.pending)+1)
			for _, h := range m.pending {
				batch = append(batch, h)
			}
		}
		clear(m.pending) // without peers: what a peer missed, its re-checks find
		m.mu.Unlock()
		if len(changes) > 0 {
			m.sendChanges(ctx, changes)
		}
		hints := len(batch)
		if m.opts.Enabled && !now.Before(nextBeat) {
			batch = append(batch, heartbeat)
			nextBeat = now.Add(m.opts.Heartbeat)
		}
		if len(batch) > 0 {
			m.send(ctx, batch, hints)
		}
		var tick <-chan time.Time // nil: no periodic work (the commit hints are off)
		if m.opts.Enabled {
			wait := m.opts.Tick
			if !peers {
				wait = time.Until(nextBeat)
			}
			t.Reset(wait)
			tick = t.C
		}
		select {
		case <-ctx.Done():
			return
		case <-tick:
		case <-m.heard:
		case <-m.kick:
		}
	}
}

// sendChanges publishes queue changes in a batch of their own: a broker that knows no
// hint kinds then skips only them, never commit hints (adapters/postgres, doc.go). A
// failed publish drops them: the other brokers' caches expire on their own
// (QUEEN_CACHE_REFRESH_INTERVAL_MS), as they would have without the announcement.
func (m *Mesh) sendChanges(ctx context.Context, changes []ports.Hint) {
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	err := m.bus.Publish(pctx, changes)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			m.failures.Add(1)
			m.opts.Logger.Warn("peers: announcing queue changes failed; the other brokers forget the queues when their caches expire",
				"target", "peers", "changes", len(changes), "err", err)
		}
		return
	}
	m.changesSent.Add(uint64(len(changes)))
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
// now on), its queue changes are announced here, and its commit hints other than the
// heartbeat go to the hot-list (with the commit hints on).
func (m *Mesh) deliver(hints []ports.Hint) {
	m.lastPeer.Store(time.Now().UnixNano())
	if !m.peers.Swap(true) {
		select {
		case m.heard <- struct{}{}:
		default:
		}
	}
	notCommit := func(h ports.Hint) bool { return h == heartbeat || h.Kind != ports.HintCommit }
	if slices.ContainsFunc(hints, notCommit) {
		for _, h := range hints {
			if h.Kind == ports.HintCommit {
				continue
			}
			m.changesReceived.Add(1)
			m.opts.Changes.Announce(notify.QueueChange{Tenant: h.Tenant, Queue: h.Queue,
				Deleted: h.Kind == ports.HintQueueDeleted, Remote: true})
		}
		hints = slices.DeleteFunc(slices.Clone(hints), notCommit)
	}
	if len(hints) == 0 || !m.opts.Enabled {
		return
	}
	m.received.Add(uint64(len(hints)))
	m.hot.Hinted(hints)
}

// Stats are the mesh's cumulative counts: commit hints published (Sent, in Batches),
// received and dropped (a full set, or a full list of queue changes), publishes that
// failed, heartbeats published, and queue changes published and received; Peers says
// whether another broker was heard within PeerTTL (commit hints are published).
type Stats struct {
	Sent, Received, Dropped, Batches, Failures, Heartbeats uint64
	ChangesSent, ChangesReceived                           uint64
	Peers                                                  bool
}

// Stats returns the counters.
func (m *Mesh) Stats() Stats {
	return Stats{Sent: m.sent.Load(), Received: m.received.Load(), Dropped: m.dropped.Load(),
		Batches: m.batches.Load(), Failures: m.failures.Load(), Heartbeats: m.heartbeats.Load(),
		ChangesSent: m.changesSent.Load(), ChangesReceived: m.changesReceived.Load(), Peers: m.peers.Load()}
}

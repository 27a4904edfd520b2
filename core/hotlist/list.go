package hotlist

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queen-go/queen/core/stages"
	"github.com/queen-go/queen/ports"
)

// The defaults of Options that the server's variables share: config's defaults are these
// values (its tests check it).
const (
	DefaultShards      = 8               // QUEEN_HOTLIST_SHARDS
	DefaultWindowBatch = 100             // QUEEN_HOTLIST_WINDOW_BATCH
	DefaultReseed      = 5 * time.Second // QUEEN_HOTLIST_RESEED_MS
	DefaultTopN        = 10              // QUEEN_LOG_TOPN_QUEUES
)

// Options tunes a List; zero values take the defaults in brackets.
type Options struct {
	// Enabled turns the hot-list on (QUEEN_HOTLIST). Off, every hook is one branch: marks
	// wake parked pops at once, and pops scan in SQL.
	Enabled bool
	// Wake wakes the pops parked on a queue key for partition (consume.Waker.Notify).
	Wake func(key, partition string)
	// Shards sub-shards each ring so one busy queue does not convoy on one mutex
	// [8, QUEEN_HOTLIST_SHARDS, inherited from QUEEN_V2_FUSION_SHARDS].
	Shards int
	// WindowBatch is the marked message count that promotes a windowBuffer partition
	// before its window has elapsed [100, QUEEN_HOTLIST_WINDOW_BATCH].
	WindowBatch int
	// WakeTick is how often local pushes' marks wake parked pops, coalesced [5 ms].
	WakeTick time.Duration
	// Reseed is the floor's period per (queue, group) ring [5 s, QUEEN_HOTLIST_RESEED_MS].
	Reseed time.Duration
	// ReseedPage and ReseedPages bound one reseed: rows per page [10,000] and pages
	// [200].
	ReseedPage, ReseedPages int
	// ReseedGap is the least time between two reseeds of a ring that pops ask for when
	// they find it cold [1 s]; it doubles, up to Reseed, while such reseeds find nothing.
	ReseedGap time.Duration
	// IdleSweep is the period of the sweep that drops unused queues' state
	// (QUEEN_HOTLIST_IDLE_SWEEP_MS); 0 disables it.
	IdleSweep time.Duration
	// LeasePark caps how long a leased partition waits in the wheel [1 s].
	LeasePark time.Duration
	// RevisitMin and RevisitMax bound the revisit of a deferral queue's empty claim and
	// of a busy cursor row [50 ms, 1 s].
	RevisitMin, RevisitMax time.Duration
	// Stranded is how long a checked-out slot may stay in flight before a reseed takes it
	// back (its pop was dropped between check-out and check-in) [twice StatementTimeout;
	// 60 s without one].
	Stranded time.Duration
	// StatementTimeout is the longest one statement of a pop runs (DB_STATEMENT_TIMEOUT):
	// a slot in flight for twice as long belongs to a pop that was dropped.
	StatementTimeout time.Duration
	// LogEvery is the period of the reseed-floor log line [30 s]; TopN the busiest rings
	// it names [10, QUEEN_LOG_TOPN_QUEUES].
	LogEvery time.Duration
	TopN     int
	// Trace, when set, logs mark, wake and serve breadcrumbs for queues whose name
	// starts with it (QUEEN_HOTLIST_TRACE), at most TraceRate lines a second [100].
	Trace     string
	TraceRate int
	Logger    *slog.Logger
	// Stages times the ready stage: a slot made ready to a pop checking it out [its own].
	Stages *stages.Timers
}

func (o *Options) defaults() {
	if o.Wake == nil {
		o.Wake = func(string, string) {}
	}
	setDefault(&o.Shards, DefaultShards)
	setDefault(&o.WindowBatch, DefaultWindowBatch)
	setDefault(&o.ReseedPage, 10_000)
	setDefault(&o.ReseedPages, 200)
	setDefault(&o.TopN, DefaultTopN)
	setDefault(&o.TraceRate, 100)
	setDefault(&o.WakeTick, 5*time.Millisecond)
	setDefault(&o.Reseed, DefaultReseed)
	setDefault(&o.ReseedGap, time.Second)
	setDefault(&o.LeasePark, time.Second)
	setDefault(&o.RevisitMin, 50*time.Millisecond)
	setDefault(&o.RevisitMax, time.Second)
	if o.Stranded == 0 && o.StatementTimeout > 0 {
		o.Stranded = 2 * o.StatementTimeout
	}
	setDefault(&o.Stranded, time.Minute)
	setDefault(&o.LogEvery, 30*time.Second)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Stages == nil {
		o.Stages = stages.New()
	}
}

func setDefault[T int | time.Duration](v *T, d T) {
	if *v == 0 {
		*v = d
	}
}

// List is the hot-list: per queue, the partitions that probably have work for each
// consumer group polling it. Create it with New; its background work (wake tick, reseed
// floor, idle sweep, log line) runs from Start until Stop.
type List struct {
	store ports.HotlistStore
	opts  Options

	mu     sync.RWMutex
	queues map[string]*queue // notify.QueueKey -> state

	reseedq chan *ring // rings a pop found cold, or just registered
	stop    context.CancelFunc
	done    chan struct{}

	stats counters
	trace *tracer
	ready *stages.Histogram // opts.Stages' ready stage
}

// New returns a List whose reseed floor reads store; it starts nothing (see Start).
func New(store ports.HotlistStore, opts Options) *List {
	opts.defaults()
	return &List{store: store, opts: opts, queues: make(map[string]*queue),
		reseedq: make(chan *ring, 1024), trace: newTracer(opts), ready: &opts.Stages.Pop.Ready}
}

// Enabled reports whether the hot-list serves pops.
func (l *List) Enabled() bool { return l.opts.Enabled }

// Start launches the background work: the wake tick, the reseed floor, the idle sweep
// and the log line. It does nothing when the hot-list is off or already started.
func (l *List) Start() {
	if !l.opts.Enabled || l.stop != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.stop, l.done = cancel, make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { l.tickWakes(ctx) })
	wg.Go(func() { l.reseedLoop(ctx) })
	wg.Go(func() { l.housekeep(ctx) })
	go func() {
		wg.Wait()
		close(l.done)
	}()
}

// Stop ends the background work and waits for it (a reseed in flight is cancelled).
func (l *List) Stop() {
	if l.stop == nil {
		return
	}
	l.stop()
	<-l.done
}

// queue is one queue's state: its partitions interned to dense indexes, and a ring per
// consumer group that polls it.
type queue struct {
	key, tenant, name string

	mu    sync.Mutex // guards the maps and slices below (not the rings' slots)
	index map[string]uint32
	names []string
	ids   []string // partition id per index; "" until learned
	byID  map[string]uint32
	rings map[string]*ring
	// Deferral options (unix ns durations), learned from reseeds; stale is set by a
	// configure so the next reseed reads them again.
	delayed, window atomic.Int64

	touched atomic.Bool  // second chance: every access sets it, each sweep clears it
	refs    atomic.Int32 // operations holding the queue (a swept queue has none)
	// untouched counts the consecutive sweeps that found the queue untouched (sweep
	// goroutine only).
	untouched int

	// woken: a quiet mark woke the queue's parked pops at once and no pop of the queue
	// has come to claim since (CheckOut); later quiet marks wait for the tick (see mark).
	woken   atomic.Bool
	wakeMu  sync.Mutex
	wakes   map[string]struct{} // partitions marked quietly since the last wake tick
	wakeAll bool                // more than maxWakes of them: one wake per group instead
}

// maxWakes bounds the partitions a queue remembers between two wake ticks.
const maxWakes = 64

// ring is the state of one (queue, group): sub-rings of slots, each with its mutex.
type ring struct {
	q     *queue
	group string
	mu    []sync.Mutex
	subs  []*subring
	rr    atomic.Uint32 // the sub-ring a check-out starts at (round robin)
	// seeded is set by the ring's first complete reseed: until then the ring does not
	// know the partitions that had work before it existed, and pops keep scanning.
	seeded atomic.Bool

	reseedMu   sync.Mutex
	nextFloor  time.Time // when the periodic floor reseeds this ring next
	lastReseed time.Time
	// coldGap is the least time between two reseeds pops ask for: ReseedGap after a
	// reseed that found work, doubling (up to the floor's period) after each that found
	// none, so parked pops on an idle queue do not reseed it every second.
	coldGap time.Duration
	// lastCost is how long the last reseed took: the floor waits at least
	// floorCostFactor times that, so reseeding a huge queue costs a bounded share of time.
	lastCost  time.Duration
	requested bool // a reseed is queued (reseedq) and not yet run
}

// acquire returns the state of key (creating it with create), holding a reference the
// caller releases; nil when it does not exist and create is false.
func (l *List) acquire(tenant, queueName, key string, create bool) *queue {
	l.mu.RLock()
	q := l.queues[key]
	if q != nil {
		q.refs.Add(1)
	}
	l.mu.RUnlock()
	if q == nil && create {
		l.mu.Lock()
		if q = l.queues[key]; q == nil {
			q = &queue{key: key, tenant: tenant, name: queueName, index: make(map[string]uint32),
				byID: make(map[string]uint32), rings: make(map[string]*ring), wakes: make(map[string]struct{})}
			l.queues[key] = q
		}
		q.refs.Add(1)
		l.mu.Unlock()
	}
	if q != nil {
		q.touched.Store(true)
	}
	return q
}

func (q *queue) release() { q.refs.Add(-1) }

// intern returns the index of partition name, learning its id when given.
func (q *queue) intern(name, id string) uint32 {
	q.mu.Lock()
	defer q.mu.Unlock()
	i, ok := q.index[name]
	if !ok {
		i = uint32(len(q.names))
		q.index[name] = i
		q.names = append(q.names, name)
		q.ids = append(q.ids, "")
	}
	if id != "" && q.ids[i] != id {
		if old := q.ids[i]; old != "" {
			delete(q.byID, old) // the partition was deleted and created again
		}
		q.ids[i] = id
		q.byID[id] = i
	}
	return i
}

// byPartitionID returns the index of the partition with id, if it was learned.
func (q *queue) byPartitionID(id string) (uint32, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	i, ok := q.byID[id]
	return i, ok
}

// idOf returns the id and name of index i.
func (q *queue) idOf(i uint32) (id, name string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ids[i], q.names[i]
}

// ringList returns the queue's rings.
func (q *queue) ringList() []*ring {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]*ring, 0, len(q.rings))
	for _, r := range q.rings {
		out = append(out, r)
	}
	return out
}

// ringOf returns group's ring, creating it (with its first reseed due at once and the
// periodic floor at a random phase within the first 15 s) when create is set.
func (l *List) ringOf(q *queue, group string, create bool) (r *ring, created bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if r = q.rings[group]; r != nil || !create {
		return r, false
	}
	r = &ring{q: q, group: group, mu: make([]sync.Mutex, l.opts.Shards), subs: make([]*subring, l.opts.Shards)}
	for k := range r.subs {
		r.subs[k] = newSubring()
	}
	r.nextFloor = time.Now().Add(time.Duration(rand.Int64N(int64(15 * time.Second))))
	q.rings[group] = r
	return r, true
}

// slot locates index i in ring r: its sub-ring and local position.
func (r *ring) slot(i uint32) (k int, loc int32) {
	n := uint32(len(r.subs))
	return int(i % n), int32(i / n)
}

// index is the inverse of slot.
func (r *ring) index(k int, loc int32) uint32 { return uint32(loc)*uint32(len(r.subs)) + uint32(k) }

// deferrals returns the queue's deferral options.
func (q *queue) deferrals() (delayed, window time.Duration) {
	return time.Duration(q.delayed.Load()), time.Duration(q.window.Load())
}

package history

import (
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/ports"
)

// The defaults of Options. METRICS_FLUSH_MS's default (config) is DefaultFlush.
const (
	DefaultFlush        = time.Minute      // METRICS_FLUSH_MS
	DefaultMaxPending   = 60               // unwritten flushes kept across an outage
	DefaultSample       = 5 * time.Second  // process figures and parked polls
	DefaultWriteTimeout = 10 * time.Second // one flush's write; also bounds Stop's final flush
)

// Options tunes a Recorder; zero values take the defaults in brackets.
type Options struct {
	// Off turns the history off (METRICS_FLUSH_MS=0): Activity is nil, so nothing is
	// counted, and Start writes nothing.
	Off          bool
	Flush        time.Duration // [1 min] METRICS_FLUSH_MS
	MaxPending   int           // [60] unwritten flushes kept; past it the oldest is dropped
	Sample       time.Duration // [5 s] how often the process figures are sampled
	WriteTimeout time.Duration // [10 s]

	Broker   string // [Hostname] QUEEN_SERVER_ID: the broker rows' key
	Hostname string // [os.Hostname()]
	Port     int

	// Figures are the sources of the process figures; nil ones take the defaults given
	// on Figures.
	Figures Figures
	Logger  *slog.Logger
}

func (o *Options) defaults() {
	if o.Flush <= 0 {
		o.Flush = DefaultFlush
	}
	if o.MaxPending <= 0 {
		o.MaxPending = DefaultMaxPending
	}
	if o.Sample <= 0 {
		o.Sample = DefaultSample
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.Hostname == "" {
		o.Hostname, _ = os.Hostname()
	}
	if o.Broker == "" {
		o.Broker = o.Hostname
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Figures.defaults()
}

// Recorder counts activity in memory and writes it to the metrics history every Flush.
// Its counting methods are safe for concurrent use and never block on the database.
type Recorder struct {
	w        ports.MetricsWriter
	opts     Options
	instance string

	// queues maps a queue name of the default tenant (ports.DefaultTenant, every queue
	// unless tenancy is on) to its *counters, and tenants a (tenant, queue) of the others.
	// sync.Maps: the hot path's lookup of a known queue writes no shared word (a read
	// lock's count would be one line every core writes); a string key hashes in a third
	// of a struct key's time, which is why the default tenant has a map of its own.
	// Entries idle for evictAfter flushes are removed (evict).
	queues  sync.Map // string -> *counters
	tenants sync.Map // queueKey -> *counters
	unnamed counters // activity of no named queue: the broker's totals only

	requests, latencySumUs, latencyMaxUs, dbErrors atomic.Int64

	flushes, failures, dropped, pendingN atomic.Int64

	// The loop's own state (one goroutine, or Stop's final flush after it ended).
	seq     int64
	pending []ports.MetricsFlush
	outage  bool // a write failed and none succeeded since
	dropLog bool // the drop of this outage is logged
	fig     sampler

	stop chan struct{}
	done chan struct{}
}

var _ ports.Activity = (*Recorder)(nil)

type queueKey struct{ tenant, queue string }

// counters are one queue's counts since the last flush. The atomics are the hot path's;
// the plain fields belong to the loop.
type counters struct {
	pushRequests, pushMessages           atomic.Int64
	popRequests, popMessages, popEmpty   atomic.Int64
	ackRequests, ackSuccess, ackFailed   atomic.Int64
	dlqMoves, transactions               atomic.Int64
	partitionsCreated, partitionsDeleted atomic.Int64
	lagCount, lagSumMs, lagMaxMs         atomic.Int64
	parkedMax                            atomic.Int64 // sampled since the last flush
	// dead is set once the entry left the map: whoever adds to it afterwards moves its
	// counts to the live entry (settle), so an eviction never loses an addition.
	dead atomic.Bool

	idle       int       // flushes in a row that found nothing counted
	sentMinute time.Time // the minute parkedSent was sent for
	parkedSent int64     // the largest parked count already written for sentMinute
}

// New returns a Recorder writing to w. It starts nothing: counting works at once, and
// Start begins the flushes.
func New(w ports.MetricsWriter, opts Options) *Recorder {
	opts.defaults()
	id, err := uuid.NewV7()
	if err != nil {
		// NewV7 only fails when the system's random source does.
		panic(fmt.Sprintf("history: mint instance id: %v", err))
	}
	return &Recorder{w: w, opts: opts, instance: id.String()}
}

// Instance is the id of this process's flushes.
func (r *Recorder) Instance() string { return r.instance }

// SetPort sets the port the broker rows name (Options.Port) once it is known; call it
// before Start.
func (r *Recorder) SetPort(port int) { r.opts.Port = port }

// Activity is what the push, pop, ack and retention paths report to: r, or nil when
// the history is off (Options.Off), so that they skip counting altogether.
func (r *Recorder) Activity() ports.Activity {
	if r.opts.Off {
		return nil
	}
	return r
}

// entry returns the counters of (tenant, queue), created on first use. The caller adds
// to them and then calls settle.
func (r *Recorder) entry(tenant, queue string) *counters {
	if queue == "" {
		return &r.unnamed
	}
	// Each lookup with its concrete key type: a key passed on as an interface would
	// escape, and allocate on every call.
	if tenant == ports.DefaultTenant {
		if v, ok := r.queues.Load(queue); ok {
			return v.(*counters)
		}
	} else if v, ok := r.tenants.Load(queueKey{tenant, queue}); ok {
		return v.(*counters)
	}
	m, k := r.mapOf(tenant, queue)
	v, _ := m.LoadOrStore(k, new(counters))
	return v.(*counters)
}

// mapOf returns the map holding (tenant, queue) and its key there.
func (r *Recorder) mapOf(tenant, queue string) (*sync.Map, any) {
	if tenant == ports.DefaultTenant {
		return &r.queues, queue
	}
	return &r.tenants, queueKey{tenant, queue}
}

// each calls f for every queue's counters until f returns false.
func (r *Recorder) each(f func(k queueKey, c *counters) bool) {
	cont := true
	r.queues.Range(func(key, v any) bool {
		cont = f(queueKey{ports.DefaultTenant, key.(string)}, v.(*counters))
		return cont
	})
	if cont {
		r.tenants.Range(func(key, v any) bool { return f(key.(queueKey), v.(*counters)) })
	}
}

// settle finishes an addition to c: if c was evicted meanwhile, its counts move to the
// live entry (Go's atomics are sequentially consistent: an addition made after the
// evictor's last swap sees dead set).
func (r *Recorder) settle(tenant, queue string, c *counters) {
	for c.dead.Load() {
		moved, parked := c.swap()
		if moved == (ports.Counters{}) && parked == 0 {
			return // nothing left (or another settle moved it)
		}
		n := r.entry(tenant, queue)
		n.add(moved, parked)
		c = n
	}
}

// Pushed implements ports.Activity.
func (r *Recorder) Pushed(tenant, queue string, messages int) {
	c := r.entry(tenant, queue)
	c.pushRequests.Add(1)
	c.pushMessages.Add(int64(messages))
	r.settle(tenant, queue, c)
}

// Popped implements ports.Activity.
func (r *Recorder) Popped(tenant, queue string, messages int, lagSumMs, lagMaxMs int64) {
	c := r.entry(tenant, queue)
	c.popRequests.Add(1)
	if messages == 0 {
		c.popEmpty.Add(1)
	} else {
		c.popMessages.Add(int64(messages))
		c.lagCount.Add(int64(messages))
		c.lagSumMs.Add(lagSumMs)
		raise(&c.lagMaxMs, lagMaxMs)
	}
	r.settle(tenant, queue, c)
}

// Acked implements ports.Activity.
func (r *Recorder) Acked(tenant, queue string, success, failed, dlq int) {
	c := r.entry(tenant, queue)
	c.ackRequests.Add(1)
	c.ackSuccess.Add(int64(success))
	c.ackFailed.Add(int64(failed))
	c.dlqMoves.Add(int64(dlq))
	r.settle(tenant, queue, c)
}

// Transacted implements ports.Activity.
func (r *Recorder) Transacted(tenant, queue string) {
	c := r.entry(tenant, queue)
	c.transactions.Add(1)
	r.settle(tenant, queue, c)
}

// PartitionsCreated implements ports.Activity.
func (r *Recorder) PartitionsCreated(tenant, queue string, n int) {
	c := r.entry(tenant, queue)
	c.partitionsCreated.Add(int64(n))
	r.settle(tenant, queue, c)
}

// PartitionsDeleted implements ports.Activity.
func (r *Recorder) PartitionsDeleted(tenant, queue string, n int) {
	c := r.entry(tenant, queue)
	c.partitionsDeleted.Add(int64(n))
	r.settle(tenant, queue, c)
}

// Request counts one answered HTTP request and its latency.
func (r *Recorder) Request(latency time.Duration) {
	us := latency.Microseconds()
	r.requests.Add(1)
	r.latencySumUs.Add(us)
	raise(&r.latencyMaxUs, us)
}

// Observe is Request in the shape of an HTTP observer (adapters/httpapi.Observer).
// Nothing is counted when the history is off.
func (r *Recorder) Observe(_, _ string, _ int, d time.Duration, _ int64) {
	if !r.opts.Off {
		r.Request(d)
	}
}

// DBError counts one database statement that failed.
func (r *Recorder) DBError() { r.dbErrors.Add(1) }

// raise makes a at least v.
func raise(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// Stats are the Recorder's cumulative counts, for tests and GET /metrics.
type Stats struct {
	Flushes  int64 // flushes written
	Failures int64 // writes that failed (each retry of a pending flush counts)
	Dropped  int64 // flushes dropped unwritten past MaxPending
	Pending  int64 // flushes waiting to be written now
}

// Stats returns the counts.
func (r *Recorder) Stats() Stats {
	return Stats{Flushes: r.flushes.Load(), Failures: r.failures.Load(), Dropped: r.dropped.Load(),
		Pending: r.pendingN.Load()}
}

package load

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// RSSConfig configures the rss mode: the broker's memory with Partitions partitions of
// one message each, seen by Groups consumer groups, then again once they are consumed
// and the hot-list's idle sweep has had time to drop their state.
type RSSConfig struct {
	Common     // Duration bounds the drain
	Queue      string
	Partitions int           // one message each
	Groups     int           // consumer groups g0..g(Groups-1): one ring each
	Conns      int           // seeding connections
	PushBatch  int           // seeding items per request
	Consumers  int           // draining consumers, spread over the groups
	Batch      int           // draining pop batch
	PopParts   int           // draining partitions per pop
	Settle     time.Duration // longest wait for the reseed to register every partition
	SweepWait  time.Duration // wait after the drain: past two QUEEN_HOTLIST_IDLE_SWEEP_MS
	GCWait     time.Duration // then wait up to this long for the broker's next GC (0: do not)
	Flush      bool          // after the drain, pop (not waiting) until the hot-list has nothing ready
	BrokerPid  int           // > 0: RSS from /proc when the broker does not export it
}

// memReading is the broker's memory at one point of the run.
type memReading struct {
	RSS, Heap    float64 // bytes; -1 when not available (so are the others)
	Queues       float64 // hot-list queues with state
	Rings, Ready float64 // hot-list rings, partitions ready over every ring
	Wheel        float64 // partitions waiting in the hot-list's wheels
	Rows         float64 // partitions every reseed so far returned
	GCs          float64 // GC cycles the broker completed
}

// rssRun is the state of one rss run.
type rssRun struct {
	cfg RSSConfig
	m   *Meter
	cl  *Client
	mem atomic.Pointer[memReading] // the latest, shown on the progress lines

	drainedAt time.Time
	sweptAt   float64 // seconds from drainedAt until the hot-list held no queue; -1 not yet
	flushing  bool    // flushStale pops (a hot-list broker, Flush)
	flushPops int
	staleMax  float64 // the most partitions seen ready after the drain, before a flush
}

func (r *rssRun) read() memReading {
	mr := memReading{RSS: -1, Heap: -1, Queues: -1, Rings: -1, Ready: -1, Wheel: -1, Rows: -1, GCs: -1}
	s, err := r.cl.Samples()
	if err != nil {
		fmt.Fprintf(r.cfg.Out, "rss: metrics: %v\n", err)
		s = Samples{}
	}
	get := func(name string) float64 {
		if v, ok := s.Get(name); ok {
			return v
		}
		return -1
	}
	mr.RSS, mr.Heap, mr.GCs = get(SampleRSS), get(SampleHeapInuse), get(SampleGCCount)
	mr.Queues, mr.Rings, mr.Ready, mr.Wheel = get(SampleHLQueues), get(SampleHLRings), get(SampleHLReady), get(SampleHLWheel)
	mr.Rows = get(SampleHLRows)
	if mr.RSS < 0 && r.cfg.BrokerPid > 0 {
		if v, err := ProcessRSS(r.cfg.BrokerPid); err == nil {
			mr.RSS = v
		}
	}
	r.mem.Store(&mr)
	return mr
}

// RunRSS measures the broker's resident memory at four points: before anything, with
// Partitions partitions of one message each seeded and one wildcard pop per group made
// (so the hot-list registered a ring per group and its reseed read every partition), once
// every group consumed everything, and SweepWait later (then, with GCWait, after the
// broker's next garbage collection: memory the sweep released is only returned by a GC).
func RunRSS(ctx context.Context, cfg RSSConfig) (Summary, error) {
	if cfg.Partitions < 1 || cfg.Groups < 1 || cfg.PushBatch < 1 || cfg.Batch < 1 {
		return Summary{}, fmt.Errorf("rss: partitions %d, groups %d, push batch %d, batch %d: each must be 1 or more",
			cfg.Partitions, cfg.Groups, cfg.PushBatch, cfg.Batch)
	}
	m := NewMeter("rss", cfg.Out, "msgs", "requests", "retries", "errors", "notStored", "consumed")
	cl, err := NewClient(cfg.URL, 60*time.Second)
	if err != nil {
		return Summary{}, err
	}
	defer cl.Close()
	r := &rssRun{cfg: cfg, m: m, cl: cl}
	gauge := func(name string, f func(memReading) float64) {
		m.Gauge(name, func() int64 { return int64(f(*r.mem.Load())) })
	}
	gauge("rssMiB", func(mr memReading) float64 { return mr.RSS / (1 << 20) })
	gauge("rings", func(mr memReading) float64 { return mr.Rings })
	gauge("ready", func(mr memReading) float64 { return mr.Ready })
	gauge("wheel", func(mr memReading) float64 { return mr.Wheel })
	fig := map[string]any{}
	base := r.read()
	fig["partitions"], fig["groups"] = cfg.Partitions, cfg.Groups

	fmt.Fprintf(cfg.Out, "rss: seeding %d partitions of %s with one message each\n", cfg.Partitions, cfg.Queue)
	t0 := time.Now()
	err = prefill(ctx, PrefillConfig{Common: Common{URL: cfg.URL, Out: cfg.Out}, Queue: cfg.Queue,
		Partitions: cfg.Partitions, Messages: int64(cfg.Partitions), Batch: cfg.PushBatch, Conns: cfg.Conns,
		PayloadBytes: 110}, m)
	fig["seed_msgs_per_s"] = float64(m.Get("msgs")) / time.Since(t0).Seconds()
	if err == nil && m.Get("msgs") < int64(cfg.Partitions) {
		err = fmt.Errorf("rss: %d of %d seed messages not stored", int64(cfg.Partitions)-m.Get("msgs"), cfg.Partitions)
	}
	if err != nil {
		return m.Stop(), err
	}
	popped, err := r.firstPops()
	if err != nil {
		return m.Stop(), err
	}
	hot := r.settle(ctx, base)
	fig["hotlist"] = hot
	seeded := r.read()
	fmt.Fprintf(cfg.Out, "rss: seeded: RSS %s, heap in use %s, hot-list rings %.0f, ready %.0f\n",
		mb(seeded.RSS), mb(seeded.Heap), seeded.Rings, seeded.Ready)

	fmt.Fprintf(cfg.Out, "rss: draining every group (%d consumers, batch %d, %d partitions per pop)\n",
		cfg.Consumers, cfg.Batch, cfg.PopParts)
	t1 := time.Now()
	derr := r.drain(ctx, popped)
	fig["drain_msgs_per_s"] = float64(m.Get("consumed")) / time.Since(t1).Seconds()
	if derr != nil {
		return m.Stop(), derr
	}
	drained := r.read()
	fmt.Fprintf(cfg.Out, "rss: drained: RSS %s, hot-list ready %.0f, wheel %.0f\n", mb(drained.RSS), drained.Ready, drained.Wheel)
	r.flushing = hot && cfg.Flush
	r.staleMax = max(drained.Ready, 0)
	if err := r.flushStale(ctx, drained); err != nil {
		return m.Stop(), err
	}
	fmt.Fprintf(cfg.Out, "rss: waiting %s for the idle sweep\n", cfg.SweepWait)
	r.drainedAt, r.sweptAt = time.Now(), -1
	if drained.Queues == 0 {
		r.sweptAt = 0
	}
	swept, _, err := r.watch(ctx, cfg.SweepWait, drained, -1)
	if err != nil {
		return m.Stop(), err
	}
	points := map[string]memReading{"base": base, "seeded": seeded, "drained": drained, "swept": swept}
	if cfg.GCWait > 0 && swept.GCs >= 0 {
		fmt.Fprintf(cfg.Out, "rss: waiting up to %s for the broker's next garbage collection\n", cfg.GCWait)
		after, ok, err := r.watch(ctx, cfg.GCWait, swept, swept.GCs)
		if err != nil {
			return m.Stop(), err
		}
		if ok {
			points["gc"] = after
		} else {
			fig["gc_seen"] = false
		}
	}
	if r.flushing {
		fig["flush_pops"] = r.flushPops
	}
	if hot {
		// Without a hot-list there is nothing to sweep. -1: not within the waits.
		fig["swept_after_s"] = r.sweptAt
		// What keeps the sweep from dropping the state: a ring with anything ready or
		// wheeled is not idle.
		fig["hotlist_ready_drained"], fig["hotlist_wheel_drained"] = drained.Ready, drained.Wheel
		fig["hotlist_ready_stale_max"] = r.staleMax
		fig["hotlist_ready_end"], fig["hotlist_rings_end"] = swept.Ready, swept.Rings
	}
	for name, p := range points {
		if p.RSS >= 0 {
			fig["rss_"+name+"_mb"] = p.RSS / (1 << 20)
		}
		if p.Heap >= 0 {
			fig["heap_"+name+"_mb"] = p.Heap / (1 << 20)
		}
	}
	if seeded.RSS >= 0 && base.RSS >= 0 && cfg.Partitions > 0 {
		fig["rss_bytes_per_partition"] = (seeded.RSS - base.RSS) / float64(cfg.Partitions)
	}
	s := m.Stop()
	s.Extra = fig
	return s, ctx.Err()
}

// firstPops makes one wildcard pop per group (that registers the group's ring, whose
// reseed then reads every partition) and acks what it got; it returns the messages
// each group got.
func (r *rssRun) firstPops() ([]int64, error) {
	popped := make([]int64, r.cfg.Groups)
	for g := range r.cfg.Groups {
		path := PopParams{Queue: r.cfg.Queue, Group: rssGroup(g), Batch: 1, SubscriptionMode: "all"}.Path()
		b, err := r.cl.Pop(path)
		if err != nil {
			return nil, fmt.Errorf("rss: first pop of %s: %w", rssGroup(g), err)
		}
		if b == nil {
			continue
		}
		if _, err := r.cl.Ack(b, "", nil); err != nil {
			return nil, fmt.Errorf("rss: first ack of %s: %w", rssGroup(g), err)
		}
		popped[g] = int64(len(b.Messages))
		r.m.Add("consumed", popped[g])
	}
	return popped, nil
}

func rssGroup(g int) string { return fmt.Sprintf("g%d", g) }

// settle waits until the reseeds after the first pops returned every partition of
// every group, or Settle passes. It reports whether the broker has a hot-list: no ring
// registered within two seconds means it has none (QUEEN_HOTLIST=0, or another broker),
// and there is nothing to wait for.
func (r *rssRun) settle(ctx context.Context, base memReading) bool {
	start := time.Now()
	want := float64(r.cfg.Groups) * float64(r.cfg.Partitions-1)
	for ctx.Err() == nil {
		mr := r.read()
		if mr.Rings <= 0 && time.Since(start) > 2*time.Second {
			fmt.Fprintln(r.cfg.Out, "rss: no hot-list ring registered: nothing to wait for")
			return false
		}
		if rows := mr.Rows - base.Rows; mr.Rings > 0 && rows >= want {
			fmt.Fprintf(r.cfg.Out, "rss: the reseeds read %.0f partitions in %.1f s\n", rows, time.Since(start).Seconds())
			return true
		}
		if time.Since(start) > r.cfg.Settle {
			fmt.Fprintf(r.cfg.Out, "rss: the reseeds did not read every partition within %s\n", r.cfg.Settle)
			return mr.Rings > 0
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
	return false
}

// drain consumes every group's messages (popped[g] were consumed by the first pops).
func (r *rssRun) drain(ctx context.Context, popped []int64) error {
	left := make([]atomic.Int64, r.cfg.Groups)
	var groupsLeft atomic.Int64
	for g := range left {
		left[g].Store(int64(r.cfg.Partitions) - popped[g])
		if left[g].Load() > 0 {
			groupsLeft.Add(1)
		}
	}
	if groupsLeft.Load() == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	err := Workers(ctx, r.cfg.URL, max(r.cfg.Consumers, r.cfg.Groups), 30*time.Second, nil, r.cfg.Duration,
		func(ctx context.Context, w int, c *Client) error {
			g := w % r.cfg.Groups
			path := PopParams{Queue: r.cfg.Queue, Group: rssGroup(g), Batch: r.cfg.Batch, Partitions: r.cfg.PopParts,
				Wait: true, TimeoutMS: 1000, SubscriptionMode: "all"}.Path()
			for ctx.Err() == nil && left[g].Load() > 0 {
				b, err := c.Pop(path)
				if err != nil {
					r.m.Fail("pop", err)
					continue
				}
				if b == nil {
					continue
				}
				if _, err := c.Ack(b, "", nil); err != nil {
					r.m.Fail("ack", err)
				}
				n := int64(len(b.Messages))
				r.m.Add("consumed", n)
				if v := left[g].Add(-n); v <= 0 && v+n > 0 && groupsLeft.Add(-1) == 0 {
					cancel()
				}
			}
			return nil
		})
	if err != nil {
		return err
	}
	for g := range left {
		if n := left[g].Load(); n > 0 {
			return fmt.Errorf("rss: group %s has %d messages left after %s", rssGroup(g), n, r.cfg.Duration)
		}
	}
	return nil
}

// watch reads the memory every second for up to d and returns the last reading. It notes
// in sweptAt when the hot-list first held no queue (seconds since drainedAt), and flushes
// stale ready entries whenever it sees some (flushStale). With gcs >= 0 it returns at the
// first reading after the broker completed more GC cycles than gcs, and reports whether
// one came.
func (r *rssRun) watch(ctx context.Context, d time.Duration, last memReading, gcs float64) (memReading, bool, error) {
	t0 := time.Now()
	for ctx.Err() == nil && time.Since(t0) < d {
		sleepCtx(ctx, min(time.Second, d-time.Since(t0)))
		last = r.read()
		r.staleMax = max(r.staleMax, last.Ready)
		if err := r.flushStale(ctx, last); err != nil {
			return last, false, err
		}
		if r.sweptAt < 0 && last.Queues == 0 {
			r.sweptAt = time.Since(r.drainedAt).Seconds()
			fmt.Fprintf(r.cfg.Out, "rss: the hot-list holds no queue any more (%.0f s after the drain)\n", r.sweptAt)
		}
		if gcs >= 0 && last.GCs > gcs {
			fmt.Fprintf(r.cfg.Out, "rss: GC after %.0f s: RSS %s, heap in use %s\n", time.Since(t0).Seconds(), mb(last.RSS), mb(last.Heap))
			return last, true, nil
		}
	}
	return last, false, nil
}

// flushPopsMax bounds the empty pops of one flush: a pop checks out up to 256
// candidates, so this clears half a million stale entries.
const flushPopsMax = 2000

// flushStale, when flushing and mr shows partitions ready on the drained queue, pops every
// group without waiting until the hot-list has nothing ready. After the drain a ring can
// hold partitions that have nothing: a mark that landed while their last claim was out
// makes the ack put them back, and a reseed that read the queue during the drain marks
// them again when it completes, seconds later. Only a pop clears them, and a ring with
// anything ready is not idle, so the sweep would keep the state for as long as nobody
// pops. A consumer still polling the empty queue does what this does.
func (r *rssRun) flushStale(ctx context.Context, mr memReading) error {
	if !r.flushing || mr.Ready <= 0 {
		return nil
	}
	pops := 0
	for g := range r.cfg.Groups {
		path := PopParams{Queue: r.cfg.Queue, Group: rssGroup(g), Batch: r.cfg.Batch, Partitions: r.cfg.PopParts,
			SubscriptionMode: "all"}.Path()
		for ctx.Err() == nil && pops < flushPopsMax {
			b, err := r.cl.Pop(path)
			pops++
			if err != nil {
				return fmt.Errorf("rss: flush pop of %s: %w", rssGroup(g), err)
			}
			if b != nil { // a message the drain missed: consume it too
				if _, err := r.cl.Ack(b, "", nil); err != nil {
					return fmt.Errorf("rss: flush ack of %s: %w", rssGroup(g), err)
				}
				r.m.Add("consumed", int64(len(b.Messages)))
			}
			if pops%8 == 0 {
				if mr = r.read(); mr.Ready <= 0 {
					break
				}
			}
		}
	}
	r.flushPops += pops
	fmt.Fprintf(r.cfg.Out, "rss: %d empty pops cleared the stale ready entries (%.0f left)\n", pops, max(mr.Ready, 0))
	return nil
}

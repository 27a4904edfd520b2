package history

import (
	"context"
	"slices"
	"time"

	"github.com/queen-go/queen/ports"
)

// evictAfter is how many flushes in a row must find a queue idle (nothing counted,
// nothing parked) before its counters leave the map: a queue used now and then keeps
// its entry, a deleted one does not stay forever.
const evictAfter = 5

// Start begins sampling and flushing every Options.Flush, at wall-clock multiples of it,
// until Stop or the end of ctx (both write a final flush). With Options.Off it starts
// nothing.
func (r *Recorder) Start(ctx context.Context) {
	if r.stop != nil || r.opts.Off {
		return
	}
	r.stop, r.done = make(chan struct{}), make(chan struct{})
	r.fig.cpuUser, r.fig.cpuSys = r.opts.Figures.CPU()
	if f := r.opts.Figures.DBErrors; f != nil {
		r.fig.dbErrors = f()
	}
	go r.run(ctx)
}

// Stop ends the loop after a final flush of what was counted since the last one (and
// of the pending flushes), bounded by Options.WriteTimeout. Without Start it does
// nothing.
func (r *Recorder) Stop() {
	if r.stop == nil {
		return
	}
	close(r.stop)
	<-r.done
	r.stop = nil
}

func (r *Recorder) run(ctx context.Context) {
	defer close(r.done)
	samples := time.NewTicker(r.opts.Sample)
	defer samples.Stop()
	next := r.next(time.Now())
	tick := time.NewTimer(time.Until(next))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			r.final()
			return
		case <-r.stop:
			r.final()
			return
		case <-samples.C:
			if time.Since(r.fig.at) >= r.opts.Sample/2 { // not right after a flush's sample
				r.sample()
			}
		case <-tick.C:
			r.flush(ctx, next)
			next = r.next(time.Now()) // a flush slower than the interval skips ticks
			tick.Reset(time.Until(next))
		}
	}
}

// next is the first multiple of the flush interval after now.
func (r *Recorder) next(now time.Time) time.Time { return now.Truncate(r.opts.Flush).Add(r.opts.Flush) }

// final is the last flush, whatever ended the loop.
func (r *Recorder) final() {
	ctx, cancel := context.WithTimeout(context.Background(), r.opts.WriteTimeout)
	defer cancel()
	r.flush(ctx, time.Now())
}

// flush swaps the counters out as one flush of the minute holding at - 1 ns and writes
// it after the pending ones; past MaxPending unwritten, the oldest are dropped.
func (r *Recorder) flush(ctx context.Context, at time.Time) {
	if r.fig.fig.Samples == 0 || time.Since(r.fig.at) >= r.opts.Sample/2 { // not right after the ticker's
		r.sample()
	}
	r.pending = append(r.pending, r.collect(at.Add(-time.Nanosecond).UTC().Truncate(time.Minute)))
	r.writePending(ctx)
	if over := len(r.pending) - r.opts.MaxPending; over > 0 {
		r.pending = slices.Delete(r.pending, 0, over)
		r.dropped.Add(int64(over))
		if !r.dropLog {
			r.dropLog = true
			r.opts.Logger.Warn("history: metrics history unwritable for too long, dropping its oldest minutes",
				"max_pending", r.opts.MaxPending)
		}
	}
	r.pendingN.Store(int64(len(r.pending)))
}

// writePending writes the pending flushes, oldest first, until one fails (the rest wait
// for the next tick: the database is likely away).
func (r *Recorder) writePending(ctx context.Context) {
	for len(r.pending) > 0 {
		wctx, cancel := context.WithTimeout(ctx, r.opts.WriteTimeout)
		err := r.w.WriteMetrics(wctx, r.pending[0])
		cancel()
		if err != nil {
			r.failures.Add(1)
			if !r.outage {
				r.outage = true
				r.opts.Logger.Warn("history: metrics flush not written, kept in memory to retry",
					"pending", len(r.pending), "err", err)
			}
			return
		}
		r.pending = slices.Delete(r.pending, 0, 1)
		r.flushes.Add(1)
	}
	if r.outage {
		r.opts.Logger.Info("history: metrics flushes written again")
		r.outage, r.dropLog = false, false
	}
}

// collect swaps every counter out into a flush of minute.
func (r *Recorder) collect(minute time.Time) ports.MetricsFlush {
	r.seq++
	f := ports.MetricsFlush{Instance: r.instance, Seq: r.seq}
	var total ports.Counters
	var idle []queueKey
	r.each(func(k queueKey, c *counters) bool {
		qc, parked := c.swap()
		qc.ParkedMax = c.parkedIncrease(minute, parked)
		if parked == 0 && qc == (ports.Counters{}) {
			if c.idle++; c.idle >= evictAfter {
				idle = append(idle, k)
			}
			return true
		}
		c.idle = 0
		if qc == (ports.Counters{}) {
			return true // polls still parked, none more than already written: nothing to add
		}
		f.Queues = append(f.Queues, ports.QueueMinute{Minute: minute, Tenant: k.tenant, Queue: k.queue, Counters: qc})
		total.Add(qc)
		return true
	})
	unnamed, _ := r.unnamed.swap()
	total.Add(unnamed)
	r.evict(idle)

	fig, parked, parkedMax := r.fig.take(r.opts.Figures.CPU)
	fig.Requests = r.requests.Swap(0)
	fig.LatencySumUs = r.latencySumUs.Swap(0)
	fig.LatencyMaxUs = r.latencyMaxUs.Swap(0)
	fig.DBErrors = r.dbErrors.Swap(0)
	if f := r.opts.Figures.DBErrors; f != nil {
		n := f()
		fig.DBErrors += n - r.fig.dbErrors
		r.fig.dbErrors = n
	}
	total.ParkedMax = parkedMax // at once over every queue, not the sum of each queue's most
	f.Brokers = []ports.BrokerMinute{{Minute: minute, Broker: r.opts.Broker, Hostname: r.opts.Hostname,
		Port: r.opts.Port, Counters: total, Figures: fig, Parked: parked}}
	return f
}

// evict removes the queues idle long enough. An addition racing the removal is not
// lost: once dead is set, the adder or this final settle moves the counts to the live
// entry, for the next flush.
func (r *Recorder) evict(keys []queueKey) {
	for _, k := range keys {
		m, key := r.mapOf(k.tenant, k.queue)
		v, ok := m.Load(key)
		if !ok || !m.CompareAndDelete(key, v) {
			continue
		}
		c := v.(*counters)
		c.dead.Store(true)
		r.settle(k.tenant, k.queue, c)
	}
}

// add adds moved counts and a parked maximum to c.
func (c *counters) add(o ports.Counters, parked int64) {
	c.pushRequests.Add(o.PushRequests)
	c.pushMessages.Add(o.PushMessages)
	c.popRequests.Add(o.PopRequests)
	c.popMessages.Add(o.PopMessages)
	c.popEmpty.Add(o.PopEmpty)
	c.ackRequests.Add(o.AckRequests)
	c.ackSuccess.Add(o.AckSuccess)
	c.ackFailed.Add(o.AckFailed)
	c.dlqMoves.Add(o.DLQMoves)
	c.transactions.Add(o.Transactions)
	c.partitionsCreated.Add(o.PartitionsCreated)
	c.partitionsDeleted.Add(o.PartitionsDeleted)
	c.lagCount.Add(o.LagCount)
	c.lagSumMs.Add(o.LagSumMs)
	raise(&c.lagMaxMs, o.LagMaxMs)
	raise(&c.parkedMax, parked)
}

// swap returns the counts and the sampled parked maximum, and zeroes them.
func (c *counters) swap() (ports.Counters, int64) {
	return ports.Counters{
		PushRequests: c.pushRequests.Swap(0), PushMessages: c.pushMessages.Swap(0),
		PopRequests: c.popRequests.Swap(0), PopMessages: c.popMessages.Swap(0), PopEmpty: c.popEmpty.Swap(0),
		AckRequests: c.ackRequests.Swap(0), AckSuccess: c.ackSuccess.Swap(0), AckFailed: c.ackFailed.Swap(0),
		DLQMoves: c.dlqMoves.Swap(0), Transactions: c.transactions.Swap(0),
		PartitionsCreated: c.partitionsCreated.Swap(0), PartitionsDeleted: c.partitionsDeleted.Swap(0),
		LagCount: c.lagCount.Swap(0), LagSumMs: c.lagSumMs.Swap(0), LagMaxMs: c.lagMaxMs.Swap(0),
	}, c.parkedMax.Swap(0)
}

// parkedIncrease is what a flush of minute writes for the queue's parked maximum: how
// much the largest count sampled in the minute grew since the minute's previous flush.
// Queue rows sum brokers' maxima, so each broker adds its own maximum once per minute.
func (c *counters) parkedIncrease(minute time.Time, sampled int64) int64 {
	if !c.sentMinute.Equal(minute) {
		c.sentMinute, c.parkedSent = minute, 0
	}
	inc := max(sampled-c.parkedSent, 0)
	c.parkedSent = max(c.parkedSent, sampled)
	return inc
}

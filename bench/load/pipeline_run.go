package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/queen-go/queen/bench/verify"
)

// event is one ingress message to push: entity e of a flow at sequence s, scheduled at t.
type event struct {
	e int
	s int64
	t time.Time
}

func (p *pipeline) run(ctx context.Context) (Summary, verify.Report, error) {
	c := p.cfg
	consumeCtx, stopConsumers := context.WithCancel(ctx)
	defer stopConsumers()
	var cwg sync.WaitGroup
	errc := make(chan error, 64)
	for _, f := range p.flows {
		p.consumers(consumeCtx, &cwg, errc, f.ingress, f.stage, func(ctx context.Context, cl *Client, b *Batch) {
			p.firstStage(ctx, f, cl, b)
		})
		for _, g := range f.fanout {
			p.consumers(consumeCtx, &cwg, errc, f.derived, g, nil)
		}
	}
	p.m.Start()
	fmt.Fprintf(c.Out, "pipeline: warm-up: sequence 0 for %d entities in %d flows\n", c.Entities, len(p.flows))
	if err := p.warmUp(ctx); err != nil {
		stopConsumers()
		cwg.Wait()
		return p.m.Stop(), verify.Report{}, err
	}

	fmt.Fprintf(c.Out, "pipeline: ramp %s to %.0f events/s, then %s measured\n", c.Ramp, c.Rate, c.Duration)
	prodCtx, stopProducers := context.WithTimeout(ctx, c.Ramp+c.Duration)
	defer stopProducers()
	var pwg sync.WaitGroup
	for i, f := range p.flows {
		p.produce(prodCtx, &pwg, i, f)
	}
	select {
	case <-time.After(c.Ramp):
	case <-ctx.Done():
	}
	mark := p.snapshot()
	c0, okc := p.dbCommits()
	t0 := time.Now()
	pwg.Wait()
	measured := time.Since(t0)
	end := p.snapshot()
	if c1, ok := p.dbCommits(); ok && okc {
		end["dbCommits"], mark["dbCommits"] = int64(c1), int64(c0)
	}
	fmt.Fprintf(c.Out, "pipeline: cutoff; draining for %s\n", c.Drain)
	select {
	case <-time.After(c.Drain):
	case <-ctx.Done():
	}
	stopConsumers()
	cwg.Wait()
	s := p.m.Stop()
	var runErr error
	select {
	case runErr = <-errc:
	default:
	}
	rep, err := p.finish()
	if err != nil {
		return s, rep, err
	}
	p.figures(&s, mark, end, measured, rep)
	return s, rep, runErr
}

// consumers starts cfg.Consumers wildcard consumers of (queue, group). work, when set,
// runs on every batch before its ack (the first stage's re-emission).
func (p *pipeline) consumers(ctx context.Context, wg *sync.WaitGroup, errc chan<- error, queue, group string,
	work func(context.Context, *Client, *Batch)) {
	st := p.stages[queue+"_"+group]
	path := PopParams{Queue: queue, Group: group, Batch: p.cfg.PopBatch, Partitions: p.cfg.PopParts,
		Wait: true, TimeoutMS: 1000, SubscriptionMode: "all"}.Path()
	for i := range p.cfg.Consumers {
		// A consumer stops after its current pop (at most its 1 s long poll) and acks what
		// that pop got: a pop dropped by the client would keep its lease on the broker.
		cl, err := p.consumerClient(i)
		if err != nil {
			errc <- err
			return
		}
		wg.Go(func() {
			defer cl.Close()
			for ctx.Err() == nil {
				b, err := cl.Pop(path)
				if err != nil {
					p.m.Add("popErr", 1)
					fmt.Fprintf(p.cfg.Out, "pipeline: pop %s/%s: %v\n", queue, group, err)
					sleepCtx(ctx, 100*time.Millisecond)
					continue
				}
				if b == nil {
					continue
				}
				p.observe(st, b, work == nil)
				if work != nil {
					// Finish the batch even after the stop: its derived messages, then its ack.
					wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
					work(wctx, cl, b)
					cancel()
				}
				p.ack(cl, b)
			}
		})
	}
}

// consumerClient returns the client of the i-th consumer of a stage (see
// PipelineConfig.ConsumerURLs).
func (p *pipeline) consumerClient(i int) (*Client, error) {
	urls := p.cfg.ConsumerURLs
	if len(urls) == 0 {
		return NewClient(p.cfg.URL, 30*time.Second)
	}
	k := i % len(urls)
	return NewClient(urls[k], 30*time.Second, append(slices.Clone(urls[k+1:]), urls[:k]...)...)
}

// observe logs every message of b in the stage log.
func (p *pipeline) observe(st *stage, b *Batch, last bool) {
	now := time.Now()
	for _, msg := range b.Messages {
		var pm pipeMsg
		if err := json.Unmarshal(msg.Data, &pm); err != nil || pm.E < 0 || pm.E >= p.cfg.Entities {
			fmt.Fprintf(p.cfg.Out, "pipeline: %s: unexpected message %s\n", st.name, msg.Data)
			continue
		}
		st.log.Record(entityKey(st.flow, pm.E), pm.S)
		if pm.S == 0 {
			st.seen0[pm.E].Store(true)
		}
		if last && pm.S > 0 { // sequence 0 is the warm-up: its wait is not a latency
			p.m.Latency(now.Sub(time.Unix(0, pm.T)))
		}
	}
	p.m.Add(st.counter, int64(len(b.Messages)))
}

// firstStage simulates the work, then re-emits the batch's derived messages, each
// entity's in order and contiguous, in one push: the array order is the append order,
// and each partition's share of a push is appended atomically.
func (p *pipeline) firstStage(ctx context.Context, f flow, cl *Client, b *Batch) {
	w := p.cfg.WorkMin
	if span := p.cfg.WorkMax - p.cfg.WorkMin; span > 0 {
		w += time.Duration(rand.Int64N(int64(span)))
	}
	sleepCtx(ctx, w)
	var order []int
	byEntity := make(map[int][]Item)
	for _, msg := range b.Messages {
		var pm pipeMsg
		if json.Unmarshal(msg.Data, &pm) != nil {
			continue
		}
		if _, ok := byEntity[pm.E]; !ok {
			order = append(order, pm.E)
		}
		byEntity[pm.E] = append(byEntity[pm.E], Item{Queue: f.derived, Partition: partition(pm.E),
			TransactionID: fmt.Sprintf("%s.d", msg.TransactionID), Payload: msg.Data})
	}
	items := make([]Item, 0, len(b.Messages))
	for _, e := range order {
		items = append(items, byEntity[e]...)
	}
	if len(items) > 0 && p.pushRetrying(ctx, cl, items) {
		p.m.Add("derived", int64(len(items)))
	}
}

// pushRetrying pushes items until the broker stores them or ctx ends; every failure is
// counted (pushErr) and every retry too (pushRetry). Dedup makes a retry of a push that
// did commit harmless.
func (p *pipeline) pushRetrying(ctx context.Context, cl *Client, items []Item) bool {
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			p.m.Add("pushRetry", 1)
			sleepCtx(ctx, time.Duration(min(attempt, 10))*50*time.Millisecond)
		}
		if ctx.Err() != nil {
			return false
		}
		bad, _, err := cl.Push(items)
		if ctx.Err() != nil && err != nil {
			return false
		}
		if err == nil && bad == 0 {
			return true
		}
		p.m.Add("pushErr", 1)
		if err == nil {
			err = fmt.Errorf("%d of %d items not stored", bad, len(items))
		}
		fmt.Fprintf(p.cfg.Out, "pipeline: push %s: %v\n", items[0].Queue, err)
	}
}

func (p *pipeline) ack(cl *Client, b *Batch) {
	refused, err := cl.Ack(b, "", nil)
	p.m.Add("acks", int64(len(b.Messages)-refused))
	if err != nil || refused > 0 {
		p.m.Add("ackErr", max(int64(refused), 1))
		fmt.Fprintf(p.cfg.Out, "pipeline: ack: %d refused, err %v\n", refused, err)
	}
}

// warmUp pushes sequence 0 of every entity of every flow, one message per request, and
// waits until every stage received all of them.
func (p *pipeline) warmUp(ctx context.Context) error {
	var wg sync.WaitGroup
	now := time.Now()
	for fi, f := range p.flows {
		for w := range max(p.cfg.Producers, 1) {
			cl, err := NewClient(p.cfg.URL, 30*time.Second)
			if err != nil {
				return err
			}
			wg.Go(func() {
				defer cl.Close()
				for e := w; e < p.cfg.Entities; e += max(p.cfg.Producers, 1) {
					p.pushEvent(ctx, cl, f, event{e: e, s: 0, t: now})
				}
			})
		}
		for e := range p.cfg.Entities {
			p.next[fi][e] = 1
		}
	}
	wg.Wait()
	deadline := time.Now().Add(2*time.Minute + time.Duration(p.cfg.Entities)*50*time.Millisecond)
	for !p.warm() {
		if time.Now().After(deadline) {
			return errors.New("pipeline: warm-up did not drain: some stage never received sequence 0 of every entity")
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

func (p *pipeline) warm() bool {
	for _, st := range p.stages {
		for i := range st.seen0 {
			if !st.seen0[i].Load() {
				return false
			}
		}
	}
	return true
}

func (p *pipeline) pushEvent(ctx context.Context, cl *Client, f flow, ev event) bool {
	payload := fmt.Appendf(nil, `{"e":%d,"s":%d,"t":%d}`, ev.e, ev.s, ev.t.UnixNano())
	ok := p.pushRetrying(ctx, cl, []Item{{Queue: f.ingress, Partition: partition(ev.e),
		TransactionID: fmt.Sprintf("%s.e%d.s%d", f.key, ev.e, ev.s), Payload: payload}})
	if ok {
		p.m.Add("events", 1)
	}
	return ok
}

// produce paces one flow at half the rate. Entity e belongs to producer e mod W, which
// pushes its events one request at a time, so each entity's sequence order is its commit
// order.
func (p *pipeline) produce(ctx context.Context, wg *sync.WaitGroup, fi int, f flow) {
	w := max(p.cfg.Producers, 1)
	queues := make([]chan event, w)
	for i := range queues {
		queues[i] = make(chan event, 4096)
		cl, err := NewClient(p.cfg.URL, 30*time.Second)
		if err != nil {
			panic(err) // the URL was already used by the warm-up
		}
		wg.Go(func() {
			defer cl.Close()
			for ev := range queues[i] {
				if !p.pushEvent(ctx, cl, f, ev) {
					p.retreat(fi, ev) // the run ended before it was stored
				}
			}
		})
	}
	wg.Go(func() {
		defer func() {
			for _, q := range queues {
				close(q)
			}
		}()
		for at := range Pace(ctx, p.cfg.Rate/float64(len(p.flows)), p.cfg.Ramp) {
			e := rand.IntN(p.cfg.Entities)
			p.mu.Lock()
			s := p.next[fi][e]
			p.next[fi][e]++
			p.mu.Unlock()
			select {
			case queues[e%w] <- event{e: e, s: s, t: at}:
			case <-ctx.Done():
				p.retreat(fi, event{e: e, s: s})
				return
			}
		}
	})
}

// retreat records that sequence ev.s (and, since a producer stops at its first failure,
// everything after it) of the entity was never produced.
func (p *pipeline) retreat(fi int, ev event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ev.s < p.next[fi][ev.e] {
		p.next[fi][ev.e] = ev.s
	}
}

// finish closes the logs, writes each flow's produced file and verifies the run.
func (p *pipeline) finish() (verify.Report, error) {
	produced := make(map[string]map[string]verify.Produced)
	for fi, f := range p.flows {
		produced[f.key] = make(map[string]verify.Produced)
		for e, next := range p.next[fi] {
			produced[f.key][entityKey(f.key, e)] = verify.Produced{Base: 0, Max: next - 1}
		}
		if err := verify.WriteProduced(filepath.Join(p.cfg.Dir, producedFile(f.key)), produced[f.key]); err != nil {
			return verify.Report{}, fmt.Errorf("pipeline: %w", err)
		}
	}
	var stages []verify.Stage
	for _, n := range p.order {
		st := p.stages[n]
		if err := st.log.Close(); err != nil {
			return verify.Report{}, fmt.Errorf("pipeline: %w", err)
		}
		stages = append(stages, verify.Stage{Name: n, Path: filepath.Join(p.cfg.Dir, n+verify.LogSuffix),
			Produced: produced[st.flow]})
	}
	return verify.Check(nil, stages, verify.Options{AckErrors: p.m.Get("ackErr")})
}

// dbCommits scrapes the broker's PostgreSQL commit counter, when it exposes one.
func (p *pipeline) dbCommits() (float64, bool) {
	cl, err := NewClient(p.cfg.URL, 5*time.Second)
	if err != nil {
		return 0, false
	}
	defer cl.Close()
	return cl.Scrape("queen_db_commits_total")
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

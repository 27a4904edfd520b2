package load

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queen-go/queen/bench/verify"
)

// FaultConfig is a verified load (docs/reliability.md, load profiles): producers that
// own their partitions and record every push answer in a ledger, consumer groups that
// log every delivery, so that bench/verify.CheckLedger can tell whether anything
// accepted was lost, reordered or stored twice. The fault scenarios (e2e/faults) and
// queen-bench soak run it; L1 is docs/reliability.md's fault load.
type FaultConfig struct {
	Queue       string
	Partitions  int      // each owned by exactly one producer, so its sequence is well defined
	Producers   int      // partitions are dealt round-robin
	Rate        int      // target accepted messages per second over all producers
	BatchShare  float64  // share of pushes that are batches of 10 (the rest single items)
	Payload     int      // approximate payload bytes
	Groups      []string // consumer groups, each reading everything
	Consumers   int      // consumers per group
	AckFailRate float64  // share of batches with one transient failed ack (redelivered)
	PoisonEvery int64    // every PoisonEvery-th sequence of a partition always fails (0: none)
	LeaseTime   int      // seconds
	RetryLimit  int
	WaitMS      int // long-poll timeout
	// ConsumeDelay is a pause of each consumer after every batch: consumers slower than
	// the producers (docs/reliability.md L4, overload).
	ConsumeDelay time.Duration
	// ConsumeURL, when set, is another broker (on the same database) the consumers pop
	// from and ack through, while the producers push through the one StartFaultLoad got.
	ConsumeURL string
	// QueueOptions are more configure options (docs/api.md's names, e.g.
	// "completedRetentionSeconds"), sent in the same configure call; they override the
	// ones above on a clash. nil: none.
	QueueOptions map[string]any
}

// L1 is docs/reliability.md's L1 fault load at the given rate (accepted messages per second).
func L1(queue string, rate int) FaultConfig {
	return FaultConfig{Queue: queue, Partitions: 64, Producers: 4, Rate: rate, BatchShare: 0.9, Payload: 256,
		Groups: []string{"g1", "g2"}, Consumers: 2, AckFailRate: 0.01, PoisonEvery: 1000, LeaseTime: 5,
		RetryLimit: 3, WaitMS: 1000}
}

// FaultRun is one running verified load: producers writing the ledger, consumers
// writing the groups' delivery logs.
type FaultRun struct {
	cfg    FaultConfig
	url    string
	run    string // prefix of every transaction id: runs never collide
	Ledger *verify.Ledger
	Logs   []*verify.GroupLog

	stopProducers context.CancelFunc
	producers     sync.WaitGroup
	stopConsumers context.CancelFunc
	consumers     sync.WaitGroup
	clients       sync.Map // *Client → struct{}, aborted at stop

	pushErrors atomic.Int64 // push calls that failed (transport or status)
	errMu      sync.Mutex
	errs       []error // what the consumers could not read (a payload not of this load)
	emptyPolls []atomic.Int64
	samplesMu  sync.Mutex
	samples    []PushSample

	// Progress counters, cheap enough to read every few seconds during a long run (the
	// ledger and the logs would have to be scanned).
	accepted atomic.Int64   // items accepted, each counted once however often retried
	firsts   []atomic.Int64 // per group: deliveries with deliveryAttempt <= 1
	ackMu    sync.Mutex
	acks     []AckSample // in completion order
}

// AckSample is one consumed batch: from the pop answer's arrival to the ack's answer
// (the consumer's decode and logging included), for the soak's pop-to-ack latency.
type AckSample struct {
	Popped time.Time // the pop answer arrived
	Took   time.Duration
	OK     bool // the ack answered and refused nothing
}

// PushSample is one push call, for latency after a fault.
type PushSample struct {
	At       time.Time
	Took     time.Duration
	Buffered bool // every item answered buffered
	OK       bool // every item accepted
}

// faultMessage is the payload the producers push and the consumers read.
type faultMessage struct {
	P      string `json:"p"`
	Seq    int64  `json:"seq"`
	Poison bool   `json:"poison,omitempty"`
	Pad    string `json:"pad,omitempty"`
}

// StartFaultLoad configures the queue and starts producers and consumers against url
// (http://host:port). Stop (or Drain) ends them.
func StartFaultLoad(url string, cfg FaultConfig) (*FaultRun, error) {
	if _, err := parseBase(url); err != nil {
		return nil, err
	}
	if cfg.ConsumeURL == "" {
		cfg.ConsumeURL = url
	} else if _, err := parseBase(cfg.ConsumeURL); err != nil {
		return nil, err
	}
	if cfg.Partitions < 1 || cfg.Producers < 1 || cfg.Rate < 1 || len(cfg.Groups) == 0 || cfg.Consumers < 1 {
		return nil, fmt.Errorf("load: fault load %+v: partitions, producers, rate, groups and consumers must be positive", cfg)
	}
	r := &FaultRun{cfg: cfg, url: url, run: fmt.Sprintf("r%d", time.Now().UnixNano()), Ledger: verify.NewLedger()}
	c := r.client(r.url, 10*time.Second)
	opts := map[string]any{"leaseTime": cfg.LeaseTime, "retryLimit": cfg.RetryLimit, "dedupWindowSeconds": 300}
	maps.Copy(opts, cfg.QueueOptions)
	if err := c.Configure(cfg.Queue, opts); err != nil {
		return nil, fmt.Errorf("load: configure %s: %w", cfg.Queue, err)
	}
	pctx, stopP := context.WithCancel(context.Background())
	cctx, stopC := context.WithCancel(context.Background())
	r.stopProducers, r.stopConsumers = stopP, stopC
	for _, g := range cfg.Groups {
		r.Logs = append(r.Logs, verify.NewGroupLog(g))
	}
	r.emptyPolls = make([]atomic.Int64, len(cfg.Groups)*cfg.Consumers)
	r.firsts = make([]atomic.Int64, len(cfg.Groups))
	for i, g := range r.Logs {
		for j := range cfg.Consumers {
			r.consumers.Add(1)
			go r.consume(cctx, g, &r.emptyPolls[i*cfg.Consumers+j], &r.firsts[i])
		}
	}
	for p := range cfg.Producers {
		r.producers.Add(1)
		go r.produce(pctx, p)
	}
	return r, nil
}

// client is a Client of url for this run, aborted when the run stops (the URLs were
// checked).
func (r *FaultRun) client(url string, timeout time.Duration) *Client {
	c, _ := NewClient(url, timeout)
	r.clients.Store(c, struct{}{})
	return c
}

func (r *FaultRun) partition(i int) string { return fmt.Sprintf("p%03d", i) }

// produce pushes to the producer's partitions in turn, paced to its share of the rate.
// A push that is not accepted item for item is retried with the same transaction ids
// until it is (or the producers stop): the next sequence of a partition is pushed only
// once the previous ones are accepted, so the ledger's order is the partition's order.
func (r *FaultRun) produce(ctx context.Context, id int) {
	defer r.producers.Done()
	c := r.client(r.url, 30*time.Second)
	rng := rand.New(rand.NewPCG(uint64(id), uint64(time.Now().UnixNano())))
	var mine []int
	for i := id; i < r.cfg.Partitions; i += r.cfg.Producers {
		mine = append(mine, i)
	}
	next := make([]int64, len(mine))
	perProducer := max(1, float64(r.cfg.Rate)/float64(r.cfg.Producers))
	due := time.Now()
	pad := strings.Repeat("x", max(0, r.cfg.Payload-60))
	for k := 0; ctx.Err() == nil; k++ {
		slot := k % len(mine)
		n := 1
		if rng.Float64() < r.cfg.BatchShare {
			n = 10
		}
		name := r.partition(mine[slot])
		items := make([]Item, n)
		for i := range items {
			seq := next[slot] + int64(i)
			poison := r.cfg.PoisonEvery > 0 && seq%r.cfg.PoisonEvery == r.cfg.PoisonEvery-1
			payload, _ := json.Marshal(faultMessage{P: name, Seq: seq, Poison: poison, Pad: pad})
			items[i] = Item{Queue: r.cfg.Queue, Partition: name,
				TransactionID: fmt.Sprintf("%s:%s:%d", r.run, name, seq), Payload: payload}
		}
		if !r.pushUntilAccepted(ctx, c, name, next[slot], items) {
			return
		}
		next[slot] += int64(n)
		due = due.Add(time.Duration(float64(n) / perProducer * float64(time.Second)))
		if wait := time.Until(due); wait > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
		} else if wait < -time.Second {
			due = time.Now() // behind by more than a second (a fault): do not burst to catch up
		}
	}
}

// pushUntilAccepted pushes items (sequences from first on) until every one is accepted,
// recording every answer in the ledger; false when the producers stopped first.
func (r *FaultRun) pushUntilAccepted(ctx context.Context, c *Client, partition string, first int64, items []Item) bool {
	counted := make([]bool, len(items)) // items already counted in r.accepted
	for ctx.Err() == nil {
		began := time.Now()
		statuses, err := c.PushStatuses(items)
		took := time.Since(began)
		if err != nil {
			r.pushErrors.Add(1)
			for i := range items {
				r.Ledger.Record(partition, first+int64(i), "error")
			}
			r.sample(PushSample{At: began, Took: took})
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		ok, buffered := true, true
		for i, st := range statuses {
			r.Ledger.Record(partition, first+int64(i), st)
			ok = ok && verify.Accepted(st)
			if verify.Accepted(st) && i < len(counted) && !counted[i] {
				counted[i] = true
				r.accepted.Add(1)
			}
			buffered = buffered && st == verify.StatusBuffered
		}
		r.sample(PushSample{At: began, Took: took, OK: ok, Buffered: buffered})
		if ok {
			return true
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	return false
}

func (r *FaultRun) sample(s PushSample) {
	r.samplesMu.Lock()
	r.samples = append(r.samples, s)
	r.samplesMu.Unlock()
}

// PushSamples returns the push calls that began in [from, to).
func (r *FaultRun) PushSamples(from, to time.Time) []PushSample {
	r.samplesMu.Lock()
	defer r.samplesMu.Unlock()
	var out []PushSample
	for _, s := range r.samples {
		if !s.At.Before(from) && s.At.Before(to) {
			out = append(out, s)
		}
	}
	return out
}

// PushSamplesFrom returns the push calls recorded after the first n (in the order they
// completed) and how many there are now: a caller that passes the count back gets each
// call exactly once, even one that began before its previous read.
func (r *FaultRun) PushSamplesFrom(n int) ([]PushSample, int) {
	r.samplesMu.Lock()
	defer r.samplesMu.Unlock()
	n = min(max(n, 0), len(r.samples))
	return slices.Clone(r.samples[n:]), len(r.samples)
}

func (r *FaultRun) ackSample(s AckSample) {
	r.ackMu.Lock()
	r.acks = append(r.acks, s)
	r.ackMu.Unlock()
}

// AckSamplesFrom returns the consumed batches recorded after the first n (in the order
// their acks answered) and how many there are now, as PushSamplesFrom.
func (r *FaultRun) AckSamplesFrom(n int) ([]AckSample, int) {
	r.ackMu.Lock()
	defer r.ackMu.Unlock()
	n = min(max(n, 0), len(r.acks))
	return slices.Clone(r.acks[n:]), len(r.acks)
}

// FaultProgress are a run's running counts, read without scanning the ledger or the logs.
type FaultProgress struct {
	Accepted  int64 // items the broker accepted
	Delivered int64 // deliveries over every group, redeliveries included
	// SlowestFirst is the fewest first deliveries (deliveryAttempt <= 1) of any group:
	// Accepted - SlowestFirst is the backlog. It counts what the broker says is a first
	// delivery; the verifier's exact count comes after the drain.
	SlowestFirst int64
}

// Progress returns the running counts.
func (r *FaultRun) Progress() FaultProgress {
	p := FaultProgress{Accepted: r.accepted.Load()}
	for i, g := range r.Logs {
		p.Delivered += int64(g.Len())
		if f := r.firsts[i].Load(); i == 0 || f < p.SlowestFirst {
			p.SlowestFirst = f
		}
	}
	return p
}

// consume pops the group's messages in long polls, logs every delivery and acks: a
// poison message always fails, one item of AckFailRate of the batches fails once.
func (r *FaultRun) consume(ctx context.Context, g *verify.GroupLog, empty, firsts *atomic.Int64) {
	defer r.consumers.Done()
	c := r.client(r.cfg.ConsumeURL, time.Duration(r.cfg.WaitMS)*time.Millisecond+30*time.Second)
	rng := rand.New(rand.NewPCG(uint64(len(g.Name)), uint64(time.Now().UnixNano())))
	path := PopParams{Queue: r.cfg.Queue, Group: g.Name, Batch: 100, Partitions: 4, Wait: true,
		TimeoutMS: r.cfg.WaitMS}.Path()
	for ctx.Err() == nil {
		b, err := c.Pop(path)
		popped := time.Now()
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		if b == nil || len(b.Messages) == 0 {
			empty.Add(1)
			continue
		}
		empty.Store(0)
		failed := map[int]bool{}
		ds := make([]verify.Delivery, 0, len(b.Messages))
		for i, m := range b.Messages {
			var msg faultMessage
			if err := json.Unmarshal(m.Data, &msg); err != nil {
				r.errMu.Lock()
				r.errs = append(r.errs, fmt.Errorf("group %s: message %s: payload %s: %w", g.Name, m.ID, m.Data, err))
				r.errMu.Unlock()
				continue
			}
			ds = append(ds, verify.Delivery{Partition: msg.P, Seq: msg.Seq, MessageID: m.ID, DeliveryCount: m.DeliveryAttempt})
			if m.DeliveryAttempt <= 1 {
				firsts.Add(1)
			}
			if msg.Poison {
				failed[i] = true
			}
		}
		g.Add(ds...)
		if r.cfg.AckFailRate > 0 && rng.Float64() < r.cfg.AckFailRate {
			failed[rng.IntN(len(b.Messages))] = true
		}
		refused, err := c.Ack(b, "completed", failed)
		r.ackSample(AckSample{Popped: popped, Took: time.Since(popped), OK: err == nil && refused == 0})
		if err != nil || refused > 0 {
			// The ack's outcome is unknown or partly refused (an expired lease, a broker
			// gone mid-call): the span comes again.
			parts := map[string]bool{}
			for _, d := range ds {
				parts[d.Partition] = true
			}
			for p := range parts {
				g.AckFailed(p)
			}
		}
		if d := r.cfg.ConsumeDelay; d > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
		}
	}
}

// Drain is the mandatory final drain (the verifier in docs/reliability.md): stop the
// producers, wait until spoolEmpty reports true (the broker's spool replayed; nil: not
// checked) and every accepted item reached every group, then until every consumer has
// had two empty long polls in a row, or limit passes; then stop the consumers. It
// returns how long it took.
func (r *FaultRun) Drain(spoolEmpty func() bool, limit time.Duration) time.Duration {
	began := time.Now()
	r.stopProducers()
	r.producers.Wait()
	deadline := began.Add(limit)
	for time.Now().Before(deadline) {
		if (spoolEmpty == nil || spoolEmpty()) && r.allDelivered() {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Two consecutive empty long polls of every consumer, counted from now.
	for i := range r.emptyPolls {
		r.emptyPolls[i].Store(0)
	}
	for time.Now().Before(deadline) && !r.allIdle() {
		time.Sleep(100 * time.Millisecond)
	}
	r.Stop()
	return time.Since(began)
}

// allIdle reports whether every consumer's last two long polls came back empty.
func (r *FaultRun) allIdle() bool {
	for i := range r.emptyPolls {
		if r.emptyPolls[i].Load() < 2 {
			return false
		}
	}
	return true
}

// allDelivered reports whether every group's log holds as many first deliveries as the
// ledger has accepted items (a cheap progress test; the verifier does the exact check).
func (r *FaultRun) allDelivered() bool {
	rep := verify.CheckLedger(r.Ledger, r.Logs...)
	for _, g := range rep.Groups {
		if g.Lost > 0 {
			return false
		}
	}
	return true
}

// Stop ends everything still running (Drain does it at its end).
func (r *FaultRun) Stop() {
	r.stopProducers()
	r.stopConsumers()
	r.clients.Range(func(k, _ any) bool { k.(*Client).Abort(); return true })
	r.producers.Wait()
	r.consumers.Wait()
}

// Verify checks the ledger against every group's log and returns the report.
func (r *FaultRun) Verify() verify.FaultReport { return verify.CheckLedger(r.Ledger, r.Logs...) }

// PushErrors returns how many push calls failed (transport or status).
func (r *FaultRun) PushErrors() int64 { return r.pushErrors.Load() }

// Errors returns what the consumers could not read.
func (r *FaultRun) Errors() []error {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	return slices.Clone(r.errs)
}

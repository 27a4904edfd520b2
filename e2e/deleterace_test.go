package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
	"github.com/queen-go/queen/internal/syncbuf"
)

// A queue deleted while it is pushed to and long-polled is a queue that does not exist
// for a moment, not a database outage: pushes re-create it and commit (none answers
// buffered), nothing is logged at WARN or ERROR, and every queued message is accounted
// for.
//
// The accounting. A deletion removes a partition incarnation (its partition id) with all
// its messages at once, and each producer pushes one message at a time to a partition of
// its own, so its messages commit in push order. Hence:
//   - every message pushed after the last deletion answered is readable;
//   - within one incarnation, a producer's delivered messages have no gap: a message
//     pushed between two delivered ones of the same incarnation is delivered too;
//   - every delivered message was queued, and every message of the bystander queue
//     (pushed by the same producers, sharing their fused commits) is delivered.
func TestDeleteRace(t *testing.T) {
	t.Parallel()
	const (
		producers = 4
		pollers   = 20
		deletions = 3
		perPhase  = 150 // messages queued to the raced queue before each deletion, and after the last
		// drainWithin bounds the reading of what is left after the load: more than the
		// hot list's reseed interval (5 s), the latest a pop finds a message by.
		drainWithin = 10 * time.Second
		raced       = "delrace"
		bystander   = "delrace-bystander"
	)
	logs := &syncbuf.Buffer{}
	b, err := launchBroker(t, pgtest.NewDatabase(t), nil, logs)
	if err != nil {
		t.Fatal(err)
	}
	started := len(logLines(t, logs, "WARN", "ERROR")) // authentication is off

	var (
		mu           sync.Mutex
		pushed       [producers][]racePush // in push order
		problems     []string
		problemCount int
	)
	problem := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if problemCount++; len(problems) < 20 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	var queued atomic.Int64 // messages queued to the raced queue

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stopPush, stopPoll atomic.Bool
	var wg sync.WaitGroup
	for w := range producers {
		wg.Go(func() {
			for n := 0; !stopPush.Load() && ctx.Err() == nil; n++ {
				p := racePush{queue: raced, txn: fmt.Sprintf("w%d-%d", w, n), sent: time.Now()}
				if n%2 == 1 {
					p.queue = bystander
				}
				body := mustJSONQuiet(map[string]any{"items": []map[string]any{{"queue": p.queue,
					"partition": fmt.Sprintf("p%d", w), "transactionId": p.txn, "payload": map[string]int{"n": n}}}})
				resp, raw, err := b.request(ctx, http.MethodPost, "/api/v1/push", strings.NewReader(body))
				if err != nil {
					problem("push %s: %v", p.txn, err)
					return
				}
				var out []pushResult
				if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &out) != nil || len(out) != 1 {
					problem("push %s: %d %s", p.txn, resp.StatusCode, raw)
					continue
				}
				if out[0].Status != "queued" {
					problem("push %s answered %s: %s", p.txn, out[0].Status, raw)
					continue
				}
				mu.Lock()
				pushed[w] = append(pushed[w], p)
				mu.Unlock()
				if p.queue == raced {
					queued.Add(1)
				}
			}
		})
	}
	delivered := newDeliveries()
	var polls sync.WaitGroup
	for range pollers {
		polls.Go(func() {
			for !stopPoll.Load() && ctx.Err() == nil {
				delivered.popAck(ctx, b, raced, "wait=true&timeout=300", problem)
			}
		})
	}

	// Three deletions, each after perPhase more messages were queued.
	var lastDeleted time.Time
	for d := range deletions {
		target := int64((d + 1) * perPhase)
		eventually(t, 20*time.Second, fmt.Sprintf("%d messages queued before deletion %d", target, d+1),
			func() bool { return queued.Load() >= target })
		resp, raw := b.do(t, http.MethodDelete, "/api/v1/resources/queues/"+raced, nil)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(raw), `"deleted":true`) {
			t.Fatalf("deletion %d: %d %s", d+1, resp.StatusCode, raw)
		}
		lastDeleted = time.Now()
	}
	after := queued.Load() + perPhase
	eventually(t, 20*time.Second, "messages queued after the last deletion", func() bool { return queued.Load() >= after })
	stopPush.Store(true)
	wg.Wait()
	stopPoll.Store(true)
	polls.Wait()
	// What is left, polled until every message that must be readable was read: a pop
	// racing the deletions may have found the hot list's view of the queue outdated (a
	// later pop, or the list's next reseed, catches up).
	deadline := time.Now().Add(drainWithin)
	for q, missing := range map[string]func() int{
		raced:     func() int { return delivered.missing(pushed[:], raced, lastDeleted) },
		bystander: func() int { return delivered.missing(pushed[:], bystander, time.Time{}) },
	} {
		for missing() > 0 && time.Now().Before(deadline) {
			delivered.popAck(ctx, b, q, "wait=true&timeout=500", problem)
		}
	}
	if len(problems) > 0 {
		t.Errorf("%d problems (the first 20):\n%s", problemCount, strings.Join(problems, "\n"))
	}

	incarnations := delivered.incarnations(raced)
	var inRaced, afterLast, lostAfter, gaps int
	for w := range producers {
		lostAfter += delivered.checkProducer(t, pushed[w], raced, lastDeleted, &gaps, &inRaced, &afterLast)
	}
	for _, p := range pushed {
		for _, m := range p {
			delete(delivered.byTxn, m.txn)
		}
	}
	for txn, d := range delivered.byTxn {
		t.Errorf("delivered %s (partition id %s) was never queued", txn, d.partitionID)
	}
	t.Logf("raced queue: %d queued, %d after the last deletion; %d partition incarnations delivered from",
		inRaced, afterLast, incarnations)
	if lostAfter > 0 || gaps > 0 {
		t.Errorf("%d messages queued after the last deletion not delivered; %d gaps inside an incarnation", lostAfter, gaps)
	}
	// Nothing failed, so nothing is logged at WARN or ERROR: no outage ("database
	// unreachable"), no failed bundle, no encryption warning.
	lines := logLines(t, logs, "WARN", "ERROR")
	for k, l := range lines[started:] {
		if k == 10 {
			t.Errorf("and %d more WARN or ERROR lines", len(lines)-started-k)
			break
		}
		t.Errorf("broker log: %s %s: %v", l["level"], l["msg"], l["err"])
	}
}

// racePush is one queued message of a producer.
type racePush struct {
	queue, txn string
	sent       time.Time
}

// delivery is a delivered message: its partition incarnation.
type delivery struct{ queue, partitionID string }

// deliveries are the messages pops delivered, by transaction id.
type deliveries struct {
	mu    sync.Mutex
	byTxn map[string]delivery
}

func newDeliveries() *deliveries { return &deliveries{byTxn: make(map[string]delivery)} }

// popAck pops queue with the query params, records and acknowledges what it delivered,
// and reports whether it delivered anything (false also when the pop failed).
func (d *deliveries) popAck(ctx context.Context, b *broker, queue, params string, problem func(string, ...any)) bool {
	resp, raw, err := b.request(ctx, http.MethodGet, "/api/v1/pop/queue/"+queue+"?batch=20&"+params, nil)
	if err != nil {
		problem("pop %s: %v", queue, err)
		return false
	}
	p, err := decodePop(resp.StatusCode, raw)
	if err != nil {
		problem("pop %s: %v", queue, err)
		return false
	}
	if p == nil || len(p.Messages) == 0 {
		return false
	}
	acks := make([]map[string]any, len(p.Messages))
	d.mu.Lock()
	for i, m := range p.Messages {
		d.byTxn[m.TransactionID] = delivery{queue: queue, partitionID: m.PartitionID}
		acks[i] = ackItemOf(m, "")
	}
	d.mu.Unlock()
	// An ack of a partition deleted meanwhile fails per item: what it covered is gone.
	body := mustJSONQuiet(map[string]any{"acknowledgments": acks})
	if resp, raw, err := b.request(ctx, http.MethodPost, "/api/v1/ack/batch", strings.NewReader(body)); err != nil || resp.StatusCode != http.StatusOK {
		problem("ack: %v %s", err, raw)
	}
	return true
}

// checkProducer checks one producer's queued messages against the deliveries: it counts
// into gaps the undelivered messages of the raced queue (raced) pushed between two delivered
// ones of one incarnation, fails the test for every undelivered bystander message, and
// returns the number of undelivered messages pushed after lastDeleted.
func (d *deliveries) checkProducer(t *testing.T, pushed []racePush, raced string, lastDeleted time.Time, gaps, inRaced, afterLast *int) int {
	t.Helper()
	lost := 0
	var seq []racePush // the raced queue's, in push order
	for _, m := range pushed {
		_, ok := d.byTxn[m.txn]
		switch {
		case m.queue != raced:
			if !ok {
				t.Errorf("bystander message %s was not delivered", m.txn)
			}
			continue
		case m.sent.After(lastDeleted):
			*afterLast++
			if !ok {
				lost++
				t.Errorf("message %s, pushed after the last deletion, was not delivered", m.txn)
			}
		}
		*inRaced++
		seq = append(seq, m)
	}
	// Per incarnation, the span of this producer's delivered messages.
	first, last := map[string]int{}, map[string]int{}
	for i, m := range seq {
		if dv, ok := d.byTxn[m.txn]; ok {
			if _, seen := first[dv.partitionID]; !seen {
				first[dv.partitionID] = i
			}
			last[dv.partitionID] = i
		}
	}
	for pid, lo := range first {
		for i := lo; i <= last[pid]; i++ {
			if _, ok := d.byTxn[seq[i].txn]; !ok {
				*gaps++
				t.Errorf("message %s was lost inside partition incarnation %s", seq[i].txn, pid)
			}
		}
	}
	return lost
}

// missing counts the messages of queue pushed after since that were not delivered.
func (d *deliveries) missing(pushed [][]racePush, queue string, since time.Time) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, p := range pushed {
		for _, m := range p {
			if _, ok := d.byTxn[m.txn]; !ok && m.queue == queue && m.sent.After(since) {
				n++
			}
		}
	}
	return n
}

// incarnations counts the partition ids queue's messages were delivered from.
func (d *deliveries) incarnations(queue string) int {
	ids := map[string]bool{}
	for _, dv := range d.byTxn {
		if dv.queue == queue {
			ids[dv.partitionID] = true
		}
	}
	return len(ids)
}

// mustJSONQuiet is mustJSON for goroutines: the values it encodes cannot fail.
func mustJSONQuiet(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

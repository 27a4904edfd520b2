package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// ccDelivery is one partition's share of one pop, as a consumer saw it.
type ccDelivery struct {
	consumer  int
	partition int    // index of the partition (name p<i>)
	lease     string // the pop's leaseId
	seqs      []int  // sequence numbers in delivery order
	attempt   int
	popped    time.Time // the pop's answer arrived
	acked     time.Time // the ack was about to be sent: the consumer no longer holds it
	failed    int       // sequence number acked as failed, -1 when all completed
}

// TestConsumeConcurrency: producers push per-partition sequence numbers over 100
// partitions while wildcard consumers of the queue-mode group pop (up to 3 partitions per
// pop) and ack, failing about 5% of the batches on one message. Afterwards every cursor
// is at its partition's end (the last message of each was acked as completed, and no
// lease is left: a new message of every partition is delivered at once), nothing was
// dead-lettered, every message was delivered, each partition's deliveries
// follow one another exactly (the first at 0, each next one at the failed message or
// just after the previous one's end), and no partition was held by two consumers at once.
func TestConsumeConcurrency(t *testing.T) {
	t.Parallel()
	const (
		queue      = "consume-concurrency"
		partitions = 100
		perPart    = 40 // 4000 messages
		producers  = 4
		consumers  = 6
		failRate   = 0.05
		lease      = 300 // seconds: never expires during the test
	)
	b := startBroker(t, nil)
	item := func(p, s int) map[string]any {
		return map[string]any{"queue": queue, "partition": fmt.Sprintf("p%d", p),
			"transactionId": fmt.Sprintf("p%d-s%d", p, s), "payload": map[string]any{"p": p, "s": s}}
	}

	// The first message creates the queue; then a retry budget that failures never
	// exhaust, so nothing goes to the dead-letter queue.
	b.push(t, item(0, 0))
	b.setOptions(t, queue, map[string]any{"retryLimit": 1000})

	ctx, cancel := context.WithCancel(context.Background())
	var (
		wg      sync.WaitGroup
		errMu   sync.Mutex
		errList []error
	)
	// However the test ends, the producers and consumers end first.
	defer func() {
		cancel()
		wg.Wait()
	}()
	fail := func(err error) {
		errMu.Lock()
		errList = append(errList, err)
		errMu.Unlock()
		cancel()
	}

	// Producers: producer w owns the partitions p with p % producers == w and pushes
	// each one's sequence numbers in order, 1 to 10 at a time, cycling over its
	// partitions at random.
	start := time.Now()
	var (
		pushed     atomic.Int64
		pushedDone atomic.Int64 // nanoseconds after start when the last push was answered
	)
	pushed.Store(1)
	for w := range producers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			next := map[int]int{}
			var mine []int
			for p := w; p < partitions; p += producers {
				mine = append(mine, p)
				if p == 0 {
					next[p] = 1
				}
			}
			for len(mine) > 0 && ctx.Err() == nil {
				k := rng.IntN(len(mine))
				p := mine[k]
				n := min(1+rng.IntN(10), perPart-next[p])
				items := make([]map[string]any, n)
				for i := range n {
					items[i] = item(p, next[p]+i)
				}
				body, _ := json.Marshal(map[string]any{"items": items})
				if _, err := b.pushFrom(ctx, body); err != nil {
					fail(fmt.Errorf("producer %d: %w", w, err))
					return
				}
				if pushed.Add(int64(n)) == partitions*perPart {
					pushedDone.Store(int64(time.Since(start)))
				}
				if next[p] += n; next[p] == perPart {
					mine = slices.Delete(mine, k, k+1)
				}
			}
		})
	}

	// Consumers: long-polling wildcard pops, then one ack/batch of the whole pop. A
	// partition is done once a delivery ending with its last message was acked with no
	// failure in it: its cursor is then at its end.
	deliveries := make([][]ccDelivery, consumers)
	var (
		doneMu   sync.Mutex
		doneSet  = map[int]bool{}
		donePart = func(ds []ccDelivery) {
			doneMu.Lock()
			defer doneMu.Unlock()
			for _, d := range ds {
				if d.failed < 0 && d.seqs[len(d.seqs)-1] == perPart-1 {
					doneSet[d.partition] = true
				}
			}
		}
		doneCount = func() int {
			doneMu.Lock()
			defer doneMu.Unlock()
			return len(doneSet)
		}
	)
	for c := range consumers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 11))
			path := fmt.Sprintf("/api/v1/pop/queue/%s?batch=10&partitions=3&wait=true&timeout=1000&leaseSeconds=%d", queue, lease)
			for ctx.Err() == nil {
				resp, body, err := b.request(ctx, http.MethodGet, path, nil)
				popped := time.Now()
				if ctx.Err() != nil {
					return
				}
				if err != nil {
					fail(fmt.Errorf("consumer %d pop: %w", c, err))
					return
				}
				if resp.StatusCode == http.StatusNoContent {
					continue
				}
				var p popResp
				if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &p) != nil || len(p.Messages) == 0 {
					fail(fmt.Errorf("consumer %d pop: status %d, body %s", c, resp.StatusCode, body))
					return
				}
				ds, err := ccSplit(c, &p, popped)
				if err != nil {
					fail(fmt.Errorf("consumer %d: %w", c, err))
					return
				}
				failAt := -1
				if rng.Float64() < failRate {
					failAt = rng.IntN(len(p.Messages))
				}
				items := make([]map[string]any, len(p.Messages))
				for i, m := range p.Messages {
					items[i] = map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID,
						"leaseId": m.LeaseID, "status": "completed"}
					if i == failAt {
						items[i]["status"], items[i]["error"] = "failed", "test failure"
					}
				}
				if failAt >= 0 {
					var s struct{ S int }
					_ = json.Unmarshal(p.Messages[failAt].Data, &s)
					for i := range ds {
						if ds[i].partition == ccPartition(p.Messages[failAt].Partition) {
							ds[i].failed = s.S
						}
					}
				}
				ackBody, _ := json.Marshal(map[string]any{"acknowledgments": items})
				acked := time.Now()
				for i := range ds {
					ds[i].acked = acked
				}
				deliveries[c] = append(deliveries[c], ds...)
				resp, body, err = b.request(ctx, http.MethodPost, "/api/v1/ack/batch", bytes.NewReader(ackBody))
				if ctx.Err() != nil {
					return // the test is over (or failed)
				}
				if err != nil {
					fail(fmt.Errorf("consumer %d ack: %w", c, err))
					return
				}
				var res []ackResp
				if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &res) != nil || len(res) != len(items) {
					fail(fmt.Errorf("consumer %d ack: status %d, body %s", c, resp.StatusCode, body))
					return
				}
				for i, r := range res {
					if !r.Success || r.DLQ {
						fail(fmt.Errorf("consumer %d ack of %s: %s", c, p.Messages[i].TransactionID, body))
						return
					}
				}
				donePart(ds)
			}
		})
	}

	// Done when every message was pushed and every cursor is at its partition's end (or
	// a producer or consumer failed).
	const total = partitions * perPart
	eventually(t, 60*time.Second, "every message pushed and consumed", func() bool {
		return ctx.Err() != nil || (pushed.Load() == total && doneCount() == partitions)
	})
	cancel()
	wg.Wait()
	for _, err := range errList {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	if ans, _ := b.deadLetters(t, "?queue="+queue); ans.Total != 0 {
		t.Errorf("%d dead letters, want none", ans.Total)
	}
	// No lease is left behind: one more message per partition is delivered at once.
	extra := make([]map[string]any, partitions)
	for p := range partitions {
		extra[p] = item(p, perPart)
	}
	b.push(t, extra...)
	for p := range partitions {
		next := b.pop(t, fmt.Sprintf("/api/v1/pop/queue/%s/partition/p%d?batch=10", queue, p))
		if got := txnsOf(next); len(got) != 1 || got[0] != fmt.Sprintf("p%d-s%d", p, perPart) {
			t.Errorf("p%d after the run: delivered %v, want its new message alone (a lease left, or a cursor short of the end)", p, got)
		}
	}

	// Per partition: deliveries in time order, each window strictly after the previous one.
	byPart := make([][]ccDelivery, partitions)
	var all, failures int
	for _, ds := range deliveries {
		for _, d := range ds {
			byPart[d.partition] = append(byPart[d.partition], d)
			all++
			if d.failed >= 0 {
				failures++
			}
		}
	}
	for p, ds := range byPart {
		slices.SortFunc(ds, func(x, y ccDelivery) int { return x.popped.Compare(y.popped) })
		want := 0          // the next sequence number a delivery must start at
		deliveredEnd := -1 // the highest sequence number delivered so far
		for i, d := range ds {
			if i > 0 && !d.popped.After(ds[i-1].acked) {
				t.Errorf("p%d: delivered to consumer %d (lease %s) at %v, before consumer %d (lease %s) acked at %v",
					p, d.consumer, d.lease, d.popped.Sub(start), ds[i-1].consumer, ds[i-1].lease, ds[i-1].acked.Sub(start))
			}
			if d.seqs[0] != want {
				t.Errorf("p%d delivery %d: starts at %d, want %d (deliveries %v)", p, i, d.seqs[0], want, ccSummary(ds))
				break
			}
			// A delivery starting inside the previous one is a redelivery: where it did
			// (docs/api.md §5.2), or later when a failed item clamped the cursor above a
			// completed prefix; its first message was delivered before either way. One
			// starting past the previous delivery but not past everything delivered so far
			// (the rest of a span a failure cut short) is at least the second.
			wantAttempt := 1
			if prev := ds[max(i-1, 0)]; i > 0 && d.seqs[0] >= prev.seqs[0] && d.seqs[0] <= prev.seqs[len(prev.seqs)-1] {
				wantAttempt = prev.attempt + 1
			} else if d.seqs[0] <= deliveredEnd {
				wantAttempt = 2
			}
			deliveredEnd = max(deliveredEnd, d.seqs[len(d.seqs)-1])
			if d.attempt != wantAttempt {
				t.Errorf("p%d delivery %d: deliveryAttempt %d, want %d (deliveries %v)", p, i, d.attempt, wantAttempt, ccSummary(ds))
			}
			if d.failed >= 0 {
				want = d.failed
			} else {
				want = d.seqs[len(d.seqs)-1] + 1
			}
		}
		if want != perPart {
			t.Errorf("p%d: deliveries end before %d, want %d (deliveries %v)", p, want, perPart, ccSummary(ds))
		}
	}
	t.Logf("%d messages, %d partition deliveries (%d failed acks): pushed in %v, all acked in %v", total, all, failures,
		time.Duration(pushedDone.Load()).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// ccSplit splits a pop answer into one delivery per partition, checking that each
// partition's messages are consecutive sequence numbers.
func ccSplit(consumer int, p *popResp, popped time.Time) ([]ccDelivery, error) {
	var out []ccDelivery
	for _, m := range p.Messages {
		var body struct{ P, S int }
		if err := json.Unmarshal(m.Data, &body); err != nil {
			return nil, fmt.Errorf("message %s: data %s: %w", m.TransactionID, m.Data, err)
		}
		part := ccPartition(m.Partition)
		if part != body.P || m.TransactionID != fmt.Sprintf("p%d-s%d", body.P, body.S) || m.LeaseID != p.LeaseID {
			return nil, fmt.Errorf("message %+v does not match its payload or the pop's lease %s", m, p.LeaseID)
		}
		n := len(out)
		if n == 0 || out[n-1].partition != part {
			for _, d := range out {
				if d.partition == part {
					return nil, fmt.Errorf("partition %s appears twice in one pop", m.Partition)
				}
			}
			out = append(out, ccDelivery{consumer: consumer, partition: part, lease: p.LeaseID,
				attempt: m.DeliveryAttempt, popped: popped, failed: -1})
			n++
		} else if last := out[n-1].seqs[len(out[n-1].seqs)-1]; body.S != last+1 {
			return nil, fmt.Errorf("partition %s: %d delivered after %d", m.Partition, body.S, last)
		}
		out[n-1].seqs = append(out[n-1].seqs, body.S)
	}
	return out, nil
}

func ccPartition(name string) int {
	var p int
	if _, err := fmt.Sscanf(name, "p%d", &p); err != nil {
		return -1
	}
	return p
}

// ccSummary renders a partition's deliveries as first..last(!failed) spans.
func ccSummary(ds []ccDelivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = fmt.Sprintf("%d..%d", d.seqs[0], d.seqs[len(d.seqs)-1])
		if d.failed >= 0 {
			out[i] += fmt.Sprintf("!%d", d.failed)
		}
	}
	return out
}

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// Leases: exclusivity per (partition, group), expiry and redelivery, fencing, extension,
// and autoAck (no lease at all).

func TestLeaseExclusive(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	tests := []struct{ name, queue, group string }{
		{"queue mode", "excl-q", ""},
		{"named group", "excl-g", "&consumerGroup=g&subscriptionMode=all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b.pushN(t, tt.queue, "p1", "one", 3)
			b.pushN(t, tt.queue, "p2", "two", 3)
			first := b.popMust(t, "/api/v1/pop/queue/"+tt.queue+"/partition/p1?batch=1"+tt.group)
			wantTxns(t, first, "one-0")
			// p1 is leased, even though only part of it was delivered.
			b.popEmpty(t, "/api/v1/pop/queue/"+tt.queue+"/partition/p1?batch=10"+tt.group)
			second := b.popMust(t, "/api/v1/pop/queue/"+tt.queue+"?partitions=5&batch=10"+tt.group)
			if second.PartitionsClaimed != 1 {
				t.Fatalf("second consumer claimed %d partitions", second.PartitionsClaimed)
			}
			wantTxns(t, second, "two-0", "two-1", "two-2")
			b.popEmpty(t, "/api/v1/pop/queue/"+tt.queue+"?partitions=5"+tt.group)
			// Another group is not fenced by this group's leases.
			other := b.popMust(t, "/api/v1/pop/queue/"+tt.queue+"/partition/p1?batch=10&consumerGroup=other&subscriptionMode=all")
			wantTxns(t, other, "one-0", "one-1", "one-2")
			// Released by the ack: the next consumer gets the rest.
			b.ackAll(t, first, "")
			wantTxns(t, b.popMust(t, "/api/v1/pop/queue/"+tt.queue+"/partition/p1?batch=10"+tt.group), "one-1", "one-2")
		})
	}

	t.Run("concurrent pops of one partition: exactly one wins", func(t *testing.T) {
		t.Parallel()
		b.pushN(t, "excl-race", "p", "r", 4)
		const consumers = 8
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			wins [][]byte
			errs []string
		)
		for range consumers {
			wg.Go(func() {
				resp, body, err := b.request(context.Background(), http.MethodGet, "/api/v1/pop/queue/excl-race?batch=10", nil)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					errs = append(errs, err.Error())
				case resp.StatusCode == http.StatusOK:
					wins = append(wins, body)
				case resp.StatusCode != http.StatusNoContent:
					errs = append(errs, string(body))
				}
			})
		}
		wg.Wait()
		if len(errs) > 0 || len(wins) != 1 {
			t.Fatalf("%d winners, errors %v", len(wins), errs)
		}
	})
}

func TestLeaseExpiry(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)

	t.Run("expiry redelivers; the stale lease can no longer ack", func(t *testing.T) {
		t.Parallel()
		b.pushN(t, "expiry", "p", "e", 3)
		first := b.popMust(t, "/api/v1/pop/queue/expiry?leaseSeconds=1")
		b.popEmpty(t, "/api/v1/pop/queue/expiry")
		var again *popResp
		eventually(t, 4*time.Second, "the expired span was never redelivered", func() bool {
			again = b.pop(t, "/api/v1/pop/queue/expiry?leaseSeconds=30")
			return again != nil
		})
		wantTxns(t, again, txnsOf(first)...)
		for _, m := range again.Messages {
			if m.DeliveryAttempt != 2 {
				t.Fatalf("redelivered %s with deliveryAttempt %d, want 2", m.TransactionID, m.DeliveryAttempt)
			}
		}
		if again.LeaseID == first.LeaseID {
			t.Fatal("the redelivery reused the expired lease id")
		}
		res := b.ackBatch(t, "", ackItemOf(first.Messages[2], ""))
		if res[0].Success || res[0].Error == nil || *res[0].Error != "invalid or expired lease" || res[0].LeaseReleased {
			t.Fatalf("stale-lease ack: %+v", res[0])
		}
		// The stale ack changed nothing: the live lease still holds the whole span, and
		// its ack of the same message moves the cursor to the end and releases it.
		res = b.ackBatch(t, "", ackItemOf(again.Messages[2], ""))
		if !res[0].Success || res[0].Noop || !res[0].LeaseReleased {
			t.Fatalf("live-lease ack: %+v", res[0])
		}
		b.popEmpty(t, "/api/v1/pop/queue/expiry")
	})

	t.Run("a short redelivery then its continuation: neither says attempt 1", func(t *testing.T) {
		t.Parallel()
		// e-0..e-5 delivered once; after expiry a redelivery of only e-0..e-1 (a smaller
		// batch), acked; the next pop continues at e-2, which was delivered before too.
		b.pushN(t, "shortredo", "p", "e", 8)
		first := b.popMust(t, "/api/v1/pop/queue/shortredo?batch=6&leaseSeconds=1")
		wantTxns(t, first, txnRange("e", 0, 5)...)
		b.waitLeaseExpired(t, first.LeaseID)
		again := b.popMust(t, "/api/v1/pop/queue/shortredo?batch=2&leaseSeconds=30")
		wantTxns(t, again, "e-0", "e-1")
		if a := again.Messages[0].DeliveryAttempt; a != 2 {
			t.Fatalf("redelivery: deliveryAttempt %d, want 2", a)
		}
		b.ackAll(t, again, "")
		rest := b.popMust(t, "/api/v1/pop/queue/shortredo?batch=10&leaseSeconds=30")
		wantTxns(t, rest, txnRange("e", 2, 7)...)
		if a := rest.Messages[0].DeliveryAttempt; a < 2 {
			t.Fatalf("e-2..e-5 delivered again with deliveryAttempt %d, want at least 2", a)
		}
		b.ackAll(t, rest, "")
		// Beyond everything delivered so far, a first delivery says 1.
		b.pushN(t, "shortredo", "p", "f", 1)
		if a := b.popMust(t, "/api/v1/pop/queue/shortredo").Messages[0].DeliveryAttempt; a != 1 {
			t.Fatalf("a first delivery says deliveryAttempt %d", a)
		}
	})

	t.Run("an expired lease fails its acks even before a repop", func(t *testing.T) {
		t.Parallel()
		b.pushN(t, "expired", "p", "x", 1)
		p := b.popMust(t, "/api/v1/pop/queue/expired?leaseSeconds=1")
		b.waitLeaseExpired(t, p.LeaseID)
		res := b.ackAll(t, p, "")
		if res[0].Success || *res[0].Error != "invalid or expired lease" {
			t.Fatalf("ack under an expired lease: %+v", res[0])
		}
		// The cursor did not move: the message is delivered again.
		wantTxns(t, b.popMust(t, "/api/v1/pop/queue/expired"), "x-0")
	})

	tests := []struct {
		name   string
		expire bool
	}{
		{"an ack without leaseId advances the cursor under a live lease", false},
		{"an ack without leaseId advances the cursor after expiry", true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			queue := []string{"leaseless-live", "leaseless-expired"}[i]
			b.pushN(t, queue, "p", "l", 3)
			p := b.popMust(t, "/api/v1/pop/queue/"+queue+"?batch=2&leaseSeconds=1")
			if tt.expire {
				b.waitLeaseExpired(t, p.LeaseID)
			}
			m := p.Messages[1]
			res := b.ackBatch(t, "", map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID})
			if !res[0].Success || !res[0].LeaseReleased {
				t.Fatalf("lease-less ack: %+v", res[0])
			}
			next := b.popMust(t, "/api/v1/pop/queue/"+queue+"?batch=10")
			wantTxns(t, next, "l-2")
			if next.Messages[0].DeliveryAttempt != 1 {
				t.Fatalf("deliveryAttempt %d", next.Messages[0].DeliveryAttempt)
			}
		})
	}
}

func TestLeaseLength(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	leaseTime := map[string]any{"leaseTime": 120}
	tests := []struct {
		name    string
		options map[string]any // configured, when set
		query   string
		want    time.Duration
	}{
		{"unconfigured queue: 60 s", nil, "", 60 * time.Second},
		{"configured queue: its leaseTime", leaseTime, "", 120 * time.Second},
		{"leaseSeconds overrides an unconfigured queue", nil, "?leaseSeconds=7", 7 * time.Second},
		{"leaseSeconds overrides leaseTime", leaseTime, "?leaseSeconds=7", 7 * time.Second},
		{"leaseSeconds=0 is the default", leaseTime, "?leaseSeconds=0", 120 * time.Second},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			queue := fmt.Sprintf("len%d", i)
			if tt.options != nil {
				b.setOptions(t, queue, tt.options)
			}
			b.pushN(t, queue, "p", "x", 1)
			p := b.popMust(t, "/api/v1/pop/queue/"+queue+tt.query)
			at, ok := b.leaseExpiry(t, p.LeaseID)
			if !ok {
				t.Fatal("no lease")
			}
			if left := time.Until(at); left > tt.want || left < tt.want-3*time.Second {
				t.Fatalf("lease expires in %v, want %v", left, tt.want)
			}
		})
	}
}

func TestLeaseExtend(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	near := func(t *testing.T, got, want time.Duration) {
		t.Helper()
		if got < want-5*time.Second || got > want+time.Second {
			t.Fatalf("expires in %v, want about %v", got, want)
		}
	}

	t.Run("renews every partition of the pop, never shortens", func(t *testing.T) {
		t.Parallel()
		b.pushN(t, "ext", "p1", "a", 1)
		b.pushN(t, "ext", "p2", "b", 1)
		popped := time.Now()
		p := b.popMust(t, "/api/v1/pop/queue/ext?partitions=2&leaseSeconds=2")
		if p.PartitionsClaimed != 2 {
			t.Fatalf("claimed %d partitions", p.PartitionsClaimed)
		}
		r := b.extend(t, p.LeaseID, `{"seconds":120}`)
		if r.Renewed != 2 {
			t.Fatalf("renewed %d, want 2", r.Renewed)
		}
		near(t, time.Until(r.expiresAt(t)), 120*time.Second)
		// No body means 60 s, which is less than what is left: nothing moves.
		again := b.extend(t, p.LeaseID, "")
		if again.Renewed != 2 || *again.ExpiresAt != *r.ExpiresAt {
			t.Fatalf("bodiless extension: renewed %d, expiry %s (was %s)", again.Renewed, *again.ExpiresAt, *r.ExpiresAt)
		}
		// Past the 2 s the pop asked for, both partitions are still held.
		elapse(t, popped, 2500*time.Millisecond)
		for _, part := range []string{"p1", "p2"} {
			b.popEmpty(t, "/api/v1/pop/queue/ext/partition/"+part)
		}
	})

	bodies := []struct{ name, body string }{
		{"no body", ""},
		{"unparseable body", "{not json"},
		{"zero seconds", `{"seconds":0}`},
	}
	for i, tt := range bodies {
		t.Run(tt.name+" means 60 seconds", func(t *testing.T) {
			t.Parallel()
			queue := []string{"ext-none", "ext-bad", "ext-zero"}[i]
			b.pushN(t, queue, "p", "x", 1)
			p := b.popMust(t, "/api/v1/pop/queue/"+queue+"?leaseSeconds=5")
			r := b.extend(t, p.LeaseID, tt.body)
			if r.Renewed != 1 {
				t.Fatalf("renewed %d", r.Renewed)
			}
			near(t, time.Until(r.expiresAt(t)), 60*time.Second)
		})
	}

	t.Run("an expired lease is not revived", func(t *testing.T) {
		t.Parallel()
		b.pushN(t, "ext-expired", "p", "x", 1)
		p := b.popMust(t, "/api/v1/pop/queue/ext-expired?leaseSeconds=1")
		b.waitLeaseExpired(t, p.LeaseID)
		if r := b.extend(t, p.LeaseID, `{"seconds":60}`); r.Success || r.Renewed != 0 {
			t.Fatalf("expired lease renewed: %+v", r)
		}
	})

	for _, id := range []string{"01a22b50-1a84-7820-85f4-7a4428a03ed3", "not-a-lease", "01A22B50-1A84-7820-85F4-7A4428A03ED3"} {
		t.Run("unknown lease "+id, func(t *testing.T) {
			t.Parallel()
			if r := b.extend(t, id, `{"seconds":60}`); r.Success || r.Renewed != 0 {
				t.Fatalf("%+v", r)
			}
		})
	}
}

func TestAutoAck(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	tests := []struct{ name, queue, group, query string }{
		{"queue mode", "auto-q", "__QUEUE_MODE__", ""},
		{"named group", "auto-g", "g", "&consumerGroup=g&subscriptionMode=all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b.pushN(t, tt.queue, "p", "a", 3)
			p := b.popMust(t, "/api/v1/pop/queue/"+tt.queue+"?autoAck=true&batch=2&leaseSeconds=1"+tt.query)
			wantTxns(t, p, "a-0", "a-1")
			if p.LeaseID != "" {
				t.Fatalf("leaseId %q, want \"\"", p.LeaseID)
			}
			for _, m := range p.Messages {
				if m.LeaseID != "" || m.DeliveryAttempt != 1 {
					t.Fatalf("message %+v", m)
				}
			}
			// Committed at delivery, and no lease that could ever expire into a redelivery:
			// the next pop, at once, is not fenced and starts after the auto-acked span.
			next := b.popMust(t, "/api/v1/pop/queue/"+tt.queue+"?batch=10"+tt.query)
			wantTxns(t, next, "a-2")
			res := b.ackBatch(t, p.ConsumerGroup, map[string]any{"transactionId": "a-0", "partitionId": p.PartitionID})
			if !res[0].Success || !res[0].Noop {
				t.Fatalf("ack of an auto-acked message: %+v", res[0])
			}
		})
	}
}

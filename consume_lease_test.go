package queen

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

// Leases: exclusivity per (partition, group), expiry and redelivery, fencing, extension,
// and autoAck (no lease at all).

// leaseExpired reports whether the group's lease on queue/partition is gone or past.
func (d *pushLogDB) leaseExpired(t testing.TB, queue, partition, group string) bool {
	t.Helper()
	c, ok := d.consumerRowOf(t, queue, partition, group)
	return ok && (c.Expires == nil || time.Until(*c.Expires) < 0)
}

func TestLeaseExclusive(t *testing.T) {
	t.Parallel()
	a := startApp(t, nil)
	tests := []struct{ name, queue, group string }{
		{"queue mode", "excl-q", ""},
		{"named group", "excl-g", "&consumerGroup=g&subscriptionMode=all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a.pushN(t, tt.queue, "p1", "one", 3)
			a.pushN(t, tt.queue, "p2", "two", 3)
			first := a.popMust(t, "/api/v1/pop/queue/"+tt.queue+"/partition/p1?batch=1"+tt.group)
			wantTxns(t, first, "one-0")
			// p1 is leased, even though only part of it was delivered.
			a.popEmpty(t, "/api/v1/pop/queue/"+tt.queue+"/partition/p1?batch=10"+tt.group)
			second := a.popMust(t, "/api/v1/pop/queue/"+tt.queue+"?partitions=5&batch=10"+tt.group)
			if second.PartitionsClaimed != 1 {
				t.Fatalf("second consumer claimed %d partitions", second.PartitionsClaimed)
			}
			wantTxns(t, second, "two-0", "two-1", "two-2")
			a.popEmpty(t, "/api/v1/pop/queue/"+tt.queue+"?partitions=5"+tt.group)
			// Another group is not fenced by this group's leases.
			other := a.popMust(t, "/api/v1/pop/queue/"+tt.queue+"/partition/p1?batch=10&consumerGroup=other&subscriptionMode=all")
			wantTxns(t, other, "one-0", "one-1", "one-2")
			// Released by the ack: the next consumer gets the rest.
			a.ackAll(t, first, "")
			wantTxns(t, a.popMust(t, "/api/v1/pop/queue/"+tt.queue+"/partition/p1?batch=10"+tt.group), "one-1", "one-2")
		})
	}

	t.Run("concurrent pops of one partition: exactly one wins", func(t *testing.T) {
		t.Parallel()
		a.pushN(t, "excl-race", "p", "r", 4)
		const consumers = 8
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			wins [][]byte
			errs []string
		)
		for range consumers {
			wg.Go(func() {
				code, body, err := getCtx(context.Background(), a, "/api/v1/pop/queue/excl-race?batch=10")
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					errs = append(errs, err.Error())
				case code == http.StatusOK:
					wins = append(wins, body)
				case code != http.StatusNoContent:
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
	a := startApp(t, nil)
	db := openPushLogDB(t, a)

	t.Run("expiry redelivers; the stale lease can no longer ack", func(t *testing.T) {
		t.Parallel()
		a.pushN(t, "expiry", "p", "e", 3)
		first := a.popMust(t, "/api/v1/pop/queue/expiry?leaseSeconds=1")
		a.popEmpty(t, "/api/v1/pop/queue/expiry")
		var again *popResp
		eventually(t, 4*time.Second, "the expired span was never redelivered", func() bool {
			again = a.pop(t, "/api/v1/pop/queue/expiry?leaseSeconds=30")
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
		before, _ := db.consumerRowOf(t, "expiry", "p", "__QUEUE_MODE__")
		res := a.ackBatch(t, "", ackItemOf(first.Messages[2], ""))
		if res[0].Success || res[0].Error == nil || *res[0].Error != "invalid or expired lease" || res[0].LeaseReleased {
			t.Fatalf("stale-lease ack: %+v", res[0])
		}
		after, _ := db.consumerRowOf(t, "expiry", "p", "__QUEUE_MODE__")
		if after.Committed != before.Committed || *after.LeaseID != again.LeaseID || after.RetryCount != 0 {
			t.Fatalf("the stale ack changed the consumer: %+v -> %+v", before, after)
		}
		res = a.ackBatch(t, "", ackItemOf(again.Messages[2], ""))
		if !res[0].Success || !res[0].LeaseReleased {
			t.Fatalf("live-lease ack: %+v", res[0])
		}
		if c := db.committed(t, "expiry", "p", "__QUEUE_MODE__"); c != 2 {
			t.Fatalf("committed %d, want 2", c)
		}
	})

	t.Run("an expired lease fails its acks even before a repop", func(t *testing.T) {
		t.Parallel()
		a.pushN(t, "expired", "p", "x", 1)
		p := a.popMust(t, "/api/v1/pop/queue/expired?leaseSeconds=1")
		eventually(t, 4*time.Second, "the lease never expired", func() bool { return db.leaseExpired(t, "expired", "p", "__QUEUE_MODE__") })
		res := a.ackAll(t, p, "")
		if res[0].Success || *res[0].Error != "invalid or expired lease" {
			t.Fatalf("ack under an expired lease: %+v", res[0])
		}
		if c := db.committed(t, "expired", "p", "__QUEUE_MODE__"); c != -1 {
			t.Fatalf("committed %d, want -1", c)
		}
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
			a.pushN(t, queue, "p", "l", 3)
			p := a.popMust(t, "/api/v1/pop/queue/"+queue+"?batch=2&leaseSeconds=1")
			if tt.expire {
				eventually(t, 4*time.Second, "the lease never expired", func() bool { return db.leaseExpired(t, queue, "p", "__QUEUE_MODE__") })
			}
			m := p.Messages[1]
			res := a.ackBatch(t, "", map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID})
			if !res[0].Success || !res[0].LeaseReleased {
				t.Fatalf("lease-less ack: %+v", res[0])
			}
			if c := db.committed(t, queue, "p", "__QUEUE_MODE__"); c != 1 {
				t.Fatalf("committed %d, want 1", c)
			}
			next := a.popMust(t, "/api/v1/pop/queue/"+queue+"?batch=10")
			wantTxns(t, next, "l-2")
			if next.Messages[0].DeliveryAttempt != 1 {
				t.Fatalf("deliveryAttempt %d", next.Messages[0].DeliveryAttempt)
			}
		})
	}
}

func TestLeaseLength(t *testing.T) {
	t.Parallel()
	a := startApp(t, nil)
	db := openPushLogDB(t, a)
	tests := []struct {
		name, set, query string
		want             time.Duration
	}{
		{"unconfigured queue: 60 s", "", "", 60 * time.Second},
		{"configured queue: its leaseTime", "lease_time = 120", "", 120 * time.Second},
		{"leaseSeconds overrides an unconfigured queue", "", "?leaseSeconds=7", 7 * time.Second},
		{"leaseSeconds overrides leaseTime", "lease_time = 120", "?leaseSeconds=7", 7 * time.Second},
		{"leaseSeconds=0 is the default", "lease_time = 120", "?leaseSeconds=0", 120 * time.Second},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			queue := fmt.Sprintf("len%d", i)
			if tt.set != "" {
				db.configure(t, queue, tt.set)
			}
			a.pushN(t, queue, "p", "x", 1)
			a.popMust(t, "/api/v1/pop/queue/"+queue+tt.query)
			c, _ := db.consumerRowOf(t, queue, "p", "__QUEUE_MODE__")
			if c.Expires == nil {
				t.Fatal("no lease")
			}
			if left := time.Until(*c.Expires); left > tt.want || left < tt.want-3*time.Second {
				t.Fatalf("lease expires in %v, want %v", left, tt.want)
			}
		})
	}
}

// extendResp is the lease extension answer (api.md §5.5).
type extendResp struct {
	LeaseID        string  `json:"leaseId"`
	Success        bool    `json:"success"`
	Renewed        int     `json:"renewed"`
	NewExpiresAt   *string `json:"newExpiresAt"`
	ExpiresAt      *string `json:"expiresAt"`
	LeaseExpiresAt *string `json:"lease_expires_at"`
}

var extendKeys = []string{"leaseId", "success", "renewed", "newExpiresAt", "expiresAt", "lease_expires_at"}

// extend posts to the extension route (body "" = none) and checks the shape.
func (a *testApp) extend(t testing.TB, leaseID, body string) extendResp {
	t.Helper()
	code, raw := a.do(t, http.MethodPost, "/api/v1/lease/"+leaseID+"/extend", body)
	if code != http.StatusOK {
		t.Fatalf("extend: status %d, body %s", code, raw)
	}
	if got := jsonKeys(t, raw); !slices.Equal(got, extendKeys) {
		t.Fatalf("extend keys %v, want %v", got, extendKeys)
	}
	var r extendResp
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	if r.LeaseID != leaseID || r.Success != (r.Renewed > 0) {
		t.Fatalf("extend answered %s", raw)
	}
	if r.Renewed == 0 {
		if r.NewExpiresAt != nil || r.ExpiresAt != nil || r.LeaseExpiresAt != nil {
			t.Fatalf("nothing renewed but expiries given: %s", raw)
		}
		return r
	}
	if r.NewExpiresAt == nil || r.ExpiresAt == nil || r.LeaseExpiresAt == nil ||
		*r.NewExpiresAt != *r.ExpiresAt || *r.ExpiresAt != *r.LeaseExpiresAt || !microTime.MatchString(*r.ExpiresAt) {
		t.Fatalf("expiry keys differ or are malformed: %s", raw)
	}
	return r
}

// expiresIn is how far in the future an extension answer's expiry is.
func (r extendResp) expiresIn(t testing.TB) time.Duration {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, *r.ExpiresAt)
	if err != nil {
		t.Fatal(err)
	}
	return time.Until(at)
}

func TestLeaseExtend(t *testing.T) {
	t.Parallel()
	a := startApp(t, nil)
	db := openPushLogDB(t, a)
	near := func(t *testing.T, got, want time.Duration) {
		t.Helper()
		if got < want-5*time.Second || got > want+time.Second {
			t.Fatalf("expires in %v, want about %v", got, want)
		}
	}

	t.Run("renews every partition of the pop, never shortens", func(t *testing.T) {
		t.Parallel()
		a.pushN(t, "ext", "p1", "a", 1)
		a.pushN(t, "ext", "p2", "b", 1)
		p := a.popMust(t, "/api/v1/pop/queue/ext?partitions=2&leaseSeconds=5")
		if p.PartitionsClaimed != 2 {
			t.Fatalf("claimed %d partitions", p.PartitionsClaimed)
		}
		r := a.extend(t, p.LeaseID, `{"seconds":120}`)
		if r.Renewed != 2 {
			t.Fatalf("renewed %d, want 2", r.Renewed)
		}
		near(t, r.expiresIn(t), 120*time.Second)
		for _, part := range []string{"p1", "p2"} {
			c, _ := db.consumerRowOf(t, "ext", part, "__QUEUE_MODE__")
			if c.Expires == nil || time.Until(*c.Expires) < 100*time.Second {
				t.Fatalf("%s: lease expires at %v", part, c.Expires)
			}
		}
		// No body means 60 s, which is less than what is left: nothing moves.
		again := a.extend(t, p.LeaseID, "")
		if again.Renewed != 2 || *again.ExpiresAt != *r.ExpiresAt {
			t.Fatalf("bodiless extension: renewed %d, expiry %s (was %s)", again.Renewed, *again.ExpiresAt, *r.ExpiresAt)
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
			a.pushN(t, queue, "p", "x", 1)
			p := a.popMust(t, "/api/v1/pop/queue/"+queue+"?leaseSeconds=5")
			r := a.extend(t, p.LeaseID, tt.body)
			if r.Renewed != 1 {
				t.Fatalf("renewed %d", r.Renewed)
			}
			near(t, r.expiresIn(t), 60*time.Second)
		})
	}

	t.Run("an expired lease is not revived", func(t *testing.T) {
		t.Parallel()
		a.pushN(t, "ext-expired", "p", "x", 1)
		p := a.popMust(t, "/api/v1/pop/queue/ext-expired?leaseSeconds=1")
		eventually(t, 4*time.Second, "the lease never expired", func() bool {
			return db.leaseExpired(t, "ext-expired", "p", "__QUEUE_MODE__")
		})
		if r := a.extend(t, p.LeaseID, `{"seconds":60}`); r.Success || r.Renewed != 0 {
			t.Fatalf("expired lease renewed: %+v", r)
		}
	})

	for _, id := range []string{"01a22b50-1a84-7820-85f4-7a4428a03ed3", "not-a-lease", "01A22B50-1A84-7820-85F4-7A4428A03ED3"} {
		t.Run("unknown lease "+id, func(t *testing.T) {
			t.Parallel()
			if r := a.extend(t, id, `{"seconds":60}`); r.Success || r.Renewed != 0 {
				t.Fatalf("%+v", r)
			}
		})
	}
}

func TestAutoAck(t *testing.T) {
	t.Parallel()
	a := startApp(t, nil)
	db := openPushLogDB(t, a)
	tests := []struct{ name, queue, group, query string }{
		{"queue mode", "auto-q", "__QUEUE_MODE__", ""},
		{"named group", "auto-g", "g", "&consumerGroup=g&subscriptionMode=all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a.pushN(t, tt.queue, "p", "a", 3)
			p := a.popMust(t, "/api/v1/pop/queue/"+tt.queue+"?autoAck=true&batch=2&leaseSeconds=1"+tt.query)
			wantTxns(t, p, "a-0", "a-1")
			if p.LeaseID != "" {
				t.Fatalf("leaseId %q, want \"\"", p.LeaseID)
			}
			for _, m := range p.Messages {
				if m.LeaseID != "" || m.DeliveryAttempt != 1 {
					t.Fatalf("message %+v", m)
				}
			}
			// Committed at delivery, and no lease that could ever expire into a redelivery.
			c, _ := db.consumerRowOf(t, tt.queue, "p", tt.group)
			if c.Committed != 1 || c.LeaseID != nil || c.Expires != nil {
				t.Fatalf("consumer after autoAck: %+v", c)
			}
			next := a.popMust(t, "/api/v1/pop/queue/"+tt.queue+"?batch=10"+tt.query)
			wantTxns(t, next, "a-2")
			res := a.ackBatch(t, p.ConsumerGroup, map[string]any{"transactionId": "a-0", "partitionId": p.PartitionID})
			if !res[0].Success || !res[0].Noop {
				t.Fatalf("ack of an auto-acked message: %+v", res[0])
			}
		})
	}
}

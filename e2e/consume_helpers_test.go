package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// Helpers of the consume-path tests (consume*_test.go).

// pushN pushes n messages to queue/partition in one request (so one segment), with
// transaction ids prefix-0 .. prefix-(n-1) and payloads {"i": k}.
func (b *broker) pushN(t testing.TB, queue, partition, prefix string, n int) []pushResult {
	t.Helper()
	items := make([]map[string]any, n)
	for k := range n {
		items[k] = map[string]any{"queue": queue, "partition": partition,
			"transactionId": fmt.Sprintf("%s-%d", prefix, k), "payload": map[string]any{"i": k}}
	}
	return b.push(t, items...)
}

// popMust pops path and fails unless it answered 200.
func (b *broker) popMust(t testing.TB, path string) *popResp {
	t.Helper()
	p := b.pop(t, path)
	if p == nil {
		t.Fatalf("pop %s: 204, want messages", path)
	}
	return p
}

// popEmpty pops path and fails unless it answered 204.
func (b *broker) popEmpty(t testing.TB, path string) {
	t.Helper()
	if p := b.pop(t, path); p != nil {
		t.Fatalf("pop %s: got %s, want 204", path, txnsOf(p))
	}
}

// txnsOf lists a pop's transaction ids in delivery order.
func txnsOf(p *popResp) []string {
	if p == nil {
		return nil
	}
	out := make([]string, len(p.Messages))
	for i, m := range p.Messages {
		out[i] = m.TransactionID
	}
	return out
}

// wantTxns fails unless the pop delivered exactly want, in order.
func wantTxns(t testing.TB, p *popResp, want ...string) {
	t.Helper()
	if got := txnsOf(p); !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
}

// txnRange is prefix-from .. prefix-to.
func txnRange(prefix string, from, to int) []string {
	var out []string
	for k := from; k <= to; k++ {
		out = append(out, fmt.Sprintf("%s-%d", prefix, k))
	}
	return out
}

// setOptions configures queue with options through POST /api/v1/configure (merge), as
// an operator would; the queue is created if needed.
func (b *broker) setOptions(t testing.TB, queue string, options map[string]any) {
	t.Helper()
	b.configure(t, mustJSON(t, map[string]any{"queue": queue, "options": options}))
}

// extendResp is the lease extension answer (docs/api.md §5.5).
type extendResp struct {
	LeaseID        string  `json:"leaseId"`
	Success        bool    `json:"success"`
	Renewed        int     `json:"renewed"`
	NewExpiresAt   *string `json:"newExpiresAt"`
	ExpiresAt      *string `json:"expiresAt"`
	LeaseExpiresAt *string `json:"lease_expires_at"`
}

var extendKeys = []string{"leaseId", "success", "renewed", "newExpiresAt", "expiresAt", "lease_expires_at"}

// extend posts to the extension route (body "" = none) and checks the answer's shape.
func (b *broker) extend(t testing.TB, leaseID, body string) extendResp {
	t.Helper()
	post := b.post
	if body != "" && !json.Valid([]byte(body)) {
		post = b.postBad // sent on purpose: an unparseable body means 60 s (docs/api.md §5.5)
	}
	code, raw := post(t, "/api/v1/lease/"+leaseID+"/extend", body)
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

// expiresAt is an extension answer's expiry.
func (r extendResp) expiresAt(t testing.TB) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, *r.ExpiresAt)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// leaseExpiry reads when a live lease expires without changing it: an extension never
// shortens a lease, so asking for one second more answers the expiry as it stands (for a
// lease with more than a second left; a shorter one gains at most that second). ok is
// false when the lease is already gone.
func (b *broker) leaseExpiry(t testing.TB, leaseID string) (at time.Time, ok bool) {
	t.Helper()
	r := b.extend(t, leaseID, `{"seconds":1}`)
	if r.Renewed == 0 {
		return time.Time{}, false
	}
	return r.expiresAt(t), true
}

// waitLeaseExpired waits until the lease has expired on the broker's clock (the machine's
// clock: the database runs beside the tests).
func (b *broker) waitLeaseExpired(t testing.TB, leaseID string) {
	t.Helper()
	at, ok := b.leaseExpiry(t, leaseID)
	if !ok {
		return
	}
	eventually(t, time.Until(at)+5*time.Second, "the lease to expire", func() bool {
		return time.Now().After(at.Add(20 * time.Millisecond))
	})
}

// jsonKeys returns the keys of a JSON object in document order.
func jsonKeys(t testing.TB, raw []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%s is not a JSON object (%v)", raw, err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// microTime is the wire form of message and lease timestamps.
var microTime = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$`)

// readBackGroups numbers the consumer groups readBack creates.
var readBackGroups atomic.Int64

// readBack is every message of queue as a new consumer group reading from the start
// sees it: by partition name, each partition's messages in offset order (a partition
// read from its start delivers offset k as its k-th message). The group acks as it
// reads; other groups are not disturbed.
func (b *broker) readBack(t testing.TB, queue string) map[string][]popMsg {
	t.Helper()
	group := fmt.Sprintf("read-back-%d", readBackGroups.Add(1))
	path := "/api/v1/pop/queue/" + url.PathEscape(queue) + "?batch=1000&partitions=1000&subscriptionMode=all&consumerGroup=" + group
	out := map[string][]popMsg{}
	for {
		p := b.pop(t, path)
		if p == nil {
			return out
		}
		for _, m := range p.Messages {
			out[m.Partition] = append(out[m.Partition], m)
		}
		for _, r := range b.ackAll(t, p, "") {
			if !r.Success {
				t.Fatalf("read-back ack: %+v", r)
			}
		}
	}
}

package e2e

import (
	"fmt"
	"testing"
)

func TestPopAckSmoke(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	for i := range 5 {
		b.push(t, map[string]any{"queue": "smoke", "partition": "p", "payload": map[string]any{"n": i}})
	}
	p := b.pop(t, "/api/v1/pop/queue/smoke?batch=3")
	if p == nil || len(p.Messages) != 3 {
		t.Fatalf("pop: %+v", p)
	}
	for i, m := range p.Messages {
		if string(m.Data) != fmt.Sprintf(`{"n":%d}`, i) || m.DeliveryAttempt != 1 {
			t.Fatalf("message %d: %+v", i, m)
		}
	}
	if q := b.pop(t, "/api/v1/pop/queue/smoke?batch=3"); q != nil {
		t.Fatalf("leased partition popped again: %+v", q)
	}
	res := b.ackAll(t, p, "")
	for _, r := range res {
		if !r.Success || !r.LeaseReleased {
			t.Fatalf("ack: %+v", res)
		}
	}
	p = b.pop(t, "/api/v1/pop/queue/smoke/partition/p?batch=10")
	if p == nil || len(p.Messages) != 2 || string(p.Messages[0].Data) != `{"n":3}` {
		t.Fatalf("second pop: %+v", p)
	}
}

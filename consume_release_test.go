package queen

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/queen-go/queen/ports"
)

// TestReleaseUndoesAClaim: claims made for a client that went away are given back, so
// the messages stay deliverable as if never delivered (with autoAck they would otherwise
// be lost).
func TestReleaseUndoesAClaim(t *testing.T) {
	t.Parallel()
	a := startApp(t, nil)
	ctx := context.Background()
	for _, autoAck := range []bool{false, true} {
		queue := map[bool]string{false: "release-leased", true: "release-autoack"}[autoAck]
		for i := range 3 {
			a.push(t, map[string]any{"queue": queue, "payload": i})
		}
		req := ports.PopRequest{Tenant: ports.DefaultTenant, Queue: queue, Group: ports.QueueModeGroup, Batch: 10,
			Partitions: 1, AutoAck: autoAck, LeaseID: uuid.NewString(), SubscribeMode: ports.SubscribeAll}
		claims, err := a.Store.Pop(ctx, req)
		if err != nil || len(claims) != 1 {
			t.Fatalf("autoAck=%v: claims %v, %v", autoAck, claims, err)
		}
		if err := a.Store.Release(ctx, req.Group, req.LeaseID, autoAck, claims); err != nil {
			t.Fatal(err)
		}
		p := a.pop(t, "/api/v1/pop/queue/"+queue+"?batch=10")
		if p == nil || len(p.Messages) != 3 || p.Messages[0].DeliveryAttempt != 1 {
			t.Fatalf("autoAck=%v: after release: %+v", autoAck, p)
		}
	}
}

package postgres

import (
	"context"
	"fmt"
	"testing"

	"github.com/queen-go/queen/ports"
)

// TestReleaseUndoesAClaim: claims made for a client that went away are given back, so
// the messages stay deliverable as if never delivered (with autoAck they would otherwise
// be lost). (Moved from the root package's HTTP tests: a client cannot make a claim run
// without receiving it; the HTTP-level counterpart is e2e's "a client that leaves while
// parked claims nothing".)
func TestReleaseUndoesAClaim(t *testing.T) {
	t.Parallel()
	s := newStore(t, Options{PoolSize: 4})
	ctx := context.Background()
	tests := []struct {
		name    string
		autoAck bool
	}{
		{"leased", false},
		{"autoAck", true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			queue := "release-" + tt.name
			for k := range 3 {
				if _, err := s.PushSegments(ctx, []ports.Segment{oneFrame(queue, "Default", fmt.Sprint("m", k))}); err != nil {
					t.Fatal(err)
				}
			}
			req := ports.PopRequest{Tenant: ports.DefaultTenant, Queue: queue, Group: ports.QueueModeGroup, Batch: 10,
				Partitions: 1, AutoAck: tt.autoAck, LeaseID: fmt.Sprintf("0191d7a2-0000-7000-8000-00000000000%d", i),
				SubscribeMode: ports.SubscribeAll}
			claims, _, err := s.Pop(ctx, req)
			if err != nil || len(claims) != 1 {
				t.Fatalf("claims %+v, %v", claims, err)
			}
			if err := s.Release(ctx, req.Group, req.LeaseID, tt.autoAck, claims); err != nil {
				t.Fatal(err)
			}
			// The same span again, as a first delivery, under a new lease.
			req.LeaseID, req.AutoAck = "0191d7a2-0000-7000-8000-0000000000ff", false
			again, _, err := s.Pop(ctx, req)
			if err != nil || len(again) != 1 {
				t.Fatalf("after release: claims %+v, %v", again, err)
			}
			if c := again[0]; c.Start != 0 || c.End != 2 || c.Attempt != 1 {
				t.Fatalf("after release: claim %d..%d attempt %d, want 0..2 attempt 1", c.Start, c.End, c.Attempt)
			}
		})
	}
}

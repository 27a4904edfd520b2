package shard

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

// groupReadCase is one read of a GroupStore, its answer with partition ids blanked.
type groupReadCase = storeRead[ports.GroupStore]

func blankPartitionIDs(rows []ports.GroupPosition) []ports.GroupPosition {
	for i := range rows {
		rows[i].PartitionID = ""
	}
	return emptyNil(rows)
}

func groupReads() []groupReadCase {
	pages := []ports.GroupPage{{Limit: 2}, {Limit: 2, Offset: 2}, {Limit: 3, Offset: 1}, {Limit: 1, Offset: 5},
		{Limit: 0}, {Limit: 100}, {Limit: 4, Offset: 100}}
	var reads []groupReadCase
	for _, p := range pages {
		reads = append(reads, groupReadCase{fmt.Sprintf("summaries %+v", p), func(ctx context.Context, s ports.GroupStore) (any, error) {
			asOf, rows, err := s.GroupSummaries(ctx, tenant, p)
			return []any{asOf, emptyNil(rows)}, err
		}})
		for _, g := range []string{"g1", "g2", "g3", ports.QueueModeGroup, "nobody"} {
			reads = append(reads, groupReadCase{fmt.Sprintf("positions of %s %+v", g, p), func(ctx context.Context, s ports.GroupStore) (any, error) {
				asOf, rows, err := s.GroupPositions(ctx, tenant, g, p)
				return []any{asOf, blankPartitionIDs(rows)}, err
			}})
		}
	}
	for _, minLag := range []time.Duration{0, 30 * time.Minute, 2 * time.Hour} {
		for _, limit := range []int{0, 1, 3, 100} {
			reads = append(reads, groupReadCase{fmt.Sprintf("lagging %v limit %d", minLag, limit), func(ctx context.Context, s ports.GroupStore) (any, error) {
				asOf, rows, err := s.LaggingPositions(ctx, tenant, minLag, limit)
				return []any{asOf, blankPartitionIDs(rows)}, err
			}})
		}
	}
	return reads
}

// Over three shards, every group read answers what one store holding the same queues
// answers: the same rows in the same order, for every page; asOf is the stores' clock.
func TestGroupsAnswerAsOneStore(t *testing.T) {
	t.Parallel()
	f := newAdminFleet(t)
	answersAsOneStore[ports.GroupStore](t, groupReads(), f.whole, f.groups())
}

// A move answers what it answers on one store, and leaves the same state behind.
func TestGroupsMoveAsOneStore(t *testing.T) {
	t.Parallel()
	from := time.Date(2025, 3, 1, 12, 30, 0, 0, time.UTC)
	cases := []struct {
		name string
		move func(ctx context.Context, s ports.GroupStore) (any, error)
	}{
		{"delete everywhere", func(ctx context.Context, s ports.GroupStore) (any, error) {
			return s.DeleteGroup(ctx, tenant, "g1", "", true)
		}},
		{"delete cursors everywhere", func(ctx context.Context, s ports.GroupStore) (any, error) {
			return s.DeleteGroup(ctx, tenant, "g2", "", false)
		}},
		{"delete on one queue", func(ctx context.Context, s ports.GroupStore) (any, error) {
			return s.DeleteGroup(ctx, tenant, "g1", "crm.a", true)
		}},
		{"delete on a missing queue", func(ctx context.Context, s ports.GroupStore) (any, error) {
			return s.DeleteGroup(ctx, tenant, "g1", "nope", true)
		}},
		{"set subscription", func(ctx context.Context, s ports.GroupStore) (any, error) {
			return s.SetGroupSubscription(ctx, tenant, "g1", from)
		}},
		{"seek to the end", func(ctx context.Context, s ports.GroupStore) (any, error) {
			return s.SeekGroup(ctx, tenant, ports.GroupSeek{Group: "g1", Queue: "crm.a", ToEnd: true})
		}},
		{"seek a partition to a time", func(ctx context.Context, s ports.GroupStore) (any, error) {
			return s.SeekGroup(ctx, tenant, ports.GroupSeek{Group: "g2", Queue: "alpha", Partition: "p1", Timestamp: from})
		}},
		{"seek without a queue", func(ctx context.Context, s ports.GroupStore) (any, error) {
			return s.SeekGroup(ctx, tenant, ports.GroupSeek{Group: "g1", ToEnd: true})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newAdminFleet(t)
			ctx := context.Background()
			sharded := f.groups()
			want, wantErr := c.move(ctx, f.whole)
			got, gotErr := c.move(ctx, sharded)
			sameAnswer(t, got, want, gotErr, wantErr)
			for _, r := range groupReads() {
				want, wantErr := r.read(ctx, f.whole)
				got, gotErr := r.read(ctx, sharded)
				if gotErr != nil || wantErr != nil || !reflect.DeepEqual(got, want) {
					t.Fatalf("after the move, %s: sharded %+v (%v), one store %+v (%v)", r.name, got, gotErr, want, wantErr)
				}
			}
		})
	}
}

// A move naming a queue runs on that queue's shard alone; one naming none on every
// shard.
func TestGroupsRouteOneQueue(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, op string
		want     []int
		call     func(ctx context.Context, g *Groups) error
	}{
		{"delete on a queue", "DeleteGroup", []int{0, 0, 1}, func(ctx context.Context, g *Groups) error {
			_, err := g.DeleteGroup(ctx, tenant, "g1", "billing.b", true)
			return err
		}},
		{"delete on an unknown queue", "DeleteGroup", []int{1, 0, 0}, func(ctx context.Context, g *Groups) error {
			_, err := g.DeleteGroup(ctx, tenant, "g1", "nope", true)
			return err
		}},
		{"delete everywhere", "DeleteGroup", []int{1, 1, 1}, func(ctx context.Context, g *Groups) error {
			_, err := g.DeleteGroup(ctx, tenant, "g1", "", true)
			return err
		}},
		{"seek", "SeekGroup", []int{0, 1, 0}, func(ctx context.Context, g *Groups) error {
			_, err := g.SeekGroup(ctx, tenant, ports.GroupSeek{Group: "g1", Queue: "alpha", ToEnd: true})
			return err
		}},
		{"set subscription", "SetGroupSubscription", []int{1, 1, 1}, func(ctx context.Context, g *Groups) error {
			_, err := g.SetGroupSubscription(ctx, tenant, "g1", time.Now())
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newAdminFleet(t)
			if err := c.call(context.Background(), f.groups()); err != nil {
				t.Fatal(err)
			}
			if got := f.callsOf(c.op); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("%s calls by shard %v, want %v", c.op, got, c.want)
			}
		})
	}
}

// A shard that fails fails every call that needs it with *UnreachableError naming it.
func TestGroupsUnreachableShard(t *testing.T) {
	t.Parallel()
	down := errors.New("shard 2 is down")
	f := newAdminFleet(t)
	f.fail(2, down)
	g := f.groups()
	page := ports.GroupPage{Limit: 10}
	cases := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"summaries", func(ctx context.Context) error { _, _, err := g.GroupSummaries(ctx, tenant, page); return err }},
		{"positions", func(ctx context.Context) error { _, _, err := g.GroupPositions(ctx, tenant, "g1", page); return err }},
		{"lagging", func(ctx context.Context) error { _, _, err := g.LaggingPositions(ctx, tenant, 0, 10); return err }},
		{"delete on a queue", func(ctx context.Context) error {
			_, err := g.DeleteGroup(ctx, tenant, "g1", "billing.b", true)
			return err
		}},
		{"delete everywhere", func(ctx context.Context) error { _, err := g.DeleteGroup(ctx, tenant, "g1", "", true); return err }},
		{"set subscription", func(ctx context.Context) error {
			_, err := g.SetGroupSubscription(ctx, tenant, "g1", time.Now())
			return err
		}},
		{"seek", func(ctx context.Context) error {
			_, err := g.SeekGroup(ctx, tenant, ports.GroupSeek{Group: "g1", Queue: "delta", ToEnd: true})
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantUnreachable(t, c.call(context.Background()), 2, down)
		})
	}
}

// Should two shards both answer for one (group, queue) pair, the summary is one row:
// counters added, the older oldest message, the later activity, the first subscription.
func TestAddSummaries(t *testing.T) {
	t.Parallel()
	at := func(m int) *time.Time { x := time.Date(2025, 3, 1, 12, m, 0, 0, time.UTC); return &x }
	a := ports.GroupSummary{Group: "g", Queue: "q", Cursors: 1, PartitionsWithLag: 1, TotalLag: 5,
		OldestUnconsumedAt: at(10), LiveLeases: 1, LastActivity: at(20)}
	b := ports.GroupSummary{Group: "g", Queue: "q", Cursors: 2, PartitionsWithLag: 0, TotalLag: 0,
		LastActivity: at(30), Subscription: &ports.GroupSubscription{Mode: ports.SubscribeAll, CreatedAt: *at(1)}}
	want := ports.GroupSummary{Group: "g", Queue: "q", Cursors: 3, PartitionsWithLag: 1, TotalLag: 5,
		OldestUnconsumedAt: at(10), LiveLeases: 1, LastActivity: at(30), Subscription: b.Subscription}
	for _, c := range []struct {
		name string
		x, y ports.GroupSummary
	}{{"a then b", a, b}, {"b then a", b, a}} {
		if got := addSummaries(c.x, c.y); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, want)
		}
	}
}

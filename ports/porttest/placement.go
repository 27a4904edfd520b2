package porttest

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/queen-go/queen/ports"
)

// PlacementStore runs the conformance suite of ports.PlacementStore; newStore must
// return an empty store.
func PlacementStore(t *testing.T, newStore func(t *testing.T) ports.PlacementStore) {
	ctx := context.Background()
	place := func(t *testing.T, s ports.PlacementStore, p ports.Placement) ports.Placement {
		t.Helper()
		got, err := s.Place(ctx, p)
		if err != nil {
			t.Fatalf("Place(%+v): %v", p, err)
		}
		return got
	}
	t.Run("the first placement wins", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		first := ports.Placement{Tenant: tenant, Queue: "q", Namespace: "ns", Shard: 2}
		if got := place(t, s, first); got != first {
			t.Fatalf("Place = %+v, want %+v", got, first)
		}
		if got := place(t, s, ports.Placement{Tenant: tenant, Queue: "q", Namespace: "other", Shard: 1}); got != first {
			t.Fatalf("placing again = %+v, want the first %+v", got, first)
		}
		if got, ok, err := s.Lookup(ctx, tenant, "q"); err != nil || !ok || got != first {
			t.Fatalf("Lookup = %+v, %v, %v; want %+v", got, ok, err, first)
		}
		if _, ok, err := s.Lookup(ctx, tenant, "none"); err != nil || ok {
			t.Fatalf("Lookup of an unplaced queue: ok %v, %v", ok, err)
		}
	})
	t.Run("concurrent placements agree", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		got := make([]ports.Placement, 8)
		var wg sync.WaitGroup
		for i := range got {
			wg.Go(func() {
				p, err := s.Place(ctx, ports.Placement{Tenant: tenant, Queue: "race", Shard: i})
				if err != nil {
					t.Error(err)
				}
				got[i] = p
			})
		}
		wg.Wait()
		for _, p := range got[1:] {
			if p != got[0] {
				t.Fatalf("placements disagree: %+v", got)
			}
		}
	})
	t.Run("a namespace's shard is its first queue's", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		if _, ok, err := s.NamespaceShard(ctx, tenant, "ns"); err != nil || ok {
			t.Fatalf("NamespaceShard of an empty namespace: ok %v, %v", ok, err)
		}
		place(t, s, ports.Placement{Tenant: tenant, Queue: "ns.a", Namespace: "ns", Shard: 3})
		place(t, s, ports.Placement{Tenant: tenant, Queue: "ns.b", Namespace: "ns", Shard: 1}) // an explicit placement elsewhere
		place(t, s, ports.Placement{Tenant: tenant, Queue: "lone", Shard: 5})
		if n, ok, err := s.NamespaceShard(ctx, tenant, "ns"); err != nil || !ok || n != 3 {
			t.Fatalf("NamespaceShard = %d, %v, %v; want 3", n, ok, err)
		}
		if _, ok, err := s.NamespaceShard(ctx, tenant, ""); err != nil || ok {
			t.Fatalf("NamespaceShard of no namespace: ok %v, %v; want none", ok, err)
		}
		all, err := s.Placements(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range all {
			names = append(names, p.Queue)
		}
		if !slices.Equal(names, []string{"ns.a", "ns.b", "lone"}) {
			t.Fatalf("Placements = %v, want the three in placement order", names)
		}
	})
}

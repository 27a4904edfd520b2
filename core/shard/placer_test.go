package shard

import (
	"context"
	"errors"
	"testing"

	"github.com/queen-go/queen/ports"
)

const tenant = ports.DefaultTenant

func TestPlacerPlacesOnceAndCoLocatesNamespaces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, _ := fakeCatalogue()
	a, b := NewPlacer(m, 4, nil), NewPlacer(m, 4, nil) // two brokers
	first, err := a.ShardOf(ctx, tenant, "billing.invoices", "billing")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := b.ShardOf(ctx, tenant, "billing.invoices", "billing"); err != nil || n != first {
		t.Fatalf("the other broker: %d, %v; want %d", n, err, first)
	}
	// Another queue of the namespace follows it, even where the hash would not.
	for _, q := range []string{"billing.a", "billing.b", "billing.c", "billing.d", "billing.e"} {
		if n, err := b.ShardOf(ctx, tenant, q, "billing"); err != nil || n != first {
			t.Fatalf("%s: %d, %v; want the namespace's %d", q, n, err, first)
		}
	}
}

func TestPlacerExplicit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, _ := fakeCatalogue()
	p := NewPlacer(m, 3, []int{0})
	if n, err := p.PlaceExplicit(ctx, tenant, "q", "", 2); err != nil || n != 2 {
		t.Fatalf("PlaceExplicit: %d, %v; want 2 (a closed shard is an operator's choice)", n, err)
	}
	if n, err := p.PlaceExplicit(ctx, tenant, "q", "", 2); err != nil || n != 2 {
		t.Fatalf("PlaceExplicit again: %d, %v", n, err)
	}
	if _, err := p.PlaceExplicit(ctx, tenant, "q", "", 1); !errors.Is(err, ErrPlacedElsewhere) {
		t.Fatalf("PlaceExplicit elsewhere: %v, want ErrPlacedElsewhere", err)
	}
	if _, err := p.PlaceExplicit(ctx, tenant, "r", "", 3); err == nil {
		t.Fatal("PlaceExplicit on a shard that does not exist succeeded")
	}
	if n, err := p.ShardOf(ctx, tenant, "new", ""); err != nil || n != 0 {
		t.Fatalf("a new queue: %d, %v; want the only open shard 0", n, err)
	}
}

// While the catalogue is down, what the copy knows still routes; a new queue cannot be
// placed (the caller spools or answers 503); Load fills a fresh broker's copy.
func TestPlacerWithoutTheCatalogue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, down := fakeCatalogue()
	p := NewPlacer(m, 2, nil)
	known, err := p.ShardOf(ctx, tenant, "known", "")
	if err != nil {
		t.Fatal(err)
	}
	down.Store(true)
	if n, err := p.ShardOf(ctx, tenant, "known", ""); err != nil || n != known {
		t.Fatalf("a known queue with the catalogue down: %d, %v", n, err)
	}
	if _, err := p.ShardOf(ctx, tenant, "unknown", ""); !errors.Is(err, ports.ErrUnavailable) {
		t.Fatalf("a new queue with the catalogue down: %v, want ErrUnavailable", err)
	}
	fresh := NewPlacer(m, 2, nil)
	if err := fresh.Load(ctx); !errors.Is(err, ports.ErrUnavailable) {
		t.Fatalf("Load with the catalogue down: %v", err)
	}
	down.Store(false)
	if err := fresh.Load(ctx); err != nil {
		t.Fatal(err)
	}
	down.Store(true)
	if n, ok := fresh.Cached(tenant, "known"); !ok || n != known {
		t.Fatalf("after Load: %d, %v; want %d", n, ok, known)
	}
	p.Forget(tenant, "known")
	if _, ok := p.Cached(tenant, "known"); ok {
		t.Fatal("Forget kept the queue")
	}
}

// A catalogue row naming a shard this broker does not have (a shorter QUEEN_SHARDS on
// this broker) is refused rather than routed.
func TestPlacerUnknownShard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, _ := fakeCatalogue()
	if _, err := m.Place(ctx, ports.Placement{Tenant: tenant, Queue: "far", Shard: 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewPlacer(m, 2, nil).ShardOf(ctx, tenant, "far", ""); err == nil {
		t.Fatal("routed a queue to a shard the broker does not have")
	}
}

package ports

import "context"

// Placement is where a queue lives among several shards.
type Placement struct {
	Tenant, Queue string
	Namespace     string // "" when the queue has none
	Shard         int
}

// PlacementStore is the catalogue's placement map (docs/design.md, "The catalogue"): one
// row per queue, written once; the row, not the rule that proposed it, is the authority.
type PlacementStore interface {
	// Place records p unless the queue is placed already, and returns the queue's
	// recorded placement: brokers placing one queue at once all get the first's.
	Place(ctx context.Context, p Placement) (Placement, error)
	// Lookup returns the queue's placement; ok is false when it has none.
	Lookup(ctx context.Context, tenant, queue string) (p Placement, ok bool, err error)
	// NamespaceShard returns the shard of a queue of namespace ns (the first placed);
	// ok is false when none is placed.
	NamespaceShard(ctx context.Context, tenant, ns string) (shard int, ok bool, err error)
	// Placements returns every placement, for a broker's cache at start-up.
	Placements(ctx context.Context) ([]Placement, error)
}

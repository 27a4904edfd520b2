package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/queen-go/queen/core/queues"
	"github.com/queen-go/queen/ports"
)

// ErrPlacedElsewhere: an explicit shard for a queue that already lives on another one
// (moving a queue is an operation of its own).
var ErrPlacedElsewhere = errors.New("shard: the queue lives on another shard")

// Placer answers which shard holds a queue: from its copy of the catalogue's placement
// map, else from the catalogue, placing the queue by Place's rules when it is new. The
// copy only grows between Forget calls: a placement never changes while its queue
// exists.
type Placer struct {
	store  ports.PlacementStore
	shards int
	open   []int

	mu    sync.RWMutex
	cache map[queueKey]int
}

// NewPlacer returns the placer of shards shards (numbered from 0) on store; open are the
// shards new queues may go to (nil: all).
func NewPlacer(store ports.PlacementStore, shards int, open []int) *Placer {
	return &Placer{store: store, shards: shards, open: open, cache: map[queueKey]int{}}
}

// queueKey names a queue in the copy; a struct, so that a lookup allocates nothing (the
// push path looks up every request's queue).
type queueKey struct{ tenant, queue string }

func key(tenant, queue string) queueKey { return queueKey{tenant, queue} }

// fromCatalogue marks an error of the placement store as shard 0's: the catalogue did not
// answer (an UnreachableError, which the API answers 503).
func fromCatalogue(err error) error { return &UnreachableError{Shard: 0, Err: err} }

// Load reads the whole map into the copy (at start-up).
func (p *Placer) Load(ctx context.Context) error {
	all, err := p.store.Placements(ctx)
	if err != nil {
		return fmt.Errorf("shard: load the placements: %w", fromCatalogue(err))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pl := range all {
		p.cache[key(pl.Tenant, pl.Queue)] = pl.Shard
	}
	return nil
}

// Cached returns the queue's shard from the copy alone (what still works while the
// catalogue does not answer).
func (p *Placer) Cached(tenant, queue string) (int, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	n, ok := p.cache[key(tenant, queue)]
	return n, ok
}

// ShardOf returns the shard of tenant/queue, placing it (namespace: its namespace, ""
// for none) when the catalogue has no row for it. An error (the catalogue did not
// answer) leaves the caller to spool or to answer 503.
func (p *Placer) ShardOf(ctx context.Context, tenant, queue, namespace string) (int, error) {
	if n, ok := p.Cached(tenant, queue); ok {
		return n, nil
	}
	return p.place(ctx, tenant, queue, namespace, -1)
}

// Find returns the shard of tenant/queue without placing it: from the copy, else from
// the catalogue (a hit is kept). ok is false when the catalogue has no row for the queue,
// which then exists nowhere, or, placed before sharding, on shard 0 (Backfill records
// those at start-up).
func (p *Placer) Find(ctx context.Context, tenant, queue string) (n int, ok bool, err error) {
	if n, ok := p.Cached(tenant, queue); ok {
		return n, true, nil
	}
	have, ok, err := p.store.Lookup(ctx, tenant, queue)
	if err != nil {
		return 0, false, fmt.Errorf("shard: placement of %q: %w", queue, fromCatalogue(err))
	}
	if !ok {
		return 0, false, nil
	}
	if err := p.keep(tenant, queue, have.Shard); err != nil {
		return 0, false, err
	}
	return have.Shard, true, nil
}

// keep records a catalogue row in the copy; a row naming a shard this broker does not
// have is an error (a shorter QUEEN_SHARDS than the brokers that placed the queue).
func (p *Placer) keep(tenant, queue string, shard int) error {
	if shard < 0 || shard >= p.shards {
		return fmt.Errorf("shard: queue %q is placed on shard %d, which this broker does not have (%d configured)", queue, shard, p.shards)
	}
	p.mu.Lock()
	p.cache[key(tenant, queue)] = shard
	p.mu.Unlock()
	return nil
}

// Holder is the shard that holds tenant/queue, without placing it (Find): a queue the
// catalogue does not know is on shard 0 or nowhere, and shard 0 answers for it either
// way.
func (p *Placer) Holder(ctx context.Context, tenant, queue string) (int, error) {
	n, _, err := p.Find(ctx, tenant, queue)
	return n, err
}

// ShardOfPushed is ShardOf for a queue a push or a transaction names: a queue new to the
// catalogue is placed by the namespace its name implies (a dotted name's first part, as
// the queue is created, core/queues Defaults), so that it joins its namespace's shard.
func (p *Placer) ShardOfPushed(ctx context.Context, tenant, queue string) (int, error) {
	if n, ok := p.Cached(tenant, queue); ok {
		return n, nil
	}
	return p.place(ctx, tenant, queue, queues.Defaults(queue).Namespace, -1)
}

// PlaceExplicit places a new queue on shard (configure's shard option); a queue placed
// already stays where it is: ErrPlacedElsewhere when that is not shard.
func (p *Placer) PlaceExplicit(ctx context.Context, tenant, queue, namespace string, shard int) (int, error) {
	n, err := p.place(ctx, tenant, queue, namespace, shard)
	if err == nil && n != shard {
		return n, fmt.Errorf("%w: queue %q is on shard %d, not %d", ErrPlacedElsewhere, queue, n, shard)
	}
	return n, err
}

func (p *Placer) place(ctx context.Context, tenant, queue, namespace string, explicit int) (int, error) {
	have, ok, err := p.store.Lookup(ctx, tenant, queue)
	if err != nil {
		return 0, fmt.Errorf("shard: placement of %q: %w", queue, fromCatalogue(err))
	}
	if !ok {
		req := Request{Queue: queue, Namespace: namespace, Explicit: explicit, NamespaceShard: -1}
		if namespace != "" && explicit < 0 {
			n, found, err := p.store.NamespaceShard(ctx, tenant, namespace)
			if err != nil {
				return 0, fmt.Errorf("shard: placement of namespace %q: %w", namespace, fromCatalogue(err))
			}
			if found {
				req.NamespaceShard = n
			}
		}
		n, err := Place(req, p.shards, p.open)
		if err != nil {
			return 0, err
		}
		if have, err = p.store.Place(ctx, ports.Placement{Tenant: tenant, Queue: queue, Namespace: namespace, Shard: n}); err != nil {
			return 0, fmt.Errorf("shard: place %q: %w", queue, fromCatalogue(err))
		}
	}
	if err := p.keep(tenant, queue, have.Shard); err != nil {
		return 0, err
	}
	return have.Shard, nil
}

// Forget drops the queue from the copy (it was deleted: a queue of the same name may be
// placed anew).
func (p *Placer) Forget(tenant, queue string) {
	p.mu.Lock()
	delete(p.cache, key(tenant, queue))
	p.mu.Unlock()
}

// Owner is the shard an event names: the one its partition id names when it has one,
// else its queue's from the copy (0 when the copy does not know the queue). The peer
// hints of a commit or a queue change go out on that shard only.
func (p *Placer) Owner(tenant, queue, partitionID string) int {
	if partitionID != "" {
		if n := OfID(partitionID); n < p.shards {
			return n
		}
		return 0
	}
	n, _ := p.Cached(tenant, queue)
	return n
}

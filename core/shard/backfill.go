package shard

import (
	"context"
	"fmt"

	"github.com/queen-go/queen/ports"
)

// Backfill records in the catalogue the queues a shard already holds (held, each naming
// its shard) that the placer's copy does not know: the queues of a database that served
// an unsharded broker, before the first sharded start. A queue the catalogue places on
// another shard than the one that holds it is an error: its data would be split.
func (p *Placer) Backfill(ctx context.Context, held []ports.Placement) error {
	for _, h := range held {
		if n, ok := p.Cached(h.Tenant, h.Queue); ok {
			if n != h.Shard {
				return fmt.Errorf("shard: queue %q is held by shard %d but placed on shard %d", h.Queue, h.Shard, n)
			}
			continue
		}
		got, err := p.store.Place(ctx, h)
		if err != nil {
			return fmt.Errorf("shard: record the placement of %q: %w", h.Queue, err)
		}
		if got.Shard != h.Shard {
			return fmt.Errorf("shard: queue %q is held by shard %d but placed on shard %d", h.Queue, h.Shard, got.Shard)
		}
		if err := p.keep(h.Tenant, h.Queue, h.Shard); err != nil {
			return err
		}
	}
	return nil
}

package twophase

import (
	"context"
	"fmt"

	"github.com/queen-go/queen/core/shard"
	"github.com/queen-go/queen/ports"
)

// ShardStore is what a shard offers a transaction: one-shard transactions and the
// prepared parts of cross-shard ones.
type ShardStore interface {
	ports.TransactionStore
	ports.TwoPhaseStore
}

// Locate returns the shard that holds tenant/queue (shard.Placer.ShardOf, which places
// a queue new to the catalogue).
type Locate func(ctx context.Context, tenant, queue string) (int, error)

// Router is a ports.TransactionStore over several shards: a transaction whose
// operations all live on one shard runs there as it does without shards; one that spans
// shards runs through the Coordinator. Segments go to their queue's shard (Locate), acks
// to the shard their partition id names (core/shard).
type Router struct {
	stores []ShardStore // by shard number
	locate Locate
	coord  *Coordinator
}

var _ ports.TransactionStore = (*Router)(nil)

// NewRouter returns the router of stores (indexed by shard number).
func NewRouter(stores []ShardStore, locate Locate, coord *Coordinator) *Router {
	return &Router{stores: stores, locate: locate, coord: coord}
}

// Transaction implements ports.TransactionStore; results come back in input order.
func (r *Router) Transaction(ctx context.Context, segs []ports.Segment, acks []ports.AckItem, hint string) ([]ports.SegmentResult, []ports.AckResult, error) {
	type share struct {
		segs, acks []int // indexes into the input
	}
	shares := map[int]*share{}
	var order []int // shards in the order first met: a stable part order
	at := func(n int) *share {
		if shares[n] == nil {
			shares[n] = &share{}
			order = append(order, n)
		}
		return shares[n]
	}
	for i, sg := range segs {
		n, err := r.locate(ctx, sg.Tenant, sg.Queue)
		if err != nil {
			return nil, nil, fmt.Errorf("twophase: the shard of queue %q: %w", sg.Queue, err)
		}
		if n < 0 || n >= len(r.stores) {
			return nil, nil, fmt.Errorf("twophase: queue %q is on shard %d of %d", sg.Queue, n, len(r.stores))
		}
		at(n).segs = append(at(n).segs, i)
	}
	for i, a := range acks {
		// An id no shard minted goes to shard 0, which answers that it does not know it.
		sh := at(shard.HolderOf(a.PartitionID, len(r.stores)))
		sh.acks = append(sh.acks, i)
	}
	if len(order) <= 1 {
		n := 0
		if len(order) == 1 {
			n = order[0]
		}
		return r.stores[n].Transaction(ctx, segs, acks, hint)
	}
	parts := make([]Part, len(order))
	for k, n := range order {
		p := Part{Shard: n, Store: r.stores[n], Hint: hint}
		for _, i := range shares[n].segs {
			p.Segs = append(p.Segs, segs[i])
		}
		for _, i := range shares[n].acks {
			p.Acks = append(p.Acks, acks[i])
		}
		parts[k] = p
	}
	results, err := r.coord.Run(ctx, parts)
	if err != nil {
		return nil, nil, err
	}
	var pushed []ports.SegmentResult
	if len(segs) > 0 {
		pushed = make([]ports.SegmentResult, len(segs))
	}
	var acked []ports.AckResult
	if len(acks) > 0 {
		acked = make([]ports.AckResult, len(acks))
	}
	for k, n := range order {
		for j, i := range shares[n].segs {
			pushed[i] = results[k].Pushed[j]
		}
		for j, i := range shares[n].acks {
			acked[i] = results[k].Acked[j]
		}
	}
	return pushed, acked, nil
}

package shard

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/queen-go/queen/core/push"
	"github.com/queen-go/queen/core/spool"
)

// Pushers sends each pushed item to the push service of its queue's shard: each shard
// has its own fusion, spool and replay, so one shard's outage spools only its own
// queues' pushes. A request whose items span shards is split, its parts pushed in
// parallel and the results put back in request order. Transactions all go to one
// service, whose transaction store spans the shards (core/twophase).
type Pushers struct {
	services []*push.Service // index = shard number
	txn      *push.Service
	placer   *Placer

	// requests, messages count what Push was given, as one service counts its own: a
	// request split over shards is one request.
	requests, messages atomic.Uint64
}

// NewPushers returns the router over services (index = shard number); txn runs every
// transaction.
func NewPushers(services []*push.Service, txn *push.Service, placer *Placer) *Pushers {
	return &Pushers{services: services, txn: txn, placer: placer}
}

// Push stores items (validated) on their queues' shards and returns one result per item
// in order. An item whose queue cannot be placed (the catalogue did not answer for a
// queue this broker has not seen) fails, and says why: nothing of it was accepted.
func (p *Pushers) Push(ctx context.Context, tenant, producerSub string, items []push.Item) []push.Result {
	p.requests.Add(1)
	p.messages.Add(uint64(len(items)))
	if n, ok := p.oneShard(tenant, items); ok {
		return p.services[n].Push(ctx, tenant, producerSub, items)
	}
	groups := make(map[int][]int, 1)
	var failed []push.Result
	for i, it := range items {
		n, err := p.placer.ShardOfPushed(ctx, tenant, it.Queue)
		if err != nil {
			failed = append(failed, unplaced(i, it, err))
			continue
		}
		groups[n] = append(groups[n], i)
	}
	if len(groups) == 1 && failed == nil {
		for n := range groups {
			return p.services[n].Push(ctx, tenant, producerSub, items)
		}
	}
	out := make([]push.Result, len(items))
	for _, r := range failed {
		out[r.Index] = r
	}
	_ = scatter(groups, func(n int, idx []int) error { // a push answers per item, never fails whole
		for j, r := range p.services[n].Push(ctx, tenant, producerSub, pick(items, idx)) {
			r.Index = idx[j]
			out[idx[j]] = r
		}
		return nil
	})
	return out
}

// oneShard is the shard of every item when the copy knows them all and they share one:
// the usual request, routed without an allocation.
func (p *Pushers) oneShard(tenant string, items []push.Item) (int, bool) {
	n, last := -1, ""
	for _, it := range items {
		if n >= 0 && it.Queue == last {
			continue
		}
		m, ok := p.placer.Cached(tenant, it.Queue)
		if !ok || (n >= 0 && m != n) {
			return 0, false
		}
		n, last = m, it.Queue
	}
	return n, n >= 0
}

// unplaced is the failed result of an item whose queue has no known shard.
func unplaced(i int, it push.Item, err error) push.Result {
	id, _ := uuid.NewV7() // fails only when the system's random source does
	txn, part := it.TransactionID, it.Partition
	if txn == "" {
		txn = id.String()
	}
	if part == "" {
		part = push.DefaultPartition
	}
	return push.Result{Index: i, MessageID: id, TransactionID: txn, Queue: it.Queue, Partition: part,
		Status: push.StatusFailed, Err: fmt.Errorf("the catalogue (shard 0) did not say which shard holds queue %q: %w", it.Queue, err)}
}

// Transaction commits ops atomically across the shards they touch (the transaction
// service's store spans them, core/twophase).
func (p *Pushers) Transaction(ctx context.Context, tenant, producerSub string, ops []push.TxnOp, hint string) ([]push.TxnResult, error) {
	return p.txn.Transaction(ctx, tenant, producerSub, ops, hint)
}

// Spooled is push.Options.SpooledAhead over every shard's spool (index = shard number;
// nil: a shard without one): a partition's spooled pushes are on its queue's shard's
// spool. A queue this broker has not placed has spooled nothing.
func Spooled(placer *Placer, spools []*spool.Spool) func(tenant, queue, partition string) bool {
	return func(tenant, queue, partition string) bool {
		n, ok := placer.Cached(tenant, queue)
		return ok && n < len(spools) && spools[n] != nil && spools[n].Pending(tenant, queue, partition)
	}
}

// Stats counts the push requests and messages this router was given.
func (p *Pushers) Stats() push.Stats {
	return push.Stats{Requests: p.requests.Load(), Messages: p.messages.Load()}
}

package shard

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queen-go/queen/ports"
)

// Stores are one shard's implementations of the ports Router routes.
type Stores struct {
	Consume  ports.ConsumeStore
	Hot      ports.HotlistStore
	Settings ports.QueueSettings
	Queues   ports.QueueAdmin
}

// Router sends each call of the consume, hot-list, queue-settings and queue-admin ports
// to the shard that holds what it names: a queue by the placer, a partition by the shard
// bits of its id. Calls that name neither (a pop by namespace, a lease extension, the
// dead-letter listing of every queue) go to every shard.
type Router struct {
	shards []Stores
	placer *Placer
	next   atomic.Uint32 // the first shard a namespace pop tries, rotating
}

var (
	_ ports.ConsumeStore  = (*Router)(nil)
	_ ports.HotlistStore  = (*Router)(nil)
	_ ports.QueueSettings = (*Router)(nil)
	_ ports.QueueAdmin    = (*Router)(nil)
)

// NewRouter returns the router over shards (index = shard number) placed by placer.
func NewRouter(shards []Stores, placer *Placer) *Router {
	return &Router{shards: shards, placer: placer}
}

// Pop implements ports.ConsumeStore: a queue's pop runs on its shard; a pop by namespace
// or task tries every shard, starting at a rotating one, until its batch is full.
func (r *Router) Pop(ctx context.Context, req ports.PopRequest) ([]ports.Claim, []ports.Verdict, error) {
	if req.Queue != "" {
		n, err := r.placer.Holder(ctx, req.Tenant, req.Queue)
		if err != nil {
			return nil, nil, err
		}
		return r.shards[n].Consume.Pop(ctx, req)
	}
	var claims []ports.Claim
	var errs []error
	start := int(r.next.Add(1)) % len(r.shards)
	for i := range r.shards {
		if req.Batch <= 0 || req.Partitions <= 0 {
			break
		}
		got, _, err := r.shards[(start+i)%len(r.shards)].Consume.Pop(ctx, req)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, c := range got {
			req.Batch -= int(c.End - c.Start + 1)
		}
		req.Partitions -= len(got)
		claims = append(claims, got...)
	}
	if len(claims) == 0 && len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	return claims, nil, nil
}

// Ack implements ports.ConsumeStore: items go to their partitions' shards (in parallel
// when they span several) and the results come back in input order.
func (r *Router) Ack(ctx context.Context, items []ports.AckItem) ([]ports.AckResult, error) {
	groups := byShard(items, func(it ports.AckItem) int { return HolderOf(it.PartitionID, len(r.shards)) })
	if len(groups) == 1 {
		for n := range groups {
			return r.shards[n].Consume.Ack(ctx, items)
		}
	}
	out := make([]ports.AckResult, len(items))
	err := scatter(groups, func(n int, idx []int) error {
		res, err := r.shards[n].Consume.Ack(ctx, pick(items, idx))
		if err != nil {
			return err
		}
		for j, i := range idx {
			out[i] = res[j]
		}
		return nil
	})
	return out, err
}

// Release implements ports.ConsumeStore: each claim is released on its partition's
// shard.
func (r *Router) Release(ctx context.Context, group, leaseID string, autoAck bool, claims []ports.Claim) error {
	groups := byShard(claims, func(c ports.Claim) int { return HolderOf(c.PartitionID, len(r.shards)) })
	return scatter(groups, func(n int, idx []int) error {
		return r.shards[n].Consume.Release(ctx, group, leaseID, autoAck, pick(claims, idx))
	})
}

// ExtendLease implements ports.ConsumeStore: a lease may span the shards of a namespace
// pop, so every shard renews what it holds of it; an unreachable shard fails the call
// only when no shard renewed anything.
func (r *Router) ExtendLease(ctx context.Context, leaseID string, d time.Duration) (int, time.Time, error) {
	var (
		mu      sync.Mutex
		renewed int
		first   time.Time
	)
	err := gather(all(len(r.shards)), func(n int) error {
		k, exp, err := r.shards[n].Consume.ExtendLease(ctx, leaseID, d)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		renewed += k
		if k > 0 && (first.IsZero() || exp.Before(first)) {
			first = exp
		}
		return nil
	})
	if renewed > 0 {
		err = nil
	}
	return renewed, first, err
}

// Pending implements ports.HotlistStore on the queue's shard.
func (r *Router) Pending(ctx context.Context, tenant, queue, group, after string, limit int) (ports.PendingPage, error) {
	n, err := r.placer.Holder(ctx, tenant, queue)
	if err != nil {
		return ports.PendingPage{}, err
	}
	return r.shards[n].Hot.Pending(ctx, tenant, queue, group, after, limit)
}

// EncryptionEnabled implements ports.QueueSettings on the queue's shard.
func (r *Router) EncryptionEnabled(ctx context.Context, tenant, queue string) (bool, error) {
	n, err := r.placer.Holder(ctx, tenant, queue)
	if err != nil {
		return false, err
	}
	return r.shards[n].Settings.EncryptionEnabled(ctx, tenant, queue)
}

// Configure implements ports.QueueAdmin: the queue is placed first (by its namespace
// when it is new), then configured on its shard.
func (r *Router) Configure(ctx context.Context, tenant string, cfg ports.QueueConfig, set ports.QueueOption) (ports.QueueConfig, error) {
	var n int
	var err error
	if cfg.Shard != nil {
		n, err = r.placer.PlaceExplicit(ctx, tenant, cfg.Name, cfg.Namespace, *cfg.Shard)
	} else {
		n, err = r.placer.ShardOf(ctx, tenant, cfg.Name, cfg.Namespace)
	}
	if err != nil {
		return ports.QueueConfig{}, err
	}
	return r.shards[n].Queues.Configure(ctx, tenant, cfg, set)
}

// DeleteQueue implements ports.QueueAdmin on the queue's shard. The placement stays: a
// queue created again under the name goes back to the same shard.
func (r *Router) DeleteQueue(ctx context.Context, tenant, queue string) (bool, error) {
	n, err := r.placer.Holder(ctx, tenant, queue)
	if err != nil {
		return false, err
	}
	return r.shards[n].Queues.DeleteQueue(ctx, tenant, queue)
}

// DeadLetters implements ports.QueueAdmin: one queue's on its shard; every queue's from
// every shard, merged newest failure first (then by id, descending, a total order), each
// shard asked for the rows up to the page's end.
func (r *Router) DeadLetters(ctx context.Context, tenant string, f ports.DeadLetterFilter) ([]ports.DeadLetter, error) {
	if f.Queue != "" {
		n, err := r.placer.Holder(ctx, tenant, f.Queue)
		if err != nil {
			return nil, err
		}
		return r.shards[n].Queues.DeadLetters(ctx, tenant, f)
	}
	each := f
	each.Offset = 0
	if f.Limit > 0 {
		each.Limit = pageEnd(f.Offset, f.Limit)
	}
	pages, err := askAll(r.shards, func(_ int, s Stores) ([]ports.DeadLetter, error) {
		return s.Queues.DeadLetters(ctx, tenant, each)
	})
	if err != nil {
		return nil, err
	}
	limit := f.Limit
	if limit <= 0 {
		limit = -1
	}
	return MergePage(pages, func(a, b ports.DeadLetter) int {
		if c := b.FailedAt.Compare(a.FailedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID) // as each shard breaks ties: id descending
	}, f.Offset, limit), nil
}

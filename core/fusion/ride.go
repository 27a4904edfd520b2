package fusion

import (
	"cmp"
	"slices"
)

// ride asks a shard that waits for a permit to add up to room of its ready partitions to
// a bundle another shard is about to commit. The shard answers on reply with the parts
// it took (nil for none); they are in flight like its own until the flush completes.
type ride struct {
	room  int
	reply chan []flushPart
}

// gatherRiders fills the room left in a bundle with the ready partitions of shards that
// wait for a permit, largest backlog first.
//
// Why: under contention permits are scarce, and a freed permit should carry everything
// that waits, not one shard's share of it. Without rides a bundle holds at most what one
// of the Shards shards accumulated, so with S shards the segments per commit are capped
// near concurrency/S however few permits there are. Each shard still owns its state: it
// takes its own partitions out of its ready list, in its own goroutine, and gets their
// completion back like a bundle of its own (one flushed per shard per bundle).
func (b *Batcher) gatherRiders(bundle []flushPart) []flushPart {
	room := b.opts.BundleMax - len(bundle)
	if room <= 0 || !b.contended() {
		return bundle
	}
	owner := bundle[0].s
	var reply chan []flushPart
	for _, o := range b.waitingShards() {
		if room <= 0 {
			break
		}
		if o == owner || !b.claimWaiter(o) {
			continue // our own shard, or its turn was given or taken meanwhile
		}
		if reply == nil {
			reply = make(chan []flushPart, 1)
		}
		select {
		case o.rides <- ride{room: room, reply: reply}:
			parts := <-reply
			bundle = append(bundle, parts...)
			room -= len(parts)
		case <-o.exited:
		}
	}
	return bundle
}

// waitingShards returns the shards refused a permit, largest backlog first.
func (b *Batcher) waitingShards() []*shard {
	b.waitMu.Lock()
	ws := make([]*shard, 0, len(b.waiters))
	for s := range b.waiters {
		ws = append(ws, s)
	}
	b.waitMu.Unlock()
	slices.SortFunc(ws, func(x, y *shard) int { return cmp.Compare(y.backlog.Load(), x.backlog.Load()) })
	return ws
}

// claimWaiter removes s from the waiters; false if it was no longer waiting. A shard
// left with ready partitions after its ride registers again in its next dispatch.
func (b *Batcher) claimWaiter(s *shard) bool {
	b.waitMu.Lock()
	defer b.waitMu.Unlock()
	if _, ok := b.waiters[s]; !ok {
		return false
	}
	delete(b.waiters, s)
	b.nWaiters.Store(int32(len(b.waiters)))
	return true
}

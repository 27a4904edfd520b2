package push

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/queen-go/queen/core/dedup"
	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/ports"
)

// SinkItem is one message a store transaction other than the transaction route pushes
// (a streams cycle's sink item).
type SinkItem struct {
	TxnPush
	MessageID [16]byte // zero: a UUIDv7 is minted, increasing in item order
}

// Sink is a list of pushes prepared as segments for one store transaction, under the
// push route's rules: ids minted in item order (so a partition's messages pop in item
// order), transaction ids deduplicated inside the list (a repeat answers duplicate with
// its first's id), payloads sealed for encrypted queues, frames stamped with the
// producer. The store pushes Segments through the one allocator; Resolve and Settle turn
// its answers into per-item results.
type Sink struct {
	svc      *Service
	tenant   string
	results  []Result
	segs     []ports.Segment
	frames   [][]segment.Frame // per segment, the frames still to write
	items    [][]int           // per segment, the item of each frame
	repeats  [][]int           // per segment, items repeating a transaction id of the segment
	firstsOf map[int]int       // repeat item -> its first item
}

// PrepareSink prepares items (validated) for tenant. An error means an item cannot be
// written as its queue requires (encryption) or a partition has spooled pushes not
// replayed yet (ErrSpooledAhead): nothing may be pushed.
func (s *Service) PrepareSink(ctx context.Context, tenant, producerSub string, items []SinkItem) (*Sink, error) {
	if s.opts.Codec == nil {
		return nil, ErrNoTransactions
	}
	b := &Sink{svc: s, tenant: tenant, results: make([]Result, len(items)), firstsOf: make(map[int]int)}
	type group struct {
		k      int
		firsts map[[16]byte]int
	}
	by := make(map[[2]string]*group)
	memo := s.opts.Encryption.Memo(ctx, true)
	for i, it := range items {
		r := s.mint(i, it.Item)
		if it.MessageID != ([16]byte{}) {
			r.MessageID = it.MessageID
			if it.TransactionID == "" {
				r.TransactionID = uuid.UUID(it.MessageID).String()
			}
		}
		r.Status = StatusQueued
		b.results[i] = r
		g := by[[2]string{r.Queue, r.Partition}]
		if g == nil {
			if s.opts.SpooledAhead(tenant, r.Queue, r.Partition) {
				return nil, fmt.Errorf("push: sink to %s/%s: %w", r.Queue, r.Partition, ErrSpooledAhead)
			}
			g = &group{k: len(b.segs), firsts: make(map[[16]byte]int)}
			by[[2]string{r.Queue, r.Partition}] = g
			b.segs = append(b.segs, ports.Segment{Tenant: tenant, Queue: r.Queue, Partition: r.Partition, Verified: -1})
			b.frames, b.items, b.repeats = append(b.frames, nil), append(b.items, nil), append(b.repeats, nil)
		}
		h := dedup.Hash(r.TransactionID)
		if first, dup := g.firsts[h]; dup {
			b.repeats[g.k] = append(b.repeats[g.k], i)
			b.firstsOf[i] = first
			continue
		}
		g.firsts[h] = i
		f := segment.Frame{ID: r.MessageID, TransactionID: r.TransactionID, ProducerSub: producerSub, Payload: it.Payload}
		if tid, err := uuid.Parse(it.TraceID); err == nil && len(it.TraceID) == 36 {
			f.TraceID, f.HasTrace = tid, true
		}
		if err := memo.Seal(tenant, r.Queue, &f); err != nil {
			return nil, fmt.Errorf("push: sink item %d: %w", i, err)
		}
		b.frames[g.k] = append(b.frames[g.k], f)
		b.items[g.k] = append(b.items[g.k], i)
	}
	for k := range b.segs {
		b.segs[k] = b.segment(k)
	}
	return b, nil
}

// segment encodes segment k's remaining frames.
func (b *Sink) segment(k int) ports.Segment {
	sg := b.segs[k]
	sg.Count = len(b.frames[k])
	sg.Hashes = make([]byte, 0, 16*sg.Count)
	for _, f := range b.frames[k] {
		h := dedup.Hash(f.TransactionID)
		sg.Hashes = append(sg.Hashes, h[:]...)
	}
	sg.Blob = b.svc.opts.Codec.Encode(b.frames[k])
	sg.Plain = anyPlain(b.frames[k]) // the store refuses it if the queue encrypts: the cycle rolls back
	return sg
}

// RolledBack takes the store's refusal of the cycle: a refusal of plaintext bound for a
// queue that encrypts (this broker's cached flag was stale) forgets the flags of the
// plain segments' queues, so the next cycle seals its payloads or refuses them as for a
// queue known to encrypt. Other errors change nothing.
func (b *Sink) RolledBack(err error) {
	if !refusedByStore(err) {
		return
	}
	for _, sg := range b.segs {
		if sg.Plain {
			b.svc.opts.Encryption.Forget(b.tenant, sg.Queue)
		}
	}
}

// Segments are the segments to push, one per (queue, partition), in first-item order.
func (b *Sink) Segments() []ports.Segment { return b.segs }

// Resolve takes the allocator's duplicate answer r for segment k (nothing written): its
// duplicate frames answer duplicate at the stored offset, and the segment of the others
// is returned to push again (false when none is left). It implements ports.Cycle's
// Resolve.
func (b *Sink) Resolve(k int, r ports.SegmentResult) (ports.Segment, bool) {
	dup := make(map[int]int64, len(r.Dups))
	for _, d := range r.Dups {
		dup[d.Index] = d.Offset
	}
	var frames []segment.Frame
	var items []int
	for j, f := range b.frames[k] {
		i := b.items[k][j]
		if off, ok := dup[j]; ok {
			res := &b.results[i]
			// The stored message's id is read back after the commit (Originals).
			res.Status, res.PartitionID, res.Offset, res.HasOffset = StatusDuplicate, r.PartitionID, off, true
			res.MessageID = [16]byte{}
			continue
		}
		frames, items = append(frames, f), append(items, i)
	}
	b.frames[k], b.items[k] = frames, items
	if len(frames) == 0 {
		return ports.Segment{}, false
	}
	b.segs[k] = b.segment(k)
	return b.segs[k], true
}

// Settle records the committed answers (one per segment, after Resolve rounds), announces
// every written segment as a commit (long polls wake, the hot-list learns), and returns
// one result per item in input order.
func (b *Sink) Settle(pushed []ports.SegmentResult) []Result {
	for k, r := range pushed {
		if r.Status == ports.SegmentQueued {
			for j, i := range b.items[k] {
				res := &b.results[i]
				res.PartitionID, res.Offset, res.HasOffset = r.PartitionID, r.BaseOffset+int64(j), true
			}
			b.svc.opts.Commits.Announce(notify.Commit{Tenant: b.tenant, Queue: b.segs[k].Queue, Partition: b.segs[k].Partition,
				PartitionID: r.PartitionID, Messages: len(b.items[k]), Source: notify.Transacted})
		}
		for _, i := range b.repeats[k] {
			first := b.results[b.firstsOf[i]]
			first.Index, first.Status = i, StatusDuplicate
			b.results[i] = first
		}
	}
	if b.svc.opts.Activity != nil {
		b.svc.countPushed(b.tenant, b.results, nil)
	}
	return b.results
}

// Originals fills in the message id of every item answered duplicate of a stored
// message, from the segment that holds it (the rare path: plain reads, one per covering
// segment). An id that cannot be read (the segment gone to retention, a read failure)
// stays zero: "unknown".
func (b *Sink) Originals(ctx context.Context, store ports.SegmentStore, results []Result) {
	type key struct {
		pid  string
		base int64
	}
	read := map[key][]segment.Frame{}
	for i := range results {
		r := &results[i]
		if r.Status != StatusDuplicate || r.MessageID != ([16]byte{}) || !r.HasOffset {
			continue
		}
		var frames []segment.Frame
		var base int64 = -1
		for k, fs := range read {
			if k.pid == r.PartitionID && r.Offset >= k.base && r.Offset < k.base+int64(len(fs)) {
				frames, base = fs, k.base
			}
		}
		if base < 0 {
			seg, ok, err := store.SegmentAt(ctx, r.PartitionID, r.Offset)
			if err != nil || !ok {
				continue
			}
			if frames, err = b.svc.opts.Codec.Decode(seg.Blob); err != nil {
				continue
			}
			base = seg.BaseOffset
			read[key{r.PartitionID, base}] = frames
		}
		if k := r.Offset - base; k >= 0 && k < int64(len(frames)) {
			r.MessageID = frames[k].ID
		}
	}
	// Repeats inside the cycle copy their first's id.
	for k := range b.repeats {
		for _, i := range b.repeats[k] {
			results[i].MessageID = results[b.firstsOf[i]].MessageID
		}
	}
}

package shard

import (
	"context"
	"fmt"

	"github.com/queen-go/queen/ports"
)

// Streams sends the streams routes' store calls to the shard of the query's source
// queue. A query's state lives beside its source, and its sink queue is placed with it
// (a new sink joins the source's shard; one that lives elsewhere refuses the
// registration), so that a cycle, which commits state, sink pushes and the source's ack
// at once, is one transaction on one database as without shards.
type Streams struct {
	shards []ports.StreamStore
	segs   []ports.SegmentStore
	placer *Placer
}

var (
	_ ports.StreamStore  = (*Streams)(nil)
	_ ports.SegmentStore = (*Streams)(nil)
)

// NewStreams returns the router over each shard's stream and segment stores (index =
// shard number).
func NewStreams(shards []ports.StreamStore, segs []ports.SegmentStore, placer *Placer) *Streams {
	return &Streams{shards: shards, segs: segs, placer: placer}
}

// RegisterQuery implements ports.StreamStore on the source queue's shard, placing the
// source (and a new sink beside it) when the catalogue does not know it.
func (s *Streams) RegisterQuery(ctx context.Context, q ports.StreamQuery, reset bool) (ports.Registration, error) {
	n, err := s.placer.ShardOfPushed(ctx, ports.DefaultTenant, q.SourceQueue)
	if err != nil {
		return ports.Registration{}, err
	}
	if q.SinkQueue != "" && q.SinkQueue != q.SourceQueue {
		if _, err := s.placer.PlaceExplicit(ctx, ports.DefaultTenant, q.SinkQueue, "", n); err != nil {
			return ports.Registration{}, fmt.Errorf("shard: the sink of query %q must live with its source %q: %w", q.Name, q.SourceQueue, err)
		}
	}
	return s.shards[n].RegisterQuery(ctx, q, reset)
}

// StreamState implements ports.StreamStore on the partition's shard.
func (s *Streams) StreamState(ctx context.Context, queryID, partitionID string, f ports.StateFilter) ([]ports.StateRow, error) {
	return s.shards[HolderOf(partitionID, len(s.shards))].StreamState(ctx, queryID, partitionID, f)
}

// Cycle implements ports.StreamStore on the source partition's shard. A sink segment
// for a queue of another shard (a sink placed elsewhere before its query was registered
// here) is refused: committing it there would split the queue.
func (s *Streams) Cycle(ctx context.Context, c ports.Cycle) (ports.CycleResult, error) {
	n := HolderOf(c.PartitionID, len(s.shards))
	for _, sg := range c.Segments {
		if m, ok := s.placer.Cached(sg.Tenant, sg.Queue); ok && m != n {
			return ports.CycleResult{}, &ports.RollbackError{Reason: "sink", Msg: fmt.Sprintf(
				"the sink queue %q lives on shard %d, the source partition on shard %d: a cycle commits on one database", sg.Queue, m, n)}
		}
	}
	return s.shards[n].Cycle(ctx, c)
}

// PushSegments implements ports.SegmentStore for segments of one shard's queues (the
// streams use case reads through this store only).
func (s *Streams) PushSegments(ctx context.Context, segs []ports.Segment) ([]ports.SegmentResult, error) {
	if len(segs) == 0 {
		return nil, nil
	}
	n, err := s.placer.ShardOfPushed(ctx, segs[0].Tenant, segs[0].Queue)
	if err != nil {
		return nil, err
	}
	for _, sg := range segs[1:] {
		if m, err := s.placer.ShardOfPushed(ctx, sg.Tenant, sg.Queue); err != nil || m != n {
			return nil, fmt.Errorf("shard: one bundle for queues of shards %d and %d (%v)", n, m, err)
		}
	}
	return s.segs[n].PushSegments(ctx, segs)
}

// SegmentAt implements ports.SegmentStore on the partition's shard.
func (s *Streams) SegmentAt(ctx context.Context, partitionID string, offset int64) (ports.StoredSegment, bool, error) {
	return s.segs[HolderOf(partitionID, len(s.shards))].SegmentAt(ctx, partitionID, offset)
}

// RecentHashes implements ports.SegmentStore on the partition's shard.
func (s *Streams) RecentHashes(ctx context.Context, partitionID string, maxSegments int) (ports.RecentHashes, error) {
	return s.segs[HolderOf(partitionID, len(s.shards))].RecentHashes(ctx, partitionID, maxSegments)
}

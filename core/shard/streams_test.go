package shard

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/queen-go/queen/ports"
)

// streamSpy is one shard's stream and segment store: it records what reached it.
type streamSpy struct {
	ports.StreamStore
	ports.SegmentStore
	shard int
	calls *[]int
}

func (s streamSpy) RegisterQuery(_ context.Context, q ports.StreamQuery, _ bool) (ports.Registration, error) {
	*s.calls = append(*s.calls, s.shard)
	return ports.Registration{Query: q, Fresh: true}, nil
}

func (s streamSpy) StreamState(context.Context, string, string, ports.StateFilter) ([]ports.StateRow, error) {
	*s.calls = append(*s.calls, s.shard)
	return nil, nil
}

func (s streamSpy) Cycle(context.Context, ports.Cycle) (ports.CycleResult, error) {
	*s.calls = append(*s.calls, s.shard)
	return ports.CycleResult{}, nil
}

func (s streamSpy) SegmentAt(context.Context, string, int64) (ports.StoredSegment, bool, error) {
	*s.calls = append(*s.calls, s.shard)
	return ports.StoredSegment{}, false, nil
}

// TestStreamsRouting: a query registers on its source's shard with its sink placed
// beside it; state reads, cycles and segment reads go to the partition's shard; a sink
// that lives on another shard is refused, at registration and in a cycle.
func TestStreamsRouting(t *testing.T) {
	t.Parallel()
	m, _ := fakeCatalogue()
	placer := NewPlacer(m, 3, nil)
	var calls []int
	var streams []ports.StreamStore
	var segs []ports.SegmentStore
	for n := range 3 {
		spy := streamSpy{shard: n, calls: &calls}
		streams, segs = append(streams, spy), append(segs, spy)
	}
	s := NewStreams(streams, segs, placer)
	ctx := context.Background()
	for q, n := range map[string]int{"src": 2, "elsewhere": 1} {
		if _, err := placer.PlaceExplicit(ctx, tenant, q, "", n); err != nil {
			t.Fatal(err)
		}
	}
	id2 := func() string {
		id, err := Mint(2)
		if err != nil {
			t.Fatal(err)
		}
		return uuid.UUID(id).String()
	}

	if _, err := s.RegisterQuery(ctx, ports.StreamQuery{Name: "q", SourceQueue: "src", SinkQueue: "new-sink"}, false); err != nil {
		t.Fatal(err)
	}
	if n, _ := placer.Cached(tenant, "new-sink"); n != 2 {
		t.Errorf("the new sink was placed on shard %d, want its source's 2", n)
	}
	_, err := s.RegisterQuery(ctx, ports.StreamQuery{Name: "bad", SourceQueue: "src", SinkQueue: "elsewhere"}, false)
	if !errors.Is(err, ErrPlacedElsewhere) {
		t.Errorf("a sink on another shard: err %v, want ErrPlacedElsewhere", err)
	}
	pid := id2()
	if _, err := s.StreamState(ctx, "q", pid, ports.StateFilter{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cycle(ctx, ports.Cycle{PartitionID: pid, Segments: []ports.Segment{{Tenant: tenant, Queue: "new-sink"}}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.SegmentAt(ctx, pid, 0); err != nil {
		t.Fatal(err)
	}
	var rb *ports.RollbackError
	if _, err := s.Cycle(ctx, ports.Cycle{PartitionID: pid, Segments: []ports.Segment{{Tenant: tenant, Queue: "elsewhere"}}}); !errors.As(err, &rb) {
		t.Errorf("a cycle pushing to another shard's queue: err %v, want a rollback", err)
	}
	if want := []int{2, 2, 2, 2}; !slices.Equal(calls, want) {
		t.Errorf("calls reached shards %v, want %v", calls, want)
	}
}

package shard

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/queen-go/queen/ports"
)

func TestPlacerFind(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		setup  func(t *testing.T, m ports.PlacementStore, p *Placer)
		down   bool
		want   int
		ok     bool
		err    error
		anyErr bool
		kept   bool // the copy knows the queue afterwards
	}{
		{name: "in the copy, catalogue down", down: true, want: 2, ok: true, kept: true,
			setup: func(t *testing.T, _ ports.PlacementStore, p *Placer) {
				if _, err := p.PlaceExplicit(context.Background(), tenant, "q", "", 2); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "in the catalogue only: read and kept", want: 1, ok: true, kept: true,
			setup: func(t *testing.T, m ports.PlacementStore, _ *Placer) {
				if _, err := m.Place(context.Background(), ports.Placement{Tenant: tenant, Queue: "q", Shard: 1}); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "nowhere: not placed by the look", want: 0, ok: false},
		{name: "catalogue down", down: true, err: ports.ErrUnavailable},
		{name: "placed on a shard this broker does not have", anyErr: true,
			setup: func(t *testing.T, m ports.PlacementStore, _ *Placer) {
				if _, err := m.Place(context.Background(), ports.Placement{Tenant: tenant, Queue: "q", Shard: 5}); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			m, down := fakeCatalogue()
			p := NewPlacer(m, 3, nil)
			if c.setup != nil {
				c.setup(t, m, p)
			}
			down.Store(c.down)
			n, ok, err := p.Find(ctx, tenant, "q")
			if c.anyErr {
				if err == nil || ok {
					t.Fatalf("Find = %d, %v, %v; want an error", n, ok, err)
				}
			} else if !errors.Is(err, c.err) || n != c.want || ok != c.ok {
				t.Fatalf("Find = %d, %v, %v; want %d, %v, %v", n, ok, err, c.want, c.ok, c.err)
			}
			if got, cached := p.Cached(tenant, "q"); cached != c.kept || (cached && got != c.want) {
				t.Fatalf("the copy after Find: %d, %v", got, cached)
			}
			down.Store(false)
			if _, placed, _ := m.Lookup(ctx, tenant, "q"); placed != (c.setup != nil) {
				t.Fatalf("the catalogue has a row: %v; Find must not place", placed)
			}
		})
	}
}

func TestPlacerOwner(t *testing.T) {
	t.Parallel()
	m, _ := fakeCatalogue()
	p := NewPlacer(m, 3, nil)
	if _, err := p.PlaceExplicit(context.Background(), tenant, "q", "", 2); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, queue, partitionID string
		want                     int
	}{
		{name: "a partition of shard 1", queue: "q", partitionID: idOf(t, 1), want: 1},
		{name: "a version 4 partition id: shard 0", queue: "q", partitionID: idOf(t, 0), want: 0},
		{name: "a partition of a shard beyond the configured ones: shard 0", queue: "q", partitionID: idOf(t, 7), want: 0},
		{name: "an id that is no UUID: shard 0", queue: "q", partitionID: "nope", want: 0},
		{name: "no partition: the queue's shard from the copy", queue: "q", want: 2},
		{name: "no partition, a queue the copy does not know: shard 0", queue: "other", want: 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := p.Owner(tenant, c.queue, c.partitionID); got != c.want {
				t.Fatalf("Owner(%q, %q) = %d, want %d", c.queue, c.partitionID, got, c.want)
			}
		})
	}
}

func TestPlacerBackfill(t *testing.T) {
	t.Parallel()
	held := func(queue string, n int) ports.Placement {
		return ports.Placement{Tenant: tenant, Queue: queue, Namespace: "ns", Shard: n}
	}
	cases := []struct {
		name   string
		setup  func(t *testing.T, m ports.PlacementStore, p *Placer)
		held   []ports.Placement
		down   bool
		err    string // in the error; "" for none
		errIs  error
		record []ports.Placement // in the catalogue and the copy afterwards
	}{
		{name: "held queues are recorded", held: []ports.Placement{held("a", 0), held("b", 1), held("c", 2)},
			record: []ports.Placement{held("a", 0), held("b", 1), held("c", 2)}},
		{name: "a queue placed where it is held", held: []ports.Placement{held("b", 1)}, record: []ports.Placement{held("b", 1)},
			setup: func(t *testing.T, m ports.PlacementStore, _ *Placer) {
				if _, err := m.Place(context.Background(), held("b", 1)); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "a queue the catalogue places on another shard", held: []ports.Placement{held("a", 0), held("b", 1)},
			err: "held by shard 1 but placed on shard 2", record: []ports.Placement{held("a", 0)},
			setup: func(t *testing.T, m ports.PlacementStore, _ *Placer) {
				if _, err := m.Place(context.Background(), held("b", 2)); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "a queue the copy places on another shard", held: []ports.Placement{held("b", 1)}, down: true,
			err: "held by shard 1 but placed on shard 2",
			setup: func(t *testing.T, _ ports.PlacementStore, p *Placer) {
				if _, err := p.PlaceExplicit(context.Background(), tenant, "b", "", 2); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "catalogue down", held: []ports.Placement{held("a", 0)}, down: true, errIs: ports.ErrUnavailable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			m, down := fakeCatalogue()
			p := NewPlacer(m, 3, nil)
			if c.setup != nil {
				c.setup(t, m, p)
			}
			down.Store(c.down)
			err := p.Backfill(ctx, c.held)
			switch {
			case c.err != "":
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("Backfill: %v, want %q", err, c.err)
				}
			case !errors.Is(err, c.errIs):
				t.Fatalf("Backfill: %v, want %v", err, c.errIs)
			}
			down.Store(false)
			for _, r := range c.record {
				got, ok, err := m.Lookup(ctx, tenant, r.Queue)
				if err != nil || !ok || got != r {
					t.Errorf("catalogue row of %s: %+v, %v, %v; want %+v", r.Queue, got, ok, err, r)
				}
				if n, ok := p.Cached(tenant, r.Queue); !ok || n != r.Shard {
					t.Errorf("the copy of %s: %d, %v; want %d", r.Queue, n, ok, r.Shard)
				}
			}
		})
	}
}

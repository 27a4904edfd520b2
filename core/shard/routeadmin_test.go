package shard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

func TestRouterConfigure(t *testing.T) {
	t.Parallel()
	fresh, err := Place(Request{Queue: "fresh", Explicit: -1, NamespaceShard: -1}, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, w *world)
		cfg   ports.QueueConfig
		down  bool
		want  int
		err   error
	}{
		{name: "a new queue joins its namespace's shard", cfg: ports.QueueConfig{Name: "billing.b", Namespace: "billing"}, want: 2,
			setup: func(t *testing.T, w *world) {
				if _, err := w.placer.PlaceExplicit(context.Background(), tenant, "billing.a", "billing", 2); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "a placed queue is configured where it lives", cfg: ports.QueueConfig{Name: "orders"}, want: 1,
			setup: func(t *testing.T, w *world) { w.place(t, "orders", 1) }},
		{name: "a new queue without a namespace goes where the rule says", cfg: ports.QueueConfig{Name: "fresh"}, want: fresh},
		{name: "a new queue with the catalogue down", cfg: ports.QueueConfig{Name: "fresh"}, down: true, want: -1, err: ports.ErrUnavailable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			w := newWorld(t, 3)
			if c.setup != nil {
				c.setup(t, w)
			}
			w.down.Store(c.down)
			got, err := w.router.Configure(ctx, tenant, c.cfg, ports.OptNamespace)
			if !errors.Is(err, c.err) {
				t.Fatalf("Configure: %v, want %v", err, c.err)
			}
			if err == nil && got.Name != c.cfg.Name {
				t.Fatalf("Configure returned %+v", got)
			}
			for n, a := range w.admins {
				if on := a.Configured(tenant, c.cfg.Name); on != (n == c.want) {
					t.Errorf("configured on shard %d: %v, want only on shard %d", n, on, c.want)
				}
			}
			w.down.Store(false)
			pl, ok, err := w.catalogue.Lookup(ctx, tenant, c.cfg.Name)
			if err != nil || ok != (c.want >= 0) || (ok && pl.Shard != c.want) {
				t.Fatalf("catalogue row %+v, %v, %v; want shard %d", pl, ok, err, c.want)
			}
		})
	}
}

func TestRouterDeleteQueue(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		queue   string
		placed  int   // -1: not in the catalogue
		on      []int // shards holding a queue of the name
		down    bool
		existed bool
		gone    int // the shard that must lose it (-1: none)
		err     error
	}{
		{name: "a placed queue is deleted on its shard", queue: "orders", placed: 1, on: []int{0, 1}, existed: true, gone: 1},
		{name: "a queue the catalogue does not know is deleted on shard 0", queue: "legacy", placed: -1, on: []int{0, 2}, existed: true, gone: 0},
		{name: "a queue its shard does not hold", queue: "orders", placed: 2, on: []int{0, 1}, gone: -1},
		{name: "an unknown queue with the catalogue down", queue: "legacy", placed: -1, on: []int{0}, down: true, gone: -1, err: ports.ErrUnavailable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			w := newWorld(t, 3)
			if c.placed >= 0 {
				w.place(t, c.queue, c.placed)
			}
			for _, n := range c.on {
				if _, err := w.admins[n].Configure(ctx, tenant, ports.QueueConfig{Name: c.queue}, 0); err != nil {
					t.Fatal(err)
				}
			}
			w.down.Store(c.down)
			existed, err := w.router.DeleteQueue(ctx, tenant, c.queue)
			if !errors.Is(err, c.err) || existed != c.existed {
				t.Fatalf("DeleteQueue = %v, %v; want %v, %v", existed, err, c.existed, c.err)
			}
			for n, a := range w.admins {
				if want := slices.Contains(c.on, n) && n != c.gone; a.Configured(tenant, c.queue) != want {
					t.Errorf("shard %d holds the queue: %v, want %v", n, !want, want)
				}
			}
		})
	}
}

// deadWorld is a world of three shards whose admins hold dead letters failed at the
// given minutes after epoch, minutes[n] on shard n, each of its own queue.
func deadWorld(t *testing.T, minutes [][]int, unreachable ...int) *world {
	t.Helper()
	w := newWorld(t, 3, unreachable...)
	for n, ms := range minutes {
		a := w.admins[n]
		// memory.QueueAdmin numbers its ids from 1 on every shard; PostgreSQL's are random
		// UUIDs, distinct across shards. Using up 100 ids per shard number first keeps the
		// shards' ids apart as they are there, so ties on the failure time sort one way.
		for k := range 100 * n {
			if _, err := a.Configure(context.Background(), tenant, ports.QueueConfig{Name: fmt.Sprint("burn.", k)}, 0); err != nil {
				t.Fatal(err)
			}
		}
		for i, m := range ms {
			a.AddDeadLetter(tenant, ports.DeadLetter{DeadLetterInfo: ports.DeadLetterInfo{
				Queue: fmt.Sprintf("q%d", n), Partition: "p", TransactionID: fmt.Sprintf("s%dm%d-%d", n, m, i),
				FailedAt: epoch.Add(time.Duration(m) * time.Minute)}})
		}
	}
	return w
}

// oneDatabase is what one database holding every shard's dead letters answers: newest
// failure first, then id descending (adapters/admin's ORDER BY d.failed_at DESC, d.id
// DESC, which memory.QueueAdmin follows), rows offset to offset+limit.
func oneDatabase(t *testing.T, w *world, offset, limit int) []string {
	t.Helper()
	var all []ports.DeadLetter
	for _, a := range w.admins {
		rows, err := a.DeadLetters(context.Background(), tenant, ports.DeadLetterFilter{Limit: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, rows...)
	}
	slices.SortFunc(all, func(x, y ports.DeadLetter) int {
		if c := y.FailedAt.Compare(x.FailedAt); c != 0 {
			return c
		}
		return cmp.Compare(y.ID, x.ID)
	})
	return txnIDs(all[min(offset, len(all)):min(offset+limit, len(all))])
}

func txnIDs(rows []ports.DeadLetter) []string {
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.TransactionID)
	}
	return out
}

// checkPages compares every page of the router's listing with one database's.
func checkPages(t *testing.T, w *world) {
	t.Helper()
	for _, pg := range []struct{ offset, limit int }{{0, 3}, {3, 3}, {6, 3}, {8, 5}, {1, 1}, {0, 100}, {20, 3}, {0, 0}} {
		rows, err := w.router.DeadLetters(context.Background(), tenant, ports.DeadLetterFilter{Offset: pg.offset, Limit: pg.limit})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := txnIDs(rows), oneDatabase(t, w, pg.offset, pg.limit); !slices.Equal(got, want) {
			t.Errorf("offset %d limit %d: %v, want %v", pg.offset, pg.limit, got, want)
		}
	}
}

func TestRouterDeadLettersPages(t *testing.T) {
	t.Parallel()
	checkPages(t, deadWorld(t, [][]int{{1, 5, 9}, {2, 3, 4, 10}, {6, 7, 8, 11}}))
}

// Rows failed at the same moment (one batch of acks moves them in one transaction) on
// several shards.
func TestRouterDeadLettersTiesAcrossShards(t *testing.T) {
	t.Parallel()
	checkPages(t, deadWorld(t, [][]int{{1, 1, 2}, {1, 2, 3}, {1, 2, 3}}))
}

func TestRouterDeadLetters(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		unreachable []int
		filter      ports.DeadLetterFilter
		want        []string
		err         error
		shard       int // UnreachableError.Shard
	}{
		{name: "one queue: its shard only", filter: ports.DeadLetterFilter{Queue: "q1", Limit: 10},
			want: []string{"s1m4-1", "s1m2-0"}},
		{name: "every queue: merged newest failure first", filter: ports.DeadLetterFilter{Limit: 10},
			want: []string{"s0m5-1", "s1m4-1", "s2m3-0", "s1m2-0", "s0m1-0", "stray", "stray", "stray"}},
		{name: "a shard down fails the listing", unreachable: []int{1}, filter: ports.DeadLetterFilter{Limit: 10},
			err: errDown, shard: 1},
		{name: "a shard down does not fail another shard's queue", unreachable: []int{1},
			filter: ports.DeadLetterFilter{Queue: "q2", Limit: 10}, want: []string{"s2m3-0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := deadWorld(t, [][]int{{1, 5}, {2, 4}, {3}}, c.unreachable...)
			for n := range 3 {
				w.place(t, fmt.Sprintf("q%d", n), n)
				// A queue of the name on another shard holds nothing of it: a listing of
				// one queue must not read it.
				w.admins[(n+1)%3].AddDeadLetter(tenant, ports.DeadLetter{DeadLetterInfo: ports.DeadLetterInfo{
					Queue: fmt.Sprintf("q%d", n), Partition: "p", TransactionID: "stray", FailedAt: epoch}})
			}
			rows, err := w.router.DeadLetters(context.Background(), tenant, c.filter)
			if !errors.Is(err, c.err) {
				t.Fatalf("DeadLetters: %v, want %v", err, c.err)
			}
			if c.err != nil {
				var ue *UnreachableError
				if !errors.As(err, &ue) || ue.Shard != c.shard || rows != nil {
					t.Fatalf("DeadLetters = %d rows, %v; want an UnreachableError of shard %d", len(rows), err, c.shard)
				}
				return
			}
			if got := txnIDs(rows); !slices.Equal(got, c.want) {
				t.Fatalf("DeadLetters = %v, want %v", got, c.want)
			}
		})
	}
}

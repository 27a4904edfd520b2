package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/ports"
)

// The Resources tests run the service over the in-memory ResourceStore
// (adapters/memory), on data made by pushes, pops and acks: counts are the store's
// watermark arithmetic, checked against PostgreSQL by ports/porttest.

var resT0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

func resIntp(n int) *int { return &n }

func resQuietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func resWantInputError(t *testing.T, err error, param string) {
	t.Helper()
	var ie *InputError
	if !errors.As(err, &ie) || ie.Param != param {
		t.Fatalf("error %v, want an *InputError naming %q", err, param)
	}
	if !strings.Contains(ie.Error(), param) {
		t.Fatalf("error text %q does not name %q", ie.Error(), param)
	}
}

func resNames(l QueueListing) []string {
	var out []string
	for _, q := range l.Queues {
		out = append(out, q.Name)
	}
	return out
}

// resQueueID is the id the store gave tenant's queue.
func resQueueID(t *testing.T, w *memWorld, tenant, queue string) string {
	t.Helper()
	cfg, ok := w.s.QueueConfig(tenant, queue)
	if !ok {
		t.Fatalf("no queue %s", queue)
	}
	return cfg.ID
}

func TestResourcesPages(t *testing.T) {
	t.Parallel()
	w := newMemWorld(t, resT0)
	var all []string
	for i := range 12 {
		q := fmt.Sprintf("q%02d", i)
		w.pushTxns("t", q, "p", "m")
		all = append(all, q)
	}
	tests := []struct {
		name          string
		page          PageQuery
		limit, offset int
		want          []string
		wantParam     string // "": accepted
	}{
		{"default: every queue, as Queen lists them", PageQuery{}, 1000, 0, all, ""},
		{"explicit", PageQuery{Limit: resIntp(7), Offset: 3}, 7, 3, all[3:10], ""},
		{"zero", PageQuery{Limit: resIntp(0)}, 0, 0, nil, ""},
		{"past the end", PageQuery{Offset: 12}, 1000, 12, nil, ""},
		{"the maximum", PageQuery{Limit: resIntp(1000)}, 1000, 0, all, ""},
		{"above the maximum: clamped", PageQuery{Limit: resIntp(1001), Offset: 2}, 1000, 2, all[2:], ""},
		{"what Queen's CLI asks: clamped", PageQuery{Limit: resIntp(10000)}, 1000, 0, all, ""},
		{"far above: clamped", PageQuery{Limit: resIntp(math.MaxInt)}, 1000, 0, all, ""},
		{"negative limit", PageQuery{Limit: resIntp(-1)}, 0, 0, nil, "limit"},
		{"negative offset", PageQuery{Offset: -1}, 0, 0, nil, "offset"},
	}
	s := NewResources(w.s, ResourcesOptions{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := w.count()
			got, err := s.Queues(context.Background(), "t", QueueQuery{Page: tt.page})
			if tt.wantParam != "" {
				resWantInputError(t, err, tt.wantParam)
				if n := w.count() - before; n != 0 {
					t.Fatalf("a refused page reached the store (%d calls)", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(resNames(got), tt.want) || got.Limit != tt.limit || got.Offset != tt.offset || got.Matching != 12 {
				t.Fatalf("page %v (limit %d offset %d, %d matching), want %v (limit %d offset %d)", resNames(got), got.Limit,
					got.Offset, got.Matching, tt.want, tt.limit, tt.offset)
			}
		})
	}
}

// Each route has its own default page; every default stays within MaxLimit, and every
// route clamps a larger limit to it.
func TestResourcesDefaultPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newMemWorld(t, resT0)
	// 501 queues of a namespace and a task each; a queue of 501 partitions.
	for i := range 501 {
		w.s.EmptyPartition("t", fmt.Sprintf("n%03d.t%03d", i, i), "p")
		w.s.EmptyPartition("t", "big", fmt.Sprintf("p%03d", i))
	}
	s := NewResources(w.s, ResourcesOptions{MaxLimit: 500})
	calls := []struct {
		name string
		call func() (int, error) // rows listed
		want int
	}{
		{"queues: all, up to the clamp", func() (int, error) { l, err := s.Queues(ctx, "t", QueueQuery{}); return len(l.Queues), err }, 500},
		{"status queues", func() (int, error) { l, err := s.StatusQueues(ctx, "t", StatusQuery{}); return len(l.Queues), err }, 100},
		{"queue detail", func() (int, error) { d, err := s.Queue(ctx, "t", "big", PageQuery{}); return len(d.Page), err }, 500},
		{"depth", func() (int, error) {
			d, err := s.Depth(ctx, "t", "big", "", PageQuery{})
			return len(d.Partitions), err
		}, 500},
		{"namespaces", func() (int, error) { k, err := s.Namespaces(ctx, "t", PageQuery{}); return len(k), err }, 500},
		{"tasks", func() (int, error) { k, err := s.Tasks(ctx, "t", PageQuery{}); return len(k), err }, 500},
	}
	for _, c := range calls {
		n, err := c.call()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if n != c.want {
			t.Errorf("%s: %d rows, want a default page of %d", c.name, n, c.want)
		}
	}
	above := PageQuery{Limit: resIntp(501)}
	clamped := []struct {
		name string
		call func() (int, error)
	}{
		{"queues", func() (int, error) { l, err := s.Queues(ctx, "t", QueueQuery{Page: above}); return len(l.Queues), err }},
		{"status queues", func() (int, error) {
			l, err := s.StatusQueues(ctx, "t", StatusQuery{Page: above})
			return len(l.Queues), err
		}},
		{"queue detail", func() (int, error) { d, err := s.Queue(ctx, "t", "big", above); return len(d.Page), err }},
		{"depth", func() (int, error) { d, err := s.Depth(ctx, "t", "big", "", above); return len(d.Partitions), err }},
		{"namespaces", func() (int, error) { k, err := s.Namespaces(ctx, "t", above); return len(k), err }},
		{"tasks", func() (int, error) { k, err := s.Tasks(ctx, "t", above); return len(k), err }},
	}
	for _, c := range clamped {
		if n, err := c.call(); err != nil || n != 500 {
			t.Errorf("%s with limit 501: %d rows, %v; want the 500 of MaxLimit", c.name, n, err)
		}
	}
}

func TestResourcesStatsParameter(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		stats string
		ok    bool
	}{{"", true}, {"live", true}, {"cached", true}, {"yes", false}, {"CACHED", false}} {
		t.Run("stats="+tt.stats, func(t *testing.T) {
			t.Parallel()
			s := NewResources(memory.NewStore(), ResourcesOptions{})
			_, err := s.Queues(context.Background(), "t", QueueQuery{Stats: tt.stats})
			if tt.ok && err != nil {
				t.Fatal(err)
			}
			if !tt.ok {
				resWantInputError(t, err, "stats")
			}
		})
	}
}

func TestResourcesListing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newMemWorld(t, resT0)
	for _, q := range []string{"a", "b", "c"} {
		w.configure("t", q, func(c *ports.QueueConfig) { c.Namespace, c.Task = "ns", "t" })
	}
	// a/p1: m0 consumed, m1 dead-lettered, m2 leased, m3 pending; a/p2: two pending;
	// b/p: one pending; c: no partition; other (no namespace): one message.
	w.pushTxns("t", "a", "p1", "m0", "m1", "m2", "m3")
	w.pushTxns("t", "a", "p2", "m0", "m1")
	w.pushTxns("t", "b", "p", "m0")
	w.pushTxns("t", "other", "p", "m0")
	w.pop("t", "a", "p1", ports.QueueModeGroup, 1, true)
	w.kill("t", "a", "p1", ports.QueueModeGroup, "m1", "boom")
	w.pop("t", "a", "p1", ports.QueueModeGroup, 1, false)

	s := NewResources(w.s, ResourcesOptions{})
	got, err := s.Queues(ctx, "t", QueueQuery{Namespace: "ns", Task: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Matching != 3 || got.Limit != 1000 || got.Offset != 0 || len(got.Queues) != 3 {
		t.Fatalf("listing %+v", got)
	}
	st, err := w.s.StorageTotals(ctx)
	if err != nil || st.Messages != 8 || st.Segments != 8 {
		t.Fatalf("storage totals %+v, %v", st, err)
	}
	estimate := func(total int64) (int64, int64) { return resourceEstimate(st, total) }
	aBytes, aSegs := estimate(6)
	bBytes, bSegs := estimate(1)
	want := []QueueSummary{
		// completed = total - pending - dead letters: m0 of a/p1.
		{ID: resQueueID(t, w, "t", "a"), Name: "a", Namespace: "ns", Task: "t", CreatedAt: resT0, Partitions: 2,
			Messages:      MessageStats{Total: 6, Pending: 4, Processing: 1, Completed: 1, DeadLetter: 1},
			RetainedBytes: aBytes, Segments: aSegs},
		{ID: resQueueID(t, w, "t", "b"), Name: "b", Namespace: "ns", Task: "t", CreatedAt: resT0, Partitions: 1,
			Messages: MessageStats{Total: 1, Pending: 1}, RetainedBytes: bBytes, Segments: bSegs},
		{ID: resQueueID(t, w, "t", "c"), Name: "c", Namespace: "ns", Task: "t", CreatedAt: resT0},
	}
	for i := range want {
		if got.Queues[i] != want[i] {
			t.Errorf("queue %d:\n got %+v\nwant %+v", i, got.Queues[i], want[i])
		}
	}
	if aSegs != 6 || aBytes <= 0 {
		t.Errorf("a's estimate: %d segments of %d bytes, want its 6 segments", aSegs, aBytes)
	}
}

func TestEstimate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		st              ports.StorageTotals
		messages        int64
		bytes, segments int64
	}{
		{"nothing retained", ports.StorageTotals{SegmentBytes: 100, Segments: 10, Messages: 10}, 0, 0, 0},
		{"a share", ports.StorageTotals{SegmentBytes: 1000, Segments: 10, Messages: 100}, 25, 250, 3},
		{"everything", ports.StorageTotals{SegmentBytes: 1000, Segments: 10, Messages: 100}, 100, 1000, 10},
		{"totals older than the count", ports.StorageTotals{SegmentBytes: 1000, Segments: 10, Messages: 50}, 80, 1000, 10},
		{"at least one segment", ports.StorageTotals{SegmentBytes: 1000, Segments: 1, Messages: 1000}, 2, 2, 1},
		{"at most one segment per message", ports.StorageTotals{SegmentBytes: 1000, Segments: 900, Messages: 1000}, 1, 1, 1},
		{"statistics not collected yet", ports.StorageTotals{SegmentBytes: 0, Segments: 0, Messages: 0}, 7, 0, 1},
		{"huge", ports.StorageTotals{SegmentBytes: 1 << 50, Segments: 1 << 40, Messages: 1 << 45}, 1 << 44, 1 << 49, 1 << 39},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, s := resourceEstimate(tt.st, tt.messages)
			if b != tt.bytes || s != tt.segments {
				t.Fatalf("resourceEstimate = %d bytes, %d segments; want %d, %d", b, s, tt.bytes, tt.segments)
			}
		})
	}
}

// One read of the storage totals serves EstimateTTL; an empty page needs none.
func TestResourcesStorageTotalsReuse(t *testing.T) {
	t.Parallel()
	w := newMemWorld(t, resT0)
	w.pushTxns("t", "a", "p", "m0")
	var reads atomic.Int64
	w.s.AdminFault = func(op string) error {
		if op == "StorageTotals" {
			reads.Add(1)
		}
		return nil
	}
	now := resT0
	clock := func() time.Time { return now }
	s := NewResources(w.s, ResourcesOptions{EstimateTTL: 10 * time.Second, Now: clock})
	ctx := context.Background()
	steps := []struct {
		advance time.Duration
		reads   int64
	}{{0, 1}, {0, 1}, {9 * time.Second, 1}, {time.Second, 2}, {5 * time.Second, 2}}
	for i, st := range steps {
		now = now.Add(st.advance)
		if _, err := s.Queues(ctx, "t", QueueQuery{}); err != nil {
			t.Fatal(err)
		}
		if reads.Load() != st.reads {
			t.Fatalf("step %d: %d reads of the storage totals, want %d", i, reads.Load(), st.reads)
		}
	}
	if _, err := s.Queues(ctx, "t", QueueQuery{Page: PageQuery{Offset: 5}}); err != nil || reads.Load() != 2 {
		t.Fatalf("an empty page read the storage totals (%d reads, %v)", reads.Load(), err)
	}
}

func TestResourcesQueueDetail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newMemWorld(t, resT0)
	// a: one message two groups dead-lettered; b: one message three groups did; c: four
	// messages committed a second apart, queue mode consumed two and leases the third.
	w.pushTxns("t", "orders", "a", "m0")
	w.pushTxns("t", "orders", "b", "m0")
	for i := range 4 {
		w.at(resT0.Add(time.Duration(i)*time.Second)).pushTxns("t", "orders", "c", fmt.Sprint("m", i))
	}
	w.at(resT0.Add(time.Minute))
	for _, g := range []string{"g", "h"} {
		w.kill("t", "orders", "a", g, "m0", "boom")
	}
	for _, g := range []string{"g", "h", "i"} {
		w.kill("t", "orders", "b", g, "m0", "boom")
	}
	w.pop("t", "orders", "c", ports.QueueModeGroup, 2, true)
	w.pop("t", "orders", "c", ports.QueueModeGroup, 1, false)

	s := NewResources(w.s, ResourcesOptions{})
	d, err := s.Queue(ctx, "t", "orders", PageQuery{Limit: resIntp(1), Offset: 2})
	if err != nil {
		t.Fatal(err)
	}
	if d.Limit != 1 || d.Offset != 2 || d.Config.Name != "orders" || d.Config.ID == "" || !d.CreatedAt.Equal(resT0) {
		t.Fatalf("detail %+v", d)
	}
	// completed = total - pending - dead letters, never negative: the dead letters
	// outnumber what is not pending.
	if d.Totals != (MessageStats{Total: 6, Pending: 2, Processing: 1, Completed: 0, DeadLetter: 5}) {
		t.Errorf("totals %+v", d.Totals)
	}
	st, err := w.s.StorageTotals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, segs := resourceEstimate(st, 6); d.Partitions != 3 || d.Segments != segs || len(d.Page) != 1 {
		t.Fatalf("detail %+v, want 3 partitions, %d segments, a page of 1", d, segs)
	}
	p := d.Page[0]
	active, oldest, newest := resT0.Add(time.Minute), resT0, resT0.Add(3*time.Second)
	if p.Name != "c" || p.ID == "" || !p.CreatedAt.Equal(resT0) || p.Messages != (MessageStats{Total: 4, Pending: 2, Processing: 1, Completed: 2}) ||
		p.Consumed != 2 || p.LastActivity == nil || !p.LastActivity.Equal(active) || p.Oldest == nil || !p.Oldest.Equal(oldest) ||
		p.Newest == nil || !p.Newest.Equal(newest) {
		t.Errorf("partition %+v (last activity %v, oldest %v, newest %v)", p, p.LastActivity, p.Oldest, p.Newest)
	}

	for _, tt := range []struct {
		name, queue string
		storeCalls  int
	}{
		{"unknown queue", "nope", 1},
		{"a name no queue can have", "bad\x01name", 0},
		{"empty name", "", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := w.count()
			_, err := s.Queue(ctx, "t", tt.queue, PageQuery{})
			if !errors.Is(err, ErrNotFound) || err.Error() != "Queue not found" {
				t.Fatalf("error %v, want ErrNotFound \"Queue not found\"", err)
			}
			if n := w.count() - before; n != tt.storeCalls {
				t.Fatalf("%d store calls, want %d", n, tt.storeCalls)
			}
		})
	}
}

func TestResourcesDepth(t *testing.T) {
	t.Parallel()
	w := newMemWorld(t, resT0)
	// a: seven messages nobody read; b: three queue mode leases.
	w.pushTxns("t", "q", "a", "m0", "m1", "m2", "m3", "m4", "m5", "m6")
	w.pushTxns("t", "q", "b", "m0", "m1", "m2")
	w.pop("t", "q", "b", ports.QueueModeGroup, 3, false)
	s := NewResources(w.s, ResourcesOptions{})
	ctx := context.Background()
	every := QueueDepth{Queue: "q", Pending: 10, Processing: 3, Ready: 7, PartitionsPending: 2, PartitionsReady: 1, Limit: 1000,
		Partitions: []DepthPartition{{"a", 7, 0, 7}, {"b", 3, 3, 0}}}
	// g1 read nothing: it owes everything, and queue mode's lease is not its own.
	g1 := QueueDepth{Queue: "q", Group: "g1", Pending: 10, Ready: 10, PartitionsPending: 2, PartitionsReady: 2, Limit: 1000,
		Partitions: []DepthPartition{{"a", 7, 0, 7}, {"b", 3, 0, 3}}}
	tests := []struct {
		name, queue, group string
		want               QueueDepth
		wantParam          string
		notFound           bool
	}{
		{"every group", "q", "", every, "", false},
		{"one group", "q", "g1", g1, "", false},
		{"bad group", "q", "g\x00", QueueDepth{}, "group", false},
		{"too long a group", "q", strings.Repeat("g", 256), QueueDepth{}, "group", false},
		{"unknown queue", "nope", "", QueueDepth{}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := s.Depth(ctx, "t", tt.queue, tt.group, PageQuery{})
			switch {
			case tt.wantParam != "":
				resWantInputError(t, err, tt.wantParam)
				return
			case tt.notFound:
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("error %v, want ErrNotFound", err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if !slices.Equal(d.Partitions, tt.want.Partitions) {
				t.Errorf("partitions %+v, want %+v", d.Partitions, tt.want.Partitions)
			}
			if !reflect.DeepEqual(d, tt.want) {
				t.Fatalf("depth %+v, want %+v", d, tt.want)
			}
		})
	}
}

func TestResourcesNamespacesTasksOverview(t *testing.T) {
	t.Parallel()
	w := newMemWorld(t, resT0)
	// billing.inv: p1 three messages, p2 one; billing.pay: two, one consumed; ops.inv: one,
	// consumed by g; plain (no namespace): one, dead-lettered by g.
	w.pushTxns("t", "billing.inv", "p1", "m0", "m1", "m2")
	w.pushTxns("t", "billing.inv", "p2", "m0")
	w.pushTxns("t", "billing.pay", "p", "m0", "m1")
	w.pushTxns("t", "ops.inv", "p", "m0")
	w.pushTxns("t", "plain", "p", "m0")
	w.pop("t", "billing.pay", "p", ports.QueueModeGroup, 1, true)
	w.pop("t", "ops.inv", "p", "g", 1, true)
	w.kill("t", "plain", "p", "g", "m0", "boom")
	at := resT0.Add(time.Hour)
	s := NewResources(w.s, ResourcesOptions{Now: func() time.Time { return at }})
	ctx := context.Background()
	billing := KeyTotals{Name: "billing", Queues: 2, Partitions: 3, Total: 6, Pending: 5}
	ops := KeyTotals{Name: "ops", Queues: 1, Partitions: 1, Total: 1}

	ns, err := s.Namespaces(ctx, "t", PageQuery{})
	if err != nil || !slices.Equal(ns, []KeyTotals{billing, ops}) {
		t.Fatalf("namespaces %+v, %v", ns, err)
	}
	ts, err := s.Tasks(ctx, "t", PageQuery{Limit: resIntp(5), Offset: 1})
	if err != nil || !slices.Equal(ts, []KeyTotals{{Name: "pay", Queues: 1, Partitions: 1, Total: 2, Pending: 1}}) {
		t.Fatalf("second page of tasks %+v, %v", ts, err)
	}
	o, err := s.Overview(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if o.Queues != 4 || o.Partitions != 5 || o.Namespaces != 2 || o.Tasks != 2 || o.ConsumerGroups != 1 ||
		o.Messages != (MessageStats{Total: 8, Pending: 5, Completed: 2, DeadLetter: 1}) ||
		!slices.Equal(o.ByNamespace, []KeyTotals{billing, ops}) || !o.At.Equal(at) {
		t.Fatalf("overview %+v", o)
	}
	// The overview lists the first MaxLimit namespaces.
	o, err = NewResources(w.s, ResourcesOptions{MaxLimit: 1}).Overview(ctx, "t")
	if err != nil || !slices.Equal(o.ByNamespace, []KeyTotals{billing}) {
		t.Fatalf("overview with MaxLimit 1: %+v, %v", o.ByNamespace, err)
	}
}

func TestResourcesStatus(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	from, to := now.Add(-3*time.Hour), now.Add(-time.Hour)
	w := newMemWorld(t, now)
	// q (namespace n, task k): m0 consumed, m1 dead-lettered, m2 and m3 leased, m4
	// pending. other: one message, outside the filter.
	w.configure("t", "q", func(c *ports.QueueConfig) { c.Namespace, c.Task = "n", "k" })
	w.pushTxns("t", "q", "p", "m0", "m1", "m2", "m3", "m4")
	w.pushTxns("t", "other", "p", "m0")
	w.pop("t", "q", "p", ports.QueueModeGroup, 1, true)
	w.kill("t", "q", "p", ports.QueueModeGroup, "m1", "boom")
	w.pop("t", "q", "p", ports.QueueModeGroup, 2, false)
	tests := []struct {
		name             string
		q                StatusQuery
		wantFrom, wantTo time.Time
		wantParam        string
	}{
		{"default range: the last hour", StatusQuery{}, now.Add(-time.Hour), now, ""},
		{"given range", StatusQuery{From: &from, To: &to}, from, to, ""},
		{"only to", StatusQuery{To: &to}, to.Add(-time.Hour), to, ""},
		{"from after to", StatusQuery{From: &to, To: &from}, time.Time{}, time.Time{}, "from"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := NewResources(w.s, ResourcesOptions{Now: func() time.Time { return now }})
			tt.q.Queue, tt.q.Namespace, tt.q.Task = "q", "n", "k"
			r, err := s.Status(context.Background(), "t", tt.q)
			if tt.wantParam != "" {
				resWantInputError(t, err, tt.wantParam)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !r.From.Equal(tt.wantFrom) || !r.To.Equal(tt.wantTo) {
				t.Errorf("range %v - %v, want %v - %v", r.From, r.To, tt.wantFrom, tt.wantTo)
			}
			// The filter selects q alone, for the counts and for the listing.
			if r.QueueCount != 1 || r.Partitions != 1 ||
				r.Messages != (MessageStats{Total: 5, Pending: 3, Processing: 2, Completed: 1, DeadLetter: 1}) ||
				r.Leases != (ports.LeaseSummary{Active: 1, Partitions: 1, Messages: 2}) ||
				r.DeadLetters != (ports.DeadLetterSummary{Current: 1, Partitions: 1}) ||
				!slices.Equal(resNames(r.Queues), []string{"q"}) || r.Queues.Limit != 100 {
				t.Errorf("report %+v", r)
			}
		})
	}
	t.Run("status queues checks the range too", func(t *testing.T) {
		t.Parallel()
		s := NewResources(w.s, ResourcesOptions{})
		_, err := s.StatusQueues(context.Background(), "t", StatusQuery{From: &to, To: &from})
		resWantInputError(t, err, "from")
	})
}

type resFakeFlags struct {
	push, pop bool
	err       error
	refreshes int
}

func (f *resFakeFlags) Refresh(context.Context) error { f.refreshes++; return f.err }
func (f *resFakeFlags) Push() bool                    { return f.push }
func (f *resFakeFlags) Pop() bool                     { return f.pop }

func TestResourcesSharedState(t *testing.T) {
	t.Parallel()
	hot := HotlistState{Enabled: true, Queues: 2, Rings: 3, Ready: 1, MarksLocal: 9}
	tests := []struct {
		name       string
		flags      *resFakeFlags
		peersOn    bool
		wantReason string
	}{
		{"hints on", &resFakeFlags{push: true}, true, ReasonPeerHints},
		{"hints off", &resFakeFlags{pop: true}, false, ReasonPeerHintsDisabled},
		{"flags unreadable: the last known ones", &resFakeFlags{push: true, pop: true, err: errors.New("db down")}, true, ReasonPeerHints},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := NewResources(memory.NewStore(), ResourcesOptions{Maintenance: tt.flags, Logger: resQuietLogger(),
				Hotlist: func() HotlistState { return hot },
				Peers:   func() PeersState { return PeersState{Enabled: tt.peersOn, Sent: 4} }})
			got := s.SharedState(context.Background())
			if got.Enabled != tt.peersOn || got.Reason != tt.wantReason || got.MaintenanceMode != tt.flags.push ||
				got.PopMaintenanceMode != tt.flags.pop || got.Hotlist != hot || got.Peers.Sent != 4 || tt.flags.refreshes != 1 {
				t.Fatalf("shared state %+v (refreshes %d)", got, tt.flags.refreshes)
			}
		})
	}
	t.Run("no sources", func(t *testing.T) {
		t.Parallel()
		got := NewResources(memory.NewStore(), ResourcesOptions{}).SharedState(context.Background())
		if got != (SharedState{Reason: ReasonPeerHintsDisabled}) {
			t.Fatalf("shared state %+v", got)
		}
	})
}

// A store failure is returned as it is (the HTTP layer maps ports' sentinels).
func TestResourcesStoreErrors(t *testing.T) {
	t.Parallel()
	w := newMemWorld(t, resT0)
	w.pushTxns("t", "q", "p", "m0")
	w.fail("", ports.ErrUnavailable)
	s := NewResources(w.s, ResourcesOptions{})
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"queues":    func() error { _, err := s.Queues(ctx, "t", QueueQuery{}); return err },
		"detail":    func() error { _, err := s.Queue(ctx, "t", "q", PageQuery{}); return err },
		"depth":     func() error { _, err := s.Depth(ctx, "t", "q", "", PageQuery{}); return err },
		"overview":  func() error { _, err := s.Overview(ctx, "t"); return err },
		"status":    func() error { _, err := s.Status(ctx, "t", StatusQuery{}); return err },
		"namespace": func() error { _, err := s.Namespaces(ctx, "t", PageQuery{}); return err },
	} {
		if err := call(); !errors.Is(err, ports.ErrUnavailable) {
			t.Errorf("%s: error %v, want ErrUnavailable", name, err)
		}
	}
}

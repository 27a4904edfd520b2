package admin

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

// fakeResourceStore is an in-memory ports.ResourceStore: canned answers, and a record of
// what each call was asked.
type fakeResourceStore struct {
	mu sync.Mutex

	queues   []ports.QueueResource
	matching int64
	detail   map[string]ports.QueueResourceDetail
	depth    map[string]ports.QueueDepthResult
	keys     []ports.KeyCounts
	overview ports.ResourceOverview
	status   ports.ResourceStatus
	storage  ports.StorageTotals
	err      error

	pages        []ports.ResourcePage
	filters      []ports.ResourceFilter
	groups       []string
	keyAsked     []ports.ResourceKey
	storageReads int
	calls        int
}

var _ ports.ResourceStore = (*fakeResourceStore)(nil)

func (f *fakeResourceStore) record(p *ports.ResourcePage, fl *ports.ResourceFilter) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if p != nil {
		f.pages = append(f.pages, *p)
	}
	if fl != nil {
		f.filters = append(f.filters, *fl)
	}
	return f.err
}

func (f *fakeResourceStore) ListQueues(_ context.Context, _ string, fl ports.ResourceFilter, p ports.ResourcePage) ([]ports.QueueResource, int64, error) {
	if err := f.record(&p, &fl); err != nil {
		return nil, 0, err
	}
	end := min(p.Offset+p.Limit, len(f.queues))
	if p.Offset >= end {
		return nil, f.matching, nil
	}
	return f.queues[p.Offset:end], f.matching, nil
}

func (f *fakeResourceStore) QueueDetail(_ context.Context, _, queue string, p ports.ResourcePage) (ports.QueueResourceDetail, bool, error) {
	if err := f.record(&p, nil); err != nil {
		return ports.QueueResourceDetail{}, false, err
	}
	d, ok := f.detail[queue]
	return d, ok, nil
}

func (f *fakeResourceStore) QueueDepth(_ context.Context, _, queue, group string, p ports.ResourcePage) (ports.QueueDepthResult, bool, error) {
	if err := f.record(&p, nil); err != nil {
		return ports.QueueDepthResult{}, false, err
	}
	f.mu.Lock()
	f.groups = append(f.groups, group)
	f.mu.Unlock()
	d, ok := f.depth[queue]
	return d, ok, nil
}

func (f *fakeResourceStore) CountsBy(_ context.Context, _ string, key ports.ResourceKey, p ports.ResourcePage) ([]ports.KeyCounts, error) {
	if err := f.record(&p, nil); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.keyAsked = append(f.keyAsked, key)
	f.mu.Unlock()
	return f.keys, nil
}

func (f *fakeResourceStore) Overview(context.Context, string) (ports.ResourceOverview, error) {
	return f.overview, f.record(nil, nil)
}

func (f *fakeResourceStore) Status(_ context.Context, _ string, fl ports.ResourceFilter) (ports.ResourceStatus, error) {
	return f.status, f.record(nil, &fl)
}

func (f *fakeResourceStore) StorageTotals(context.Context) (ports.StorageTotals, error) {
	f.mu.Lock()
	f.storageReads++
	f.mu.Unlock()
	return f.storage, f.record(nil, nil)
}

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

func TestResourcesPages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		page      PageQuery
		wantPage  ports.ResourcePage
		wantParam string // "": accepted
	}{
		{"default", PageQuery{}, ports.ResourcePage{Limit: 100}, ""},
		{"explicit", PageQuery{Limit: resIntp(7), Offset: 3}, ports.ResourcePage{Limit: 7, Offset: 3}, ""},
		{"zero", PageQuery{Limit: resIntp(0)}, ports.ResourcePage{Limit: 0}, ""},
		{"the maximum", PageQuery{Limit: resIntp(1000)}, ports.ResourcePage{Limit: 1000}, ""},
		{"above the maximum", PageQuery{Limit: resIntp(1001)}, ports.ResourcePage{}, "limit"},
		{"negative limit", PageQuery{Limit: resIntp(-1)}, ports.ResourcePage{}, "limit"},
		{"negative offset", PageQuery{Offset: -1}, ports.ResourcePage{}, "offset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := &fakeResourceStore{}
			s := NewResources(f, ResourcesOptions{})
			_, err := s.Queues(context.Background(), ports.DefaultTenant, QueueQuery{Page: tt.page})
			if tt.wantParam != "" {
				resWantInputError(t, err, tt.wantParam)
				if f.calls != 0 {
					t.Fatalf("a refused page reached the store (%d calls)", f.calls)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(f.pages) != 1 || f.pages[0] != tt.wantPage {
				t.Fatalf("store asked for %v, want [%v]", f.pages, tt.wantPage)
			}
		})
	}
}

// Each route has its own default page; every default stays within MaxLimit.
func TestResourcesDefaultPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := &fakeResourceStore{detail: map[string]ports.QueueResourceDetail{"q": {}},
		depth: map[string]ports.QueueDepthResult{"q": {}}}
	s := NewResources(f, ResourcesOptions{MaxLimit: 500})
	calls := []struct {
		name string
		call func() error
		want int
	}{
		{"queues", func() error { _, err := s.Queues(ctx, "t", QueueQuery{}); return err }, 100},
		{"status queues", func() error { _, err := s.StatusQueues(ctx, "t", StatusQuery{}); return err }, 100},
		{"queue detail", func() error { _, err := s.Queue(ctx, "t", "q", PageQuery{}); return err }, 500},
		{"depth", func() error { _, err := s.Depth(ctx, "t", "q", "", PageQuery{}); return err }, 500},
		{"namespaces", func() error { _, err := s.Namespaces(ctx, "t", PageQuery{}); return err }, 500},
		{"tasks", func() error { _, err := s.Tasks(ctx, "t", PageQuery{}); return err }, 500},
	}
	for _, c := range calls {
		f.pages = nil
		if err := c.call(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(f.pages) != 1 || f.pages[0].Limit != c.want {
			t.Errorf("%s: store asked for %v, want limit %d", c.name, f.pages, c.want)
		}
	}
	if _, err := s.Namespaces(ctx, "t", PageQuery{Limit: resIntp(501)}); err == nil {
		t.Error("a limit above MaxLimit was accepted")
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
			s := NewResources(&fakeResourceStore{}, ResourcesOptions{})
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
	at := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	f := &fakeResourceStore{
		queues: []ports.QueueResource{
			{ID: "1", Name: "a", Namespace: "ns", Task: "t", CreatedAt: at, Partitions: 2,
				Counts: ports.WatermarkCounts{Total: 30, Pending: 10, Processing: 4, DeadLetter: 5}},
			{ID: "2", Name: "b", Partitions: 1, Counts: ports.WatermarkCounts{Total: 10, Pending: 10}},
			{ID: "3", Name: "c"},
		},
		matching: 3,
		storage:  ports.StorageTotals{SegmentBytes: 4000, Segments: 20, Messages: 40},
	}
	s := NewResources(f, ResourcesOptions{})
	got, err := s.Queues(context.Background(), "t", QueueQuery{Namespace: "ns", Task: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if f.filters[0] != (ports.ResourceFilter{Namespace: "ns", Task: "t"}) {
		t.Errorf("filter %+v", f.filters[0])
	}
	if got.Matching != 3 || got.Limit != 100 || got.Offset != 0 || len(got.Queues) != 3 {
		t.Fatalf("listing %+v", got)
	}
	want := []QueueSummary{
		{ID: "1", Name: "a", Namespace: "ns", Task: "t", CreatedAt: at, Partitions: 2,
			Messages:      MessageStats{Total: 30, Pending: 10, Processing: 4, Completed: 15, DeadLetter: 5},
			RetainedBytes: 3000, Segments: 15},
		{ID: "2", Name: "b", Partitions: 1, Messages: MessageStats{Total: 10, Pending: 10},
			RetainedBytes: 1000, Segments: 5},
		{ID: "3", Name: "c"},
	}
	for i := range want {
		if got.Queues[i] != want[i] {
			t.Errorf("queue %d:\n got %+v\nwant %+v", i, got.Queues[i], want[i])
		}
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
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	f := &fakeResourceStore{queues: []ports.QueueResource{{ID: "1", Name: "a", Counts: ports.WatermarkCounts{Total: 1}}}}
	s := NewResources(f, ResourcesOptions{EstimateTTL: 10 * time.Second, Now: clock})
	ctx := context.Background()
	list := func() {
		t.Helper()
		if _, err := s.Queues(ctx, "t", QueueQuery{}); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		advance time.Duration
		reads   int
	}{{0, 1}, {0, 1}, {9 * time.Second, 1}, {time.Second, 2}, {5 * time.Second, 2}}
	for i, st := range steps {
		advance(st.advance)
		list()
		if f.storageReads != st.reads {
			t.Fatalf("step %d: %d reads of the storage totals, want %d", i, f.storageReads, st.reads)
		}
	}
	if _, err := s.Queues(ctx, "t", QueueQuery{Page: PageQuery{Offset: 5}}); err != nil || f.storageReads != 2 {
		t.Fatalf("an empty page read the storage totals (%d reads, %v)", f.storageReads, err)
	}
}

func TestResourcesQueueDetail(t *testing.T) {
	t.Parallel()
	old, recent := time.Unix(100, 0), time.Unix(200, 0)
	f := &fakeResourceStore{
		detail: map[string]ports.QueueResourceDetail{"orders": {
			Config:     ports.QueueConfig{ID: "q1", Name: "orders"},
			Partitions: 3, Totals: ports.WatermarkCounts{Total: 12, Pending: 4, Processing: 1, DeadLetter: 10},
			Page: []ports.PartitionResource{{ID: "p1", Name: "a", Counts: ports.WatermarkCounts{Total: 12, Pending: 4, Processing: 1},
				Consumed: 8, Oldest: &old, Newest: &recent}},
		}},
		storage: ports.StorageTotals{SegmentBytes: 10, Segments: 6, Messages: 12},
	}
	s := NewResources(f, ResourcesOptions{})
	ctx := context.Background()
	d, err := s.Queue(ctx, "t", "orders", PageQuery{Limit: resIntp(1), Offset: 2})
	if err != nil {
		t.Fatal(err)
	}
	if f.pages[0] != (ports.ResourcePage{Limit: 1, Offset: 2}) || d.Limit != 1 || d.Offset != 2 {
		t.Fatalf("page %v, detail page %d/%d", f.pages, d.Limit, d.Offset)
	}
	// completed = total - pending - dead letters, never negative.
	if d.Totals != (MessageStats{Total: 12, Pending: 4, Processing: 1, Completed: 0, DeadLetter: 10}) {
		t.Errorf("totals %+v", d.Totals)
	}
	if d.Partitions != 3 || d.Segments != 6 || len(d.Page) != 1 {
		t.Fatalf("detail %+v", d)
	}
	p := d.Page[0]
	if p.Messages.Completed != 8 || p.Consumed != 8 || p.Oldest != &old || p.Newest != &recent {
		t.Errorf("partition %+v", p)
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
			f.mu.Lock()
			before := f.calls
			f.mu.Unlock()
			_, err := s.Queue(ctx, "t", tt.queue, PageQuery{})
			if !errors.Is(err, ErrNotFound) || err.Error() != "Queue not found" {
				t.Fatalf("error %v, want ErrNotFound \"Queue not found\"", err)
			}
			if f.calls-before != tt.storeCalls {
				t.Fatalf("%d store calls, want %d", f.calls-before, tt.storeCalls)
			}
		})
	}
}

func TestResourcesDepth(t *testing.T) {
	t.Parallel()
	f := &fakeResourceStore{depth: map[string]ports.QueueDepthResult{"q": {
		Totals:            ports.WatermarkCounts{Pending: 10, Processing: 3},
		PartitionsPending: 2, PartitionsReady: 1,
		Page: []ports.PartitionDepth{
			{Name: "a", Counts: ports.WatermarkCounts{Pending: 7}},
			{Name: "b", Counts: ports.WatermarkCounts{Pending: 3, Processing: 3}},
		},
	}}}
	s := NewResources(f, ResourcesOptions{})
	ctx := context.Background()
	tests := []struct {
		name, queue, group string
		wantParam          string
		notFound           bool
	}{
		{"every group", "q", "", "", false},
		{"one group", "q", "g1", "", false},
		{"bad group", "q", "g\x00", "group", false},
		{"too long a group", "q", strings.Repeat("g", 256), "group", false},
		{"unknown queue", "nope", "", "", true},
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
			if f.groups[len(f.groups)-1] != tt.group {
				t.Fatalf("store asked for group %q, want %q", f.groups[len(f.groups)-1], tt.group)
			}
			want := QueueDepth{Queue: "q", Group: tt.group, Pending: 10, Processing: 3, Ready: 7, PartitionsPending: 2,
				PartitionsReady: 1, Limit: 1000,
				Partitions: []DepthPartition{{"a", 7, 0, 7}, {"b", 3, 3, 0}}}
			if d.Queue != want.Queue || d.Group != want.Group || d.Pending != want.Pending || d.Ready != want.Ready ||
				d.Processing != want.Processing || d.PartitionsPending != 2 || d.PartitionsReady != 1 || d.Limit != 1000 {
				t.Fatalf("depth %+v", d)
			}
			for i := range want.Partitions {
				if d.Partitions[i] != want.Partitions[i] {
					t.Errorf("partition %d: %+v, want %+v", i, d.Partitions[i], want.Partitions[i])
				}
			}
		})
	}
}

func TestResourcesNamespacesTasksOverview(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	keys := []ports.KeyCounts{{Key: "billing", Queues: 2, Partitions: 5, Counts: ports.WatermarkCounts{Total: 9, Pending: 4}}}
	f := &fakeResourceStore{keys: keys, overview: ports.ResourceOverview{Queues: 3, Partitions: 6, Namespaces: 1, Tasks: 2,
		ConsumerGroups: 4, Counts: ports.WatermarkCounts{Total: 20, Pending: 5, Processing: 2, DeadLetter: 1}}}
	s := NewResources(f, ResourcesOptions{Now: func() time.Time { return at }})
	ctx := context.Background()
	want := []KeyTotals{{Name: "billing", Queues: 2, Partitions: 5, Total: 9, Pending: 4}}

	ns, err := s.Namespaces(ctx, "t", PageQuery{})
	if err != nil || len(ns) != 1 || ns[0] != want[0] {
		t.Fatalf("namespaces %+v, %v", ns, err)
	}
	ts, err := s.Tasks(ctx, "t", PageQuery{Limit: resIntp(5), Offset: 1})
	if err != nil || len(ts) != 1 {
		t.Fatalf("tasks %+v, %v", ts, err)
	}
	if f.keyAsked[0] != ports.ByNamespace || f.keyAsked[1] != ports.ByTask || f.pages[1] != (ports.ResourcePage{Limit: 5, Offset: 1}) {
		t.Fatalf("asked %v with pages %v", f.keyAsked, f.pages)
	}
	o, err := s.Overview(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if o.Queues != 3 || o.Partitions != 6 || o.Namespaces != 1 || o.Tasks != 2 || o.ConsumerGroups != 4 ||
		o.Messages != (MessageStats{Total: 20, Pending: 5, Processing: 2, Completed: 14, DeadLetter: 1}) ||
		len(o.ByNamespace) != 1 || o.ByNamespace[0] != want[0] || !o.At.Equal(at) {
		t.Fatalf("overview %+v", o)
	}
	if f.pages[2] != (ports.ResourcePage{Limit: 1000}) {
		t.Fatalf("the overview's namespaces page %v, want the maximum", f.pages[2])
	}
}

func TestResourcesStatus(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	from, to := now.Add(-3*time.Hour), now.Add(-time.Hour)
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
			f := &fakeResourceStore{status: ports.ResourceStatus{Queues: 1, Partitions: 2,
				Counts: ports.WatermarkCounts{Total: 5, Pending: 2}, Leases: ports.LeaseSummary{Active: 1, Partitions: 1, Messages: 2},
				DeadLetters: ports.DeadLetterSummary{Current: 1, Partitions: 1}},
				queues: []ports.QueueResource{{ID: "1", Name: "q"}}, matching: 1}
			s := NewResources(f, ResourcesOptions{Now: func() time.Time { return now }})
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
			wantF := ports.ResourceFilter{Queue: "q", Namespace: "n", Task: "k"}
			if len(f.filters) != 2 || f.filters[0] != wantF || f.filters[1] != wantF {
				t.Errorf("filters %+v, want %+v twice", f.filters, wantF)
			}
			if r.QueueCount != 1 || r.Partitions != 2 || r.Messages.Completed != 3 || r.Leases.Messages != 2 ||
				r.DeadLetters.Current != 1 || len(r.Queues.Queues) != 1 || f.pages[0].Limit != 100 {
				t.Errorf("report %+v (page %v)", r, f.pages)
			}
		})
	}
	t.Run("status queues checks the range too", func(t *testing.T) {
		t.Parallel()
		s := NewResources(&fakeResourceStore{}, ResourcesOptions{})
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
			s := NewResources(&fakeResourceStore{}, ResourcesOptions{Maintenance: tt.flags, Logger: resQuietLogger(),
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
		got := NewResources(&fakeResourceStore{}, ResourcesOptions{}).SharedState(context.Background())
		if got != (SharedState{Reason: ReasonPeerHintsDisabled}) {
			t.Fatalf("shared state %+v", got)
		}
	})
}

// A store failure is returned as it is (the HTTP layer maps ports' sentinels).
func TestResourcesStoreErrors(t *testing.T) {
	t.Parallel()
	f := &fakeResourceStore{err: ports.ErrUnavailable}
	s := NewResources(f, ResourcesOptions{})
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

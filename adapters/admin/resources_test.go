package admin

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/queen-go/queen/ports"
)

// resCursor writes the cursor of group on partition pid: committed, the delivered span's
// end, and a lease expiring in leaseFor (0: no lease; negative: an expired one).
func (f *fixture) resCursor(t *testing.T, pid, group string, committed, batchEnd int64, leaseFor time.Duration) {
	t.Helper()
	var lease, expires any
	if leaseFor != 0 {
		lease, expires = "0190a000-0000-7000-8000-000000000001", time.Now().Add(leaseFor)
	}
	f.exec(t, `INSERT INTO queen.log_consumers (partition_id, consumer_group, committed, batch_end, lease_id,
		lease_expires_at, last_consumed_at) VALUES ($1, $2, $3, $4, $5, $6, now())`,
		pid, group, committed, batchEnd, lease, expires)
}

// resDeadLetter adds a dead-letter row of group for partition pid.
func (f *fixture) resDeadLetter(t *testing.T, pid, group string) {
	t.Helper()
	f.exec(t, `INSERT INTO queen.dlq (queue_id, partition_id, consumer_group, msg_offset, transaction_id, retry_count,
		created_at, frame_index, blob) SELECT lp.queue_id, lp.id, $2, 0, 't', 3, now(), 0, '\x01'
		  FROM queen.log_partitions lp WHERE lp.id = $1`, pid, group)
}

// resScenario is one queue whose partitions exercise every rule of the counts:
//
//	a: 5 messages; named g1 at 1, named g2 at 3 leasing (3, 4], queue mode at 4 with an
//	   expired lease: worst = 1 (named groups win), pending 3, processing 1 (g2's span).
//	b: 3 messages; queue mode alone at 0 leasing (0, 2]: pending 2, processing 2.
//	c: 2 messages, no cursor: everything pending.
//	d: 4 messages of which retention removed 2 (log_start 2); g1 at 0, below log_start:
//	   total 2, pending 2, consumed 0; 2 dead letters.
type resScenario struct {
	f    *fixture
	pids map[string]string
}

func newResScenario(t *testing.T) resScenario {
	t.Helper()
	f := newFixture(t, Options{})
	s := resScenario{f: f, pids: map[string]string{}}
	for p, n := range map[string]int{"a": 5, "b": 3, "c": 2, "d": 4} {
		s.pids[p] = f.push(t, "q", p, n)
	}
	f.resCursor(t, s.pids["a"], "g1", 1, 1, 0)
	f.resCursor(t, s.pids["a"], "g2", 3, 4, time.Minute)
	f.resCursor(t, s.pids["a"], ports.QueueModeGroup, 4, 4, -time.Minute)
	f.resCursor(t, s.pids["b"], ports.QueueModeGroup, 0, 2, time.Minute)
	f.exec(t, `UPDATE queen.log_partitions SET log_start = 2, txns_start = 2 WHERE id = $1`, s.pids["d"])
	f.resCursor(t, s.pids["d"], "g1", 0, 0, 0)
	f.resDeadLetter(t, s.pids["d"], "g1")
	f.resDeadLetter(t, s.pids["d"], "g2")
	return s
}

func TestResourceCounts(t *testing.T) {
	t.Parallel()
	s := newResScenario(t)
	ctx := context.Background()

	want := map[string]struct {
		counts   ports.WatermarkCounts
		consumed int64
	}{
		// consumed: every group's acknowledged retained messages: a: g1 2 + g2 4 + queue mode 5.
		"a": {ports.WatermarkCounts{Total: 5, Pending: 3, Processing: 1}, 11},
		"b": {ports.WatermarkCounts{Total: 3, Pending: 2, Processing: 2}, 1},
		"c": {ports.WatermarkCounts{Total: 2, Pending: 2}, 0},
		"d": {ports.WatermarkCounts{Total: 2, Pending: 2, DeadLetter: 2}, 0},
	}
	t.Run("detail", func(t *testing.T) {
		t.Parallel()
		d, found, err := s.f.admin.QueueDetail(ctx, tenant, "q", ports.ResourcePage{Limit: 10})
		if err != nil || !found {
			t.Fatalf("QueueDetail = %v, %v", found, err)
		}
		if d.Config.Name != "q" || d.Config.ID == "" || d.Config.LeaseTime != 300 || d.CreatedAt.IsZero() {
			t.Errorf("config %+v created %v", d.Config, d.CreatedAt)
		}
		if d.Partitions != 4 || d.Totals != (ports.WatermarkCounts{Total: 12, Pending: 9, Processing: 3, DeadLetter: 2}) {
			t.Errorf("%d partitions, totals %+v", d.Partitions, d.Totals)
		}
		var names []string
		for _, p := range d.Page {
			names = append(names, p.Name)
			w := want[p.Name]
			if p.Counts != w.counts || p.Consumed != w.consumed || p.ID != s.pids[p.Name] || p.CreatedAt.IsZero() {
				t.Errorf("partition %s: %+v consumed %d, want %+v consumed %d", p.Name, p.Counts, p.Consumed, w.counts, w.consumed)
			}
			if (p.LastActivity != nil) != (p.Name != "c") {
				t.Errorf("partition %s: last activity %v", p.Name, p.LastActivity)
			}
		}
		if !slices.Equal(names, []string{"a", "b", "c", "d"}) {
			t.Errorf("partitions %v, want name order", names)
		}
	})
	t.Run("list", func(t *testing.T) {
		t.Parallel()
		qs, n, err := s.f.admin.ListQueues(ctx, tenant, ports.ResourceFilter{}, ports.ResourcePage{Limit: 10})
		if err != nil || n != 1 || len(qs) != 1 {
			t.Fatalf("ListQueues = %+v, %d, %v", qs, n, err)
		}
		q := qs[0]
		if q.Name != "q" || q.Partitions != 4 || q.Counts != (ports.WatermarkCounts{Total: 12, Pending: 9, Processing: 3, DeadLetter: 2}) {
			t.Errorf("queue %+v", q)
		}
	})
	depths := []struct {
		name, group    string
		totals         ports.WatermarkCounts
		pending, ready int64
		partitions     map[string]ports.WatermarkCounts
	}{
		{"every group", "", ports.WatermarkCounts{Pending: 9, Processing: 3}, 4, 3, map[string]ports.WatermarkCounts{
			"a": {Pending: 3, Processing: 1}, "b": {Pending: 2, Processing: 2}, "c": {Pending: 2}, "d": {Pending: 2}}},
		// g2 owes the partitions it never touched whole (what is retained of them).
		{"g2", "g2", ports.WatermarkCounts{Pending: 8, Processing: 1}, 4, 3, map[string]ports.WatermarkCounts{
			"a": {Pending: 1, Processing: 1}, "b": {Pending: 3}, "c": {Pending: 2}, "d": {Pending: 2}}},
		// Queue mode's expired lease on a is no processing.
		{"queue mode", ports.QueueModeGroup, ports.WatermarkCounts{Pending: 6, Processing: 2}, 3, 2, map[string]ports.WatermarkCounts{
			"a": {}, "b": {Pending: 2, Processing: 2}, "c": {Pending: 2}, "d": {Pending: 2}}},
		{"an unknown group owes everything", "nobody", ports.WatermarkCounts{Pending: 12}, 4, 4, map[string]ports.WatermarkCounts{
			"a": {Pending: 5}, "b": {Pending: 3}, "c": {Pending: 2}, "d": {Pending: 2}}},
	}
	for _, tt := range depths {
		t.Run("depth "+tt.name, func(t *testing.T) {
			t.Parallel()
			d, found, err := s.f.admin.QueueDepth(ctx, tenant, "q", tt.group, ports.ResourcePage{Limit: 10})
			if err != nil || !found {
				t.Fatalf("QueueDepth = %v, %v", found, err)
			}
			if d.Totals != tt.totals || d.PartitionsPending != tt.pending || d.PartitionsReady != tt.ready {
				t.Errorf("totals %+v, %d pending, %d ready; want %+v, %d, %d", d.Totals, d.PartitionsPending,
					d.PartitionsReady, tt.totals, tt.pending, tt.ready)
			}
			if len(d.Page) != 4 {
				t.Fatalf("%d partitions, want 4", len(d.Page))
			}
			for _, p := range d.Page {
				if p.Counts != tt.partitions[p.Name] {
					t.Errorf("partition %s: %+v, want %+v", p.Name, p.Counts, tt.partitions[p.Name])
				}
			}
		})
	}
	t.Run("unknown queue", func(t *testing.T) {
		t.Parallel()
		if _, found, err := s.f.admin.QueueDetail(ctx, tenant, "nope", ports.ResourcePage{Limit: 10}); found || err != nil {
			t.Errorf("QueueDetail of an unknown queue = %v, %v", found, err)
		}
		if _, found, err := s.f.admin.QueueDepth(ctx, tenant, "nope", "", ports.ResourcePage{Limit: 10}); found || err != nil {
			t.Errorf("QueueDepth of an unknown queue = %v, %v", found, err)
		}
		if _, found, err := s.f.admin.QueueDetail(ctx, "00000000-0000-0000-0000-000000000002", "q", ports.ResourcePage{Limit: 10}); found || err != nil {
			t.Errorf("QueueDetail of another tenant's queue = %v, %v", found, err)
		}
	})
	t.Run("status", func(t *testing.T) {
		t.Parallel()
		st, err := s.f.admin.Status(ctx, tenant, ports.ResourceFilter{})
		if err != nil {
			t.Fatal(err)
		}
		want := ports.ResourceStatus{Queues: 1, Partitions: 4,
			Counts:      ports.WatermarkCounts{Total: 12, Pending: 9, Processing: 3, DeadLetter: 2},
			Leases:      ports.LeaseSummary{Active: 2, Partitions: 2, Messages: 3},
			DeadLetters: ports.DeadLetterSummary{Current: 2, Partitions: 1}}
		if st != want {
			t.Errorf("status\n got %+v\nwant %+v", st, want)
		}
	})
}

// A queue without partitions (configured, never pushed to) counts zeros.
func TestResourceEmptyQueue(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	if _, err := f.admin.Configure(ctx, tenant, baseConfig("empty"), ports.AllQueueOptions); err != nil {
		t.Fatal(err)
	}
	d, found, err := f.admin.QueueDetail(ctx, tenant, "empty", ports.ResourcePage{Limit: 10})
	if err != nil || !found || d.Partitions != 0 || d.Totals != (ports.WatermarkCounts{}) || len(d.Page) != 0 {
		t.Fatalf("QueueDetail = %+v, %v, %v", d, found, err)
	}
	dp, found, err := f.admin.QueueDepth(ctx, tenant, "empty", "", ports.ResourcePage{Limit: 10})
	if err != nil || !found || dp.Totals != (ports.WatermarkCounts{}) || len(dp.Page) != 0 {
		t.Fatalf("QueueDepth = %+v, %v, %v", dp, found, err)
	}
	qs, _, err := f.admin.ListQueues(ctx, tenant, ports.ResourceFilter{}, ports.ResourcePage{Limit: 10})
	if err != nil || len(qs) != 1 || qs[0].Partitions != 0 || qs[0].Counts != (ports.WatermarkCounts{}) {
		t.Fatalf("ListQueues = %+v, %v", qs, err)
	}
}

func TestResourceListing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	// Queues a.x (namespace a, task x: derived from the dotted name), a.y, b.x, plain.
	for _, q := range []string{"a.x", "a.y", "b.x", "plain"} {
		f.push(t, q, "p", 1)
	}
	f.push(t, "a.x", "p2", 2)
	other := "00000000-0000-0000-0000-000000000002"
	if _, err := f.store.PushSegments(ctx, []ports.Segment{{Tenant: other, Queue: "a.z", Partition: "p", Count: 1,
		Hashes: []byte("0123456789abcdef"), Verified: -1, Blob: []byte{1}}}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		tenant   string
		f        ports.ResourceFilter
		p        ports.ResourcePage
		want     []string
		matching int64
	}{
		{"all", tenant, ports.ResourceFilter{}, ports.ResourcePage{Limit: 10}, []string{"a.x", "a.y", "b.x", "plain"}, 4},
		{"namespace", tenant, ports.ResourceFilter{Namespace: "a"}, ports.ResourcePage{Limit: 10}, []string{"a.x", "a.y"}, 2},
		{"task", tenant, ports.ResourceFilter{Task: "x"}, ports.ResourcePage{Limit: 10}, []string{"a.x", "b.x"}, 2},
		{"namespace and task", tenant, ports.ResourceFilter{Namespace: "a", Task: "y"}, ports.ResourcePage{Limit: 10}, []string{"a.y"}, 1},
		{"queue", tenant, ports.ResourceFilter{Queue: "plain"}, ports.ResourcePage{Limit: 10}, []string{"plain"}, 1},
		{"first page", tenant, ports.ResourceFilter{}, ports.ResourcePage{Limit: 2}, []string{"a.x", "a.y"}, 4},
		{"second page", tenant, ports.ResourceFilter{}, ports.ResourcePage{Limit: 2, Offset: 2}, []string{"b.x", "plain"}, 4},
		{"past the end: the count still comes", tenant, ports.ResourceFilter{}, ports.ResourcePage{Limit: 2, Offset: 9}, nil, 4},
		{"limit 0", tenant, ports.ResourceFilter{}, ports.ResourcePage{Limit: 0}, nil, 4},
		{"no match", tenant, ports.ResourceFilter{Namespace: "zzz"}, ports.ResourcePage{Limit: 10}, nil, 0},
		{"other tenant", other, ports.ResourceFilter{}, ports.ResourcePage{Limit: 10}, []string{"a.z"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			qs, n, err := f.admin.ListQueues(ctx, tt.tenant, tt.f, tt.p)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, q := range qs {
				got = append(got, q.Name)
			}
			if !slices.Equal(got, tt.want) || n != tt.matching {
				t.Fatalf("queues %v (%d matching), want %v (%d)", got, n, tt.want, tt.matching)
			}
		})
	}
	t.Run("fields", func(t *testing.T) {
		t.Parallel()
		qs, _, err := f.admin.ListQueues(ctx, tenant, ports.ResourceFilter{Queue: "a.x"}, ports.ResourcePage{Limit: 1})
		if err != nil || len(qs) != 1 {
			t.Fatalf("ListQueues = %+v, %v", qs, err)
		}
		q := qs[0]
		if q.ID == "" || q.Namespace != "a" || q.Task != "x" || q.CreatedAt.IsZero() || q.Partitions != 2 ||
			q.Counts != (ports.WatermarkCounts{Total: 3, Pending: 3}) {
			t.Fatalf("queue %+v", q)
		}
	})
	t.Run("namespaces and tasks", func(t *testing.T) {
		t.Parallel()
		ns, err := f.admin.CountsBy(ctx, tenant, ports.ByNamespace, ports.ResourcePage{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		wantNS := []ports.KeyCounts{
			{Key: "a", Queues: 2, Partitions: 3, Counts: ports.WatermarkCounts{Total: 4, Pending: 4}},
			{Key: "b", Queues: 1, Partitions: 1, Counts: ports.WatermarkCounts{Total: 1, Pending: 1}},
		}
		if !slices.Equal(ns, wantNS) {
			t.Errorf("namespaces %+v, want %+v", ns, wantNS)
		}
		ts, err := f.admin.CountsBy(ctx, tenant, ports.ByTask, ports.ResourcePage{Limit: 1, Offset: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) != 1 || ts[0].Key != "y" || ts[0].Queues != 1 {
			t.Errorf("second page of tasks %+v, want y", ts)
		}
	})
	t.Run("overview", func(t *testing.T) {
		t.Parallel()
		o, err := f.admin.Overview(ctx, tenant)
		if err != nil {
			t.Fatal(err)
		}
		want := ports.ResourceOverview{Queues: 4, Partitions: 5, Namespaces: 2, Tasks: 2,
			Counts: ports.WatermarkCounts{Total: 6, Pending: 6}}
		if o != want {
			t.Errorf("overview %+v, want %+v", o, want)
		}
	})
	t.Run("status filters", func(t *testing.T) {
		t.Parallel()
		st, err := f.admin.Status(ctx, tenant, ports.ResourceFilter{Namespace: "a"})
		if err != nil || st.Queues != 2 || st.Partitions != 3 || st.Counts.Total != 4 {
			t.Fatalf("status %+v, %v", st, err)
		}
	})
}

func TestResourceOverviewGroups(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.push(t, "q1", "p", 1)
	f.push(t, "q2", "p", 1)
	// g1 on both queues counts once; queue mode is no named group.
	f.exec(t, `INSERT INTO queen.consumer_groups (queue_id, name, subscription_mode)
		SELECT id, g, 'all' FROM queen.queues, unnest(ARRAY['g1', 'g2']) AS g WHERE name = 'q1'
		UNION ALL SELECT id, 'g1', 'all' FROM queen.queues WHERE name = 'q2'`)
	o, err := f.admin.Overview(ctx, tenant)
	if err != nil || o.ConsumerGroups != 2 {
		t.Fatalf("overview %+v, %v; want 2 consumer groups", o, err)
	}
}

// The first and last retained segments' commit times come from the primary key.
func TestResourceRetainedSpan(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	full := f.push(t, "span", "full", 3) // segments at 0, 1, 2
	cut := f.push(t, "span", "cut", 3)   // log_start 2: the first retained segment is at 2
	gone := f.push(t, "span", "gone", 2) // log_start 2: nothing retained
	wide := f.push(t, "span", "wide", 1) // one segment; a second one of 4 frames follows
	base := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	f.exec(t, `UPDATE queen.log_segments SET created_at = $2::timestamptz + base_offset * interval '1 minute'
		WHERE partition_id = ANY($1::uuid[])`, []string{full, cut, gone, wide}, base)
	// wide: frames 1..4 in one segment committed at +10 min; log_start 3 falls inside it.
	f.exec(t, `INSERT INTO queen.log_segments (partition_id, base_offset, msg_count, created_at, blob)
		VALUES ($1, 1, 4, $2::timestamptz + interval '10 minutes', '\x01')`, wide, base)
	f.exec(t, `UPDATE queen.log_partitions SET last_offset = 4, log_start = 3 WHERE id = $1`, wide)
	f.exec(t, `UPDATE queen.log_partitions SET log_start = 2 WHERE id = ANY($1::uuid[])`, []string{cut, gone})
	f.exec(t, `UPDATE queen.log_partitions SET log_start = 2, last_offset = 1 WHERE id = $1`, gone)

	d, _, err := f.admin.QueueDetail(ctx, tenant, "span", ports.ResourcePage{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	at := func(m int) *time.Time { v := base.Add(time.Duration(m) * time.Minute); return &v }
	want := map[string][2]*time.Time{
		"cut":  {at(2), at(2)},
		"full": {at(0), at(2)},
		"gone": {nil, nil},
		"wide": {at(10), at(10)},
	}
	for _, p := range d.Page {
		w := want[p.Name]
		if !resSameTime(p.Oldest, w[0]) || !resSameTime(p.Newest, w[1]) {
			t.Errorf("%s: oldest %v newest %v, want %v %v", p.Name, p.Oldest, p.Newest, w[0], w[1])
		}
	}
	if len(d.Page) != 4 {
		t.Fatalf("%d partitions, want 4", len(d.Page))
	}
}

func resSameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// Pages of partitions: name order, the totals cover all of them.
func TestResourcePartitionPages(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	for _, p := range []string{"p3", "p1", "p4", "p2"} {
		f.push(t, "pages", p, 1)
	}
	tests := []struct {
		name string
		p    ports.ResourcePage
		want []string
	}{
		{"all", ports.ResourcePage{Limit: 10}, []string{"p1", "p2", "p3", "p4"}},
		{"middle", ports.ResourcePage{Limit: 2, Offset: 1}, []string{"p2", "p3"}},
		{"past the end", ports.ResourcePage{Limit: 2, Offset: 4}, nil},
		{"limit 0", ports.ResourcePage{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, _, err := f.admin.QueueDetail(ctx, tenant, "pages", tt.p)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range d.Page {
				got = append(got, p.Name)
			}
			if !slices.Equal(got, tt.want) || d.Partitions != 4 || d.Totals.Total != 4 {
				t.Errorf("detail page %v (%d partitions, %d messages), want %v of 4", got, d.Partitions, d.Totals.Total, tt.want)
			}
			dp, _, err := f.admin.QueueDepth(ctx, tenant, "pages", "", tt.p)
			if err != nil {
				t.Fatal(err)
			}
			got = nil
			for _, p := range dp.Page {
				got = append(got, p.Name)
			}
			if !slices.Equal(got, tt.want) || dp.Totals.Pending != 4 || dp.PartitionsPending != 4 {
				t.Errorf("depth page %v (%+v), want %v of 4", got, dp, tt.want)
			}
		})
	}
}

func TestResourceStorageTotals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.push(t, "st", "a", 3)
	f.push(t, "st", "b", 2)
	st, err := f.admin.StorageTotals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Messages != 5 || st.SegmentBytes <= 0 || st.Segments < 0 || st.Segments > 5 {
		t.Fatalf("storage totals %+v, want 5 messages, some bytes, 0 to 5 segments", st)
	}
}

// resStatementCounter counts the statements bun runs (BEGIN and COMMIT included).
type resStatementCounter struct {
	mu sync.Mutex
	n  int
}

func (c *resStatementCounter) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (c *resStatementCounter) AfterQuery(context.Context, *bun.QueryEvent) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *resStatementCounter) take() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = 0
	return n
}

// Every read costs a fixed number of statements, whatever the number of queues,
// partitions and groups: the same with 2 queues of 1 partition as with 12 queues of 5
// partitions and 3 groups each.
func TestResourceStatementsAreBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reads := []struct {
		name string
		want int
		read func(a *Admin) error
	}{
		{"list queues", 1, func(a *Admin) error {
			_, _, err := a.ListQueues(ctx, tenant, ports.ResourceFilter{}, ports.ResourcePage{Limit: 100})
			return err
		}},
		{"queue detail (BEGIN, queue, totals, page, COMMIT)", 5, func(a *Admin) error {
			_, _, err := a.QueueDetail(ctx, tenant, "q0", ports.ResourcePage{Limit: 100})
			return err
		}},
		{"queue depth (BEGIN, totals, page, COMMIT)", 4, func(a *Admin) error {
			_, _, err := a.QueueDepth(ctx, tenant, "q0", "g0", ports.ResourcePage{Limit: 100})
			return err
		}},
		// The tenant-wide counts: BEGIN, their planner settings, the counts, COMMIT.
		{"namespaces", 4, func(a *Admin) error {
			_, err := a.CountsBy(ctx, tenant, ports.ByNamespace, ports.ResourcePage{Limit: 100})
			return err
		}},
		{"overview", 4, func(a *Admin) error { _, err := a.Overview(ctx, tenant); return err }},
		{"status", 4, func(a *Admin) error { _, err := a.Status(ctx, tenant, ports.ResourceFilter{}); return err }},
		{"storage totals", 1, func(a *Admin) error { _, err := a.StorageTotals(ctx); return err }},
	}
	for _, size := range []struct {
		name                   string
		queues, partitions, gs int
	}{{"small", 2, 1, 0}, {"larger", 12, 5, 3}} {
		t.Run(size.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, Options{})
			for q := range size.queues {
				for p := range size.partitions {
					pid := f.push(t, fmt.Sprintf("ns%d.q%d", q%3, q), fmt.Sprintf("p%d", p), 1)
					for g := range size.gs {
						f.resCursor(t, pid, fmt.Sprintf("g%d", g), 0, 0, time.Minute)
					}
				}
			}
			if size.queues > 0 {
				f.exec(t, `UPDATE queen.queues SET name = 'q0' WHERE name = 'ns0.q0'`)
			}
			counter := &resStatementCounter{}
			a := &Admin{db: f.admin.db.WithQueryHook(counter), opts: f.admin.opts}
			for _, r := range reads {
				counter.take()
				if err := r.read(a); err != nil {
					t.Fatalf("%s: %v", r.name, err)
				}
				if n := counter.take(); n != r.want {
					t.Errorf("%s: %d statements, want %d", r.name, n, r.want)
				}
			}
		})
	}
}

// The reads take no row lock: they finish while other transactions hold every
// partition and cursor row the way pushes and acks do (FOR UPDATE), well within a
// statement timeout shorter than the wait would be.
func TestResourceReadsWaitForNoRowLock(t *testing.T) {
	t.Parallel()
	s := newResScenario(t)
	f := s.f
	ctx := context.Background()
	tx, err := f.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, stmt := range []string{
		`SELECT 1 FROM queen.queues FOR UPDATE`,
		`SELECT 1 FROM queen.log_partitions FOR UPDATE`,
		`SELECT 1 FROM queen.log_consumers FOR UPDATE`,
		`SELECT 1 FROM queen.log_segments FOR UPDATE`,
		`SELECT 1 FROM queen.dlq FOR UPDATE`,
	} {
		if _, err := tx.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	a := New(f.db, Options{StatementTimeout: 2 * time.Second})
	page := ports.ResourcePage{Limit: 10}
	for name, read := range map[string]func() error{
		"list":     func() error { _, _, err := a.ListQueues(ctx, tenant, ports.ResourceFilter{}, page); return err },
		"detail":   func() error { _, _, err := a.QueueDetail(ctx, tenant, "q", page); return err },
		"depth":    func() error { _, _, err := a.QueueDepth(ctx, tenant, "q", "g1", page); return err },
		"counts":   func() error { _, err := a.CountsBy(ctx, tenant, ports.ByTask, page); return err },
		"overview": func() error { _, err := a.Overview(ctx, tenant); return err },
		"status":   func() error { _, err := a.Status(ctx, tenant, ports.ResourceFilter{}); return err },
		"storage":  func() error { _, err := a.StorageTotals(ctx); return err },
	} {
		if err := read(); err != nil {
			t.Errorf("%s while the rows are locked: %v", name, err)
		}
	}
}

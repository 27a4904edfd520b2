package porttest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

// RetentionFixture is a fresh, empty ports.RetentionStore, its world, and the admin
// ports of the same state that show what retention left.
type RetentionFixture struct {
	Store    ports.RetentionStore
	Messages ports.MessageStore
	Traces   ports.TraceStore
	AdminWorld
	// AddHistory stores n rows dated at in table (HistoryQueueMinutes,
	// HistoryQueueRollups: 60-minute buckets starting at at, HistoryBrokerMinutes or
	// HistoryFlushes); HistoryRows counts a table's rows
	// (HistoryRuns too); Runs lists the rows of retention_runs.
	AddHistory  func(t *testing.T, table string, at time.Time, n int)
	HistoryRows func(t *testing.T, table string) int
	Runs        func(t *testing.T) []RecordedRun
}

// RetentionStore runs the conformance suite of ports.RetentionStore; newFixture must return
// an empty store of its own on every call.
func RetentionStore(t *testing.T, newFixture func(t *testing.T) RetentionFixture) {
	tests := []struct {
		name string
		run  func(t *testing.T, f RetentionFixture)
	}{
		{"retentionSeconds removes the old prefix, consumed or not", testRetentionAge},
		{"nothing goes without a rule, or with retention disabled", testRetentionOff},
		{"maxWaitTimeSeconds applies without retentionEnabled", testRetentionMaxWait},
		{"completedRetentionSeconds removes only what every group consumed", testRetentionCompleted},
		{"hash rows go past the resolution window; dedup stays exact inside it", testRetentionHashes},
		{"the row budget splits a trim over steps at segment boundaries", testRetentionBudget},
		{"the walk visits partitions in order and says where it ended", testRetentionWalk},
		{"dead letters go retentionSeconds after they failed", testRetentionDeadLetters},
		{"expired traces go, live ones stay", testRetentionTraces},
		{"empty idle partitions go with their cursors", testRetentionEmptyPartitions},
		{"one lead at a time", testRetentionLead},
		{"the age rule that removed segments is told apart", testRetentionAgeRules},
		{"the metrics history goes past its retention, in bounded steps", testRetentionHistory},
		{"runs are recorded as given, in one write", testRetentionRecordRuns},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, newFixture(t))
		})
	}
}

// trimAll runs Trim steps from the first partition to the end of the walk and sums them.
func trimAll(t *testing.T, f RetentionFixture, rows int) ports.TrimStep {
	t.Helper()
	var sum ports.TrimStep
	var runs ports.RunTally
	after := ""
	for range 1000 {
		st, err := f.Store.Trim(context.Background(), after, 100, rows)
		if err != nil {
			t.Fatalf("Trim(%q): %v", after, err)
		}
		sum.Walked += st.Walked
		sum.Trimmed += st.Trimmed
		sum.Segments += st.Segments
		sum.Messages += st.Messages
		sum.SegmentBytes += st.SegmentBytes
		sum.HashRows += st.HashRows
		sum.HashBytes += st.HashBytes
		for _, r := range st.Removals {
			runs.Add(r)
		}
		if st.Walked < 100 && st.Segments+st.HashRows < int64(rows) {
			sum.Removals = runs.Runs()
			return sum
		}
		after = st.Last
	}
	t.Fatal("the walk did not end in 1000 steps")
	return sum
}

// retained reports which of the offsets still have a retained segment.
func retained(t *testing.T, f RetentionFixture, pid string, offsets ...int64) []int64 {
	t.Helper()
	var out []int64
	for _, off := range offsets {
		_, found, err := f.Messages.SegmentAt(context.Background(), tenant, pid, off)
		if err != nil {
			t.Fatalf("SegmentAt(%d): %v", off, err)
		}
		if found {
			out = append(out, off)
		}
	}
	return out
}

func wantRetained(t *testing.T, f RetentionFixture, pid string, want []int64, offsets ...int64) {
	t.Helper()
	if got := retained(t, f, pid, offsets...); !equalOffsets(got, want) {
		t.Fatalf("retained offsets %v, want %v", got, want)
	}
}

func equalOffsets(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func wantTrim(t *testing.T, got ports.TrimStep, segments, messages, hashes int64) {
	t.Helper()
	if got.Segments != segments || got.Messages != messages || got.HashRows != hashes {
		t.Fatalf("trim removed %d segments, %d messages, %d hash rows; want %d, %d, %d",
			got.Segments, got.Messages, got.HashRows, segments, messages, hashes)
	}
	if segments > 0 && got.SegmentBytes <= 0 || hashes > 0 && got.HashBytes != 16*hashes {
		t.Fatalf("trim removed %d segment bytes and %d hash bytes for %d segments and %d hash rows",
			got.SegmentBytes, got.HashBytes, segments, hashes)
	}
	wantRemovalsAddUp(t, got)
}

// oldThenNew pushes two old single-message segments (2 minutes old) and one new one to
// queue/p, and returns the partition id.
func oldThenNew(k adminKit, queue string) string {
	pid := k.pushEach(queue, "p", "m0", "m1")
	k.age(pid, 2*time.Minute)
	k.push(queue, "p", "m2")
	return pid
}

func testRetentionAge(t *testing.T, f RetentionFixture) {
	k := newAdminKit(t, f.AdminWorld)
	f.Configure(t, tenant, queueConfig("q", func(c *ports.QueueConfig) {
		c.RetentionEnabled, c.RetentionSeconds = true, 60
	}))
	pid := oldThenNew(k, "q")
	st := trimAll(t, f, 1000)
	wantTrim(t, st, 2, 2, 0)
	wantRuns(t, "trim", st.Removals, true, queueRun(ports.JobRetention, "q", 2))
	wantRetained(t, f, pid, []int64{2}, 0, 1, 2)
	// A pop starts at the first retained offset.
	k.take("q", "p", "g", 2, 2, true)
	// Nothing is left to remove.
	wantTrim(t, trimAll(t, f, 1000), 0, 0, 0)
}

func testRetentionOff(t *testing.T, f RetentionFixture) {
	k := newAdminKit(t, f.AdminWorld)
	f.Configure(t, tenant, queueConfig("off", func(c *ports.QueueConfig) { c.RetentionSeconds = 60 }))
	f.Configure(t, tenant, queueConfig("none", nil))
	a, b := oldThenNew(k, "off"), oldThenNew(k, "none")
	wantTrim(t, trimAll(t, f, 1000), 0, 0, 0)
	wantRetained(t, f, a, []int64{0, 1, 2}, 0, 1, 2)
	wantRetained(t, f, b, []int64{0, 1, 2}, 0, 1, 2)
}

func testRetentionMaxWait(t *testing.T, f RetentionFixture) {
	k := newAdminKit(t, f.AdminWorld)
	f.Configure(t, tenant, queueConfig("q", func(c *ports.QueueConfig) { c.MaxWaitTimeSeconds = 60 }))
	pid := oldThenNew(k, "q")
	st := trimAll(t, f, 1000)
	wantTrim(t, st, 2, 2, 0)
	wantRuns(t, "trim", st.Removals, true, queueRun(ports.JobEviction, "q", 2))
	wantRetained(t, f, pid, []int64{2}, 0, 1, 2)
}

func testRetentionCompleted(t *testing.T, f RetentionFixture) {
	k := newAdminKit(t, f.AdminWorld)
	f.Configure(t, tenant, queueConfig("q", func(c *ports.QueueConfig) {
		c.RetentionEnabled, c.CompletedRetentionSeconds = true, 60
	}))
	pid := k.pushEach("q", "p", "m0", "m1", "m2")
	k.age(pid, 2*time.Minute)
	// No group has consumed anything: nothing is completed.
	wantTrim(t, trimAll(t, f, 1000), 0, 0, 0)
	// g consumed m0 and m1; the queue-mode group consumed m0 only.
	k.take("q", "p", "g", 0, 1, true)
	k.take("q", "p", ports.QueueModeGroup, 0, 0, true)
	st := trimAll(t, f, 1000)
	wantTrim(t, st, 1, 1, 0)
	wantRuns(t, "trim", st.Removals, true, queueRun(ports.JobCompletedRetention, "q", 1))
	wantRetained(t, f, pid, []int64{1, 2}, 0, 1, 2)
	k.take("q", "p", ports.QueueModeGroup, 1, 1, true)
	wantTrim(t, trimAll(t, f, 1000), 1, 1, 0)
	wantRetained(t, f, pid, []int64{2}, 0, 1, 2)

	// A durable group of the queue without a cursor on the partition has consumed
	// nothing there.
	f.Configure(t, tenant, queueConfig("r", func(c *ports.QueueConfig) {
		c.RetentionEnabled, c.CompletedRetentionSeconds = true, 60
	}))
	a := k.pushEach("r", "a", "a0")
	k.pushEach("r", "b", "b0")
	k.age(a, 2*time.Minute)
	k.take("r", "a", "g", 0, 0, true)
	k.take("r", "b", "h", 0, 0, true) // h subscribes to r, but never touched a
	wantTrim(t, trimAll(t, f, 1000), 0, 0, 0)
	k.take("r", "a", "h", 0, 0, true)
	wantTrim(t, trimAll(t, f, 1000), 1, 1, 0)
	wantRetained(t, f, a, nil, 0)
}

func testRetentionHashes(t *testing.T, f RetentionFixture) {
	k := newAdminKit(t, f.AdminWorld)
	ctx := context.Background()
	// Window 900 s (the floor) on q; 3600 s on long.
	f.Configure(t, tenant, queueConfig("q", func(c *ports.QueueConfig) { c.DedupWindowSeconds = 60 }))
	f.Configure(t, tenant, queueConfig("long", nil))
	pid := k.pushEach("q", "p", "old0", "old1")
	long := k.pushEach("long", "p", "l0")
	k.age(pid, 1000*time.Second)
	k.age(long, 1000*time.Second)
	k.push("q", "p", "new")
	st := trimAll(t, f, 1000)
	wantTrim(t, st, 0, 0, 2)
	wantRuns(t, "trim", st.Removals, true, queueRun(ports.JobHashRows, "q", 2))
	// The messages stay (no retention rule); their hashes no longer resolve.
	wantRetained(t, f, pid, []int64{0, 1, 2}, 0, 1, 2)
	for txn, want := range map[string]bool{"old0": false, "old1": false, "new": true} {
		var h [16]byte
		copy(h[:], hash(txn))
		if _, found, err := f.Messages.FindMessage(ctx, tenant, pid, h); err != nil || found != want {
			t.Fatalf("FindMessage(%s) = %v, %v; want found %v", txn, found, err, want)
		}
	}
	// Dedup is exact inside the window: "new" and "l0" (aged 1000 s, window 3600 s) are
	// still duplicates.
	for _, seg := range []ports.Segment{segOf(tenant, "q", "p", "new"), segOf(tenant, "long", "p", "l0")} {
		seg.Verified = -1
		res, err := f.Segments.PushSegments(ctx, []ports.Segment{seg})
		if err != nil || len(res) != 1 || res[0].Status != ports.SegmentDuplicate {
			t.Fatalf("re-push of %s/%s: %+v, %v; want duplicate", seg.Queue, seg.Partition, res, err)
		}
	}
}

func testRetentionBudget(t *testing.T, f RetentionFixture) {
	k := newAdminKit(t, f.AdminWorld)
	ctx := context.Background()
	f.Configure(t, tenant, queueConfig("q", func(c *ports.QueueConfig) {
		c.RetentionEnabled, c.RetentionSeconds = true, 60
	}))
	pid := k.pushEach("q", "p", "m0", "m1", "m2", "m3", "m4")
	k.push("q", "p", "m5", "m6") // offsets 5..6 in one segment
	k.age(pid, 2*time.Minute)
	var total int64
	for i, want := range []int64{2, 2, 2} {
		st, err := f.Store.Trim(ctx, "", 100, 2)
		if err != nil {
			t.Fatal(err)
		}
		if st.Segments != want {
			t.Fatalf("step %d removed %d segments, want %d", i, st.Segments, want)
		}
		total += st.Messages
	}
	if total != 7 {
		t.Fatalf("steps removed %d messages, want 7", total)
	}
	wantRetained(t, f, pid, nil, 4, 5, 6)
}

func testRetentionWalk(t *testing.T, f RetentionFixture) {
	k := newAdminKit(t, f.AdminWorld)
	ctx := context.Background()
	for _, p := range []string{"a", "b", "c"} {
		k.push("q", p, "m-"+p)
	}
	st, err := f.Store.Trim(ctx, "", 2, 100)
	if err != nil || st.Walked != 2 || st.Last == "" {
		t.Fatalf("first step: %+v, %v; want 2 walked", st, err)
	}
	st2, err := f.Store.Trim(ctx, st.Last, 2, 100)
	if err != nil || st2.Walked != 1 || st2.Last <= st.Last {
		t.Fatalf("second step after %s: %+v, %v; want 1 walked, ending after it", st.Last, st2, err)
	}
	st3, err := f.Store.Trim(ctx, st2.Last, 2, 100)
	if err != nil || st3.Walked != 0 {
		t.Fatalf("step after the end: %+v, %v; want nothing walked", st3, err)
	}
}

func testRetentionDeadLetters(t *testing.T, f RetentionFixture) {
	k := newAdminKit(t, f.AdminWorld)
	ctx := context.Background()
	f.Configure(t, tenant, queueConfig("q", func(c *ports.QueueConfig) {
		c.RetentionEnabled, c.RetentionSeconds = true, 1
	}))
	f.Configure(t, tenant, queueConfig("keep", nil))
	pid := k.pushEach("q", "p", "d0")
	keep := k.pushEach("keep", "p", "k0")
	k.dlq("q", "p", "g", "d0", 0)
	k.dlq("keep", "p", "g", "k0", 0)
	// The dead letter must be a second old: poll, bounded, rather than move its clock.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := f.Store.PurgeDeadLetters(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		if r.Rows == 1 && r.Bytes > 0 {
			wantRuns(t, "PurgeDeadLetters", r.Queues, true, queueRun(ports.JobDeadLetters, "q", 1))
			break
		}
		if r.Rows != 0 || time.Now().After(deadline) {
			t.Fatalf("PurgeDeadLetters: %+v, want one row within 10 s", r)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, found, err := f.Messages.NewestDeadLetter(ctx, tenant, pid, "d0"); err != nil || found {
		t.Fatalf("dead letter of q after the purge: found %v, %v", found, err)
	}
	if _, found, err := f.Messages.NewestDeadLetter(ctx, tenant, keep, "k0"); err != nil || !found {
		t.Fatalf("dead letter of keep (no retention): found %v, %v", found, err)
	}
}

func testRetentionTraces(t *testing.T, f RetentionFixture) {
	k := newAdminKit(t, f.AdminWorld)
	ctx := context.Background()
	pid := k.pushEach("q", "p", "m0")
	add := func(name string, life time.Duration) {
		t.Helper()
		nt := ports.NewTrace{PartitionID: pid, TransactionID: "m0", ConsumerGroup: ports.QueueModeGroup,
			EventType: "info", Names: []string{name}, Data: []byte(`{"n":1}`)}
		if _, found, err := f.Traces.AddTrace(ctx, tenant, nt, func(ports.QueueOptions) time.Duration { return life }, 0); err != nil || !found {
			t.Fatalf("AddTrace(%s): %v, %v", name, found, err)
		}
	}
	add("old", -time.Hour)
	add("old", -time.Minute)
	add("live", time.Hour)
	r, err := f.Store.PurgeTraces(ctx, 100)
	if err != nil || r.Rows != 2 || r.Bytes <= 0 {
		t.Fatalf("PurgeTraces: %+v, %v; want 2 rows", r, err)
	}
	wantRuns(t, "PurgeTraces", r.Queues, true, queueRun(ports.JobTraces, "q", 2))
	if r, err := f.Store.PurgeTraces(ctx, 100); err != nil || r.Rows != 0 {
		t.Fatalf("second PurgeTraces: %+v, %v; want none", r, err)
	}
	names, _, err := f.Traces.TraceNames(ctx, tenant, 10, 0)
	if err != nil || len(names) != 1 || names[0].Name != "live" {
		t.Fatalf("trace names after the purge: %+v, %v; want live only", names, err)
	}
}

func testRetentionEmptyPartitions(t *testing.T, f RetentionFixture) {
	k := newAdminKit(t, f.AdminWorld)
	ctx := context.Background()
	f.Configure(t, tenant, queueConfig("q", func(c *ports.QueueConfig) {
		c.RetentionEnabled, c.RetentionSeconds, c.DedupWindowSeconds = true, 60, 0
	}))
	empty := f.EmptyPartition(t, tenant, "q", "empty")
	fresh := f.EmptyPartition(t, tenant, "q", "fresh")
	full := k.pushEach("q", "full", "f0")
	drained := k.pushEach("q", "drained", "d0")
	k.take("q", "drained", "g", 0, 0, true)
	for _, pid := range []string{empty, full, drained} {
		k.age(pid, 48*time.Hour)
	}
	// drained: its message and hash row go (hash window 900 s), then it holds nothing.
	wantTrim(t, trimAll(t, f, 1000), 2, 2, 2)
	r, err := f.Store.DropEmptyPartitions(ctx, 24*time.Hour, 100)
	if err != nil || r.Rows != 3 {
		t.Fatalf("DropEmptyPartitions: %+v, %v; want 3 (empty, full trimmed empty, drained)", r, err)
	}
	wantRuns(t, "DropEmptyPartitions", r.Queues, false, queueRun(ports.JobPartitions, "q", 3))
	_ = fresh
	// The partition is created again by a push, from offset 0, and a group's cursor
	// starts over with it.
	res := k.push("q", "drained", "again")
	if res.PartitionID == drained || res.BaseOffset != 0 {
		t.Fatalf("push after the drop: %+v; want a new partition from offset 0", res)
	}
	k.take("q", "drained", "g", 0, 0, true)
	if r, err := f.Store.DropEmptyPartitions(ctx, 24*time.Hour, 100); err != nil || r.Rows != 0 {
		t.Fatalf("second DropEmptyPartitions: %+v, %v; want none (fresh is recent)", r, err)
	}
}

func testRetentionLead(t *testing.T, f RetentionFixture) {
	ctx := context.Background()
	inner := errors.New("inner")
	ran, err := f.Store.Lead(ctx, func(ctx context.Context) error {
		again, err := f.Store.Lead(ctx, func(context.Context) error {
			t.Error("a second lead ran while the first held it")
			return nil
		})
		if again || err != nil {
			t.Errorf("second Lead: ran %v, %v; want false, nil", again, err)
		}
		return inner
	})
	if !ran || !errors.Is(err, inner) {
		t.Fatalf("Lead: ran %v, %v; want true and fn's error", ran, err)
	}
	// Released: it can be taken again.
	if ran, err := f.Store.Lead(ctx, func(context.Context) error { return nil }); !ran || err != nil {
		t.Fatalf("Lead after release: %v, %v", ran, err)
	}
}

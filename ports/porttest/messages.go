package porttest

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

// MessageFixture is a fresh, empty ports.MessageStore and its world.
type MessageFixture struct {
	Store ports.MessageStore
	AdminWorld
}

// MessageStore runs the conformance suite of ports.MessageStore; newFixture must return an
// empty store of its own on every call.
func MessageStore(t *testing.T, newFixture func(t *testing.T) MessageFixture) {
	tests := []struct {
		name string
		run  func(t *testing.T, f MessageFixture)
	}{
		{"browse: newest commit first, with partitions, cursors and dead letters", testBrowseOrder},
		{"browse pages continue strictly after their key", testBrowsePages},
		{"browse ties: commit time, then partition id", testBrowseTies},
		{"browse filters: names and commit times", testBrowseFilters},
		{"browse honours the retained window", testBrowseRetention},
		{"browse modes: the kinds of group with a cursor", testBrowseModes},
		{"segment blobs: the segments named, the missing left out", testSegmentBlobs},
		{"find a message: the newest occurrence inside the hash window", testFindMessage},
		{"segment at an offset: retained segments only", testMessageSegmentAt},
		{"the newest dead letter of a message", testNewestDeadLetter},
		{"a move hands the row over and deletes it when asked", testMoveDeadLetter},
		{"a move that fails or declines keeps the row", testMoveKeeps},
		{"a move may push to its row's partition", testMovePushes},
		{"moves of one row take turns", testMoveTurns},
		{"deletion of a message's dead letters, of every group", testDeleteDeadLetters},
		{"purge: one queue, one group", testPurgeDeadLetters},
		{"a cancelled context fails and changes nothing", testMessagesCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, newFixture(t))
		})
	}
}

// msgWorld is what the browse cases read. Queue q (namespace ns, task tk, configured)
// has partitions a and b, queue r (pushed, unconfigured) partition x; segments committed
// an hour apart (aged), oldest first:
//
//	S1 a[a0 a1 a2] 5 h ago   S2 b[b0] 4 h   S3 a[a3] 3 h   S4 x[r0] 2 h   S5 b[b1 b2] 1 h
//
// g autoAcked a0..a1 and leases a2..a3; g autoAcked b0 and dead-lettered b1; queue mode
// autoAcked r0.
type msgWorld struct {
	k      adminKit
	q      ports.QueueConfig
	segs   []ports.BrowseSegment // S1..S5
	blobs  map[ports.SegmentRef][]byte
	pids   map[string]string
	leaseA time.Time // g's lease on a
}

func newMsgWorld(t *testing.T, f MessageFixture) msgWorld {
	t.Helper()
	w := msgWorld{k: newAdminKit(t, f.AdminWorld), blobs: map[ports.SegmentRef][]byte{}, pids: map[string]string{}}
	w.q = queueConfig("q", func(c *ports.QueueConfig) { c.Namespace, c.Task = "ns", "tk" })
	f.Configure(t, tenant, w.q)
	// Pushed partition by partition (each partition's in offset order), each aged so
	// that its segments end up at their hours: the commit order is the segments' number.
	type step struct {
		n                int // S<n>
		queue, partition string
		txns             []string
		age              time.Duration // the partition's age after the push
	}
	w.segs = make([]ports.BrowseSegment, 5)
	for _, s := range []step{
		{1, "q", "a", []string{"a0", "a1", "a2"}, 2 * time.Hour},
		{3, "q", "a", []string{"a3"}, 3 * time.Hour},
		{2, "q", "b", []string{"b0"}, 3 * time.Hour},
		{5, "q", "b", []string{"b1", "b2"}, time.Hour},
		{4, "r", "x", []string{"r0"}, 2 * time.Hour},
	} {
		sg := segOf(tenant, s.queue, s.partition, s.txns...)
		res := w.k.commit(sg)[0]
		w.pids[s.partition] = res.PartitionID
		w.segs[s.n-1] = ports.BrowseSegment{PartitionID: res.PartitionID, BaseOffset: res.BaseOffset,
			EndOffset: res.BaseOffset + int64(sg.Count) - 1}
		w.blobs[ports.SegmentRef{PartitionID: res.PartitionID, BaseOffset: res.BaseOffset}] = sg.Blob
		w.k.age(res.PartitionID, s.age)
	}
	for i := range w.segs {
		w.segs[i].CreatedAt = w.k.committed(w.segs[i].PartitionID, w.segs[i].BaseOffset)
	}
	w.k.take("q", "a", "g", 0, 1, true)
	_, c := w.k.take("q", "a", "g", 2, 3, false)
	w.leaseA = c.LeaseExpires
	w.k.take("q", "b", "g", 0, 0, true)
	w.k.dlq("q", "b", "g", "b1", 1)
	w.k.take("r", "x", ports.QueueModeGroup, 0, 0, true)
	return w
}

// seg returns S<n>.
func (w msgWorld) seg(n int) ports.BrowseSegment { return w.segs[n-1] }

// longAgo is the lower bound of the browses that want everything: a browse always has
// one (the use case gives its default window), and an unbounded From is not part of the
// port.
var longAgo = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// browse reads a page (from longAgo when fl has no From) and fails on an error.
func browse(t *testing.T, f MessageFixture, tenant string, fl ports.MessageFilter, after *ports.BrowseKey, limit int) ports.BrowsePage {
	t.Helper()
	if fl.From.IsZero() {
		fl.From = longAgo
	}
	p, err := f.Store.BrowseSegments(context.Background(), tenant, fl, after, limit)
	if err != nil {
		t.Fatalf("BrowseSegments(%+v, after %+v, %d): %v", fl, after, limit, err)
	}
	return p
}

func segKeys(segs []ports.BrowseSegment) []string {
	var out []string
	for _, s := range segs {
		out = append(out, fmt.Sprintf("%s[%d..%d]@%s", s.PartitionID, s.BaseOffset, s.EndOffset, s.CreatedAt.Format(time.RFC3339Nano)))
	}
	return out
}

// wantSegments fails unless the page holds want, in order (times compared as instants).
func wantSegments(t *testing.T, got []ports.BrowseSegment, want ...ports.BrowseSegment) {
	t.Helper()
	same := len(got) == len(want)
	for i := 0; same && i < len(got); i++ {
		same = got[i].PartitionID == want[i].PartitionID && got[i].BaseOffset == want[i].BaseOffset &&
			got[i].EndOffset == want[i].EndOffset && got[i].CreatedAt.Equal(want[i].CreatedAt)
	}
	if !same {
		t.Fatalf("segments\n got %q\nwant %q", segKeys(got), segKeys(want))
	}
}

// sameCursors reports whether two cursor lists are equal (lease expiries as instants).
func sameCursors(a, b []ports.GroupCursor) bool {
	return slices.EqualFunc(a, b, func(x, y ports.GroupCursor) bool {
		return x.Group == y.Group && x.Committed == y.Committed && x.BatchEnd == y.BatchEnd && x.LeaseExpires.Equal(y.LeaseExpires)
	})
}

func testBrowseOrder(t *testing.T, f MessageFixture) {
	w := newMsgWorld(t, f)
	page := browse(t, f, tenant, ports.MessageFilter{}, nil, 100)
	wantSegments(t, page.Segments, w.seg(5), w.seg(4), w.seg(3), w.seg(2), w.seg(1))
	if page.Now.Before(w.seg(5).CreatedAt) {
		t.Errorf("now %v is before the last commit %v", page.Now, w.seg(5).CreatedAt)
	}
	// Each partition once, in the order the segments name them.
	want := []struct {
		name    string
		cfg     ports.QueueConfig
		last    int64
		cursors []ports.GroupCursor
	}{
		{"b", w.q, 2, []ports.GroupCursor{{Group: "g", Committed: 1, BatchEnd: 1}}},
		{"x", queueConfig("r", nil), 0, []ports.GroupCursor{{Group: ports.QueueModeGroup, Committed: 0, BatchEnd: 0}}},
		{"a", w.q, 3, []ports.GroupCursor{{Group: "g", Committed: 1, BatchEnd: 3, LeaseExpires: w.leaseA}}},
	}
	if len(page.Partitions) != len(want) {
		t.Fatalf("%d partitions, want %d: %+v", len(page.Partitions), len(want), page.Partitions)
	}
	for i, p := range page.Partitions {
		ww := want[i]
		if p.ID != w.pids[ww.name] || p.Name != ww.name || p.First != 0 || p.LastOffset != ww.last || !sameCursors(p.Cursors, ww.cursors) {
			t.Errorf("partition %d: %+v, want %s (%s) first 0 last %d cursors %+v", i, p, ww.name, w.pids[ww.name], ww.last, ww.cursors)
		}
		wantConfig(t, "the queue of partition "+ww.name, p.Queue, ww.cfg)
	}
	if !slices.Equal(page.DeadLetters, []ports.MessageAddr{{PartitionID: w.pids["b"], Offset: 1}}) {
		t.Errorf("dead letters %+v, want b1", page.DeadLetters)
	}
	// A second group dead-lettering the same message names it once; nothing else changes.
	w.k.dlq("q", "b", "h", "b0", 0)
	w.k.dlq("q", "b", "h2", "b0", 0)
	page = browse(t, f, tenant, ports.MessageFilter{}, nil, 100)
	got := slices.Clone(page.DeadLetters)
	slices.SortFunc(got, func(x, y ports.MessageAddr) int { return cmp.Compare(x.Offset, y.Offset) })
	if !slices.Equal(got, []ports.MessageAddr{{PartitionID: w.pids["b"], Offset: 0}, {PartitionID: w.pids["b"], Offset: 1}}) {
		t.Errorf("dead letters %+v, want b0 and b1 once each", page.DeadLetters)
	}
	// Limit 0 reads nothing.
	if page := browse(t, f, tenant, ports.MessageFilter{}, nil, 0); len(page.Segments) != 0 || len(page.Partitions) != 0 {
		t.Errorf("limit 0: %+v", page)
	}
}

func testBrowsePages(t *testing.T, f MessageFixture) {
	w := newMsgWorld(t, f)
	page := browse(t, f, tenant, ports.MessageFilter{}, nil, 2)
	wantSegments(t, page.Segments, w.seg(5), w.seg(4))
	if len(page.Partitions) != 2 || page.Partitions[0].Name != "b" || page.Partitions[1].Name != "x" {
		t.Fatalf("a page's partitions are those of its segments: %+v", page.Partitions)
	}
	key := page.Segments[1].Key()
	page = browse(t, f, tenant, ports.MessageFilter{}, &key, 2)
	wantSegments(t, page.Segments, w.seg(3), w.seg(2))
	if len(page.DeadLetters) != 0 {
		t.Fatalf("dead letters of another page's segments: %+v", page.DeadLetters)
	}
	key = page.Segments[1].Key()
	wantSegments(t, browse(t, f, tenant, ports.MessageFilter{}, &key, 2).Segments, w.seg(1))
	key = w.seg(1).Key()
	wantSegments(t, browse(t, f, tenant, ports.MessageFilter{}, &key, 2).Segments)
	// One at a time, every segment once, in order.
	var all []ports.BrowseSegment
	var after *ports.BrowseKey
	for range 10 {
		page := browse(t, f, tenant, ports.MessageFilter{}, after, 1)
		if len(page.Segments) == 0 {
			break
		}
		all = append(all, page.Segments...)
		k := page.Segments[0].Key()
		after = &k
	}
	wantSegments(t, all, w.seg(5), w.seg(4), w.seg(3), w.seg(2), w.seg(1))
}

func testBrowseTies(t *testing.T, f MessageFixture) {
	k := newAdminKit(t, f.AdminWorld)
	// Two bundles of two partitions each, an hour apart (aged): the segments of a bundle
	// share a commit time.
	first := k.commit(segOf(tenant, "tie", "p1", "x0"), segOf(tenant, "tie", "p2", "y0"))
	if !first[0].CreatedAt.Equal(first[1].CreatedAt) {
		t.Fatalf("the segments of a bundle have different commit times: %+v", first)
	}
	k.age(first[0].PartitionID, time.Hour)
	k.age(first[1].PartitionID, time.Hour)
	second := k.commit(segOf(tenant, "tie", "p2", "y1", "y2"), segOf(tenant, "tie", "p1", "x1"))
	bs := func(r ports.SegmentResult, n int64) ports.BrowseSegment {
		return ports.BrowseSegment{PartitionID: r.PartitionID, BaseOffset: r.BaseOffset, EndOffset: r.BaseOffset + n - 1,
			CreatedAt: k.committed(r.PartitionID, r.BaseOffset)}
	}
	byID := func(x, y ports.BrowseSegment) int { return strings.Compare(x.PartitionID, y.PartitionID) }
	newer := []ports.BrowseSegment{bs(second[0], 2), bs(second[1], 1)}
	older := []ports.BrowseSegment{bs(first[0], 1), bs(first[1], 1)}
	slices.SortFunc(newer, byID)
	slices.SortFunc(older, byID)
	want := append(newer, older...)
	wantSegments(t, browse(t, f, tenant, ports.MessageFilter{Queue: "tie"}, nil, 10).Segments, want...)
	// A key inside a tie continues with the rest of it.
	for i := range want {
		key := want[i].Key()
		wantSegments(t, browse(t, f, tenant, ports.MessageFilter{Queue: "tie"}, &key, 10).Segments, want[i+1:]...)
	}
}

func testBrowseFilters(t *testing.T, f MessageFixture) {
	w := newMsgWorld(t, f)
	micro := time.Microsecond
	tests := []struct {
		name   string
		tenant string
		f      ports.MessageFilter
		want   []int // S<n>
	}{
		{"everything", tenant, ports.MessageFilter{}, []int{5, 4, 3, 2, 1}},
		{"queue", tenant, ports.MessageFilter{Queue: "q"}, []int{5, 3, 2, 1}},
		{"partition", tenant, ports.MessageFilter{Queue: "q", Partition: "a"}, []int{3, 1}},
		{"partition of any queue", tenant, ports.MessageFilter{Partition: "x"}, []int{4}},
		{"namespace", tenant, ports.MessageFilter{Namespace: "ns"}, []int{5, 3, 2, 1}},
		{"task", tenant, ports.MessageFilter{Task: "tk"}, []int{5, 3, 2, 1}},
		{"a namespace of no queue", tenant, ports.MessageFilter{Namespace: "nope"}, nil},
		{"a queue and a partition of another", tenant, ports.MessageFilter{Queue: "r", Partition: "a"}, nil},
		{"from and to, both inclusive", tenant, ports.MessageFilter{From: w.seg(2).CreatedAt, To: w.seg(4).CreatedAt}, []int{4, 3, 2}},
		{"from only", tenant, ports.MessageFilter{From: w.seg(4).CreatedAt}, []int{5, 4}},
		{"to only", tenant, ports.MessageFilter{To: w.seg(1).CreatedAt}, []int{1}},
		{"from after the last commit", tenant, ports.MessageFilter{From: w.seg(5).CreatedAt.Add(micro)}, nil},
		{"to before the first commit", tenant, ports.MessageFilter{To: w.seg(1).CreatedAt.Add(-micro)}, nil},
		{"names and times", tenant, ports.MessageFilter{Queue: "q", From: w.seg(2).CreatedAt.Add(micro)}, []int{5, 3}},
		{"another tenant", otherTenant, ports.MessageFilter{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want []ports.BrowseSegment
			for _, n := range tt.want {
				want = append(want, w.seg(n))
			}
			wantSegments(t, browse(t, f, tt.tenant, tt.f, nil, 100).Segments, want...)
		})
	}
}

func testBrowseRetention(t *testing.T, f MessageFixture) {
	w := newMsgWorld(t, f)
	a := w.pids["a"]
	check := func(step string, first int64, want ...ports.BrowseSegment) {
		t.Helper()
		page := browse(t, f, tenant, ports.MessageFilter{Queue: "q", Partition: "a"}, nil, 100)
		wantSegments(t, page.Segments, want...)
		if len(want) > 0 && (len(page.Partitions) != 1 || page.Partitions[0].First != first) {
			t.Fatalf("%s: partitions %+v, want a with first %d", step, page.Partitions, first)
		}
	}
	check("everything retained", 0, w.seg(3), w.seg(1))
	w.k.w.Trim(t, a, 1, 0)
	check("log_start inside S1", 1, w.seg(3), w.seg(1))
	w.k.w.Trim(t, a, 1, 3)
	check("S1's hashes are gone", 3, w.seg(3))
	w.k.w.Trim(t, a, 4, 4)
	check("nothing retained", 4)
	// The other partitions are not concerned.
	wantSegments(t, browse(t, f, tenant, ports.MessageFilter{}, nil, 100).Segments, w.seg(5), w.seg(4), w.seg(2))
}

func testBrowseModes(t *testing.T, f MessageFixture) {
	w := newMsgWorld(t, f)
	w.k.take("q", "b", "h", 0, 0, true)
	future := w.seg(5).CreatedAt.Add(time.Hour)
	tests := []struct {
		name   string
		tenant string
		f      ports.MessageFilter
		want   ports.GroupModes
	}{
		{"everything", tenant, ports.MessageFilter{}, ports.GroupModes{QueueMode: true, NamedGroups: 2}},
		{"queue", tenant, ports.MessageFilter{Queue: "q"}, ports.GroupModes{NamedGroups: 2}},
		{"partition", tenant, ports.MessageFilter{Queue: "q", Partition: "a"}, ports.GroupModes{NamedGroups: 1}},
		{"a queue-mode queue", tenant, ports.MessageFilter{Queue: "r"}, ports.GroupModes{QueueMode: true}},
		{"namespace", tenant, ports.MessageFilter{Namespace: "ns"}, ports.GroupModes{NamedGroups: 2}},
		{"times do not matter", tenant, ports.MessageFilter{Queue: "r", From: future}, ports.GroupModes{QueueMode: true}},
		{"no such queue", tenant, ports.MessageFilter{Queue: "nope"}, ports.GroupModes{}},
		{"another tenant", otherTenant, ports.MessageFilter{}, ports.GroupModes{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.Store.BrowseModes(context.Background(), tt.tenant, tt.f)
			if err != nil || got != tt.want {
				t.Fatalf("BrowseModes = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func testSegmentBlobs(t *testing.T, f MessageFixture) {
	w := newMsgWorld(t, f)
	ctx := context.Background()
	other := w.k.commit(segOf(otherTenant, "q", "a", "o0"))[0]
	ref := func(s ports.BrowseSegment) ports.SegmentRef {
		return ports.SegmentRef{PartitionID: s.PartitionID, BaseOffset: s.BaseOffset}
	}
	read := func(refs ...ports.SegmentRef) []ports.SegmentBlob {
		t.Helper()
		got, err := f.Store.SegmentBlobs(ctx, refs)
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(got, func(x, y ports.SegmentBlob) int {
			return cmp.Or(strings.Compare(x.PartitionID, y.PartitionID), cmp.Compare(x.BaseOffset, y.BaseOffset))
		})
		return got
	}
	refs := []ports.SegmentRef{ref(w.seg(1)), ref(w.seg(4)), ref(w.seg(5)),
		{PartitionID: w.seg(1).PartitionID, BaseOffset: 1}, // inside S1: no segment starts there
		{PartitionID: unknownID, BaseOffset: 0},
		{PartitionID: other.PartitionID, BaseOffset: 0}, // no tenant: any segment named
	}
	want := []ports.BrowseSegment{w.seg(1), w.seg(4), w.seg(5),
		{PartitionID: other.PartitionID, BaseOffset: 0, EndOffset: 0, CreatedAt: other.CreatedAt}}
	slices.SortFunc(want, func(x, y ports.BrowseSegment) int {
		return cmp.Or(strings.Compare(x.PartitionID, y.PartitionID), cmp.Compare(x.BaseOffset, y.BaseOffset))
	})
	w.blobs[ports.SegmentRef{PartitionID: other.PartitionID}] = segOf(otherTenant, "q", "a", "o0").Blob
	got := read(refs...)
	if len(got) != len(want) {
		t.Fatalf("%d segments, want %d: %+v", len(got), len(want), got)
	}
	for i, g := range got {
		ws := want[i]
		if g.PartitionID != ws.PartitionID || g.BaseOffset != ws.BaseOffset || g.Count != int(ws.EndOffset-ws.BaseOffset+1) ||
			!g.CreatedAt.Equal(ws.CreatedAt) || !bytes.Equal(g.Blob, w.blobs[ref(ws)]) {
			t.Errorf("segment %d: %+v (blob %q), want %+v (blob %q)", i, g, g.Blob, ws, w.blobs[ref(ws)])
		}
	}
	// The answer is the caller's.
	got[0].Blob[0] ^= 0xFF
	if again := read(ref(want[0])); len(again) != 1 || !bytes.Equal(again[0].Blob, w.blobs[ref(want[0])]) {
		t.Fatalf("changing an answer changed the store: %+v", again)
	}
	if got := read(); len(got) != 0 {
		t.Fatalf("no refs read %+v", got)
	}
	// A segment removed meanwhile (its queue deleted) is missing.
	w.k.w.DeleteQueue(t, tenant, "r")
	if got := read(ref(w.seg(4)), ref(w.seg(5))); len(got) != 1 || got[0].PartitionID != w.seg(5).PartitionID {
		t.Fatalf("after the deletion of r: %+v, want S5 alone", got)
	}
}

// find resolves txn's hash in the partition.
func find(t *testing.T, f MessageFixture, tenant, pid, txn string) (ports.StoredMessage, bool) {
	t.Helper()
	m, found, err := f.Store.FindMessage(context.Background(), tenant, pid, [16]byte(hash(txn)))
	if err != nil {
		t.Fatalf("FindMessage(%s): %v", txn, err)
	}
	return m, found
}

// dupWorld: queue dup without deduplication, partition p: [t0] [tx t1] [t0] (offsets 0,
// 1..2, 3). g and then h dead-letter offset 3. It returns the partition id and the three
// push results.
func dupWorld(k adminKit, f MessageFixture) (string, []ports.SegmentResult) {
	k.t.Helper()
	f.Configure(k.t, tenant, queueConfig("dup", func(c *ports.QueueConfig) { c.DedupWindowSeconds = 0 }))
	res := []ports.SegmentResult{k.push("dup", "p", "t0"), k.push("dup", "p", "tx", "t1"), k.push("dup", "p", "t0")}
	for _, g := range []string{"g", "h"} {
		k.take("dup", "p", g, 0, 2, true)
		k.dlq("dup", "p", g, "t0", 3)
	}
	return res[0].PartitionID, res
}

func testFindMessage(t *testing.T, f MessageFixture) {
	k := newAdminKit(t, f.AdminWorld)
	pid, res := dupWorld(k, f)
	m, found := find(t, f, tenant, pid, "t0")
	if !found || m.Offset != 3 || m.Segment.BaseOffset != 3 || m.Segment.Count != 1 || !m.Segment.CreatedAt.Equal(res[2].CreatedAt) ||
		!bytes.Equal(m.Segment.Blob, segOf(tenant, "dup", "p", "t0").Blob) {
		t.Fatalf("FindMessage(t0) = %+v, %v; want offset 3, the newest occurrence, in its segment", m, found)
	}
	if m.Now.Before(res[2].CreatedAt) {
		t.Errorf("now %v is before the message's commit %v", m.Now, res[2].CreatedAt)
	}
	p := m.Partition
	if p.ID != pid || p.Name != "p" || p.Queue.Name != "dup" || p.Queue.DedupWindowSeconds != 0 || p.First != 0 || p.LastOffset != 3 ||
		!sameCursors(p.Cursors, []ports.GroupCursor{{Group: "g", Committed: 3, BatchEnd: 3}, {Group: "h", Committed: 3, BatchEnd: 3}}) {
		t.Errorf("partition %+v", p)
	}
	// Both dead letters of the message, newest failure first, with their names.
	if len(m.Dead) != 2 || m.Dead[0].ConsumerGroup != "h" || m.Dead[1].ConsumerGroup != "g" ||
		m.Dead[0].FailedAt.Before(m.Dead[1].FailedAt) {
		t.Fatalf("dead letters %+v, want h's then g's", m.Dead)
	}
	for _, d := range m.Dead {
		if d.ID == "" || d.Queue != "dup" || d.Partition != "p" || d.PartitionID != pid || d.TransactionID != "t0" ||
			d.ErrorMessage == nil || *d.ErrorMessage != "failed t0" || d.RetryCount != 0 || !d.CreatedAt.Equal(res[2].CreatedAt) {
			t.Errorf("dead letter %+v", d)
		}
	}
	// Inside a segment of several messages.
	if m, found := find(t, f, tenant, pid, "t1"); !found || m.Offset != 2 || m.Segment.BaseOffset != 1 || m.Segment.Count != 2 || len(m.Dead) != 0 {
		t.Fatalf("FindMessage(t1) = %+v, %v", m, found)
	}
	for _, tc := range []struct{ name, tenant, pid, txn string }{
		{"an unknown transaction id", tenant, pid, "nope"},
		{"an unknown partition", tenant, unknownID, "t0"},
		{"another tenant's partition", otherTenant, pid, "t0"},
	} {
		if m, found := find(t, f, tc.tenant, tc.pid, tc.txn); found {
			t.Errorf("%s: found %+v", tc.name, m)
		}
	}
	// The hash window: ids whose hashes retention removed are not found.
	k.w.Trim(t, pid, 0, 3)
	if m, found := find(t, f, tenant, pid, "t0"); !found || m.Offset != 3 || m.Partition.First != 3 {
		t.Fatalf("after the hash window moved to 3: %+v, %v", m, found)
	}
	if _, found := find(t, f, tenant, pid, "t1"); found {
		t.Fatal("t1 (offset 2) is found outside the hash window")
	}
	k.w.Trim(t, pid, 0, 4)
	if _, found := find(t, f, tenant, pid, "t0"); found {
		t.Fatal("t0 is found with every hash outside the window")
	}
}

func testMessageSegmentAt(t *testing.T, f MessageFixture) {
	w := newMsgWorld(t, f)
	ctx := context.Background()
	a := w.pids["a"]
	type segAtCase struct {
		name   string
		tenant string
		pid    string
		off    int64
		want   int // S<n>; 0 = not found
	}
	tests := []segAtCase{
		{"the first offset of a segment", tenant, a, 0, 1},
		{"inside a segment", tenant, a, 2, 1},
		{"a later segment", tenant, a, 3, 3},
		{"past the last offset", tenant, a, 4, 0},
		{"a negative offset", tenant, a, -1, 0},
		{"an unknown partition", tenant, unknownID, 0, 0},
		{"another tenant's partition", otherTenant, a, 0, 0},
	}
	run := func(tests []segAtCase) {
		t.Helper()
		for _, tt := range tests {
			got, found, err := f.Store.SegmentAt(ctx, tt.tenant, tt.pid, tt.off)
			switch {
			case err != nil:
				t.Fatalf("%s: %v", tt.name, err)
			case tt.want == 0 && found:
				t.Errorf("%s: found %+v", tt.name, got)
			case tt.want != 0:
				s := w.seg(tt.want)
				if !found || got.BaseOffset != s.BaseOffset || got.Count != int(s.EndOffset-s.BaseOffset+1) ||
					!got.CreatedAt.Equal(s.CreatedAt) || !bytes.Equal(got.Blob, w.blobs[ports.SegmentRef{PartitionID: a, BaseOffset: s.BaseOffset}]) {
					t.Errorf("%s: %+v, %v; want S%d", tt.name, got, found, tt.want)
				}
			}
		}
	}
	run(tests)
	// Offsets retention removed are not read, even where their segment is still stored.
	w.k.w.Trim(t, a, 2, 0)
	tests[0].want = 0
	run(tests)
}

// dlWorld: queue dl, partition p: m0, m1. g and then h dead-letter m0, g dead-letters m1.
// It returns the partition id and m0's rows, newest first.
func dlWorld(k adminKit, f MessageFixture, queue string) (string, []ports.DeadLetterInfo) {
	k.t.Helper()
	pid := k.pushEach(queue, "p", "m0", "m1")
	k.dlq(queue, "p", "g", "m0", 0)
	k.dlq(queue, "p", "h", "m0", 0)
	k.dlq(queue, "p", "g", "m1", 1)
	m, found := find(k.t, f, tenant, pid, "m0")
	if !found || len(m.Dead) != 2 {
		k.t.Fatalf("m0: %+v, %v; want 2 dead letters", m, found)
	}
	return pid, m.Dead
}

func testNewestDeadLetter(t *testing.T, f MessageFixture) {
	k := newAdminKit(t, f.AdminWorld)
	pid, dead := dlWorld(k, f, "dl")
	ctx := context.Background()
	m1, _ := find(t, f, tenant, pid, "m1")
	if len(m1.Dead) != 1 {
		t.Fatalf("m1's dead letters: %+v", m1.Dead)
	}
	tests := []struct {
		name, tenant, pid, txn string
		want                   string // "" = not found
	}{
		{"the newest of two", tenant, pid, "m0", dead[0].ID},
		{"another message's own", tenant, pid, "m1", m1.Dead[0].ID},
		{"a message without dead letters", tenant, pid, "m2", ""},
		{"an unknown partition", tenant, unknownID, "m0", ""},
		{"another tenant's", otherTenant, pid, "m0", ""},
	}
	for _, tt := range tests {
		id, found, err := f.Store.NewestDeadLetter(ctx, tt.tenant, tt.pid, tt.txn)
		if err != nil || found != (tt.want != "") || id != tt.want {
			t.Errorf("%s: NewestDeadLetter = %q, %v, %v; want %q", tt.name, id, found, err, tt.want)
		}
	}
	// Once the newest is gone, the older one.
	if n, err := f.Store.DeleteDeadLetters(ctx, tenant, pid, "m0"); err != nil || n != 2 {
		t.Fatalf("DeleteDeadLetters = %d, %v", n, err)
	}
	if id, found, err := f.Store.NewestDeadLetter(ctx, tenant, pid, "m0"); err != nil || found {
		t.Fatalf("after the deletion: %q, %v, %v", id, found, err)
	}
}

// move moves dead letter id, handing the row to fn, and fails on an error.
func move(t *testing.T, f MessageFixture, tenant, id string, fn func(context.Context, ports.DeadLetter) (bool, error)) ports.DeadLetterMove {
	t.Helper()
	r, err := f.Store.MoveDeadLetter(context.Background(), tenant, id, fn)
	if err != nil {
		t.Fatalf("MoveDeadLetter(%s): %v", id, err)
	}
	return r
}

func testMoveDeadLetter(t *testing.T, f MessageFixture) {
	k := newAdminKit(t, f.AdminWorld)
	pid, dead := dlWorld(k, f, "dl")
	ctx := context.Background()
	var got []ports.DeadLetter
	take := func(_ context.Context, d ports.DeadLetter) (bool, error) { got = append(got, d); return true, nil }
	if r := move(t, f, tenant, dead[0].ID, take); r != (ports.DeadLetterMove{Found: true, Removed: true}) {
		t.Fatalf("MoveDeadLetter = %+v, want found and removed", r)
	}
	if len(got) != 1 {
		t.Fatalf("move called %d times", len(got))
	}
	d, want := got[0], dead[0]
	if d.ID != want.ID || d.Queue != "dl" || d.Partition != "p" || d.PartitionID != pid || d.ConsumerGroup != "h" ||
		d.TransactionID != "m0" || d.ErrorMessage == nil || *d.ErrorMessage != "failed m0" || d.RetryCount != 0 ||
		!d.CreatedAt.Equal(k.committed(pid, 0)) || !d.FailedAt.Equal(want.FailedAt) || d.Offset != 0 || d.FrameIndex != 0 ||
		!bytes.Equal(d.Blob, segOf(tenant, "dl", "p", "m0").Blob) {
		t.Fatalf("the row handed to move: %+v", d)
	}
	if id, found, err := f.Store.NewestDeadLetter(ctx, tenant, pid, "m0"); err != nil || !found || id != dead[1].ID {
		t.Fatalf("after the move the newest row of m0 is %q, %v, %v; want %q", id, found, err, dead[1].ID)
	}
	// The row is gone: a second move finds nothing and does not call move.
	got = nil
	if r := move(t, f, tenant, dead[0].ID, take); r != (ports.DeadLetterMove{}) || len(got) != 0 {
		t.Fatalf("a second move = %+v (move called %d times), want not found", r, len(got))
	}
	for _, tc := range []struct{ name, tenant, id string }{
		{"an unknown id", tenant, unknownID},
		{"another tenant's row", otherTenant, dead[1].ID},
	} {
		if r := move(t, f, tc.tenant, tc.id, take); r != (ports.DeadLetterMove{}) || len(got) != 0 {
			t.Errorf("%s: %+v (move called %d times)", tc.name, r, len(got))
		}
	}
	if m, _ := find(t, f, tenant, pid, "m0"); len(m.Dead) != 1 || m.Dead[0].ID != dead[1].ID {
		t.Fatalf("m0's rows after the moves: %+v", m.Dead)
	}
}

func testMoveKeeps(t *testing.T, f MessageFixture) {
	k := newAdminKit(t, f.AdminWorld)
	pid, dead := dlWorld(k, f, "dl")
	ctx := context.Background()
	boom := errors.New("boom")
	r, err := f.Store.MoveDeadLetter(ctx, tenant, dead[0].ID, func(context.Context, ports.DeadLetter) (bool, error) { return true, boom })
	if !errors.Is(err, boom) || r != (ports.DeadLetterMove{Found: true}) {
		t.Fatalf("a failing move = %+v, %v; want found and the move's error", r, err)
	}
	if r := move(t, f, tenant, dead[0].ID, func(context.Context, ports.DeadLetter) (bool, error) { return false, nil }); r != (ports.DeadLetterMove{Found: true}) {
		t.Fatalf("a declining move = %+v, want found, not removed", r)
	}
	if m, _ := find(t, f, tenant, pid, "m0"); len(m.Dead) != 2 {
		t.Fatalf("m0's rows after moves that kept them: %+v", m.Dead)
	}
}

func testMovePushes(t *testing.T, f MessageFixture) {
	k := newAdminKit(t, f.AdminWorld)
	pid, dead := dlWorld(k, f, "dl")
	var pushed ports.SegmentResult
	r := move(t, f, tenant, dead[0].ID, func(ctx context.Context, d ports.DeadLetter) (bool, error) {
		res, err := f.Segments.PushSegments(ctx, []ports.Segment{segOf(tenant, d.Queue, d.Partition, "dlq:"+d.ID[:8])})
		if err != nil || len(res) != 1 {
			return false, fmt.Errorf("push: %v, %v", res, err)
		}
		pushed = res[0]
		return true, nil
	})
	if r != (ports.DeadLetterMove{Found: true, Removed: true}) || pushed.Status != ports.SegmentQueued ||
		pushed.PartitionID != pid || pushed.BaseOffset != 2 {
		t.Fatalf("MoveDeadLetter = %+v, pushed %+v; want removed after a push at offset 2 of the row's partition", r, pushed)
	}
}

func testMoveTurns(t *testing.T, f MessageFixture) {
	k := newAdminKit(t, f.AdminWorld)
	_, dead := dlWorld(k, f, "dl")
	entered, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	var first ports.DeadLetterMove
	var firstErr error
	wg.Go(func() {
		first, firstErr = f.Store.MoveDeadLetter(context.Background(), tenant, dead[0].ID, func(context.Context, ports.DeadLetter) (bool, error) {
			close(entered)
			<-release
			return true, nil
		})
	})
	<-entered
	// The first move holds the row: a second one, started now, must wait for it and then
	// find the row gone, never run its move beside the first's.
	var calls int
	var second ports.DeadLetterMove
	var secondErr error
	started := make(chan struct{})
	wg.Go(func() {
		close(started)
		second, secondErr = f.Store.MoveDeadLetter(context.Background(), tenant, dead[0].ID, func(context.Context, ports.DeadLetter) (bool, error) {
			calls++
			return true, nil
		})
	})
	<-started
	// Another row is not held up by it (and the second move is under way meanwhile).
	if r := move(t, f, tenant, dead[1].ID, func(context.Context, ports.DeadLetter) (bool, error) { return false, nil }); !r.Found {
		t.Errorf("a move of another row = %+v, want found", r)
	}
	close(release)
	wg.Wait()
	if firstErr != nil || secondErr != nil || first != (ports.DeadLetterMove{Found: true, Removed: true}) ||
		second != (ports.DeadLetterMove{}) || calls != 0 {
		t.Fatalf("first %+v (%v), second %+v (%v) with %d calls; want the first to move, the second to find nothing",
			first, firstErr, second, secondErr, calls)
	}
}

func testDeleteDeadLetters(t *testing.T, f MessageFixture) {
	k := newAdminKit(t, f.AdminWorld)
	pid, _ := dlWorld(k, f, "dl")
	ctx := context.Background()
	del := func(tenant, pid, txn string) int64 {
		t.Helper()
		n, err := f.Store.DeleteDeadLetters(ctx, tenant, pid, txn)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := del(otherTenant, pid, "m0"); n != 0 {
		t.Fatalf("another tenant deleted %d rows", n)
	}
	if n := del(tenant, pid, "m0"); n != 2 {
		t.Fatalf("deleted %d rows of m0, want both groups' 2", n)
	}
	if n := del(tenant, pid, "m0"); n != 0 {
		t.Fatalf("a second deletion deleted %d", n)
	}
	if m, _ := find(t, f, tenant, pid, "m0"); len(m.Dead) != 0 {
		t.Fatalf("m0 still has %+v", m.Dead)
	}
	if m, _ := find(t, f, tenant, pid, "m1"); len(m.Dead) != 1 {
		t.Fatalf("m1's row went too: %+v", m.Dead)
	}
	if n := del(tenant, unknownID, "m1"); n != 0 {
		t.Fatalf("an unknown partition deleted %d", n)
	}
}

func testPurgeDeadLetters(t *testing.T, f MessageFixture) {
	k := newAdminKit(t, f.AdminWorld)
	p1, _ := dlWorld(k, f, "dl1") // g: 2 rows, h: 1
	p2, _ := dlWorld(k, f, "dl2")
	ctx := context.Background()
	tests := []struct {
		name, tenant, queue, group string
		want                       int64
	}{
		{"another tenant's queue", otherTenant, "dl1", "", 0},
		{"one group of a queue", tenant, "dl1", "g", 2},
		{"again", tenant, "dl1", "g", 0},
		{"a group without rows", tenant, "dl1", "nobody", 0},
		{"what is left of the queue", tenant, "dl1", "", 1},
		{"an unknown queue", tenant, "nope", "", 0},
	}
	for _, tt := range tests {
		n, err := f.Store.PurgeDeadLetters(ctx, tt.tenant, tt.queue, tt.group)
		if err != nil || n != tt.want {
			t.Errorf("%s: PurgeDeadLetters = %d, %v; want %d", tt.name, n, err, tt.want)
		}
	}
	if m, _ := find(t, f, tenant, p1, "m0"); len(m.Dead) != 0 {
		t.Errorf("dl1 keeps %+v", m.Dead)
	}
	if m, _ := find(t, f, tenant, p2, "m0"); len(m.Dead) != 2 {
		t.Errorf("the other queue lost rows: %+v", m.Dead)
	}
}

func testMessagesCancelled(t *testing.T, f MessageFixture) {
	k := newAdminKit(t, f.AdminWorld)
	pid, dead := dlWorld(k, f, "dl")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	mv := func(context.Context, ports.DeadLetter) (bool, error) { called = true; return true, nil }
	for name, call := range map[string]func() error{
		"BrowseSegments": func() error {
			_, err := f.Store.BrowseSegments(ctx, tenant, ports.MessageFilter{From: longAgo}, nil, 10)
			return err
		},
		"BrowseModes": func() error { _, err := f.Store.BrowseModes(ctx, tenant, ports.MessageFilter{}); return err },
		"SegmentBlobs": func() error {
			_, err := f.Store.SegmentBlobs(ctx, []ports.SegmentRef{{PartitionID: pid}})
			return err
		},
		"FindMessage":      func() error { _, _, err := f.Store.FindMessage(ctx, tenant, pid, [16]byte(hash("m0"))); return err },
		"SegmentAt":        func() error { _, _, err := f.Store.SegmentAt(ctx, tenant, pid, 0); return err },
		"NewestDeadLetter": func() error { _, _, err := f.Store.NewestDeadLetter(ctx, tenant, pid, "m0"); return err },
		"MoveDeadLetter":   func() error { _, err := f.Store.MoveDeadLetter(ctx, tenant, dead[0].ID, mv); return err },
		"DeleteDeadLetters": func() error {
			_, err := f.Store.DeleteDeadLetters(ctx, tenant, pid, "m0")
			return err
		},
		"PurgeDeadLetters": func() error { _, err := f.Store.PurgeDeadLetters(ctx, tenant, "dl", ""); return err },
	} {
		if err := call(); err == nil {
			t.Errorf("%s with a cancelled context succeeded", name)
		}
	}
	if called {
		t.Error("a cancelled MoveDeadLetter called move")
	}
	if m, _ := find(t, f, tenant, pid, "m0"); len(m.Dead) != 2 {
		t.Fatalf("after the cancelled calls m0 has %+v", m.Dead)
	}
}

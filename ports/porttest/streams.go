package porttest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/queen-go/queen/ports"
)

// StreamStore runs the conformance suite of ports.StreamStore; newFixture must return an
// isolated store whose Streams, Segments and Consume share one state.
func StreamStore(t *testing.T, newFixture func(t *testing.T) ConsumeFixture) {
	tests := []struct {
		name string
		run  func(k kit)
	}{
		{"registration is idempotent by name", testStreamRegister},
		{"a changed hash needs reset, which wipes the state", testStreamReset},
		{"state filters", testStreamFilters},
		{"unknown ids read nothing", testStreamUnknown},
		{"ops apply per key, last op wins", testStreamOps},
		{"an upsert for an unknown query rolls back", testStreamUnknownQuery},
		{"pushes and ack commit with the state", testStreamCommit},
		{"a refused ack rolls everything back", testStreamAckRefused},
		{"release_lease false keeps the lease", testStreamKeepLease},
		{"an ack without a cursor leaves a cursor-only row", testStreamCursorOnly},
		{"a partial ack with release frees the partition", testStreamPartialRelease},
		{"a dead-letter ack", testStreamDLQ},
		{"duplicates are resolved and the rest written", testStreamResolve},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(newKit(t, newFixture(t)))
		})
	}
}

func (k kit) register(name, hash string, reset bool) ports.Registration {
	k.t.Helper()
	r, err := k.f.Streams.RegisterQuery(context.Background(), ports.StreamQuery{Name: name, SourceQueue: "in",
		SinkQueue: "out", ConfigHash: hash}, reset)
	if err != nil || r.Query.ID == "" || r.Query.Name != name {
		k.t.Fatalf("RegisterQuery(%s, %s, %v): %+v, %v", name, hash, reset, r, err)
	}
	return r
}

func (k kit) state(q, p string, f ports.StateFilter) map[string]string {
	k.t.Helper()
	rows, err := k.f.Streams.StreamState(context.Background(), q, p, f)
	if err != nil {
		k.t.Fatalf("StreamState(%s, %s, %+v): %v", q, p, f, err)
	}
	out := make(map[string]string, len(rows))
	for i, r := range rows {
		if i > 0 && rows[i-1].Key >= r.Key || r.UpdatedAt.IsZero() {
			k.t.Fatalf("rows out of key order or without updated_at: %+v", rows)
		}
		var b bytes.Buffer
		var v any
		if err := json.Unmarshal(r.Value, &v); err != nil {
			k.t.Fatalf("row %s: value %q: %v", r.Key, r.Value, err)
		}
		_ = json.NewEncoder(&b).Encode(v)
		out[r.Key] = string(bytes.TrimSpace(b.Bytes()))
	}
	return out
}

func wantState(t *testing.T, got map[string]string, want ...string) {
	t.Helper()
	keys := make([]string, 0, len(got))
	for key := range got {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	var flat []string
	for _, key := range keys {
		flat = append(flat, key, got[key])
	}
	if !slices.Equal(flat, want) {
		t.Fatalf("state %q, want %q", flat, want)
	}
}

func upsert(key, value string) ports.StateOp { return ports.StateOp{Key: key, Value: []byte(value)} }
func del(key string) ports.StateOp           { return ports.StateOp{Key: key, Delete: true} }

// cycle commits c, which must succeed.
func (k kit) cycle(c ports.Cycle) ports.CycleResult {
	k.t.Helper()
	r, err := k.f.Streams.Cycle(context.Background(), c)
	if err != nil {
		k.t.Fatalf("Cycle: %v", err)
	}
	for i, pr := range r.Pushed {
		if pr.Status == ports.SegmentQueued {
			k.pushed.Store(segKey(pr), string(c.Segments[i].Blob))
		}
	}
	return r
}

func segKey(r ports.SegmentResult) string { return fmt.Sprint(r.PartitionID, "/", r.BaseOffset) }

// refused runs c, which must roll back with msg.
func (k kit) refused(c ports.Cycle, msg string) {
	k.t.Helper()
	r, err := k.f.Streams.Cycle(context.Background(), c)
	var rb *ports.RollbackError
	if !errors.As(err, &rb) || rb.Msg != msg {
		k.t.Fatalf("Cycle: %+v, %v; want a rollback %q", r, err, msg)
	}
}

const shardP = "00000000-0000-4000-8000-0000000000a1"

func testStreamRegister(k kit) {
	a := k.register("q1", "h1", false)
	if !a.Fresh || a.Reset || a.Mismatch {
		k.t.Fatalf("first registration: %+v", a)
	}
	k.cycle(ports.Cycle{QueryID: a.Query.ID, PartitionID: shardP, Ops: []ports.StateOp{upsert("k", `{"n":1}`)}})
	for _, reset := range []bool{false, true} {
		b := k.register("q1", "h1", reset)
		if b.Fresh || b.Reset || b.Mismatch || b.Query.ID != a.Query.ID {
			k.t.Fatalf("same hash, reset %v: %+v, first %+v", reset, b, a)
		}
	}
	wantState(k.t, k.state(a.Query.ID, shardP, ports.StateFilter{}), "k", `{"n":1}`)
	if c := k.register("q2", "h1", false); !c.Fresh || c.Query.ID == a.Query.ID {
		k.t.Fatalf("another name: %+v", c)
	}
}

func testStreamReset(k kit) {
	a := k.register("q", "h1", false)
	k.cycle(ports.Cycle{QueryID: a.Query.ID, PartitionID: shardP, Ops: []ports.StateOp{upsert("k", `1`)}})
	m := k.register("q", "h2", false)
	if !m.Mismatch || m.Query.ConfigHash != "h1" || m.Query.ID != a.Query.ID {
		k.t.Fatalf("changed hash: %+v", m)
	}
	wantState(k.t, k.state(a.Query.ID, shardP, ports.StateFilter{}), "k", `1`)
	r := k.register("q", "h2", true)
	if !r.Reset || r.Fresh || r.Query.ID != a.Query.ID || r.Query.ConfigHash != "h2" {
		k.t.Fatalf("reset: %+v", r)
	}
	wantState(k.t, k.state(a.Query.ID, shardP, ports.StateFilter{}))
	if again := k.register("q", "h2", false); again.Mismatch || again.Reset {
		k.t.Fatalf("after reset: %+v", again)
	}
}

func testStreamFilters(k kit) {
	q := k.register("q", "h", false).Query.ID
	k.cycle(ports.Cycle{QueryID: q, PartitionID: shardP, Ops: []ports.StateOp{
		upsert("a_1", `{"windowEnd":100}`), upsert("ab1", `{"windowEnd":200}`), upsert("a%2", `{"windowEnd":"100"}`),
		upsert("b", `{"windowEnd":100.5}`), upsert("c", `{"other":1}`), upsert("d", `[1]`), upsert("", `null`),
	}})
	f := func(set func(*ports.StateFilter)) map[string]string {
		var f ports.StateFilter
		set(&f)
		return k.state(q, shardP, f)
	}
	if got := f(func(*ports.StateFilter) {}); len(got) != 7 || got[""] != "null" {
		k.t.Fatalf("every row: %v", got)
	}
	wantState(k.t, f(func(f *ports.StateFilter) { f.Prefix = "a_" }), "a_1", `{"windowEnd":100}`)
	wantState(k.t, f(func(f *ports.StateFilter) { f.Prefix = "a%" }), "a%2", `{"windowEnd":"100"}`)
	wantState(k.t, f(func(f *ports.StateFilter) { f.Ripe, f.RipeAtOrBefore = true, 100 }), "a_1", `{"windowEnd":100}`)
	wantState(k.t, f(func(f *ports.StateFilter) { f.Ripe, f.RipeAtOrBefore = true, 100.5 }),
		"a_1", `{"windowEnd":100}`, "b", `{"windowEnd":100.5}`)
	wantState(k.t, f(func(f *ports.StateFilter) { f.Ripe, f.RipeAtOrBefore, f.Prefix = true, 1000, "a" }),
		"a_1", `{"windowEnd":100}`, "ab1", `{"windowEnd":200}`)
	wantState(k.t, f(func(f *ports.StateFilter) { f.Keys = []string{"c", "", "zz"} }), "", "null", "c", `{"other":1}`)
	wantState(k.t, f(func(f *ports.StateFilter) { f.Keys, f.Prefix = []string{"c", "b"}, "b" }), "b", `{"windowEnd":100.5}`)
}

func testStreamUnknown(k kit) {
	q := k.register("q", "h", false).Query.ID
	k.cycle(ports.Cycle{QueryID: q, PartitionID: shardP, Ops: []ports.StateOp{upsert("k", `1`)}})
	wantState(k.t, k.state(q, unknownID, ports.StateFilter{}))
	wantState(k.t, k.state(unknownID, shardP, ports.StateFilter{}))
}

func testStreamOps(k kit) {
	q := k.register("q", "h", false).Query.ID
	k.cycle(ports.Cycle{QueryID: q, PartitionID: shardP, Ops: []ports.StateOp{upsert("a", `1`), upsert("b", `{"x": [1, 2]}`)}})
	k.cycle(ports.Cycle{QueryID: q, PartitionID: shardP, Ops: []ports.StateOp{upsert("a", `2`), del("b"), del("zz")}})
	wantState(k.t, k.state(q, shardP, ports.StateFilter{}), "a", "2")
	// Another partition of the same query is another shard.
	wantState(k.t, k.state(q, unknownID, ports.StateFilter{}))
}

func testStreamUnknownQuery(k kit) {
	c := ports.Cycle{QueryID: unknownID, PartitionID: shardP, Ops: []ports.StateOp{upsert("a", `1`)},
		Segments: []ports.Segment{seg("out", "p", "s0")}}
	k.refused(c, "unknown query_id "+unknownID+": register the query first")
	k.popNone(req("out"))
	// Without upserts the query is never looked at.
	k.cycle(ports.Cycle{QueryID: unknownID, PartitionID: shardP, Ops: []ports.StateOp{del("a")},
		Segments: []ports.Segment{seg("out", "p", "s0")}})
	wantSpan(k.t, k.popOne(req("out")), 0, 0, 1)
}

func testStreamCommit(k kit) {
	q := k.register("q", "h", false).Query.ID
	c, r := k.leased("in", 3)
	res := k.cycle(ports.Cycle{QueryID: q, PartitionID: c.PartitionID, Ops: []ports.StateOp{upsert("w", `{"sum":3}`)},
		Segments: []ports.Segment{seg("out", "p", "s0", "s1"), seg("out", "p2", "t0")},
		Ack:      ptr(of(c, r, "m2", ports.AckCompleted)), ReleaseLease: true})
	if res.Queue != "in" || len(res.Pushed) != 2 || res.Pushed[0].Status != ports.SegmentQueued ||
		res.Pushed[1].Status != ports.SegmentQueued || !res.Ack.OK || !res.Ack.LeaseReleased {
		k.t.Fatalf("cycle: %+v", res)
	}
	wantState(k.t, k.state(q, c.PartitionID, ports.StateFilter{}), "w", `{"sum":3}`)
	k.popNone(req("in"))
	wantSpan(k.t, k.popOne(req("out", pinned("p"))), 0, 1, 1)
}

func testStreamAckRefused(k kit) {
	q := k.register("q", "h", false).Query.ID
	c, r := k.leased("in", 2)
	k.cycle(ports.Cycle{QueryID: q, PartitionID: c.PartitionID, Ops: []ports.StateOp{upsert("w", `1`)}})
	bad := of(c, r, "m1", ports.AckCompleted)
	bad.LeaseID = unknownID
	k.refused(ports.Cycle{QueryID: q, PartitionID: c.PartitionID, Ops: []ports.StateOp{upsert("w", `2`), upsert("x", `1`)},
		Segments: []ports.Segment{seg("out", "p", "s0")}, Ack: &bad, ReleaseLease: true}, "Invalid or expired lease")
	missing := of(c, r, "nope", ports.AckCompleted)
	k.refused(ports.Cycle{QueryID: q, PartitionID: c.PartitionID, Ops: []ports.StateOp{del("w")},
		Segments: []ports.Segment{seg("out", "p", "s0")}, Ack: &missing, ReleaseLease: true}, "Message not found")
	wantState(k.t, k.state(q, c.PartitionID, ports.StateFilter{}), "w", "1")
	k.popNone(req("out"))
	// The lease is untouched: the right ack still commits.
	k.cycle(ports.Cycle{QueryID: q, PartitionID: c.PartitionID, Ack: ptr(of(c, r, "m1", ports.AckCompleted)), ReleaseLease: true})
	k.popNone(req("in"))
}

// testStreamCursorOnly: a completed ack on a partition the group has no cursor on
// (never popped there) inserts one at the acked message, without a lease (docs/streams.md
// §3.2, 6.5); an ack of a message the partition does not hold, or naming a lease, still
// rolls back.
func testStreamCursorOnly(k kit) {
	q := k.register("q", "h", false).Query.ID
	r := k.push("in", "p", "m0", "m1", "m2")
	missing := item(r.PartitionID, "", "nope", ports.AckCompleted)
	missing.Group = "g"
	k.refused(ports.Cycle{QueryID: q, PartitionID: r.PartitionID, Ack: &missing, ReleaseLease: true}, "Message not found")
	leased := item(r.PartitionID, newLease(), "m1", ports.AckCompleted)
	leased.Group = "g"
	k.refused(ports.Cycle{QueryID: q, PartitionID: r.PartitionID, Ack: &leased, ReleaseLease: true}, "Invalid or expired lease")
	ack := item(r.PartitionID, "", "m1", ports.AckCompleted)
	ack.Group = "g"
	res := k.cycle(ports.Cycle{QueryID: q, PartitionID: r.PartitionID, Ack: &ack, ReleaseLease: true})
	if !res.Ack.OK {
		k.t.Fatalf("ack without a cursor: %+v", res.Ack)
	}
	wantSpan(k.t, k.popOne(req("in", group("g"))), 2, 2, 1) // after the acked message, no lease in the way
	wantSpan(k.t, k.popOne(req("in")), 0, 2, 1)             // other groups are untouched
}

func testStreamKeepLease(k kit) {
	q := k.register("q", "h", false).Query.ID
	c, r := k.leased("in", 3)
	res := k.cycle(ports.Cycle{QueryID: q, PartitionID: c.PartitionID, Ack: ptr(of(c, r, "m2", ports.AckCompleted))})
	if !res.Ack.OK || res.Ack.LeaseReleased {
		k.t.Fatalf("whole span acked without release: %+v", res.Ack)
	}
	k.push("in", "p", "m3")
	k.popNone(req("in")) // still leased
	k.f.ExpireLease(k.t, c.PartitionID, r.Group)
	wantSpan(k.t, k.popOne(req("in")), 3, 3, 1)
}

func testStreamPartialRelease(k kit) {
	q := k.register("q", "h", false).Query.ID
	c, r := k.leased("in", 3)
	res := k.cycle(ports.Cycle{QueryID: q, PartitionID: c.PartitionID, Ack: ptr(of(c, r, "m0", ports.AckCompleted)), ReleaseLease: true})
	if !res.Ack.LeaseReleased {
		k.t.Fatalf("partial ack with release: %+v", res.Ack)
	}
	r2 := req("in")
	n := k.popOne(r2)
	if n.Start != 1 || n.End != 2 {
		k.t.Fatalf("after a partial ack: %d..%d, want 1..2", n.Start, n.End)
	}
	// Partial, kept: the rest comes back after the lease expires.
	res = k.cycle(ports.Cycle{QueryID: q, PartitionID: c.PartitionID, Ack: ptr(of(n, r2, "m1", ports.AckCompleted))})
	if res.Ack.LeaseReleased {
		k.t.Fatalf("partial ack without release: %+v", res.Ack)
	}
	k.popNone(req("in"))
	k.f.ExpireLease(k.t, c.PartitionID, r.Group)
	wantSpan(k.t, k.popOne(req("in")), 2, 2, 3) // delivered twice before
}

func testStreamDLQ(k kit) {
	q := k.register("q", "h", false).Query.ID
	c, r := k.leased("in", 3)
	it := of(c, r, "m1", ports.AckDLQ)
	it.Error = "bad"
	res := k.cycle(ports.Cycle{QueryID: q, PartitionID: c.PartitionID, Ack: &it})
	if !res.Ack.OK || !res.Ack.DLQ {
		k.t.Fatalf("dlq: %+v", res.Ack)
	}
	dl := k.f.DeadLetters(k.t, c.PartitionID)
	if len(dl) != 1 || dl[0].TransactionID != "m1" || dl[0].ErrorMessage == nil || *dl[0].ErrorMessage != "bad" {
		k.t.Fatalf("dead letters: %+v", dl)
	}
	wantSpan(k.t, k.popOne(req("in")), 2, 2, 2) // delivered once before
}

func testStreamResolve(k kit) {
	q := k.register("q", "h", false).Query.ID
	first := k.cycle(ports.Cycle{QueryID: q, PartitionID: shardP, Segments: []ports.Segment{seg("out", "p", "a", "b")}})
	var calls int
	c := ports.Cycle{QueryID: q, PartitionID: shardP, Segments: []ports.Segment{seg("out", "p", "a", "c", "b")}}
	c.Resolve = func(i int, r ports.SegmentResult) (ports.Segment, bool) {
		calls++
		if i != 0 || len(r.Dups) != 2 || r.Dups[0] != (ports.Dup{Index: 0, Offset: 0}) || r.Dups[1] != (ports.Dup{Index: 2, Offset: 1}) {
			k.t.Fatalf("Resolve(%d, %+v)", i, r)
		}
		return seg("out", "p", "c"), true
	}
	res := k.cycle(c)
	if calls != 1 || res.Pushed[0].Status != ports.SegmentQueued || res.Pushed[0].BaseOffset != 2 ||
		res.Pushed[0].PartitionID != first.Pushed[0].PartitionID {
		k.t.Fatalf("after resolve: %+v (%d calls)", res.Pushed, calls)
	}
	// All duplicate: nothing left to write.
	c.Segments = []ports.Segment{seg("out", "p", "a")}
	c.Resolve = func(int, ports.SegmentResult) (ports.Segment, bool) { return ports.Segment{}, false }
	if res := k.cycle(c); res.Pushed[0].Status != ports.SegmentDuplicate {
		k.t.Fatalf("all duplicate: %+v", res.Pushed)
	}
}

func ptr[T any](v T) *T { return &v }

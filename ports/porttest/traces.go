package porttest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

// TraceFixture is a fresh, empty ports.TraceStore, its world, and a hook counting what
// the store holds.
type TraceFixture struct {
	Store ports.TraceStore
	AdminWorld
	// StoredTraces is the number of traces stored, of every tenant, expired ones the
	// store has not deleted yet included.
	StoredTraces func(t *testing.T) int
}

// TraceStore runs the conformance suite of ports.TraceStore; newFixture must return an empty
// store of its own on every call.
func TraceStore(t *testing.T, newFixture func(t *testing.T) TraceFixture) {
	tests := []struct {
		name string
		run  func(t *testing.T, f TraceFixture)
	}{
		{"a trace reads back as it was recorded", testTraceRoundTrip},
		{"the lifetime is asked with the options of the partition's queue", testTraceLifetime},
		{"a partition the tenant does not have records nothing", testTraceUnknownPartition},
		{"a message's traces: oldest first, bounded, its own only", testMessageTraces},
		{"traces by name: newest first, paged", testTracesByName},
		{"trace names: most recently seen first, with their counts", testTraceNames},
		{"expired traces are not read; each insert deletes a batch of them", testTraceExpiry},
		{"a deleted partition's traces read without its names", testTraceDeletedPartition},
		{"a cancelled context fails and records nothing", testTracesCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, newFixture(t))
		})
	}
}

// keep is a lifetime of a day, whatever the queue's options.
func keep(ports.QueueOptions) time.Duration { return 24 * time.Hour }

// expired is a lifetime that ended an hour before the trace was recorded.
func expired(ports.QueueOptions) time.Duration { return -time.Hour }

// newTrace is a trace of message (pid, txn) with names and a data of its own.
func newTrace(pid, txn string, names ...string) ports.NewTrace {
	return ports.NewTrace{PartitionID: pid, TransactionID: txn, ConsumerGroup: "g", EventType: "info", Names: names,
		Data: fmt.Appendf(nil, `{"txn": %q,  "names": %d}`, txn, len(names))}
}

// addTrace records t with lifetime and expiry batch, and fails unless it was recorded.
func addTrace(t *testing.T, f TraceFixture, tenant string, nt ports.NewTrace, lifetime func(ports.QueueOptions) time.Duration, expire int) ports.Trace {
	t.Helper()
	tr, found, err := f.Store.AddTrace(context.Background(), tenant, nt, lifetime, expire)
	if err != nil || !found {
		t.Fatalf("AddTrace(%+v) = %v, %v", nt, found, err)
	}
	return tr
}

// sameTrace fails unless got is want (times as instants, names and data as values).
func sameTrace(t *testing.T, what string, got, want ports.Trace) {
	t.Helper()
	if got.ID != want.ID || got.PartitionID != want.PartitionID || got.TransactionID != want.TransactionID ||
		got.ConsumerGroup != want.ConsumerGroup || got.EventType != want.EventType || !slices.Equal(got.Names, want.Names) ||
		!bytes.Equal(got.Data, want.Data) || got.Queue != want.Queue || got.Partition != want.Partition ||
		!got.CreatedAt.Equal(want.CreatedAt) {
		t.Fatalf("%s:\n got %+v (data %s)\nwant %+v (data %s)", what, got, got.Data, want, want.Data)
	}
}

// traceIDs lists the ids of traces.
func traceIDs(ts []ports.Trace) []string {
	var out []string
	for _, tr := range ts {
		out = append(out, tr.ID)
	}
	return out
}

func messageTraces(t *testing.T, f TraceFixture, tenant, pid, txn string, limit int) []ports.Trace {
	t.Helper()
	got, err := f.Store.MessageTraces(context.Background(), tenant, pid, txn, limit)
	if err != nil {
		t.Fatalf("MessageTraces(%s): %v", txn, err)
	}
	return got
}

// tracesByName returns a page of the traces named name and their total.
func tracesByName(t *testing.T, f TraceFixture, tenant, name string, limit, offset int) ([]ports.Trace, int64) {
	t.Helper()
	got, total, err := f.Store.TracesByName(context.Background(), tenant, name, limit, offset)
	if err != nil {
		t.Fatalf("TracesByName(%s): %v", name, err)
	}
	return got, total
}

// traceNames returns a page of the trace names and their total.
func traceNames(t *testing.T, f TraceFixture, tenant string, limit, offset int) ([]ports.TraceName, int64) {
	t.Helper()
	got, total, err := f.Store.TraceNames(context.Background(), tenant, limit, offset)
	if err != nil {
		t.Fatalf("TraceNames: %v", err)
	}
	return got, total
}

func testTraceRoundTrip(t *testing.T, f TraceFixture) {
	k := newAdminKit(t, f.AdminWorld)
	pid := k.push("q", "p", "m0").PartitionID
	nt := ports.NewTrace{PartitionID: pid, TransactionID: "m0", ConsumerGroup: "workers", EventType: "error",
		Names: []string{"b", "a"}, Data: []byte(`{"a": 1,  "b":[1, 2], "s":"\u00e9"}`)}
	tr := addTrace(t, f, tenant, nt, keep, 0)
	if tr.ID == "" || tr.CreatedAt.IsZero() || tr.Queue != "q" || tr.Partition != "p" {
		t.Fatalf("AddTrace = %+v", tr)
	}
	sameTrace(t, "the answer of AddTrace", tr, ports.Trace{ID: tr.ID, NewTrace: nt, Queue: "q", Partition: "p", CreatedAt: tr.CreatedAt})
	got := messageTraces(t, f, tenant, pid, "m0", 10)
	if len(got) != 1 {
		t.Fatalf("%d traces, want 1", len(got))
	}
	sameTrace(t, "the trace read back (data as sent, not re-encoded)", got[0], tr)
	// No names read as an empty list; null is data too.
	bare := ports.NewTrace{PartitionID: pid, TransactionID: "m1", ConsumerGroup: ports.QueueModeGroup, EventType: "info",
		Data: []byte("null")}
	addTrace(t, f, tenant, bare, keep, 0)
	got = messageTraces(t, f, tenant, pid, "m1", 10)
	if len(got) != 1 || got[0].Names == nil || len(got[0].Names) != 0 || string(got[0].Data) != "null" {
		t.Fatalf("a trace without names: %+v", got)
	}
	// The answer is the caller's.
	got[0].Data[0] = 'X'
	if again := messageTraces(t, f, tenant, pid, "m1", 10); string(again[0].Data) != "null" {
		t.Fatalf("changing an answer changed the store: %s", again[0].Data)
	}
}

func testTraceLifetime(t *testing.T, f TraceFixture) {
	k := newAdminKit(t, f.AdminWorld)
	cfg := configB("life")
	f.Configure(t, tenant, cfg)
	pid := k.push("life", "p", "m0").PartitionID
	var asked []ports.QueueOptions
	addTrace(t, f, tenant, newTrace(pid, "m0"), func(o ports.QueueOptions) time.Duration {
		asked = append(asked, o)
		return time.Hour
	}, 0)
	if len(asked) != 1 || asked[0] != cfg.QueueOptions {
		t.Fatalf("the lifetime was asked with %+v, want once with %+v", asked, cfg.QueueOptions)
	}
}

func testTraceUnknownPartition(t *testing.T, f TraceFixture) {
	k := newAdminKit(t, f.AdminWorld)
	pid := k.push("q", "p", "m0").PartitionID
	called := false
	life := func(ports.QueueOptions) time.Duration { called = true; return time.Hour }
	for _, tc := range []struct{ name, tenant, pid string }{
		{"an unknown partition", tenant, unknownID},
		{"another tenant's partition", otherTenant, pid},
	} {
		tr, found, err := f.Store.AddTrace(context.Background(), tc.tenant, newTrace(tc.pid, "m0"), life, 10)
		if err != nil || found {
			t.Errorf("%s: AddTrace = %+v, %v, %v; want not found", tc.name, tr, found, err)
		}
	}
	if called || f.StoredTraces(t) != 0 {
		t.Fatalf("nothing may be recorded (lifetime asked: %v, %d traces stored)", called, f.StoredTraces(t))
	}
}

func testMessageTraces(t *testing.T, f TraceFixture) {
	k := newAdminKit(t, f.AdminWorld)
	p := k.push("q", "p", "m0").PartitionID
	p2 := k.push("q", "p2", "m0").PartitionID
	op := k.commit(segOf(otherTenant, "q", "p", "m0"))[0].PartitionID
	var mine []ports.Trace
	for i := range 3 {
		mine = append(mine, addTrace(t, f, tenant, newTrace(p, "m0", fmt.Sprint("n", i)), keep, 0))
	}
	addTrace(t, f, tenant, newTrace(p, "m1"), keep, 0)
	addTrace(t, f, tenant, newTrace(p2, "m0"), keep, 0)
	addTrace(t, f, otherTenant, newTrace(op, "m0"), keep, 0)
	tests := []struct {
		name, tenant, pid, txn string
		limit                  int
		want                   []ports.Trace
	}{
		{"every one, oldest first", tenant, p, "m0", 10, mine},
		{"bounded", tenant, p, "m0", 2, mine[:2]},
		{"a message without traces", tenant, p, "m9", 10, nil},
		{"another tenant reads none of them", otherTenant, p, "m0", 10, nil},
	}
	for _, tt := range tests {
		got := messageTraces(t, f, tt.tenant, tt.pid, tt.txn, tt.limit)
		if len(got) != len(tt.want) {
			t.Fatalf("%s: %d traces %q, want %q", tt.name, len(got), traceIDs(got), traceIDs(tt.want))
		}
		for i := range got {
			sameTrace(t, tt.name, got[i], tt.want[i])
		}
	}
	for i := 1; i < len(mine); i++ {
		if mine[i].CreatedAt.Before(mine[i-1].CreatedAt) {
			t.Fatalf("traces recorded one after the other go back in time: %+v", mine)
		}
	}
}

// nameWorld records t1 [x], t2 [x y], t3 [y], t4 [x], t5 [c b] in that order, and a
// trace named x of another tenant. t1, t2 are of message (p, m0), t3 of (p2, m0), t4
// of (p, m1), t5 of (p2, m1).
func nameWorld(t *testing.T, f TraceFixture) []ports.Trace {
	t.Helper()
	k := newAdminKit(t, f.AdminWorld)
	p := k.push("q", "p", "m0").PartitionID
	p2 := k.push("q", "p2", "m0").PartitionID
	op := k.commit(segOf(otherTenant, "q", "p", "m0"))[0].PartitionID
	out := []ports.Trace{
		addTrace(t, f, tenant, newTrace(p, "m0", "x"), keep, 0),
		addTrace(t, f, tenant, newTrace(p, "m0", "x", "y"), keep, 0),
		addTrace(t, f, tenant, newTrace(p2, "m0", "y"), keep, 0),
		addTrace(t, f, tenant, newTrace(p, "m1", "x"), keep, 0),
		addTrace(t, f, tenant, newTrace(p2, "m1", "c", "b"), keep, 0),
	}
	addTrace(t, f, otherTenant, newTrace(op, "m0", "x"), keep, 0)
	return out
}

func testTracesByName(t *testing.T, f TraceFixture) {
	tr := nameWorld(t, f)
	tests := []struct {
		name, tenant, trace string
		limit, offset       int
		want                []ports.Trace
		total               int64 // every page
	}{
		{"every one, newest first", tenant, "x", 10, 0, []ports.Trace{tr[3], tr[1], tr[0]}, 3},
		{"a page", tenant, "x", 1, 1, []ports.Trace{tr[1]}, 3},
		{"a page across the end", tenant, "x", 5, 2, []ports.Trace{tr[0]}, 3},
		{"past the end", tenant, "x", 5, 3, nil, 3},
		{"far past the end", tenant, "x", 5, 100, nil, 3},
		{"another name", tenant, "y", 10, 0, []ports.Trace{tr[2], tr[1]}, 2},
		{"a name nobody used", tenant, "z", 10, 0, nil, 0},
		{"names are exact", tenant, "X", 10, 0, nil, 0},
		{"another tenant's", otherTenant, "y", 10, 0, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, total := tracesByName(t, f, tt.tenant, tt.trace, tt.limit, tt.offset)
			if len(got) != len(tt.want) {
				t.Fatalf("%q, want %q", traceIDs(got), traceIDs(tt.want))
			}
			if total != tt.total {
				t.Errorf("total %d, want %d", total, tt.total)
			}
			for i := range got {
				sameTrace(t, fmt.Sprint("trace ", i), got[i], tt.want[i])
			}
		})
	}
}

func testTraceNames(t *testing.T, f TraceFixture) {
	tr := nameWorld(t, f)
	// b and c were last seen together (t5): by name.
	all := []ports.TraceName{
		{Name: "b", Traces: 1, Messages: 1, LastSeen: tr[4].CreatedAt},
		{Name: "c", Traces: 1, Messages: 1, LastSeen: tr[4].CreatedAt},
		{Name: "x", Traces: 3, Messages: 2, LastSeen: tr[3].CreatedAt},
		{Name: "y", Traces: 2, Messages: 2, LastSeen: tr[2].CreatedAt},
	}
	tests := []struct {
		name          string
		tenant        string
		limit, offset int
		want          []ports.TraceName
		total         int64 // every page
	}{
		{"every name", tenant, 10, 0, all, 4},
		{"a page", tenant, 2, 1, all[1:3], 4},
		{"past the end", tenant, 10, 4, nil, 4},
		{"the other tenant's", otherTenant, 10, 0, []ports.TraceName{{Name: "x", Traces: 1, Messages: 1}}, 1},
		{"a tenant without traces", "00000000-0000-4000-8000-0000000000ff", 10, 0, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, total := traceNames(t, f, tt.tenant, tt.limit, tt.offset)
			if total != tt.total {
				t.Errorf("total %d, want %d", total, tt.total)
			}
			ok := len(got) == len(tt.want)
			for i := 0; ok && i < len(got); i++ {
				g, w := got[i], tt.want[i]
				ok = g.Name == w.Name && g.Traces == w.Traces && g.Messages == w.Messages &&
					(w.LastSeen.IsZero() || g.LastSeen.Equal(w.LastSeen))
			}
			if !ok {
				t.Fatalf("names\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func testTraceExpiry(t *testing.T, f TraceFixture) {
	k := newAdminKit(t, f.AdminWorld)
	pid := k.push("q", "p", "m0").PartitionID
	op := k.commit(segOf(otherTenant, "q", "p", "m0"))[0].PartitionID
	for i := range 3 {
		addTrace(t, f, tenant, newTrace(pid, "m0", fmt.Sprint("old", i)), expired, 0)
	}
	addTrace(t, f, otherTenant, newTrace(op, "m0", "old"), expired, 0)
	if n := f.StoredTraces(t); n != 4 {
		t.Fatalf("%d traces stored, want the 4 expired ones (nothing deleted them yet)", n)
	}
	// Expired traces are stored but not read.
	if got := messageTraces(t, f, tenant, pid, "m0", 10); len(got) != 0 {
		t.Fatalf("expired traces read: %q", traceIDs(got))
	}
	if got, total := tracesByName(t, f, tenant, "old0", 10, 0); len(got) != 0 || total != 0 {
		t.Fatalf("an expired trace read by name: %q (total %d)", traceIDs(got), total)
	}
	if got, total := traceNames(t, f, tenant, 10, 0); len(got) != 0 || total != 0 {
		t.Fatalf("the names of expired traces listed: %+v (total %d)", got, total)
	}
	// Each insert deletes up to its batch of expired traces, of any tenant.
	live := addTrace(t, f, tenant, newTrace(pid, "m0", "live"), keep, 2)
	if n := f.StoredTraces(t); n != 3 {
		t.Fatalf("%d traces stored after an insert deleting 2, want 3", n)
	}
	addTrace(t, f, tenant, newTrace(pid, "m1"), keep, 10)
	if n := f.StoredTraces(t); n != 2 {
		t.Fatalf("%d traces stored after an insert deleting the rest, want the 2 live ones", n)
	}
	// A trace whose lifetime is over as it is recorded is among the ones its own batch
	// deletes.
	addTrace(t, f, tenant, newTrace(pid, "m2"), expired, 1)
	if n := f.StoredTraces(t); n != 2 {
		t.Fatalf("%d traces stored, want 2", n)
	}
	if got := messageTraces(t, f, tenant, pid, "m0", 10); len(got) != 1 || got[0].ID != live.ID {
		t.Fatalf("live traces of m0: %q, want [%s]", traceIDs(got), live.ID)
	}
}

func testTraceDeletedPartition(t *testing.T, f TraceFixture) {
	k := newAdminKit(t, f.AdminWorld)
	pid := k.push("gone", "p", "m0").PartitionID
	tr := addTrace(t, f, tenant, newTrace(pid, "m0", "n"), keep, 0)
	k.w.DeleteQueue(t, tenant, "gone")
	want := tr
	want.Queue, want.Partition = "", ""
	got := messageTraces(t, f, tenant, pid, "m0", 10)
	if len(got) != 1 {
		t.Fatalf("%d traces of the deleted partition's message, want 1 (it expires on its own)", len(got))
	}
	sameTrace(t, "a trace of a deleted partition", got[0], want)
	if got, _ := tracesByName(t, f, tenant, "n", 10, 0); len(got) != 1 || got[0].Queue != "" {
		t.Fatalf("by name: %+v", got)
	}
	if tr, found, err := f.Store.AddTrace(context.Background(), tenant, newTrace(pid, "m0"), keep, 0); err != nil || found {
		t.Fatalf("AddTrace to the deleted partition = %+v, %v, %v", tr, found, err)
	}
}

func testTracesCancelled(t *testing.T, f TraceFixture) {
	k := newAdminKit(t, f.AdminWorld)
	pid := k.push("q", "p", "m0").PartitionID
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, call := range map[string]func() error{
		"AddTrace": func() error {
			_, _, err := f.Store.AddTrace(ctx, tenant, newTrace(pid, "m0", "n"), keep, 10)
			return err
		},
		"MessageTraces": func() error {
			_, err := f.Store.MessageTraces(ctx, tenant, pid, "m0", 10)
			return err
		},
		"TracesByName": func() error { _, _, err := f.Store.TracesByName(ctx, tenant, "n", 10, 0); return err },
		"TraceNames":   func() error { _, _, err := f.Store.TraceNames(ctx, tenant, 10, 0); return err },
	} {
		if err := call(); err == nil {
			t.Errorf("%s with a cancelled context succeeded", name)
		}
	}
	if n := f.StoredTraces(t); n != 0 {
		t.Fatalf("%d traces stored after a cancelled AddTrace", n)
	}
}

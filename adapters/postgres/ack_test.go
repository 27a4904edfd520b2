package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
	"github.com/queen-go/queen/ports"
)

// ackHash is the 16-byte stand-in hash of transaction id s (the store never computes
// hashes: any 16 bytes per frame will do).
func ackHash(s string) [16]byte {
	var h [16]byte
	copy(h[:], fmt.Sprintf("%-16.16s", s))
	return h
}

// ackFixture is a store on a fresh database with one partition holding segs segments of
// per messages, named m0, m1, ... in offset order.
type ackFixture struct {
	s     *Store
	url   string
	queue string
	pid   string
}

func newAckFixture(t *testing.T, segs, per int) *ackFixture {
	t.Helper()
	url := pgtest.NewDatabase(t)
	s, err := Open(context.Background(), url, Options{PoolSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	f := &ackFixture{s: s, url: url, queue: "acks"}
	for k := range segs {
		var hs []byte
		for i := range per {
			h := ackHash(fmt.Sprintf("m%d", k*per+i))
			hs = append(hs, h[:]...)
		}
		res, err := s.PushSegments(context.Background(), []ports.Segment{{Tenant: ports.DefaultTenant,
			Queue: f.queue, Partition: "p", Count: per, Hashes: hs, Verified: -1, Blob: []byte("blob")}})
		if err != nil || res[0].Status != ports.SegmentQueued {
			t.Fatalf("push: %v %+v", err, res)
		}
		f.pid = res[0].PartitionID
	}
	return f
}

// pop claims up to n messages for queue mode under a new lease and returns the lease.
func (f *ackFixture) pop(t *testing.T, n int) string {
	t.Helper()
	lease := uuid.NewString()
	claims, _, err := f.s.Pop(context.Background(), ports.PopRequest{Tenant: ports.DefaultTenant, Queue: f.queue,
		Partition: "p", Group: ports.QueueModeGroup, Batch: n, Partitions: 1, LeaseID: lease,
		SubscribeMode: ports.SubscribeAll})
	if err != nil || len(claims) != 1 {
		t.Fatalf("pop: %v %+v", err, claims)
	}
	return lease
}

// items are completed acks of the named messages under lease.
func (f *ackFixture) items(lease string, names ...string) []ports.AckItem {
	out := make([]ports.AckItem, len(names))
	for i, n := range names {
		out[i] = ports.AckItem{PartitionID: f.pid, Group: ports.QueueModeGroup, Hash: ackHash(n),
			TransactionID: n, Status: ports.AckCompleted, LeaseID: lease}
	}
	return out
}

// tryAck runs log_ack_v2 for items in a transaction that is rolled back, so the state is
// the same for every call.
func (f *ackFixture) tryAck(t *testing.T, conn *pgx.Conn, items []ports.AckItem) []ports.AckResult {
	t.Helper()
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	res, err := ackQuery(ctx, tx, items, false, "")
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func names(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

// TestAckResolvesManyItemsLikeOne: the items of a batch ack that its delivered span does
// not hold (below the cursor, beyond the span, unknown) are resolved in one pass when
// there are many, one by one when there are few; both give every item the answer it
// gets when acked alone.
func TestAckResolvesManyItemsLikeOne(t *testing.T) {
	t.Parallel()
	f := newAckFixture(t, 20, 10) // m0..m199
	ctx := context.Background()
	// Commit m0..m59, then lease m60..m99: m100..m199 lie beyond the span.
	lease := f.pop(t, 60)
	if res, err := f.s.Ack(ctx, f.items(lease, "m59")); err != nil || !res[0].OK {
		t.Fatalf("ack m59: %v %+v", err, res)
	}
	lease = f.pop(t, 40)
	conn, err := pgx.Connect(ctx, f.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	var batch []string
	batch = append(batch, names("m", 0, 30)...)      // below the cursor: completed is a no-op
	batch = append(batch, names("gone", 0, 10)...)   // never pushed
	batch = append(batch, names("m", 120, 140)...)   // beyond the span
	batch = append(batch, "m65", "m3", "m150", "m3") // in the span, and repeats
	items := f.items(lease, batch...)
	items[len(items)-2].Status = ports.AckFailed // below the cursor: not a no-op
	many := f.tryAck(t, conn, items)
	for i, it := range items {
		alone := f.tryAck(t, conn, []ports.AckItem{it})[0]
		if many[i] != alone {
			t.Errorf("item %d (%s %s): in the batch %+v, alone %+v", i, it.TransactionID, it.Status, many[i], alone)
		}
	}
	// The answers themselves, by kind (unnamed: none released the lease or went to the
	// dead-letter queue, see ports.AckResult).
	want := map[string]ports.AckResult{
		"m0":    {OK: true, Noop: true},
		"gone0": {Error: "transactionId not found in partition"},
		"m120":  {Error: "position beyond leased batch"},
	}
	for i, it := range items {
		if w, ok := want[it.TransactionID]; ok && many[i] != w {
			t.Errorf("%s: %+v, want %+v", it.TransactionID, many[i], w)
		}
	}
}

// TestAckPlanIsLinear: a 1,000-item batch ack reads each hash sidecar row of its span a
// bounded number of times, not once per item (a nested loop that rescans the span per
// item made batch acks quadratic: issue 13). auto_explain reports the plan of every
// statement the ack runs, with actual loops, as notices of the calling session.
func TestAckPlanIsLinear(t *testing.T) {
	t.Parallel()
	const items = 1000
	f := newAckFixture(t, items/10, 10)
	lease := f.pop(t, items)
	ctx := context.Background()
	var (
		mu    sync.Mutex
		plans []string
	)
	cfg, err := pgx.ParseConfig(f.url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		defer mu.Unlock()
		if i := strings.Index(n.Message, "{"); i >= 0 {
			plans = append(plans, n.Message[i:])
		}
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, set := range []string{"LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0",
		"SET auto_explain.log_analyze = on", "SET auto_explain.log_timing = off",
		"SET auto_explain.log_nested_statements = on", "SET auto_explain.log_format = json",
		"SET auto_explain.log_level = notice"} {
		if _, err := conn.Exec(ctx, set); err != nil {
			t.Fatalf("%s: %v (auto_explain ships with PostgreSQL's server packages)", set, err)
		}
	}

	tests := []struct {
		name  string
		setup func(t *testing.T) string // returns the lease the acks name
	}{
		{"inside the span", func(*testing.T) string { return lease }},
		{"below the cursor (a retried ack)", func(t *testing.T) string {
			if res, err := f.s.Ack(ctx, f.items(lease, fmt.Sprintf("m%d", items-1))); err != nil || !res[0].OK {
				t.Fatalf("ack: %v %+v", err, res)
			}
			return "" // the lease is gone with the commit
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lease := tt.setup(t)
			mu.Lock()
			plans = nil
			mu.Unlock()
			res := f.tryAck(t, conn, f.items(lease, names("m", 0, items)...))
			for i, r := range res {
				if !r.OK {
					t.Fatalf("item %d: %+v", i, r)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(plans) == 0 {
				t.Fatal("auto_explain reported no plan")
			}
			loops := 0
			for _, p := range plans {
				loops += txnsScanLoops(t, p)
			}
			// One scan per statement that expands the sidecar; per-item probes or a
			// rescan per item would count about one loop per item.
			if loops > 4 {
				t.Fatalf("%d scans of log_txns for %d items over %d plans", loops, items, len(plans))
			}
		})
	}
}

// txnsScanLoops sums the actual loops of every plan node of an auto_explain JSON plan
// that reads queen.log_txns.
func txnsScanLoops(t *testing.T, plan string) int {
	t.Helper()
	var doc struct {
		Plan json.RawMessage `json:"Plan"`
	}
	if err := json.Unmarshal([]byte(plan), &doc); err != nil {
		t.Fatalf("auto_explain plan %.200s: %v", plan, err)
	}
	var walk func(raw json.RawMessage) int
	walk = func(raw json.RawMessage) int {
		var n struct {
			Relation string            `json:"Relation Name"`
			Loops    int               `json:"Actual Loops"`
			Plans    []json.RawMessage `json:"Plans"`
		}
		if err := json.Unmarshal(raw, &n); err != nil {
			t.Fatalf("plan node: %v", err)
		}
		total := 0
		if n.Relation == "log_txns" {
			total = n.Loops
		}
		for _, c := range n.Plans {
			total += walk(c)
		}
		return total
	}
	return walk(doc.Plan)
}

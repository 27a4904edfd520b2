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
	f := openAckFixture(t)
	for k := range segs {
		f.push(t, names("m", k*per, (k+1)*per)...)
	}
	return f
}

// openAckFixture is a store on a fresh database, nothing pushed yet.
func openAckFixture(t *testing.T) *ackFixture {
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
	return &ackFixture{s: s, url: url, queue: "acks"}
}

// push appends one segment of the named messages to the fixture partition.
func (f *ackFixture) push(t *testing.T, names ...string) {
	t.Helper()
	var hs []byte
	for _, n := range names {
		h := ackHash(n)
		hs = append(hs, h[:]...)
	}
	res, err := f.s.PushSegments(context.Background(), []ports.Segment{{Tenant: ports.DefaultTenant,
		Queue: f.queue, Partition: "p", Count: len(names), Hashes: hs, Verified: -1, Blob: []byte("blob")}})
	if err != nil || res[0].Status != ports.SegmentQueued {
		t.Fatalf("push %v: %v %+v", names, err, res)
	}
	f.pid = res[0].PartitionID
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
// item made batch acks quadratic). auto_explain reports the plan of every
// statement the ack runs, with actual loops, as notices of the calling session.
func TestAckPlanIsLinear(t *testing.T) {
	t.Parallel()
	const items = 1000
	f := newAckFixture(t, items/10, 10)
	lease := f.pop(t, items)
	ctx := context.Background()
	conn, plans := explainedConn(t, f.url)

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
			plans.take()
			res := f.tryAck(t, conn, f.items(lease, names("m", 0, items)...))
			for i, r := range res {
				if !r.OK {
					t.Fatalf("item %d: %+v", i, r)
				}
			}
			got := plans.take()
			if len(got) == 0 {
				t.Fatal("auto_explain reported no plan")
			}
			loops := 0
			for _, p := range got {
				loops += txnsScan(t, p).loops
			}
			// One scan per statement that expands the sidecar; per-item probes or a
			// rescan per item would count about one loop per item.
			if loops > 4 {
				t.Fatalf("%d scans of log_txns for %d items over %d plans", loops, items, len(got))
			}
		})
	}
}

// TestAckReadsOnlyItsSpan: an ack of a span reads the hash sidecar rows of that span,
// not every row after the cursor (a partition's whole backlog: each ack of a deep queue
// cost a row read per segment still to be consumed).
func TestAckReadsOnlyItsSpan(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		segs, per, pop int
		maxRows        int // log_txns rows read by all the ack's statements
	}{
		// The span's rows, and one more: the probe for the row holding the span's end.
		{"one segment of a deep backlog", 100, 10, 10, 2},
		{"a span over three segments", 100, 10, 25, 4},
		{"the whole backlog", 5, 10, 50, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newAckFixture(t, tt.segs, tt.per)
			lease := f.pop(t, tt.pop)
			conn, plans := explainedConn(t, f.url)
			for i, r := range f.tryAck(t, conn, f.items(lease, names("m", 0, tt.pop)...)) {
				if !r.OK {
					t.Fatalf("item %d: %+v", i, r)
				}
			}
			rows := 0
			for _, p := range plans.take() {
				rows += txnsScan(t, p).rows
			}
			if rows > tt.maxRows {
				t.Fatalf("the ack read %d log_txns rows for a span of %d segments of %d", rows, (tt.pop+tt.per-1)/tt.per, tt.segs)
			}
		})
	}
}

// planLog collects the plans auto_explain reports to one session.
type planLog struct {
	mu    sync.Mutex
	plans []string
}

// take returns the plans reported since the last take.
func (l *planLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.plans
	l.plans = nil
	return out
}

// explainedConn connects to url with auto_explain reporting the JSON plan, with actual
// rows and loops, of every statement the session runs (nested ones included) as notices.
func explainedConn(t *testing.T, url string) (*pgx.Conn, *planLog) {
	t.Helper()
	ctx := context.Background()
	l := &planLog{}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if i := strings.Index(n.Message, "{"); i >= 0 {
			l.plans = append(l.plans, n.Message[i:])
		}
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	for _, set := range []string{"LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0",
		"SET auto_explain.log_analyze = on", "SET auto_explain.log_timing = off",
		"SET auto_explain.log_nested_statements = on", "SET auto_explain.log_format = json",
		"SET auto_explain.log_level = notice"} {
		if _, err := conn.Exec(ctx, set); err != nil {
			t.Fatalf("%s: %v (auto_explain ships with PostgreSQL's server packages)", set, err)
		}
	}
	return conn, l
}

// scanCount is what the plan nodes reading queen.log_txns did: their actual loops, and
// the rows they read (returned or removed by a filter) over all loops.
type scanCount struct{ loops, rows int }

// txnsScan sums scanCount over an auto_explain JSON plan.
func txnsScan(t *testing.T, plan string) scanCount {
	t.Helper()
	var doc struct {
		Plan json.RawMessage `json:"Plan"`
	}
	if err := json.Unmarshal([]byte(plan), &doc); err != nil {
		t.Fatalf("auto_explain plan %.200s: %v", plan, err)
	}
	var walk func(raw json.RawMessage) scanCount
	walk = func(raw json.RawMessage) scanCount {
		var n struct {
			Relation string            `json:"Relation Name"`
			Loops    int               `json:"Actual Loops"`
			Rows     float64           `json:"Actual Rows"` // per loop
			Removed  float64           `json:"Rows Removed by Filter"`
			Plans    []json.RawMessage `json:"Plans"`
		}
		if err := json.Unmarshal(raw, &n); err != nil {
			t.Fatalf("plan node: %v", err)
		}
		var total scanCount
		if n.Relation == "log_txns" {
			total = scanCount{loops: n.Loops, rows: int((n.Rows + n.Removed) * float64(n.Loops))}
		}
		for _, c := range n.Plans {
			c := walk(c)
			total.loops += c.loops
			total.rows += c.rows
		}
		return total
	}
	return walk(doc.Plan)
}

// ackOutcome is what one ack call did: its answers, the cursor row and the dead letters
// it left.
type ackOutcome struct {
	res    []ports.AckResult
	cursor cursorRow
	dlq    string // the partition's dead letters, one line each
	plans  []string
}

// cursorRow is a cursor's state.
type cursorRow struct {
	committed, batchEnd, retry int64
	leased                     bool
}

// ackRolledBack runs setup (SQL, may be empty) and log_ack_v2 for items in a transaction
// of conn, reads the fixture partition's queue-mode cursor and dead letters, and rolls
// back.
func (f *ackFixture) ackRolledBack(t *testing.T, conn *pgx.Conn, plans *planLog, setup string, items []ports.AckItem) ackOutcome {
	t.Helper()
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if setup != "" {
		if _, err := tx.Exec(ctx, setup, f.pid); err != nil {
			t.Fatalf("%s: %v", setup, err)
		}
	}
	plans.take()
	var o ackOutcome
	if o.res, err = ackQuery(ctx, tx, items, false, ""); err != nil {
		t.Fatal(err)
	}
	o.plans = plans.take()
	err = tx.QueryRow(ctx, `SELECT committed, batch_end, retry_count, lease_id IS NOT NULL FROM queen.log_consumers
		WHERE partition_id = $1 AND consumer_group = $2`, f.pid, ports.QueueModeGroup).Scan(&o.cursor.committed, &o.cursor.batchEnd, &o.cursor.retry, &o.cursor.leased)
	if err != nil {
		t.Fatal(err)
	}
	err = tx.QueryRow(ctx, `SELECT coalesce(string_agg(format('%s %s %s %s %s', d.msg_offset, d.transaction_id,
			d.frame_index, d.retry_count, d.error_message), E'\n' ORDER BY d.msg_offset), '')
		FROM queen.dlq d WHERE d.partition_id = $1`, f.pid).Scan(&o.dlq)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// ran reports whether one of the plans is of a statement containing text.
func ran(plans []string, text string) bool {
	for _, p := range plans {
		if strings.Contains(p, text) {
			return true
		}
	}
	return false
}

// The statements that show which path an ack took: the general pairing, and the update
// of a whole-span completion.
const (
	generalPairing = "log_match_v1"
	wholeSpan      = "committed = c.batch_end"
)

// TestAckInOrderAnswersLikeTheGeneralPath: an ack whose items name the delivered span in
// offset order pairs them without log_match_v1, and an ack completing the whole span of
// a live lease answers without its per-item statements; both answer and leave the cursor
// exactly as the general path does. The general path's answer is the same ack with one
// unknown transaction id more (the span then does not match the items), which must not
// change what the other items get.
func TestAckInOrderAnswersLikeTheGeneralPath(t *testing.T) {
	t.Parallel()
	const span = 30 // over three segments of 10
	f := newAckFixture(t, 10, 10)
	lease := f.pop(t, span)
	conn, plans := explainedConn(t, f.url)
	expire := `UPDATE queen.log_consumers SET lease_expires_at = now() - interval '1 second' WHERE partition_id = $1`
	tests := []struct {
		name    string
		setup   string
		items   func() []ports.AckItem
		inOrder bool // pairs without log_match_v1
		whole   bool // and answers as a whole-span completion
	}{
		{"whole span completed", "", func() []ports.AckItem { return f.items(lease, names("m", 0, span)...) }, true, true},
		{"whole span without lease ids", "", func() []ports.AckItem { return f.items("", names("m", 0, span)...) }, true, true},
		{"whole span, one failed", "", func() []ports.AckItem {
			it := f.items(lease, names("m", 0, span)...)
			it[12].Status = ports.AckFailed
			return it
		}, true, false},
		{"whole span, one retry and one dead-lettered", "", func() []ports.AckItem {
			it := f.items(lease, names("m", 0, span)...)
			it[3].Status, it[20].Status = ports.AckRetry, ports.AckDLQ
			return it
		}, true, false},
		{"whole span, one under another lease", "", func() []ports.AckItem {
			it := f.items(lease, names("m", 0, span)...)
			it[7].LeaseID = uuid.NewString()
			return it
		}, true, false},
		{"whole span of an expired lease", expire, func() []ports.AckItem { return f.items(lease, names("m", 0, span)...) }, true, false},
		{"whole span of an expired lease, no lease ids", expire, func() []ports.AckItem { return f.items("", names("m", 0, span)...) }, true, false},
		{"the first part of the span", "", func() []ports.AckItem { return f.items(lease, names("m", 0, 20)...) }, false, false},
		{"out of order", "", func() []ports.AckItem {
			return f.items(lease, append(names("m", 10, span), names("m", 0, 10)...)...)
		}, false, false},
		{"with an item beyond the span", "", func() []ports.AckItem {
			return f.items(lease, append(names("m", 0, span), "m40")...)
		}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.ackLikeGeneralPath(t, conn, plans, tt.setup, tt.items(), nil, tt.inOrder, tt.whole)
		})
	}
}

// ackLikeGeneralPath acks items (rolled back) and, as the reference, the same items
// plus an unknown one, which forces the general pairing (log_match_v1); it fails unless
// the first took the expected path (inOrder: no log_match_v1; whole: the whole-span
// answer) and both agree on every item's answer, the cursor and the dead letters.
// labels name the items in messages (nil: indexes only).
func (f *ackFixture) ackLikeGeneralPath(t *testing.T, conn *pgx.Conn, plans *planLog, setup string,
	items []ports.AckItem, labels []string, inOrder, whole bool) ackOutcome {
	t.Helper()
	got := f.ackRolledBack(t, conn, plans, setup, items)
	general := f.ackRolledBack(t, conn, plans, setup, append(items, f.items(items[0].LeaseID, "unknown")...))
	if !ran(general.plans, generalPairing) || ran(general.plans, wholeSpan) {
		t.Fatal("the reference ack did not take the general path")
	}
	if ran(got.plans, generalPairing) == inOrder || ran(got.plans, wholeSpan) != whole {
		t.Fatalf("log_match_v1 ran: %v, want %v; whole-span answer: %v, want %v",
			ran(got.plans, generalPairing), !inOrder, ran(got.plans, wholeSpan), whole)
	}
	if r := general.res[len(items)]; r.OK {
		t.Fatalf("the unknown item: %+v", r)
	}
	for i := range items {
		if got.res[i] != general.res[i] {
			label := ""
			if labels != nil {
				label = " (" + labels[i] + ")"
			}
			t.Errorf("item %d%s: %+v, general path %+v", i, label, got.res[i], general.res[i])
		}
	}
	if got.cursor != general.cursor {
		t.Errorf("cursor %+v, general path %+v", got.cursor, general.cursor)
	}
	if got.dlq != general.dlq {
		t.Errorf("dead letters %q, general path %q", got.dlq, general.dlq)
	}
	return got
}

// dupItems are acks under lease of the messages named by specs: a transaction id, then
// optionally "/failed", "/retry" or "/dlq" (the status; completed without one),
// "/stranger" (completed under another lease) or "/nolease" (completed, no lease id).
func (f *ackFixture) dupItems(lease string, specs ...string) []ports.AckItem {
	out := make([]ports.AckItem, len(specs))
	for i, spec := range specs {
		name, mod, _ := strings.Cut(spec, "/")
		out[i] = f.items(lease, name)[0]
		switch mod {
		case "":
		case "failed":
			out[i].Status = ports.AckFailed
		case "retry":
			out[i].Status = ports.AckRetry
		case "dlq":
			out[i].Status = ports.AckDLQ
		case "stranger":
			out[i].LeaseID = uuid.NewString()
		case "nolease":
			out[i].LeaseID = ""
		default:
			panic("dupItems: unknown modifier " + spec)
		}
	}
	return out
}

// TestAckDuplicateIdsPairLikeTheGeneralPath: a transaction id stored several times in a
// partition (dedup window 0 here; also copies outside the window) can occur several
// times in a delivered span, and the k-th item of a call naming it is its k-th copy after
// the cursor (the last copy when there are fewer). The in-order pairing and the
// whole-span answer of log_ack_v2 must keep that: for spans holding duplicates, over one
// segment or cut across several, every ack answers and leaves the cursor, the lease and
// the dead letters exactly as the general path (log_match_v1) does, obtained as in
// TestAckInOrderAnswersLikeTheGeneralPath by one unknown item more; and the cursor is
// where the k-th-copy rule puts it, so the two paths cannot agree on a wrong pairing.
func TestAckDuplicateIdsPairLikeTheGeneralPath(t *testing.T) {
	t.Parallel()
	// Every layout holds A Y (committed before the test), then the span A B A C A B
	// (offsets 2..7), then A D beyond it: copies of A on both sides of the span too.
	const first = 2 // offset of the span's first message
	layouts := []struct {
		name string
		segs [][]string
	}{
		{"one segment", [][]string{{"A", "Y", "A", "B", "A", "C", "A", "B", "A", "D"}}},
		{"segments cut inside the span", [][]string{{"A", "Y", "A"}, {"B", "A"}, {"C"}, {"A", "B", "A"}, {"D"}}},
	}
	expire := `UPDATE queen.log_consumers SET lease_expires_at = now() - interval '1 second' WHERE partition_id = $1`
	tests := []struct {
		name    string
		setup   string
		items   []string // dupItems specs, under the span's lease
		inOrder bool     // pairs without log_match_v1
		whole   bool     // and answers as a whole-span completion
		want    int      // the cursor after the ack, as a position in the span (-1: before it)
	}{
		// (a) In offset order: the in-order pairing.
		{"in order, first A failed", "", []string{"A/failed", "B", "A", "C", "A", "B"}, true, false, -1},
		{"in order, second A failed", "", []string{"A", "B", "A/failed", "C", "A", "B"}, true, false, 1},
		{"in order, third A failed", "", []string{"A", "B", "A", "C", "A/failed", "B"}, true, false, 3},
		{"in order, second B failed", "", []string{"A", "B", "A", "C", "A", "B/failed"}, true, false, 4},
		{"in order, third A dead-lettered", "", []string{"A", "B", "A", "C", "A/dlq", "B"}, true, false, 4},
		{"in order, first A dead-lettered, second failed", "", []string{"A/dlq", "B", "A/failed", "C", "A", "B"}, true, false, 0},
		{"in order, second A retried, first B failed", "", []string{"A", "B/failed", "A/retry", "C", "A", "B"}, true, false, 0},
		{"in order, second B under another lease", "", []string{"A", "B", "A", "C", "A", "B/stranger"}, true, false, 4},
		{"in order, third A under another lease", "", []string{"A", "B", "A", "C", "A/stranger", "B"}, true, false, 5},
		{"in order, of an expired lease", expire, []string{"A", "B", "A", "C", "A", "B"}, true, false, -1},
		{"in order, of an expired lease, no lease ids", expire,
			[]string{"A/nolease", "B/nolease", "A/nolease", "C/nolease", "A/nolease", "B/nolease"}, true, false, 5},
		// (b) In another order: log_match_v1, the k-th item naming A in input order still
		// gets the k-th copy.
		{"A named before B, second A failed", "", []string{"A", "A/failed", "B", "C", "A", "B"}, false, false, 1},
		{"reversed, first-named A failed", "", []string{"B", "A/failed", "C", "A", "B", "A"}, false, false, -1},
		{"reversed, last-named A failed", "", []string{"B", "A", "C", "A", "B", "A/failed"}, false, false, 3},
		{"reversed, all completed", "", []string{"B", "A", "C", "A", "B", "A"}, false, false, 5},
		// (c) Part of the span: a prefix completes up to the second copy of A, not the
		// newest; a subset with a failure stops below the copy its k names.
		{"a prefix", "", []string{"A", "B", "A"}, false, false, 2},
		{"two As", "", []string{"A", "A"}, false, false, 2},
		{"a subset, the second-named A failed", "", []string{"A", "C", "A/failed"}, false, false, 1},
		{"a subset, the first-named A failed", "", []string{"B", "A/failed", "A"}, false, false, -1},
		{"more As than the span holds, the fourth failed", "", []string{"A", "A", "A", "A/failed"}, false, false, 3},
		{"in order, then one more A", "", []string{"A", "B", "A", "C", "A", "B", "A"}, false, false, 5},
		{"in order, then D beyond the span", "", []string{"A", "B", "A", "C", "A", "B", "D"}, false, false, 5},
		// (d) The whole span of the live lease completed: the whole-span answer.
		{"whole span completed", "", []string{"A", "B", "A", "C", "A", "B"}, true, true, 5},
		{"whole span, no lease ids", "", []string{"A/nolease", "B/nolease", "A/nolease", "C/nolease", "A/nolease", "B/nolease"}, true, true, 5},
		{"whole span, some lease ids", "", []string{"A", "B/nolease", "A/nolease", "C", "A/nolease", "B"}, true, true, 5},
	}
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			f := openAckFixture(t)
			f.s.exec(t, `INSERT INTO queen.queues (tenant_id, name, dedup_window_seconds) VALUES ($1, $2, 0)`,
				ports.DefaultTenant, f.queue)
			for _, seg := range l.segs {
				f.push(t, seg...)
			}
			lease := f.pop(t, first)
			if res, err := f.s.Ack(context.Background(), f.items(lease, "Y")); err != nil || !res[0].OK {
				t.Fatalf("ack Y: %v %+v", err, res)
			}
			lease = f.pop(t, 6)
			conn, plans := explainedConn(t, f.url)
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					got := f.ackLikeGeneralPath(t, conn, plans, tt.setup, f.dupItems(lease, tt.items...), tt.items, tt.inOrder, tt.whole)
					if want := int64(first + tt.want); got.cursor.committed != want {
						t.Errorf("committed %d, want %d (span position %d)", got.cursor.committed, want, tt.want)
					}
				})
			}
		})
	}
}

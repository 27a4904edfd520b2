package postgres

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queen-go/queen/ports"
)

// planFixture is a database with two queues of many partitions, each holding one
// message, and a connection whose statements (nested ones too) report their plans with
// actual row counts (auto_explain).
type planFixture struct {
	s     *Store
	conn  *pgx.Conn
	mu    sync.Mutex
	plans []string
}

const planPartitions = 5000

func newPlanFixture(t *testing.T) *planFixture {
	t.Helper()
	s := newStore(t, Options{PoolSize: 4})
	for _, q := range []string{"big", "neighbour"} {
		s.exec(t, `INSERT INTO queen.log_partitions (queue_id, name, last_offset)
			SELECT queen.log_queue_id_v1($1::uuid, $2), 'p' || g, 0 FROM generate_series(1, $3::int) g`,
			ports.DefaultTenant, q, planPartitions)
	}
	s.exec(t, `INSERT INTO queen.log_segments (partition_id, base_offset, msg_count, created_at, blob)
		SELECT id, 0, 1, now(), '\x01'::bytea FROM queen.log_partitions`)
	s.exec(t, `ANALYZE queen.log_partitions`)
	s.exec(t, `ANALYZE queen.log_segments`)
	f := &planFixture{s: s}
	cfg := s.pool.Config().ConnConfig.Copy()
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if i := strings.Index(n.Message, "{"); i >= 0 {
			f.plans = append(f.plans, n.Message[i:])
		}
	}
	ctx := context.Background()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	for _, set := range []string{"LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0",
		"SET auto_explain.log_analyze = on", "SET auto_explain.log_timing = off",
		"SET auto_explain.log_nested_statements = on", "SET auto_explain.log_format = json",
		"SET auto_explain.log_level = notice"} {
		if _, err := conn.Exec(ctx, set); err != nil {
			t.Fatalf("%s: %v (auto_explain ships with PostgreSQL's server packages)", set, err)
		}
	}
	f.conn = conn
	return f
}

// run executes sql in a transaction that is rolled back and returns the plans of every
// statement it ran.
func (f *planFixture) run(t *testing.T, sql string, args ...any) []string {
	t.Helper()
	ctx := context.Background()
	f.mu.Lock()
	f.plans = nil
	f.mu.Unlock()
	tx, err := f.conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.plans) == 0 {
		t.Fatal("auto_explain reported no plan")
	}
	return append([]string(nil), f.plans...)
}

// partitionReads sums, over the plans, the rows every scan of log_partitions read (kept
// and filtered out, times its loops), and lists the indexes those scans used.
func partitionReads(t *testing.T, plans []string) (rows int, indexes []string) {
	t.Helper()
	var walk func(raw json.RawMessage)
	walk = func(raw json.RawMessage) {
		var n struct {
			Relation string            `json:"Relation Name"`
			Index    string            `json:"Index Name"`
			Rows     float64           `json:"Actual Rows"`
			Removed  float64           `json:"Rows Removed by Filter"`
			Loops    float64           `json:"Actual Loops"`
			Plans    []json.RawMessage `json:"Plans"`
		}
		if err := json.Unmarshal(raw, &n); err != nil {
			t.Fatalf("plan node: %v", err)
		}
		if n.Relation == "log_partitions" {
			rows += int((n.Rows + n.Removed) * n.Loops)
			indexes = append(indexes, n.Index)
		}
		for _, c := range n.Plans {
			walk(c)
		}
	}
	for _, p := range plans {
		var doc struct {
			Plan json.RawMessage `json:"Plan"`
		}
		if err := json.Unmarshal([]byte(p), &doc); err != nil {
			t.Fatalf("auto_explain plan %.200s: %v", p, err)
		}
		walk(doc.Plan)
	}
	return rows, indexes
}

// TestPendingPagesReadOnlyTheirPage: a reseed page of a queue with thousands of
// partitions (next to another such queue) walks the (queue_id, id) index from the page's
// start and stops at its limit: its cost is the page, not the queue.
func TestPendingPagesReadOnlyTheirPage(t *testing.T) {
	t.Parallel()
	f := newPlanFixture(t)
	var mid string
	if err := f.s.pool.QueryRow(context.Background(), `SELECT lp.id::text FROM queen.log_partitions lp
		JOIN queen.queues q ON q.id = lp.queue_id WHERE q.name = 'big' ORDER BY lp.id OFFSET $1 LIMIT 1`,
		planPartitions/2).Scan(&mid); err != nil {
		t.Fatal(err)
	}
	const limit = 100
	for _, after := range []any{nil, mid} {
		rows, indexes := partitionReads(t, f.run(t, `SELECT * FROM queen.log_pending_v1($1::uuid, 'big', 'g', $2::uuid, $3)`,
			ports.DefaultTenant, after, limit))
		t.Logf("page after %v: %d partition rows read through %q", after, rows, indexes)
		if rows > limit+10 || !strings.Contains(strings.Join(indexes, ","), "log_partitions_queue_id") {
			t.Fatalf("a page of %d after %v read %d partition rows through indexes %q, want about %d through log_partitions_queue_id",
				limit, after, rows, indexes, limit)
		}
	}
}

// TestCandidatePopReadsOnlyItsCandidates: a pop that names its candidates reads those
// partitions and no other, however many the queue has; the scan it replaces reads the
// queue (which shows this test can tell them apart).
func TestCandidatePopReadsOnlyItsCandidates(t *testing.T) {
	t.Parallel()
	f := newPlanFixture(t)
	var ids []string
	if err := f.s.pool.QueryRow(context.Background(), `SELECT array_agg(x.id::text) FROM (SELECT lp.id
		FROM queen.log_partitions lp JOIN queen.queues q ON q.id = lp.queue_id WHERE q.name = 'big' LIMIT 3) x`).Scan(&ids); err != nil {
		t.Fatal(err)
	}
	const pop = `SELECT count(*) FROM queen.log_pop_v2(ARRAY[queen.log_queue_id_v1($1::uuid, 'big')], NULL, $2::uuid[],
		'g', 100, 3, 0, false, '0191d7a2-0000-7000-8000-000000000001', 'all', NULL)`
	cands, _ := partitionReads(t, f.run(t, pop, ports.DefaultTenant, ids))
	if cands > 2*len(ids) {
		t.Fatalf("a pop of %d candidates read %d partition rows", len(ids), cands)
	}
	scan, _ := partitionReads(t, f.run(t, pop, ports.DefaultTenant, nil))
	t.Logf("partition rows read: %d by %d candidates, %d by the scan", cands, len(ids), scan)
	if scan < planPartitions {
		t.Fatalf("the scan read %d partition rows of %d: the count misses reads", scan, planPartitions)
	}
}

// TestStaleCandidatesTakeNoLock: candidates that are leased or have nothing after the
// cursor (the hot-list's usual false positives) are answered without a row lock, so a
// pop that finds only those stays a read-only transaction: no transaction id, no WAL
// flush at commit. A candidate with work does lock (the check can tell).
func TestStaleCandidatesTakeNoLock(t *testing.T) {
	t.Parallel()
	s := newStore(t, Options{PoolSize: 4})
	ctx := context.Background()
	ids := map[string]string{}
	for _, p := range []string{"leased", "drained", "work"} {
		res, err := s.PushSegments(ctx, []ports.Segment{oneFrame("stale", p, p+"-0")})
		if err != nil {
			t.Fatal(err)
		}
		ids[p] = res[0].PartitionID
	}
	pop := func(cands []string, autoAck bool) ([]ports.Claim, []ports.Verdict) {
		t.Helper()
		claims, vs, err := s.Pop(ctx, ports.PopRequest{Tenant: ports.DefaultTenant, Queue: "stale", Group: ports.QueueModeGroup,
			Batch: 10, Partitions: 1, AutoAck: autoAck, LeaseID: "0191d7a2-0000-7000-8000-000000000001",
			SubscribeMode: ports.SubscribeAll, Candidates: cands})
		if err != nil {
			t.Fatal(err)
		}
		return claims, vs
	}
	if c, _ := pop([]string{ids["leased"]}, false); len(c) != 1 {
		t.Fatal("could not lease the leased partition")
	}
	if c, _ := pop([]string{ids["drained"]}, true); len(c) != 1 {
		t.Fatal("could not drain the drained partition")
	}
	tests := []struct {
		name   string
		cands  []string
		locked bool
	}{
		{"leased and drained candidates", []string{ids["leased"], ids["drained"]}, false},
		{"a candidate with work", []string{ids["leased"], ids["work"]}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tx, err := s.pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM queen.log_pop_v2(ARRAY[queen.log_queue_id_v1($1::uuid, 'stale')],
				NULL, $2::uuid[], '__QUEUE_MODE__', 10, 1, 0, false, '0191d7a2-0000-7000-8000-000000000002', 'all', NULL)`,
				ports.DefaultTenant, tt.cands).Scan(&n); err != nil {
				t.Fatal(err)
			}
			var xid bool
			if err := tx.QueryRow(ctx, `SELECT pg_current_xact_id_if_assigned() IS NOT NULL`).Scan(&xid); err != nil {
				t.Fatal(err)
			}
			if xid != tt.locked {
				t.Fatalf("the pop got a transaction id: %v, want %v", xid, tt.locked)
			}
		})
	}
}

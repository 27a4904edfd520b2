package admin

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
	"github.com/queen-go/queen/adapters/postgres"
	"github.com/queen-go/queen/ports"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const tenant = ports.DefaultTenant

// fixture is a migrated database with the hot-path store (to create partitions and
// segments as pushes do) and an Admin on the same pool, wired as the broker wires them.
type fixture struct {
	store *postgres.Store
	db    *sql.DB
	admin *Admin
}

func newFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	ctx := context.Background()
	s, err := postgres.Open(ctx, pgtest.NewDatabase(t), postgres.Options{PoolSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	db := s.DB()
	// The handle's connection opener is a goroutine of its own (pgtest.Main fails the
	// package on leaked goroutines); closing it leaves the store's pool to s.Close.
	t.Cleanup(func() { _ = db.Close() })
	if opts.Discard == nil {
		opts.Discard = postgres.DiscardConn
	}
	if opts.BindOptions == nil {
		opts.BindOptions = postgres.PlanEachStatement // as the broker wires it
	}
	return &fixture{store: s, db: db, admin: New(db, opts)}
}

func (f *fixture) exec(t *testing.T, query string, args ...any) {
	t.Helper()
	if _, err := f.db.Exec(query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func (f *fixture) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := f.db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// push commits one single-frame segment per txn to (queue, partition) and returns the
// partition id.
func (f *fixture) push(t *testing.T, queue, partition string, n int) string {
	t.Helper()
	var pid string
	for i := range n {
		h := []byte(fmt.Sprintf("%-16.16s", fmt.Sprint(queue, partition, i)))
		res, err := f.store.PushSegments(context.Background(), []ports.Segment{{Tenant: tenant, Queue: queue,
			Partition: partition, Count: 1, Hashes: h, Verified: -1, Blob: []byte{1}}})
		if err != nil {
			t.Fatal(err)
		}
		pid = res[0].PartitionID
	}
	return pid
}

func baseConfig(name string) ports.QueueConfig {
	return ports.QueueConfig{Name: name, QueueOptions: ports.QueueOptions{LeaseTime: 300, RetryLimit: 3, RetryDelay: 1000,
		TTL: 3600, DeadLetterQueue: true, DLQAfterMaxRetries: true, DedupWindowSeconds: 3600, RetentionSinkHoldMaxSeconds: 604800}}
}

func TestConfigure(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()

	created := baseConfig("orders")
	created.Namespace, created.LeaseTime, created.EncryptionEnabled, created.RetentionSinkHold = "billing", 120, true, "s3"
	got, err := f.admin.Configure(ctx, tenant, created, ports.OptLeaseTime)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID == "" {
		t.Fatal("no queue id returned")
	}
	created.ID = got.ID
	if got != created {
		t.Fatalf("a new queue takes the whole configuration:\n got %+v\nwant %+v", got, created)
	}
	if n := f.count(t, `SELECT count(*) FROM queen.queues WHERE name = 'orders' AND configured`); n != 1 {
		t.Fatalf("%d configured rows, want 1", n)
	}

	// An existing queue takes only the options in the set.
	proposal := baseConfig("orders")
	proposal.LeaseTime, proposal.Priority, proposal.EncryptionEnabled = 30, 7, false
	got, err = f.admin.Configure(ctx, tenant, proposal, ports.OptLeaseTime|ports.OptPriority)
	if err != nil {
		t.Fatal(err)
	}
	want := created
	want.LeaseTime, want.Priority = 30, 7
	if got != want {
		t.Fatalf("merge:\n got %+v\nwant %+v", got, want)
	}

	// A queue a push created (configured = false, column defaults) becomes configured.
	f.push(t, "pushed.first", "p", 1)
	got, err = f.admin.Configure(ctx, tenant, baseConfig("pushed.first"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got.Namespace != "pushed" || got.Task != "first" || got.LeaseTime != 300 {
		t.Fatalf("an empty set keeps the pushed queue's row: %+v", got)
	}
	if n := f.count(t, `SELECT count(*) FROM queen.queues WHERE name = 'pushed.first' AND configured`); n != 1 {
		t.Fatal("the pushed queue is not marked configured")
	}
}

// Concurrent merges of different options all take effect: each is one atomic upsert.
func TestConfigureConcurrentMergesDoNotLoseUpdates(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	opts := []ports.QueueOption{ports.OptPriority, ports.OptLeaseTime, ports.OptRetryLimit, ports.OptRetryDelay,
		ports.OptMaxSize, ports.OptTTL, ports.OptWindowBuffer, ports.OptDelayedProcessing}
	var wg sync.WaitGroup
	errs := make([]error, len(opts))
	for i, o := range opts {
		wg.Go(func() {
			c := ports.QueueConfig{Name: "q", QueueOptions: ports.QueueOptions{Priority: 11, LeaseTime: 11, RetryLimit: 11,
				RetryDelay: 11, MaxSize: 11, TTL: 11, WindowBuffer: 11, DelayedProcessing: 11}}
			_, errs[i] = f.admin.Configure(context.Background(), tenant, c, o)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if n := f.count(t, `SELECT count(*) FROM queen.queues WHERE name = 'q' AND priority = 11 AND lease_time = 11
		AND retry_limit = 11 AND retry_delay = 11 AND max_size = 11 AND ttl = 11 AND window_buffer = 11
		AND delayed_processing = 11`); n != 1 {
		t.Fatal("a concurrent merge was lost")
	}
}

func TestDeleteQueue(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	// Two partitions with segments, hash sidecar, cursors, a subscription and dead
	// letters; and a second queue that must stay whole.
	var pids []string
	for _, p := range []string{"a", "b"} {
		pids = append(pids, f.push(t, "doomed", p, 3))
	}
	keep := f.push(t, "kept", "a", 2)
	for _, pid := range append(pids, keep) {
		f.exec(t, `INSERT INTO queen.log_consumers (partition_id, consumer_group, committed, batch_end) VALUES ($1, 'g', 0, 0)`, pid)
		f.exec(t, `INSERT INTO queen.dlq (queue_id, partition_id, consumer_group, msg_offset, transaction_id, retry_count, created_at, frame_index, blob)
			SELECT lp.queue_id, lp.id, 'g', 0, 't', 0, now(), 0, '\x01' FROM queen.log_partitions lp WHERE lp.id = $1`, pid)
	}
	f.exec(t, `INSERT INTO queen.consumer_groups (queue_id, name, subscription_mode)
		SELECT id, 'g', 'all' FROM queen.queues`)

	existed, err := f.admin.DeleteQueue(ctx, tenant, "doomed")
	if err != nil || !existed {
		t.Fatalf("DeleteQueue = %v, %v; want existed", existed, err)
	}
	for _, tc := range []struct{ table, where string }{
		{"queen.queues", "name = 'doomed'"},
		{"queen.log_partitions", "id = ANY($1::uuid[])"},
		{"queen.log_segments", "partition_id = ANY($1::uuid[])"},
		{"queen.log_txns", "partition_id = ANY($1::uuid[])"},
		{"queen.log_consumers", "partition_id = ANY($1::uuid[])"},
		{"queen.dlq", "partition_id = ANY($1::uuid[])"},
		{"queen.consumer_groups", "queue_id NOT IN (SELECT id FROM queen.queues)"},
	} {
		args := []any{}
		if len(tc.where) > 0 && tc.where[len(tc.where)-1] == ')' && tc.table != "queen.consumer_groups" {
			args = append(args, pids)
		}
		if n := f.count(t, `SELECT count(*) FROM `+tc.table+` WHERE `+tc.where, args...); n != 0 {
			t.Errorf("%s: %d rows of the deleted queue remain", tc.table, n)
		}
	}
	for table, want := range map[string]int{"queen.log_segments": 2, "queen.log_txns": 2, "queen.log_consumers": 1, "queen.dlq": 1} {
		if n := f.count(t, `SELECT count(*) FROM `+table+` WHERE partition_id = $1`, keep); n != want {
			t.Errorf("%s: the other queue has %d rows, want %d", table, n, want)
		}
	}

	existed, err = f.admin.DeleteQueue(ctx, tenant, "doomed")
	if err != nil || existed {
		t.Fatalf("second DeleteQueue = %v, %v; want not existed", existed, err)
	}
	// The name is free again: a push creates a new queue with a new partition from 0.
	if pid := f.push(t, "doomed", "a", 1); pid == pids[0] {
		t.Fatal("the recreated partition reuses the old id")
	}
}

// TestDeleteQueueSweepsOrphans: a broker of an older version deleted queues by their
// row alone, relying on foreign keys that cascaded to the partitions; those keys are gone,
// so its deletions left partitions (with their segments, hash rows and cursors) without a
// queue. Any later deletion removes them.
func TestDeleteQueueSweepsOrphans(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	orphan := f.push(t, "old", "a", 2)
	f.exec(t, `INSERT INTO queen.log_consumers (partition_id, consumer_group, committed, batch_end) VALUES ($1, 'g', 0, 0)`, orphan)
	f.exec(t, `DELETE FROM queen.queues WHERE name = 'old'`) // what the older broker did
	keep := f.push(t, "kept", "a", 1)
	f.push(t, "doomed", "a", 1)

	if existed, err := f.admin.DeleteQueue(context.Background(), tenant, "doomed"); err != nil || !existed {
		t.Fatalf("DeleteQueue = %v, %v; want existed", existed, err)
	}
	for _, table := range []string{"queen.log_segments", "queen.log_txns", "queen.log_consumers"} {
		if n := f.count(t, `SELECT count(*) FROM `+table+` WHERE partition_id = $1`, orphan); n != 0 {
			t.Errorf("%s: %d rows of the orphan partition remain", table, n)
		}
	}
	if n := f.count(t, `SELECT count(*) FROM queen.log_partitions WHERE id = $1`, orphan); n != 0 {
		t.Error("the orphan partition remains")
	}
	if n := f.count(t, `SELECT count(*) FROM queen.log_segments WHERE partition_id = $1`, keep); n != 1 {
		t.Errorf("the other queue has %d segments, want 1", n)
	}
}

// A deletion that waits past the statement timeout is cancelled on the server and its
// connection is closed, not reused.
func TestDeleteQueueTimeoutDiscardsConnection(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var discarded []uint32
	f := newFixture(t, Options{StatementTimeout: 300 * time.Millisecond, Discard: func(dc any) error {
		if c, ok := dc.(*stdlib.Conn); ok {
			mu.Lock()
			discarded = append(discarded, c.Conn().PgConn().PID())
			mu.Unlock()
		}
		return postgres.DiscardConn(dc)
	}})
	ctx := context.Background()
	f.push(t, "locked", "p", 1)
	tx, err := f.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.Exec(`SELECT 1 FROM queen.log_partitions FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	_, err = f.admin.DeleteQueue(ctx, tenant, "locked")
	if !errors.Is(err, ports.ErrTimeout) {
		t.Fatalf("blocked deletion error = %v, want ErrTimeout", err)
	}
	mu.Lock()
	pids := append([]uint32(nil), discarded...)
	mu.Unlock()
	if len(pids) != 1 {
		t.Fatalf("%d connections discarded, want 1", len(pids))
	}
	deadline := time.Now().Add(5 * time.Second)
	for f.count(t, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, int(pids[0])) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("backend %d of the timed-out deletion is still connected", pids[0])
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if existed, err := f.admin.DeleteQueue(ctx, tenant, "locked"); err != nil || !existed {
		t.Fatalf("DeleteQueue after the lock = %v, %v", existed, err)
	}
}

func TestDeadLetters(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	pa := f.push(t, "qa", "p1", 1)
	pb := f.push(t, "qb", "p2", 1)
	// Rows failing one second apart, oldest first: qa/g1, qa/g2, qb/g1, qa/g1.
	base := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	rows := []struct{ pid, group, txn string }{{pa, "g1", "t0"}, {pa, "g2", "t1"}, {pb, "g1", "t2"}, {pa, "g1", "t3"}}
	for i, r := range rows {
		f.exec(t, `INSERT INTO queen.dlq (queue_id, partition_id, consumer_group, msg_offset, transaction_id, error_message,
			retry_count, created_at, failed_at, frame_index, blob)
			SELECT lp.queue_id, lp.id, $2, $3::int, $4, CASE WHEN $3::int = 0 THEN NULL ELSE 'boom' END, $3::int, $5, $6, 0, '\x0102'
			  FROM queen.log_partitions lp WHERE lp.id = $1`,
			r.pid, r.group, i, r.txn, base, base.Add(time.Duration(i)*time.Second))
	}
	tests := []struct {
		name string
		f    ports.DeadLetterFilter
		want []string // transaction ids, in order
	}{
		{"all, newest first", ports.DeadLetterFilter{Limit: 100}, []string{"t3", "t2", "t1", "t0"}},
		{"one queue", ports.DeadLetterFilter{Queue: "qa", Limit: 100}, []string{"t3", "t1", "t0"}},
		{"one group", ports.DeadLetterFilter{ConsumerGroup: "g1", Limit: 100}, []string{"t3", "t2", "t0"}},
		{"queue and group", ports.DeadLetterFilter{Queue: "qa", ConsumerGroup: "g2", Limit: 100}, []string{"t1"}},
		{"page", ports.DeadLetterFilter{Limit: 2, Offset: 1}, []string{"t2", "t1"}},
		{"limit 0", ports.DeadLetterFilter{Limit: 0}, nil},
		{"unknown queue", ports.DeadLetterFilter{Queue: "nope", Limit: 100}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := f.admin.DeadLetters(ctx, tenant, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var txns []string
			for _, d := range got {
				txns = append(txns, d.TransactionID)
			}
			if fmt.Sprint(txns) != fmt.Sprint(tt.want) {
				t.Fatalf("transaction ids %v, want %v", txns, tt.want)
			}
		})
	}
	t.Run("fields", func(t *testing.T) {
		t.Parallel()
		got, err := f.admin.DeadLetters(ctx, tenant, ports.DeadLetterFilter{Queue: "qa", Limit: 1})
		if err != nil || len(got) != 1 {
			t.Fatalf("DeadLetters = %v, %v", got, err)
		}
		d := got[0]
		if d.ID == "" || d.Queue != "qa" || d.Partition != "p1" || d.PartitionID != pa || d.ConsumerGroup != "g1" ||
			d.Offset != 3 || d.RetryCount != 3 || d.ErrorMessage == nil || *d.ErrorMessage != "boom" ||
			!d.CreatedAt.Equal(base) || !d.FailedAt.Equal(base.Add(3*time.Second)) || d.FrameIndex != 0 ||
			string(d.Blob) != "\x01\x02" {
			t.Fatalf("row %+v", d)
		}
		oldest, err := f.admin.DeadLetters(ctx, tenant, ports.DeadLetterFilter{Queue: "qa", Limit: 1, Offset: 2})
		if err != nil || len(oldest) != 1 || oldest[0].ErrorMessage != nil {
			t.Fatalf("a NULL error message reads as %+v (%v), want nil", oldest, err)
		}
	})
	t.Run("other tenant", func(t *testing.T) {
		t.Parallel()
		got, err := f.admin.DeadLetters(ctx, "00000000-0000-0000-0000-000000000002", ports.DeadLetterFilter{Limit: 100})
		if err != nil || len(got) != 0 {
			t.Fatalf("another tenant sees %d dead letters (%v)", len(got), err)
		}
	})
}

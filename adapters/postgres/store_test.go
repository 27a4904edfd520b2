package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
	"github.com/queen-go/queen/ports"
	"github.com/queen-go/queen/ports/porttest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// newStore returns a migrated store on a fresh database.
func newStore(t *testing.T, opts Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), pgtest.NewDatabase(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *Store) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := s.pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func TestSegmentStoreConformance(t *testing.T) {
	porttest.SegmentStore(t, func(t *testing.T) porttest.Fixture {
		s := newStore(t, Options{PoolSize: 10})
		return porttest.Fixture{
			Store: s,
			SetWindow: func(t *testing.T, tenant, queue string, w time.Duration) {
				s.exec(t, `INSERT INTO queen.queues (tenant_id, name, dedup_window_seconds) VALUES ($1, $2, $3)
				           ON CONFLICT (tenant_id, name) DO UPDATE SET dedup_window_seconds = EXCLUDED.dedup_window_seconds`,
					tenant, queue, int(w.Seconds()))
			},
			Age: func(t *testing.T, pid string, d time.Duration) {
				s.exec(t, `UPDATE queen.log_txns SET created_at = created_at - $2::interval WHERE partition_id = $1`, pid, d)
				s.exec(t, `UPDATE queen.log_segments SET created_at = created_at - $2::interval WHERE partition_id = $1`, pid, d)
			},
			DeleteSegment: func(t *testing.T, pid string, off int64) {
				s.exec(t, `DELETE FROM queen.log_segments WHERE partition_id = $1 AND base_offset <= $2 AND base_offset + msg_count > $2`, pid, off)
			},
		}
	})
}

func TestMigrateIsIdempotentAndConcurrent(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			s, err := Open(context.Background(), url, Options{PoolSize: 2})
			if err != nil {
				errs[i] = err
				return
			}
			defer s.Close()
			for range 2 {
				if err := s.Migrate(context.Background()); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("concurrent migrations: %v", err)
	}
}

// TestMigrateOnACurrentDatabaseLocksNoTable: applying the schema again (a broker
// starting) takes no lock that waits for writers: with every table of schema queen held
// in ROW EXCLUSIVE mode (what an insert, update or delete holds until its commit), the
// migration still finishes. A CREATE INDEX IF NOT EXISTS takes a SHARE lock before it
// finds the index; a broker starting while others flush and push would queue behind
// them and they behind it, until a deadlock.
func TestMigrateOnACurrentDatabaseLocksNoTable(t *testing.T) {
	t.Parallel()
	s := newStore(t, Options{PoolSize: 4})
	ctx := context.Background()
	writer, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = writer.Rollback(ctx) }()
	rows, err := writer.Query(ctx, `SELECT format('%I.%I', schemaname, tablename) FROM pg_tables WHERE schemaname = 'queen'`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) == 0 {
		t.Fatalf("tables of schema queen: %v %v", tables, err)
	}
	for _, tbl := range tables {
		if _, err := writer.Exec(ctx, "LOCK TABLE "+tbl+" IN ROW EXCLUSIVE MODE"); err != nil {
			t.Fatal(err)
		}
	}
	mctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Migrate(mctx) }()
	// What the migration waits for, if it waits: the table it asks a lock of.
	var waiting []string
	for range 50 {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("migrating while every table has a writer: %v", err)
			}
			return
		case <-time.After(100 * time.Millisecond):
		}
		if err := s.pool.QueryRow(ctx, `SELECT coalesce(array_agg(DISTINCT l.relation::regclass::text), '{}') FROM pg_locks l
			WHERE NOT l.granted AND l.relation IS NOT NULL`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if len(waiting) > 0 {
			break
		}
	}
	cancel()
	<-done
	t.Fatalf("the migration waits for a lock on %v, which every writer of the table holds off", waiting)
}

func TestSchemaTuning(t *testing.T) {
	t.Parallel()
	s := newStore(t, Options{PoolSize: 2})
	var opts []string
	if err := s.pool.QueryRow(context.Background(),
		`SELECT reloptions FROM pg_class WHERE oid = 'queen.log_partitions'::regclass`).Scan(&opts); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"fillfactor=50": false, "vacuum_truncate=off": false, "autovacuum_vacuum_scale_factor=0": false}
	for _, o := range opts {
		if _, ok := want[o]; ok {
			want[o] = true
		}
	}
	for o, seen := range want {
		if !seen {
			t.Errorf("log_partitions lacks %s (has %v)", o, opts)
		}
	}
	for _, tc := range []struct{ table, column string }{{"log_segments", "blob"}, {"log_txns", "hashes"}} {
		var storage string
		if err := s.pool.QueryRow(context.Background(),
			`SELECT attstorage::text FROM pg_attribute WHERE attrelid = ('queen.' || $1)::regclass AND attname = $2`,
			tc.table, tc.column).Scan(&storage); err != nil {
			t.Fatal(err)
		}
		if storage != "e" {
			t.Errorf("%s.%s storage = %q, want EXTERNAL (e)", tc.table, tc.column, storage)
		}
	}
}

// TestHotTablesHaveNoConstraintTriggers checks that nothing makes PostgreSQL run a
// trigger or parse a CHECK expression on every push (see schema/001_tables.sql), also in
// a database created by an older schema that still had those constraints.
func TestHotTablesHaveNoConstraintTriggers(t *testing.T) {
	t.Parallel()
	s := newStore(t, Options{PoolSize: 2})
	s.exec(t, `ALTER TABLE queen.log_partitions ADD CONSTRAINT log_partitions_queue_id_fkey
	             FOREIGN KEY (queue_id) REFERENCES queen.queues (id) ON DELETE CASCADE`)
	s.exec(t, `ALTER TABLE queen.log_segments ADD CONSTRAINT log_segments_msg_count_check CHECK (msg_count > 0)`)
	s.exec(t, `ALTER TABLE queen.log_consumers ADD CONSTRAINT log_consumers_partition_id_fkey
	             FOREIGN KEY (partition_id) REFERENCES queen.log_partitions (id) ON DELETE CASCADE`)
	s.exec(t, `ALTER TABLE queen.dlq ADD CONSTRAINT dlq_partition_id_fkey
	             FOREIGN KEY (partition_id) REFERENCES queen.log_partitions (id) ON DELETE CASCADE`)
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"log_partitions", "log_segments", "log_txns"} {
		var triggers, checks int
		if err := s.pool.QueryRow(context.Background(),
			`SELECT (SELECT count(*) FROM pg_trigger WHERE tgrelid = ('queen.' || $1)::regclass),
			        (SELECT count(*) FROM pg_constraint WHERE conrelid = ('queen.' || $1)::regclass AND contype = 'c')`,
			table).Scan(&triggers, &checks); err != nil {
			t.Fatal(err)
		}
		if triggers != 0 || checks != 0 {
			t.Errorf("%s: %d triggers and %d CHECK constraints, want none", table, triggers, checks)
		}
	}
}

// TestUpgradeGivesUpOnBusyTables: a start-up whose constraint drop cannot get its locks
// (another transaction holds one of the tables) leaves that constraint for the next start
// instead of failing or stalling.
func TestUpgradeGivesUpOnBusyTables(t *testing.T) {
	t.Parallel()
	s := newStore(t, Options{PoolSize: 4})
	s.exec(t, `ALTER TABLE queen.log_segments ADD CONSTRAINT log_segments_msg_count_check CHECK (msg_count > 0)`)
	ctx := context.Background()
	holder, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	if _, err := holder.Exec(ctx, `SELECT count(*) FROM queen.log_segments`); err != nil {
		t.Fatal(err)
	}
	bounded, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.Migrate(bounded); err != nil {
		t.Fatalf("Migrate with a busy table: %v", err)
	}
	checks := func() (n int) {
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_constraint WHERE conname = 'log_segments_msg_count_check'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := checks(); n != 1 {
		t.Fatalf("the constraint was dropped under a held lock (%d left)", n)
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if n := checks(); n != 0 {
		t.Errorf("the next start left the constraint (%d)", n)
	}
}

func TestProvisioningDerivesNamespaceAndTask(t *testing.T) {
	t.Parallel()
	s := newStore(t, Options{PoolSize: 2})
	segs := []ports.Segment{
		{Tenant: ports.DefaultTenant, Queue: "billing.invoice.v2", Partition: "p", Count: 1, Hashes: make([]byte, 16), Verified: -1, Blob: []byte{1}},
		{Tenant: ports.DefaultTenant, Queue: "plain", Partition: "p", Count: 1, Hashes: make([]byte, 16), Verified: -1, Blob: []byte{1}},
	}
	if _, err := s.PushSegments(context.Background(), segs); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ queue, ns, task string }{{"billing.invoice.v2", "billing", "invoice"}, {"plain", "", ""}} {
		var ns, task string
		if err := s.pool.QueryRow(context.Background(), `SELECT namespace, task FROM queen.queues WHERE name = $1`, tc.queue).Scan(&ns, &task); err != nil {
			t.Fatal(err)
		}
		if ns != tc.ns || task != tc.task {
			t.Errorf("%s: namespace %q task %q, want %q %q", tc.queue, ns, task, tc.ns, tc.task)
		}
	}
}

func TestGuardsRaise(t *testing.T) {
	t.Parallel()
	s := newStore(t, Options{PoolSize: 2})
	// The set-based bundle and its per-segment reference keep the same guards.
	var tests []struct{ name, sql string }
	for _, fn := range []string{"log_push_multi_v4", "log_push_multi_v3", "log_push_multi_v2"} {
		tests = append(tests, []struct{ name, sql string }{
			{fn + "/misaligned arrays", `SELECT queen.` + fn + `(ARRAY['q','q'], ARRAY['p'], ARRAY[1], ARRAY['\x00000000000000000000000000000000'::bytea], ARRAY[-1::int8], ARRAY['\x01'::bytea])`},
			{fn + "/hash stride", `SELECT queen.` + fn + `(ARRAY['q'], ARRAY['p'], ARRAY[2], ARRAY['\x00000000000000000000000000000000'::bytea], ARRAY[-1::int8], ARRAY['\x01'::bytea])`},
			{fn + "/zero count", `SELECT queen.` + fn + `(ARRAY['q'], ARRAY['p'], ARRAY[0], ARRAY[''::bytea], ARRAY[-1::int8], ARRAY['\x01'::bytea])`},
		}...)
	}
	// v4's plain flags must align with the segments: a refusal routed to the wrong segment
	// would store plaintext or drop a commit.
	const one = `ARRAY['q'], ARRAY['p'], ARRAY[1], ARRAY['\x00000000000000000000000000000000'::bytea], ARRAY[-1::int8], ARRAY['\x01'::bytea]`
	tests = append(tests, []struct{ name, sql string }{
		{"log_push_multi_v4/more flags than segments", `SELECT queen.log_push_multi_v4(` + one + `, NULL, ARRAY[true, false])`},
		{"log_push_multi_v4/a NULL flag", `SELECT queen.log_push_multi_v4(` + one + `, NULL, ARRAY[NULL::boolean])`},
		{"log_push_multi_v4/misaligned arrays with flags", `SELECT queen.log_push_multi_v4(ARRAY['q','q'], ARRAY['p'], ARRAY[1], ARRAY['\x00000000000000000000000000000000'::bytea], ARRAY[-1::int8], ARRAY['\x01'::bytea], NULL, ARRAY[true, true])`},
	}...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.pool.Exec(context.Background(), tt.sql)
			if err == nil {
				t.Fatal("the guard did not raise")
			}
			if !errors.Is(translate("test", err), ports.ErrInvalid) {
				t.Fatalf("error %v does not translate to ErrInvalid", err)
			}
		})
	}
}

func TestAllocatorUpdatesStayMostlyHOT(t *testing.T) {
	t.Parallel()
	s := newStore(t, Options{PoolSize: 2})
	for i := range 200 {
		seg := ports.Segment{Tenant: ports.DefaultTenant, Queue: "hot", Partition: "p", Count: 1,
			Hashes: []byte(fmt.Sprintf("%016d", i)), Verified: -1, Blob: []byte{1}}
		if _, err := s.PushSegments(context.Background(), []ports.Segment{seg}); err != nil {
			t.Fatal(err)
		}
	}
	// Statistics reach pg_stat views asynchronously: each backend flushes its counters
	// when idle, at most about once a second. Wait (bounded) until all 200 updates show.
	var upd, hot int64
	for deadline := time.Now().Add(30 * time.Second); upd < 200; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("pg_stat_user_tables shows %d of the 200 allocator updates after 30 s", upd)
		}
		if _, err := s.pool.Exec(context.Background(), "SELECT pg_stat_force_next_flush()"); err != nil {
			t.Fatal(err)
		}
		if err := s.pool.QueryRow(context.Background(),
			`SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relid = 'queen.log_partitions'::regclass`).Scan(&upd, &hot); err != nil {
			t.Fatal(err)
		}
	}
	if hot*10 < upd*8 {
		t.Fatalf("%d of %d allocator updates were HOT, want at least 80%%", hot, upd)
	}
}

// TestEnsureSchema: an unreachable database defers the schema to the first connection
// that succeeds (and says nothing failed); any other failure, such as a database that
// does not exist, is returned at once.
func TestEnsureSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name    string
		url     func(t *testing.T) string
		wantErr bool
		pending bool
	}{
		{name: "reachable", url: func(t *testing.T) string { return pgtest.NewDatabase(t) }},
		{name: "unreachable", url: func(*testing.T) string { return "postgres://postgres@127.0.0.1:1/none?connect_timeout=2" },
			pending: true},
		{name: "missing database", url: func(t *testing.T) string {
			u, err := url.Parse(pgtest.NewDatabase(t))
			if err != nil {
				t.Fatal(err)
			}
			u.Path = "/no_such_database_here"
			return u.String()
		}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Open(ctx, tc.url(t), Options{PoolSize: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			err = s.EnsureSchema(ctx)
			if (err != nil) != tc.wantErr || s.schemaPending.Load() != tc.pending {
				t.Fatalf("EnsureSchema = %v, pending %v; want error %v, pending %v", err, s.schemaPending.Load(), tc.wantErr, tc.pending)
			}
			if tc.wantErr || tc.pending {
				return
			}
			var applied bool
			if err := s.Pool().QueryRow(ctx, `SELECT to_regclass('queen.log_segments') IS NOT NULL`).Scan(&applied); err != nil || !applied {
				t.Fatalf("schema applied: %v, %v", applied, err)
			}
		})
	}
}

// TestOldestXactAge: a transaction that holds an xid (docs/reliability.md F8: BEGIN; SELECT
// txid_current(); then idle) shows in the age until it ends.
func TestOldestXactAge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, Options{PoolSize: 4})
	// poll waits up to 15 s for the age to satisfy ok.
	poll := func(what string, ok func(time.Duration) bool) {
		t.Helper()
		var age time.Duration
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			var err error
			if age, err = s.OldestXactAge(ctx); err != nil {
				t.Fatal(err)
			}
			if ok(age) {
				return
			}
		}
		t.Fatalf("%s: the oldest transaction's age is still %v", what, age)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	if _, err := tx.Exec(ctx, `SELECT txid_current()`); err != nil {
		t.Fatal(err)
	}
	poll("with a transaction held open", func(d time.Duration) bool { return d >= time.Second })
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	poll("after it committed", func(d time.Duration) bool { return d < time.Second })
}

// TestReplicationSetup reads the test cluster's set-up: no standby, no synchronous
// standby names, not in recovery, and synchronous_commit as the database sets it.
func TestReplicationSetup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		settings []string
		want     ports.ReplicationSetup
	}{
		{"defaults", nil, ports.ReplicationSetup{SynchronousCommit: "on"}},
		{"synchronous_commit off for the database", []string{"synchronous_commit", "off"},
			ports.ReplicationSetup{SynchronousCommit: "off"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Open(context.Background(), pgtest.NewDatabaseWith(t, tt.settings...), Options{PoolSize: 2})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			got, err := s.ReplicationSetup(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("set-up %+v, want %+v", got, tt.want)
			}
		})
	}
}

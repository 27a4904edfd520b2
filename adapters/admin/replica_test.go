package admin

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
	"github.com/queen-go/queen/adapters/postgres"
	"github.com/queen-go/queen/core/replication"
	"github.com/queen-go/queen/ports"
)

// replicaFixture is a primary of the test's own (a standby copies the whole cluster), its
// streaming standby, and an Admin whose replica-eligible reads go to the standby while
// a ReadRouter says so, wired as the broker wires them.
type replicaFixture struct {
	*fixture
	standby *pgtest.Standby
	replica *sql.DB // a plain handle on the standby, for the test's own statements
	router  *replication.ReadRouter
}

func newReplicaFixture(t *testing.T, maxLag time.Duration) *replicaFixture {
	t.Helper()
	ctx := context.Background()
	primaryURL := pgtest.NewCluster(t)
	s, err := postgres.Open(ctx, primaryURL, postgres.Options{PoolSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	standby := pgtest.NewStandby(t, primaryURL)
	rs, err := postgres.Open(ctx, standby.URL, postgres.Options{PoolSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.Close)
	db, rdb, plain := s.DB(), rs.DB(), rs.DB()
	t.Cleanup(func() { _, _, _ = db.Close(), rdb.Close(), plain.Close() })

	opts := Options{Discard: postgres.DiscardConn, BindOptions: postgres.PlanEachStatement, Replica: rdb}
	f := &replicaFixture{fixture: &fixture{store: s, db: db}, standby: standby, replica: plain}
	reader := New(db, opts)
	f.router = replication.NewReadRouter(reader, replication.ReadOptions{MaxLag: maxLag, Timeout: 10 * time.Second,
		Logger: slog.New(slog.DiscardHandler)})
	opts.UseReplica = f.router.Replica
	f.admin = New(db, opts)
	return f
}

// queues lists the tenant's queue names through the Admin (wherever it routes them).
func (f *replicaFixture) queues(t *testing.T) []string {
	t.Helper()
	qs, _, err := f.admin.ListQueues(context.Background(), tenant, ports.ResourceFilter{}, ports.ResourcePage{Limit: 100})
	if err != nil {
		t.Fatalf("list queues: %v", err)
	}
	var names []string
	for _, q := range qs {
		names = append(names, q.Name)
	}
	return names
}

// until measures (and lists) until ok says so, for at most a minute.
func (f *replicaFixture) until(t *testing.T, what string, ok func(replication.ReadTarget) bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !ok(f.router.Measure(context.Background())) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within a minute", what)
		}
		time.Sleep(20 * time.Millisecond) // a bounded poll of the standby's replay
	}
}

// TestReadsGoToTheReplicaWhileItKeepsUp proves the routing with a standby whose replay
// is paused: a queue created on the primary then is missing from the listing while the
// lag is under QUEEN_READ_MAX_LAG_MS (the standby answered it), appears as soon as the
// lag passes the limit (the primary answers), and stays once replay resumes (the standby
// answers again, caught up: lag 0). A standby that goes away leaves the reads to the
// primary at once, before the router's next measurement notices it.
func TestReadsGoToTheReplicaWhileItKeepsUp(t *testing.T) {
	t.Parallel()
	const maxLag = 2 * time.Second
	f := newReplicaFixture(t, maxLag)
	ctx := context.Background()

	f.push(t, "before", "p", 1)
	f.until(t, "replica with the first queue", func(r replication.ReadTarget) bool {
		return r == replication.OnReplica && slices.Contains(f.queues(t), "before")
	})
	if _, err := f.replica.ExecContext(ctx, `SELECT pg_wal_replay_pause()`); err != nil {
		t.Fatal(err)
	}
	if r := f.router.Measure(ctx); r != replication.OnReplica {
		t.Fatalf("paused but not behind yet: reads go to the %v", r)
	}
	f.push(t, "fresh", "p", 1)
	if r := f.router.Measure(ctx); r != replication.OnReplica {
		t.Fatalf("reads go to the %v with a lag under %v", r, maxLag)
	}
	if lag, known := f.router.Lag(); !known || lag <= 0 || lag > maxLag {
		t.Fatalf("lag %v (known %v) right after a commit the standby does not replay", lag, known)
	}
	if got := f.queues(t); slices.Contains(got, "fresh") || !slices.Contains(got, "before") {
		t.Fatalf("listing %v: want the standby's (before, not fresh)", got)
	}

	f.until(t, "fallback to the primary", func(r replication.ReadTarget) bool { return r == replication.OnPrimary })
	if lag, known := f.router.Lag(); !known || lag <= maxLag {
		t.Fatalf("reads on the primary with a lag of %v (known %v)", lag, known)
	}
	if got := f.queues(t); !slices.Contains(got, "fresh") {
		t.Fatalf("listing %v from the primary misses fresh", got)
	}

	if _, err := f.replica.ExecContext(ctx, `SELECT pg_wal_replay_resume()`); err != nil {
		t.Fatal(err)
	}
	f.until(t, "caught-up replica", func(r replication.ReadTarget) bool {
		lag, _ := f.router.Lag()
		return r == replication.OnReplica && lag == 0
	})
	if got := f.queues(t); !slices.Contains(got, "fresh") {
		t.Fatalf("listing %v from the caught-up standby misses fresh", got)
	}

	f.standby.Stop(t)
	if got := f.queues(t); !slices.Contains(got, "fresh") { // routed to the standby, answered by the primary
		t.Fatalf("listing %v after the standby went away", got)
	}
	if r := f.router.Measure(ctx); r != replication.OnPrimary {
		t.Fatalf("reads go to the %v with the standby down", r)
	}
	if lag, known := f.router.Lag(); known {
		t.Fatalf("a lag (%v) of a standby that is down", lag)
	}
}

// TestReplicaReadsRunOnAStandby runs every replica-eligible read on a standby (the
// Admin always routes there): none of them writes, takes a lock a standby refuses, or
// needs anything the primary alone has.
func TestReplicaReadsRunOnAStandby(t *testing.T) {
	t.Parallel()
	f := newReplicaFixture(t, time.Hour)
	ctx := context.Background()
	pid := f.push(t, "orders", "p", 3)
	f.until(t, "replica with the queue", func(r replication.ReadTarget) bool {
		return r == replication.OnReplica && slices.Contains(f.queues(t), "orders")
	})
	a := New(f.db, Options{Discard: postgres.DiscardConn, BindOptions: postgres.PlanEachStatement,
		Replica: f.admin.opts.Replica, UseReplica: func() bool { return true }})
	a.opts.Replica = nil // the fallback to the primary must not hide a failure: no primary handle is
	a.db = a.replica     // reached from here on (every statement runs on the standby)

	span := ports.MetricsSpan{From: time.Now().Add(-time.Hour), To: time.Now(), Bucket: time.Minute}
	page := ports.ResourcePage{Limit: 10}
	reads := []struct {
		name string
		run  func() error
	}{
		{"ListQueues", func() error { _, _, err := a.ListQueues(ctx, tenant, ports.ResourceFilter{}, page); return err }},
		{"QueueDetail", func() error { _, _, err := a.QueueDetail(ctx, tenant, "orders", page); return err }},
		{"QueueDepth", func() error { _, _, err := a.QueueDepth(ctx, tenant, "orders", "", page); return err }},
		{"CountsBy", func() error { _, err := a.CountsBy(ctx, tenant, ports.ByNamespace, page); return err }},
		{"Overview", func() error { _, err := a.Overview(ctx, tenant); return err }},
		{"Status", func() error { _, err := a.Status(ctx, tenant, ports.ResourceFilter{}); return err }},
		{"StorageTotals", func() error { _, err := a.StorageTotals(ctx); return err }},
		{"GroupSummaries", func() error { _, _, err := a.GroupSummaries(ctx, tenant, ports.GroupPage{Limit: 10}); return err }},
		{"GroupPositions", func() error {
			_, _, err := a.GroupPositions(ctx, tenant, "__QUEUE_MODE__", ports.GroupPage{Limit: 10})
			return err
		}},
		{"LaggingPositions", func() error { _, _, err := a.LaggingPositions(ctx, tenant, 0, 10); return err }},
		{"BrowseSegments", func() error {
			_, err := a.BrowseSegments(ctx, tenant, ports.MessageFilter{Queue: "orders"}, nil, 10)
			return err
		}},
		{"BrowseModes", func() error { _, err := a.BrowseModes(ctx, tenant, ports.MessageFilter{Queue: "orders"}); return err }},
		{"SegmentBlobs", func() error { _, err := a.SegmentBlobs(ctx, nil); return err }},
		{"FindMessage", func() error { _, _, err := a.FindMessage(ctx, tenant, pid, [16]byte{1}); return err }},
		{"DeadLetters", func() error { _, err := a.DeadLetters(ctx, tenant, ports.DeadLetterFilter{Limit: 10}); return err }},
		{"MessageTraces", func() error { _, err := a.MessageTraces(ctx, tenant, pid, "t", 10); return err }},
		{"TracesByName", func() error { _, _, err := a.TracesByName(ctx, tenant, "n", 10, 0); return err }},
		{"TraceNames", func() error { _, _, err := a.TraceNames(ctx, tenant, 10, 0); return err }},
		{"QueueSeries", func() error { _, err := a.QueueSeries(ctx, tenant, span, ports.ResourceFilter{}, nil); return err }},
		{"QueueTotals", func() error { _, err := a.QueueTotals(ctx, tenant, span, ports.ResourceFilter{}); return err }},
		{"BrokerSeries", func() error { _, err := a.BrokerSeries(ctx, span, ports.BrokerFilter{}); return err }},
		{"ParkedSeries", func() error { _, err := a.ParkedSeries(ctx, span, ""); return err }},
		{"Retention", func() error {
			_, _, err := a.Retention(ctx, tenant, span, ports.ResourceFilter{}, ports.RetentionByQueue)
			return err
		}},
		{"DeadLetterErrors", func() error { _, err := a.DeadLetterErrors(ctx, tenant, ports.ResourceFilter{}, 10); return err }},
		{"Lag", func() error { _, err := a.Lag(ctx, tenant); return err }},
	}
	for _, r := range reads {
		if err := r.run(); err != nil {
			t.Errorf("%s on a standby: %v", r.name, err)
		}
	}
	// The primary-only statements do fail there: the test does run on the standby.
	if _, err := a.Configure(ctx, tenant, baseConfig("other"), 0); err == nil {
		t.Error("a configure succeeded on the standby")
	}
}

// TestReplicaReadingWithoutReplica: the reading needs a replica.
func TestReplicaReadingWithoutReplica(t *testing.T) {
	t.Parallel()
	if _, err := New(nil, Options{}).ReplicaReading(context.Background()); err == nil {
		t.Fatal("a reading without a replica")
	}
}

func TestReplicaFailed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want bool
	}{
		{ports.ErrUnavailable, true},
		{errors.Join(errors.New("list queues"), ports.ErrUnavailable), true},
		{ports.ErrTimeout, false},                                                       // a slow statement: the primary would not do better
		{&acquireError{fmt.Errorf("list queues: acquire: %w", ports.ErrTimeout)}, true}, // a standby that hangs
		{errors.New("syntax error"), false},
	}
	for _, tt := range tests {
		if got := replicaFailed(tt.err); got != tt.want {
			t.Errorf("replicaFailed(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

package admin

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

// Store-level tests of the TraceStore (traces.go) on a real PostgreSQL.

// trcAdd records a trace kept for lifetime and fails the test on any error.
func (f *fixture) trcAdd(t *testing.T, tenant string, nt ports.NewTrace, lifetime time.Duration) ports.Trace {
	t.Helper()
	tr, found, err := f.admin.AddTrace(context.Background(), tenant, nt,
		func(ports.QueueOptions) time.Duration { return lifetime }, 0)
	if err != nil || !found {
		t.Fatalf("AddTrace(%+v) = %v, %v", nt, found, err)
	}
	return tr
}

func trcIDsOf(ts []ports.Trace) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out
}

func TestAddTrace(t *testing.T) {
	t.Parallel()
	f := newMsgBrowseFixture(t)
	ctx := context.Background()
	f.exec(t, `UPDATE queen.queues SET retention_enabled = true, retention_seconds = 600, max_wait_time_seconds = 60
		WHERE name = 'q' AND tenant_id = $1`, tenant)
	nt := ports.NewTrace{PartitionID: f.a1.pid, TransactionID: "a0", ConsumerGroup: "g", EventType: "info",
		Names: []string{"n1", "n2"}, Data: []byte(`{"k": [1, 2]}`)}
	var seen ports.QueueOptions
	tr, found, err := f.admin.AddTrace(ctx, tenant, nt, func(o ports.QueueOptions) time.Duration {
		seen = o
		return 90 * time.Second
	}, 10)
	if err != nil || !found {
		t.Fatalf("AddTrace = %v, %v", found, err)
	}
	if !seen.RetentionEnabled || seen.RetentionSeconds != 600 || seen.MaxWaitTimeSeconds != 60 || seen.LeaseTime != 300 {
		t.Errorf("lifetime asked about %+v, want the queue's options", seen)
	}
	if tr.ID == "" || tr.Queue != "q" || tr.Partition != "a" || tr.CreatedAt.IsZero() || tr.TransactionID != "a0" ||
		!slices.Equal(tr.Names, nt.Names) || string(tr.Data) != `{"k": [1, 2]}` {
		t.Errorf("trace %+v", tr)
	}
	if n := f.count(t, `SELECT count(*) FROM queen.message_traces WHERE id = $1 AND tenant_id = $2
		AND expires_at = created_at + interval '90 seconds' AND data::text = '{"k": [1, 2]}'`, tr.ID, tenant); n != 1 {
		t.Error("the row does not expire 90 s after its creation, or its data is not kept as sent")
	}
	if n := f.count(t, `SELECT count(*) FROM queen.message_trace_names WHERE trace_id = $1 AND tenant_id = $2
		AND trace_name IN ('n1', 'n2') AND created_at = (SELECT created_at FROM queen.message_traces WHERE id = $1)`, tr.ID, tenant); n != 2 {
		t.Errorf("%d name rows, want 2", n)
	}

	for _, tt := range []struct{ name, tenant, pid string }{
		{"another tenant's partition", msgOtherTenant, f.a1.pid},
		{"unknown partition", tenant, "00000000-0000-4000-8000-000000000000"},
	} {
		called := false
		_, found, err := f.admin.AddTrace(ctx, tt.tenant, ports.NewTrace{PartitionID: tt.pid, TransactionID: "t",
			ConsumerGroup: "g", EventType: "info", Data: []byte("1")}, func(ports.QueueOptions) time.Duration {
			called = true
			return time.Hour
		}, 10)
		if err != nil || found || called {
			t.Errorf("%s: found %v called %v (%v), want not found", tt.name, found, called, err)
		}
	}
}

// TestAddTraceExpires: each insert deletes up to its batch of expired traces, oldest
// expiry first, with their name rows; live traces stay.
func TestAddTraceExpires(t *testing.T) {
	t.Parallel()
	f := newMsgBrowseFixture(t)
	ctx := context.Background()
	for i := range 5 {
		f.exec(t, `INSERT INTO queen.message_traces (tenant_id, partition_id, transaction_id, consumer_group, event_type,
			trace_names, data, created_at, expires_at)
			VALUES ($1, $2, 'old', 'g', 'info', '{old}', '1', now() - interval '1 day', now() - make_interval(secs => $3))`,
			tenant, f.a1.pid, 50-i)
	}
	f.exec(t, `INSERT INTO queen.message_trace_names (tenant_id, trace_name, created_at, trace_id)
		SELECT tenant_id, 'old', created_at, id FROM queen.message_traces`)
	live := f.trcAdd(t, tenant, ports.NewTrace{PartitionID: f.a1.pid, TransactionID: "a0", ConsumerGroup: "g",
		EventType: "info", Names: []string{"old"}, Data: []byte("2")}, time.Hour)
	expired := func() []string {
		rows, err := f.db.Query(`SELECT id::text FROM queen.message_traces WHERE expires_at < now() ORDER BY expires_at`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		return ids
	}
	before := expired()
	for _, tt := range []struct {
		batch int
		left  []string
	}{
		{2, before[2:]},
		{10, nil},
	} {
		if _, _, err := f.admin.AddTrace(ctx, tenant, ports.NewTrace{PartitionID: f.a1.pid, TransactionID: "a1",
			ConsumerGroup: "g", EventType: "info", Data: []byte("3")}, func(ports.QueueOptions) time.Duration { return time.Hour },
			tt.batch); err != nil {
			t.Fatal(err)
		}
		if got := expired(); !slices.Equal(got, tt.left) {
			t.Fatalf("after a batch of %d: expired traces %v, want %v", tt.batch, got, tt.left)
		}
	}
	if n := f.count(t, `SELECT count(*) FROM queen.message_trace_names WHERE trace_id NOT IN (SELECT id FROM queen.message_traces)`); n != 0 {
		t.Fatalf("%d name rows of deleted traces left", n)
	}
	if n := f.count(t, `SELECT count(*) FROM queen.message_trace_names WHERE trace_id = $1`, live.ID); n != 1 {
		t.Fatal("a live trace's name row was deleted")
	}
	if n := f.count(t, `SELECT count(*) FROM queen.message_traces WHERE expires_at > now()`); n != 3 {
		t.Fatalf("%d live traces, want 3", n)
	}
}

func TestReadTraces(t *testing.T) {
	t.Parallel()
	f := newMsgBrowseFixture(t)
	ctx := context.Background()
	add := func(tenant, pid, txn string, names ...string) ports.Trace {
		return f.trcAdd(t, tenant, ports.NewTrace{PartitionID: pid, TransactionID: txn, ConsumerGroup: "g",
			EventType: "info", Names: names, Data: []byte(`"` + txn + `"`)}, time.Hour)
	}
	var otherPartition string
	if err := f.db.QueryRow(`SELECT lp.id::text FROM queen.log_partitions lp JOIN queen.queues q ON q.id = lp.queue_id
		WHERE q.tenant_id = $1`, msgOtherTenant).Scan(&otherPartition); err != nil {
		t.Fatal(err)
	}
	t1 := add(tenant, f.a1.pid, "a0", "x", "y")
	t2 := add(tenant, f.a1.pid, "a0")
	t3 := add(tenant, f.b1.pid, "b0", "x")
	t4 := add(tenant, f.a1.pid, "a0", "x")
	add(msgOtherTenant, otherPartition, "o0", "x")
	// An expired trace is not read, though no batch deleted it yet.
	f.exec(t, `INSERT INTO queen.message_traces (tenant_id, partition_id, transaction_id, consumer_group, event_type,
		trace_names, data, created_at, expires_at) VALUES ($1, $2, 'a0', 'g', 'info', '{x}', '1', now(), now() - interval '1 second')`,
		tenant, f.a1.pid)
	f.exec(t, `INSERT INTO queen.message_trace_names (tenant_id, trace_name, created_at, trace_id)
		SELECT tenant_id, 'x', created_at, id FROM queen.message_traces WHERE expires_at < now()`)

	t.Run("of a message", func(t *testing.T) {
		t.Parallel()
		ts, err := f.admin.MessageTraces(ctx, tenant, f.a1.pid, "a0", 100)
		if err != nil || !slices.Equal(trcIDsOf(ts), []string{t1.ID, t2.ID, t4.ID}) {
			t.Fatalf("traces %v (%v), want oldest first %v", trcIDsOf(ts), err, []string{t1.ID, t2.ID, t4.ID})
		}
		if tr := ts[0]; tr.Queue != "q" || tr.Partition != "a" || !slices.Equal(tr.Names, []string{"x", "y"}) ||
			string(tr.Data) != `"a0"` || tr.ConsumerGroup != "g" || tr.EventType != "info" || tr.PartitionID != f.a1.pid {
			t.Errorf("trace %+v", tr)
		}
		if ts[1].Names == nil || len(ts[1].Names) != 0 {
			t.Errorf("a trace without names reads %#v, want an empty list", ts[1].Names)
		}
		if ts, err := f.admin.MessageTraces(ctx, tenant, f.a1.pid, "a0", 2); err != nil || len(ts) != 2 {
			t.Errorf("limit 2: %d (%v)", len(ts), err)
		}
		if ts, err := f.admin.MessageTraces(ctx, msgOtherTenant, f.a1.pid, "a0", 100); err != nil || len(ts) != 0 {
			t.Errorf("another tenant reads %d (%v)", len(ts), err)
		}
	})

	t.Run("by name", func(t *testing.T) {
		t.Parallel()
		for _, tt := range []struct {
			name          string
			limit, offset int
			want          []string
			total         int64
		}{
			{"x", 100, 0, []string{t4.ID, t3.ID, t1.ID}, 3},
			{"x", 2, 1, []string{t3.ID, t1.ID}, 3},
			{"x", 2, 5, nil, 3},
			{"y", 100, 0, []string{t1.ID}, 1},
			{"none", 100, 0, nil, 0},
		} {
			ts, total, err := f.admin.TracesByName(ctx, tenant, tt.name, tt.limit, tt.offset)
			if err != nil || !slices.Equal(trcIDsOf(ts), tt.want) || total != tt.total {
				t.Errorf("%+v: %v, total %d (%v)", tt, trcIDsOf(ts), total, err)
			}
		}
		if ts, _, err := f.admin.TracesByName(ctx, tenant, "x", 1, 0); err != nil || ts[0].Partition != "a" || ts[0].TransactionID != "a0" {
			t.Errorf("newest x: %+v (%v)", ts, err)
		}
	})

	t.Run("names", func(t *testing.T) {
		t.Parallel()
		ns, total, err := f.admin.TraceNames(ctx, tenant, 100, 0)
		if err != nil || len(ns) != 2 || total != 2 {
			t.Fatalf("names %+v, total %d (%v)", ns, total, err)
		}
		if ns[0].Name != "x" || ns[0].Traces != 3 || ns[0].Messages != 2 || !ns[0].LastSeen.Equal(t4.CreatedAt) ||
			ns[1].Name != "y" || ns[1].Traces != 1 || ns[1].Messages != 1 || !ns[1].LastSeen.Equal(t1.CreatedAt) {
			t.Fatalf("names %+v", ns)
		}
		if ns, total, err := f.admin.TraceNames(ctx, tenant, 1, 1); err != nil || len(ns) != 1 || ns[0].Name != "y" || total != 2 {
			t.Fatalf("second page %+v, total %d (%v)", ns, total, err)
		}
		if ns, total, err := f.admin.TraceNames(ctx, tenant, 1, 5); err != nil || len(ns) != 0 || total != 2 {
			t.Fatalf("past the end %+v, total %d (%v)", ns, total, err)
		}
		if ns, total, err := f.admin.TraceNames(ctx, msgOtherTenant, 100, 0); err != nil || len(ns) != 1 || ns[0].Traces != 1 || total != 1 {
			t.Fatalf("the other tenant's names %+v, total %d (%v)", ns, total, err)
		}
	})
}

package admin

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
	"github.com/queen-go/queen/adapters/postgres"
	"github.com/queen-go/queen/ports"
)

// injectTimeout is the statement timeout of the Admin under attack: a payload whose
// pg_sleep ran would fail its call with a timeout instead of answering (the calls that
// bind their values answer in milliseconds, far inside it).
const injectTimeout = 10 * time.Second

// injections are filter values that break out of a string literal written by bun on a
// session with standard_conforming_strings = off (bun doubles the quote, the session
// reads the backslash as its escape), then select every row or sleep. The ")" closes
// the parenthesis bun puts around each WHERE condition; "--" comments out the rest.
var injections = []struct{ name, value string }{
	{"or true, parenthesised", `doesnotexist\' OR 1=1) --`},
	{"or true", `doesnotexist\' OR 1=1 --`},
	{"sleep, parenthesised", `x\' OR pg_sleep(60) IS NULL) --`},
	{"sleep", `x\' OR pg_sleep(60) IS NULL --`},
}

// injectFixture is an Admin whose connections keep the database's
// standard_conforming_strings = off (a database/sql handle of its own, not the store's,
// whose connections set it on), so it shows what binding alone does; and a victim queue
// with a partition, a dead letter, a cursor of group vg and a trace named vn.
type injectFixture struct {
	*fixture
	pid string
}

func newInjectFixture(t *testing.T) *injectFixture {
	t.Helper()
	ctx := context.Background()
	url := pgtest.NewDatabaseWith(t, "standard_conforming_strings", "off")
	s, err := postgres.Open(ctx, url, postgres.Options{PoolSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	var scs string
	if err := db.QueryRow("SHOW standard_conforming_strings").Scan(&scs); err != nil || scs != "off" {
		t.Fatalf("the Admin's session reads standard_conforming_strings = %q (%v), want off", scs, err)
	}
	f := &injectFixture{fixture: &fixture{store: s, db: db,
		admin: New(db, Options{StatementTimeout: injectTimeout, Discard: postgres.DiscardConn,
			BindOptions: postgres.PlanEachStatement})}}

	cfg := baseConfig("victim")
	cfg.Namespace, cfg.Task = "ns-v", "t-v"
	if _, err := f.admin.Configure(ctx, tenant, cfg, ports.OptNamespace|ports.OptTask); err != nil {
		t.Fatal(err)
	}
	seg := f.msgPush(t, tenant, "victim", "p", time.Now().Add(-time.Minute), "v0", "v1")
	f.pid = seg.pid
	f.msgDead(t, f.pid, 0, "vg", "v0", time.Now())
	f.exec(t, `INSERT INTO queen.log_consumers (partition_id, consumer_group, committed, batch_end) VALUES ($1, 'vg', 0, 0)`, f.pid)
	if _, ok, err := f.admin.AddTrace(ctx, tenant, ports.NewTrace{PartitionID: f.pid, TransactionID: "v0", ConsumerGroup: "vg",
		EventType: "info", Names: []string{"vn"}, Data: []byte(`{}`)}, func(ports.QueueOptions) time.Duration { return time.Hour }, 0); err != nil || !ok {
		t.Fatalf("AddTrace = %v, %v", ok, err)
	}
	return f
}

// intact fails the test unless the victim's rows are all still there.
func (f *injectFixture) intact(t *testing.T) {
	t.Helper()
	for what, query := range map[string]string{
		"queue":       `SELECT count(*) FROM queen.queues WHERE name = 'victim'`,
		"partition":   `SELECT count(*) FROM queen.log_partitions WHERE name = 'p'`,
		"dead letter": `SELECT count(*) FROM queen.dlq WHERE consumer_group = 'vg'`,
		"cursor":      `SELECT count(*) FROM queen.log_consumers WHERE consumer_group = 'vg' AND committed = 0`,
		"trace":       `SELECT count(*) FROM queen.message_trace_names WHERE trace_name = 'vn'`,
	} {
		if n := f.count(t, query); n != 1 {
			t.Errorf("the victim's %s: %d rows, want 1", what, n)
		}
	}
	var sub sql.NullString
	if err := f.db.QueryRow(`SELECT subscription_mode FROM queen.consumer_groups WHERE name = 'vg'`).Scan(&sub); err != nil && err != sql.ErrNoRows {
		t.Fatal(err)
	}
	if sub.String == ports.SubscribeTimestamp {
		t.Errorf("the victim group's subscription was changed")
	}
}

// TestInjectedFiltersAreValues: on sessions with standard_conforming_strings = off, every
// Admin method taking a name or filter from a request reads an injection payload as the
// name it is: no row of another queue comes back, nothing is changed, no sleep runs (it
// would end the call with a timeout error).
func TestInjectedFiltersAreValues(t *testing.T) {
	f := newInjectFixture(t)
	a, ctx := f.admin, context.Background()
	from := time.Now().Add(-time.Hour)
	page := ports.ResourcePage{Limit: 100}
	gpage := ports.GroupPage{Limit: 100}
	for _, in := range injections {
		p := in.value
		calls := []struct {
			name string
			call func() (rows int, err error)
		}{
			{"browse by queue", func() (int, error) {
				r, err := a.BrowseSegments(ctx, tenant, ports.MessageFilter{Queue: p, From: from}, nil, 100)
				return len(r.Segments), err
			}},
			{"browse by partition", func() (int, error) {
				r, err := a.BrowseSegments(ctx, tenant, ports.MessageFilter{Partition: p, From: from}, nil, 100)
				return len(r.Segments), err
			}},
			{"browse by namespace", func() (int, error) {
				r, err := a.BrowseSegments(ctx, tenant, ports.MessageFilter{Namespace: p, From: from}, nil, 100)
				return len(r.Segments), err
			}},
			{"browse by task", func() (int, error) {
				r, err := a.BrowseSegments(ctx, tenant, ports.MessageFilter{Task: p, From: from}, nil, 100)
				return len(r.Segments), err
			}},
			{"browse modes", func() (int, error) {
				m, err := a.BrowseModes(ctx, tenant, ports.MessageFilter{Queue: p})
				return m.NamedGroups, err
			}},
			{"dead letters by queue", func() (int, error) {
				r, err := a.DeadLetters(ctx, tenant, ports.DeadLetterFilter{Queue: p, Limit: 100})
				return len(r), err
			}},
			{"dead letters by group", func() (int, error) {
				r, err := a.DeadLetters(ctx, tenant, ports.DeadLetterFilter{ConsumerGroup: p, Limit: 100})
				return len(r), err
			}},
			{"newest dead letter", func() (int, error) {
				_, ok, err := a.NewestDeadLetter(ctx, tenant, f.pid, p)
				return btoi(ok), err
			}},
			{"queues by name", func() (int, error) {
				_, n, err := a.ListQueues(ctx, tenant, ports.ResourceFilter{Queue: p}, page)
				return int(n), err
			}},
			{"queues by namespace", func() (int, error) {
				_, n, err := a.ListQueues(ctx, tenant, ports.ResourceFilter{Namespace: p}, page)
				return int(n), err
			}},
			{"queues by task", func() (int, error) {
				_, n, err := a.ListQueues(ctx, tenant, ports.ResourceFilter{Task: p}, page)
				return int(n), err
			}},
			{"queue detail", func() (int, error) {
				_, ok, err := a.QueueDetail(ctx, tenant, p, page)
				return btoi(ok), err
			}},
			{"queue depth", func() (int, error) {
				_, ok, err := a.QueueDepth(ctx, tenant, p, "", page)
				return btoi(ok), err
			}},
			{"queue depth by group", func() (int, error) {
				d, _, err := a.QueueDepth(ctx, tenant, "victim", p, page)
				return int(d.Totals.Processing), err
			}},
			{"status by queue", func() (int, error) {
				s, err := a.Status(ctx, tenant, ports.ResourceFilter{Queue: p})
				return int(s.Queues), err
			}},
			{"status by namespace", func() (int, error) {
				s, err := a.Status(ctx, tenant, ports.ResourceFilter{Namespace: p})
				return int(s.Queues), err
			}},
			{"status by task", func() (int, error) {
				s, err := a.Status(ctx, tenant, ports.ResourceFilter{Task: p})
				return int(s.Queues), err
			}},
			{"group positions", func() (int, error) {
				_, r, err := a.GroupPositions(ctx, tenant, p, gpage)
				return len(r), err
			}},
			{"traces by name", func() (int, error) {
				r, _, err := a.TracesByName(ctx, tenant, p, 100, 0)
				return len(r), err
			}},
			{"message traces", func() (int, error) {
				r, err := a.MessageTraces(ctx, tenant, f.pid, p, 100)
				return len(r), err
			}},
			{"delete dead letters", func() (int, error) {
				n, err := a.DeleteDeadLetters(ctx, tenant, f.pid, p)
				return int(n), err
			}},
			{"purge dead letters of a queue", func() (int, error) {
				n, err := a.PurgeDeadLetters(ctx, tenant, p, "")
				return int(n), err
			}},
			{"purge dead letters of a group", func() (int, error) {
				n, err := a.PurgeDeadLetters(ctx, tenant, "victim", p)
				return int(n), err
			}},
			{"delete group", func() (int, error) {
				d, err := a.DeleteGroup(ctx, tenant, p, "", true)
				return d.Cursors + d.Subscriptions, err
			}},
			{"delete group on a queue", func() (int, error) {
				d, err := a.DeleteGroup(ctx, tenant, "vg", p, true)
				return d.Cursors + d.Subscriptions + btoi(d.QueueFound), err
			}},
			{"set group subscription", func() (int, error) {
				return a.SetGroupSubscription(ctx, tenant, p, time.Now())
			}},
			{"seek on a queue", func() (int, error) {
				r, err := a.SeekGroup(ctx, tenant, ports.GroupSeek{Group: "vg", Queue: p, ToEnd: true})
				return r.Partitions + btoi(r.QueueFound), err
			}},
			{"seek on a partition", func() (int, error) {
				r, err := a.SeekGroup(ctx, tenant, ports.GroupSeek{Group: "vg", Queue: "victim", Partition: p, ToEnd: true})
				return r.Partitions + btoi(r.PartitionFound), err
			}},
			{"delete queue", func() (int, error) {
				ok, err := a.DeleteQueue(ctx, tenant, p)
				return btoi(ok), err
			}},
		}
		for _, c := range calls {
			t.Run(in.name+"/"+c.name, func(t *testing.T) {
				n, err := c.call()
				if err != nil {
					t.Fatalf("%q: %v", p, err)
				}
				if n != 0 {
					t.Errorf("%q selected or changed %d rows of the victim, want 0", p, n)
				}
			})
		}
	}
	f.intact(t)
}

// TestBoundValuesRoundTrip: names with backslashes and quotes are stored and found as
// sent on sessions with standard_conforming_strings = off (written as literals, the
// session would read the backslash as an escape).
func TestBoundValuesRoundTrip(t *testing.T) {
	f := newInjectFixture(t)
	a, ctx := f.admin, context.Background()
	for _, name := range []string{`a\'b`, `c:\temp\`, `\x41`, `it''s`} {
		cfg := baseConfig(name)
		cfg.Namespace = name + "/ns"
		got, err := a.Configure(ctx, tenant, cfg, ports.OptNamespace)
		if err != nil {
			t.Fatalf("Configure(%q): %v", name, err)
		}
		if got.Name != name || got.Namespace != name+"/ns" {
			t.Errorf("Configure(%q) stored name %q, namespace %q", name, got.Name, got.Namespace)
		}
		qs, n, err := a.ListQueues(ctx, tenant, ports.ResourceFilter{Queue: name, Namespace: name + "/ns"}, ports.ResourcePage{Limit: 10})
		if err != nil || n != 1 || len(qs) != 1 || qs[0].Name != name {
			t.Errorf("ListQueues(%q) = %+v, %d, %v; want the queue", name, qs, n, err)
		}
		tr, ok, err := a.AddTrace(ctx, tenant, ports.NewTrace{PartitionID: f.pid, TransactionID: name, ConsumerGroup: name,
			EventType: "info", Names: []string{name}, Data: []byte(`{"s":"\\'"}`)}, func(ports.QueueOptions) time.Duration { return time.Hour }, 0)
		if err != nil || !ok {
			t.Fatalf("AddTrace(%q) = %v, %v", name, ok, err)
		}
		back, _, err := a.TracesByName(ctx, tenant, name, 10, 0)
		if err != nil || len(back) != 1 || back[0].ID != tr.ID || back[0].TransactionID != name ||
			back[0].ConsumerGroup != name || string(back[0].Data) != `{"s":"\\'"}` {
			t.Errorf("TracesByName(%q) = %+v, %v; want the trace as recorded", name, back, err)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

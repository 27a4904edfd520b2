package porttest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

// GroupFixture is a fresh, empty ports.GroupStore and its world.
type GroupFixture struct {
	Store ports.GroupStore
	AdminWorld
}

// GroupStore runs the conformance suite of ports.GroupStore; newFixture must return an
// empty store of its own on every call.
func GroupStore(t *testing.T, newFixture func(t *testing.T) GroupFixture) {
	tests := []struct {
		name string
		run  func(t *testing.T, f GroupFixture)
	}{
		{"summaries: one per group and queue, with lag, leases and subscription", testGroupSummaries},
		{"summaries are paged by group then queue", testGroupSummaryPages},
		{"positions: cursors, and partitions a group owes without one", testGroupPositions},
		{"lagging positions: oldest first, bounded", testGroupLagging},
		{"positions honour the retained window", testGroupRetention},
		{"deletion: cursors, and subscriptions when asked, of one queue or all", testGroupDelete},
		{"after a deletion the group starts over from its subscription", testGroupDeleteReconsumes},
		{"a subscription update moves no cursor, later first contacts start there", testGroupSubscription},
		{"seeks: to the end, to a timestamp, one partition, unknown names", testGroupSeek},
		{"a seek clears the live lease it moves", testGroupSeekLease},
		{"tenants are separate", testGroupTenants},
		{"a cancelled context fails and changes nothing", testGroupCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, newFixture(t))
		})
	}
}

// groupPage is a page of a group listing.
func groupPage(limit, offset int) ports.GroupPage {
	return ports.GroupPage{Limit: limit, Offset: offset}
}

// positionKey renders a position compactly: group/queue/partition cursor? committed lag
// leased.
func positionKey(p ports.GroupPosition) string {
	return fmt.Sprintf("%s/%s/%s cursor=%v committed=%d lag=%d leased=%v", p.Group, p.Queue, p.Partition, p.Cursor,
		p.Committed, p.Lag, p.LeaseID != "")
}

func positionKeys(ps []ports.GroupPosition) []string {
	var out []string
	for _, p := range ps {
		out = append(out, positionKey(p))
	}
	return out
}

// positions reads a group's positions (every page) and checks what holds of each.
func positions(t *testing.T, f GroupFixture, tenant, g string) []ports.GroupPosition {
	t.Helper()
	_, got, err := f.Store.GroupPositions(context.Background(), tenant, g, groupPage(1000, 0))
	if err != nil {
		t.Fatalf("GroupPositions(%s): %v", g, err)
	}
	for _, p := range got {
		if p.Lag != max(p.LastOffset-p.Committed, 0) || (p.Lag > 0) != (p.OldestUnconsumedAt != nil) ||
			(p.LeaseID != "") != (p.LeaseExpiresAt != nil) || p.PartitionID == "" || p.Group != g {
			t.Fatalf("inconsistent position %s: last %d, oldest unconsumed %s, lease %q to %s", positionKey(p),
				p.LastOffset, fmtTime(p.OldestUnconsumedAt), p.LeaseID, fmtTime(p.LeaseExpiresAt))
		}
	}
	return got
}

// wantPositions fails unless the group's positions are want (positionKey), in order.
func wantPositions(t *testing.T, f GroupFixture, tenant, g string, want ...string) []ports.GroupPosition {
	t.Helper()
	got := positions(t, f, tenant, g)
	if keys := positionKeys(got); !slices.Equal(keys, want) {
		t.Fatalf("positions of %s:\n got %q\nwant %q", g, keys, want)
	}
	return got
}

// summaries reads every summary of the tenant.
func summaries(t *testing.T, f GroupFixture, tenant string) (time.Time, []ports.GroupSummary) {
	t.Helper()
	asOf, got, err := f.Store.GroupSummaries(context.Background(), tenant, groupPage(1000, 0))
	if err != nil {
		t.Fatalf("GroupSummaries: %v", err)
	}
	return asOf, got
}

// groupWorld arranges (a 10-minute lease unless said otherwise):
//
//	queue q, partition a: a0..a4 committed 2 h ago (one segment each, in order);
//	         partition b: b0..b2 committed 10 min ago, then b3..b6 now;
//	queue r, partition c: c0, c1 committed 1 min ago.
//
//	g1 (subscription all) autoAcked a0..a1 and never popped b;
//	queue mode leases b0 and never popped a;
//	g2 (subscription new) made its first contact after b2: cursors at the ends of a and
//	   b, then b3..b6 arrived;
//	g3 subscribed to r (all) before c existed and never popped it.
func groupWorld(k adminKit) (pids map[string]string, qmLease string) {
	k.t.Helper()
	pids = map[string]string{}
	pids["a"] = k.pushEach("q", "a", "a0", "a1", "a2", "a3", "a4")
	pids["b"] = k.pushEach("q", "b", "b0", "b1", "b2")
	k.pop(req("r", pinned("c"), group("g3"))) // r has no partition yet: a subscription alone
	pids["c"] = k.pushEach("r", "c", "c0", "c1")
	k.age(pids["a"], 2*time.Hour)
	k.age(pids["b"], 10*time.Minute)
	k.age(pids["c"], time.Minute)
	k.take("q", "a", "g1", 0, 1, true)
	r, _ := k.take("q", "b", ports.QueueModeGroup, 0, 0, false)
	if claims := k.pop(req("q", group("g2"), parts(10), mode(ports.SubscribeNew, time.Time{}))); len(claims) != 0 {
		k.t.Fatalf("a first contact in mode new claimed %s", spans(claims))
	}
	k.pushEach("q", "b", "b3", "b4", "b5", "b6")
	return pids, r.LeaseID
}

func testGroupSummaries(t *testing.T, f GroupFixture) {
	k := newAdminKit(t, f.AdminWorld)
	pids, _ := groupWorld(k)
	asOf, got := summaries(t, f, tenant)
	newest := k.committed(pids["b"], 6)
	if asOf.Before(newest) {
		t.Fatalf("asOf %v is before the last commit %v: not the store's clock at the read", asOf, newest)
	}
	type sum struct {
		key                      string
		cursors, withLag, leases int
		totalLag                 int64
		mode                     string // "" = no subscription
	}
	want := []struct {
		sum
		oldest time.Time
	}{
		// Queue mode: b leased from -1 (lag 7), a without a cursor from the start (5).
		{sum{ports.QueueModeGroup + "/q", 1, 2, 1, 12, ""}, k.committed(pids["a"], 0)},
		// g1: a after 1 (3), b without a cursor from its subscription, all (7).
		{sum{"g1/q", 1, 2, 0, 10, ports.SubscribeAll}, k.committed(pids["a"], 2)},
		// g2: b's four messages after its first contact.
		{sum{"g2/q", 2, 1, 0, 4, ports.SubscribeNew}, k.committed(pids["b"], 3)},
		{sum{"g3/r", 0, 1, 0, 2, ports.SubscribeAll}, k.committed(pids["c"], 0)},
	}
	if len(got) != len(want) {
		t.Fatalf("%d summaries, want %d: %+v", len(got), len(want), got)
	}
	for i, s := range got {
		r := sum{s.Group + "/" + s.Queue, s.Cursors, s.PartitionsWithLag, s.LiveLeases, s.TotalLag, ""}
		if s.Subscription != nil {
			r.mode = s.Subscription.Mode
			if s.Subscription.CreatedAt.IsZero() || (s.Subscription.From != nil) != (r.mode == ports.SubscribeNew) {
				t.Errorf("%s: subscription %+v (from %s)", r.key, s.Subscription, fmtTime(s.Subscription.From))
			}
		}
		if r != want[i].sum {
			t.Errorf("summary %d: got %+v, want %+v", i, r, want[i].sum)
		}
		if !sameTime(s.OldestUnconsumedAt, &want[i].oldest) {
			t.Errorf("%s: oldest unconsumed message committed at %s, want %v", r.key, fmtTime(s.OldestUnconsumedAt), want[i].oldest)
		}
		// Every pair shows some activity: a pop, a cursor or a subscription.
		if s.LastActivity == nil || s.LastActivity.After(asOf) {
			t.Errorf("%s: last activity %s (asOf %v)", r.key, fmtTime(s.LastActivity), asOf)
		}
	}
	// The new group's subscription instant is its first contact: after the backlog,
	// before what came next.
	if from := got[2].Subscription.From; from == nil || from.Before(k.committed(pids["b"], 2)) ||
		from.After(k.committed(pids["b"], 3)) {
		t.Errorf("g2 subscribed from %s, want between b2 (%v) and b3 (%v)", fmtTime(from),
			k.committed(pids["b"], 2), k.committed(pids["b"], 3))
	}
}

func testGroupSummaryPages(t *testing.T, f GroupFixture) {
	k := newAdminKit(t, f.AdminWorld)
	groupWorld(k)
	tests := []struct {
		name string
		page ports.GroupPage
		want []string
	}{
		{"first two", groupPage(2, 0), []string{ports.QueueModeGroup + "/q", "g1/q"}},
		{"offset", groupPage(2, 3), []string{"g3/r"}},
		{"past the end", groupPage(2, 10), nil},
		{"limit 0", groupPage(0, 0), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got, err := f.Store.GroupSummaries(context.Background(), tenant, tt.page)
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, s := range got {
				keys = append(keys, s.Group+"/"+s.Queue)
			}
			if !slices.Equal(keys, tt.want) {
				t.Fatalf("got %q, want %q", keys, tt.want)
			}
		})
	}
}

func testGroupPositions(t *testing.T, f GroupFixture) {
	k := newAdminKit(t, f.AdminWorld)
	pids, qmLease := groupWorld(k)
	tests := []struct {
		group string
		want  []string
	}{
		{"g1", []string{"g1/q/a cursor=true committed=1 lag=3 leased=false", "g1/q/b cursor=false committed=-1 lag=7 leased=false"}},
		{ports.QueueModeGroup, []string{"__QUEUE_MODE__/q/a cursor=false committed=-1 lag=5 leased=false",
			"__QUEUE_MODE__/q/b cursor=true committed=-1 lag=7 leased=true"}},
		{"g2", []string{"g2/q/a cursor=true committed=4 lag=0 leased=false", "g2/q/b cursor=true committed=2 lag=4 leased=false"}},
		{"g3", []string{"g3/r/c cursor=false committed=-1 lag=2 leased=false"}},
		{"nobody", nil},
	}
	for _, tt := range tests {
		t.Run(tt.group, func(t *testing.T) {
			for _, p := range wantPositions(t, f, tenant, tt.group, tt.want...) {
				if want := pids[p.Partition]; p.PartitionID != want {
					t.Errorf("%s: partition id %s, want %s", positionKey(p), p.PartitionID, want)
				}
				if p.LeaseID != "" && p.LeaseID != qmLease {
					t.Errorf("%s: lease %q, want the pop's %q", positionKey(p), p.LeaseID, qmLease)
				}
				if p.Lag > 0 {
					if want := k.committed(p.PartitionID, p.Committed+1); !p.OldestUnconsumedAt.Equal(want) {
						t.Errorf("%s: oldest unconsumed at %v, want %v (the segment of offset %d)", positionKey(p),
							*p.OldestUnconsumedAt, want, p.Committed+1)
					}
				}
				// A cursor that claimed shows when; g2's, made by a first contact that claimed
				// nothing, and a partition without a cursor show nothing.
				if (p.LastConsumedAt != nil) != (p.Cursor && p.Group != "g2") {
					t.Errorf("%s: last consumed %s", positionKey(p), fmtTime(p.LastConsumedAt))
				}
			}
		})
	}
	t.Run("pages", func(t *testing.T) {
		_, got, err := f.Store.GroupPositions(context.Background(), tenant, "g2", groupPage(1, 1))
		if err != nil {
			t.Fatal(err)
		}
		if keys := positionKeys(got); !slices.Equal(keys, []string{"g2/q/b cursor=true committed=2 lag=4 leased=false"}) {
			t.Fatalf("second page of g2: %q", keys)
		}
		if _, got, err = f.Store.GroupPositions(context.Background(), tenant, "g1", groupPage(0, 0)); err != nil || len(got) != 0 {
			t.Fatalf("limit 0: %q, %v", positionKeys(got), err)
		}
	})
}

func testGroupLagging(t *testing.T, f GroupFixture) {
	k := newAdminKit(t, f.AdminWorld)
	groupWorld(k)
	tests := []struct {
		name   string
		minLag time.Duration
		limit  int
		want   []string // group/queue/partition, oldest first
	}{
		{"over an hour", time.Hour, 100, []string{"__QUEUE_MODE__/q/a", "g1/q/a"}},
		// b0 is the oldest unconsumed message of two groups: by group name.
		{"over five minutes", 5 * time.Minute, 100, []string{"__QUEUE_MODE__/q/a", "g1/q/a", "__QUEUE_MODE__/q/b", "g1/q/b"}},
		{"limit", 5 * time.Minute, 1, []string{"__QUEUE_MODE__/q/a"}},
		{"limit 0", 0, 0, nil},
		{"over a day", 24 * time.Hour, 100, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got, err := f.Store.LaggingPositions(context.Background(), tenant, tt.minLag, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, p := range got {
				keys = append(keys, p.Group+"/"+p.Queue+"/"+p.Partition)
				if p.OldestUnconsumedAt == nil || p.Lag == 0 {
					t.Errorf("%s: lagging without lag", positionKey(p))
				}
			}
			if !slices.Equal(keys, tt.want) {
				t.Fatalf("got %q, want %q", keys, tt.want)
			}
		})
	}
	t.Run("every lagging partition", func(t *testing.T) {
		_, got, err := f.Store.LaggingPositions(context.Background(), tenant, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 6 { // every position with lag: QM a, b; g1 a, b; g2 b; g3 c
			t.Fatalf("%d lagging positions, want 6: %q", len(got), positionKeys(got))
		}
		for i := 1; i < len(got); i++ {
			if got[i].OldestUnconsumedAt.Before(*got[i-1].OldestUnconsumedAt) {
				t.Fatalf("not oldest first: %q", positionKeys(got))
			}
		}
	})
}

func testGroupRetention(t *testing.T, f GroupFixture) {
	k := newAdminKit(t, f.AdminWorld)
	pid := k.pushEach("q", "p", "m0", "m1", "m2", "m3", "m4")
	k.take("q", "p", "g", 0, 0, true)
	k.take("q", "p", "h", 0, 3, true)
	k.w.Trim(t, pid, 3, 3)
	// g's cursor at 0 is below the window: it stands at log_start - 1. h is past it. A
	// group without a cursor owes what is retained.
	wantPositions(t, f, tenant, "g", "g/q/p cursor=true committed=2 lag=2 leased=false")
	wantPositions(t, f, tenant, "h", "h/q/p cursor=true committed=3 lag=1 leased=false")
	k.pop(req("q", pinned("nope"), group("i"))) // a subscription of i, no cursor
	ps := wantPositions(t, f, tenant, "i", "i/q/p cursor=false committed=2 lag=2 leased=false")
	if want := k.committed(pid, 3); !ps[0].OldestUnconsumedAt.Equal(want) {
		t.Fatalf("oldest unconsumed at %s, want %v", fmtTime(ps[0].OldestUnconsumedAt), want)
	}
	// A seek before the window lands at its start.
	r, err := f.Store.SeekGroup(context.Background(), tenant, ports.GroupSeek{Group: "h", Queue: "q",
		Timestamp: k.committed(pid, 0).Add(-time.Hour)})
	if err != nil || r != (ports.GroupSeekResult{QueueFound: true, Partitions: 1}) {
		t.Fatalf("SeekGroup = %+v, %v", r, err)
	}
	wantPositions(t, f, tenant, "h", "h/q/p cursor=true committed=2 lag=2 leased=false")
	k.take("q", "p", "h", 3, 4, true)
}

// pairsOf renders a group's summaries: queue:cursors[+subscription].
func pairsOf(t *testing.T, f GroupFixture, tenant, g string) []string {
	t.Helper()
	_, all := summaries(t, f, tenant)
	var out []string
	for _, s := range all {
		if s.Group == g {
			k := fmt.Sprintf("%s:%d", s.Queue, s.Cursors)
			if s.Subscription != nil {
				k += "+sub"
			}
			out = append(out, k)
		}
	}
	return out
}

func testGroupDelete(t *testing.T, f GroupFixture) {
	tests := []struct {
		name          string
		queue         string // "" = every queue
		subscriptions bool
		want          ports.GroupDeletion
		left          []string // what pairsOf g reads afterwards
	}{
		{"every queue with subscriptions", "", true, ports.GroupDeletion{QueueFound: true, Cursors: 3, Subscriptions: 2}, nil},
		{"every queue, subscriptions kept", "", false, ports.GroupDeletion{QueueFound: true, Cursors: 3}, []string{"q:0+sub", "r:0+sub"}},
		{"one queue with subscriptions", "q", true, ports.GroupDeletion{QueueFound: true, Cursors: 2, Subscriptions: 1}, []string{"r:1+sub"}},
		{"one queue, subscriptions kept", "r", false, ports.GroupDeletion{QueueFound: true, Cursors: 1}, []string{"q:2+sub", "r:0+sub"}},
		{"an unknown queue deletes nothing", "nope", true, ports.GroupDeletion{}, []string{"q:2+sub", "r:1+sub"}},
	}
	// Each case on queues of its own (q<i>, r<i>) with a group of its own (g<i>); the
	// groups keep and queue mode lease a message of every partition.
	k := newAdminKit(t, f.AdminWorld)
	ctx := context.Background()
	for i, tt := range tests {
		q, r := fmt.Sprint("q", i), fmt.Sprint("r", i)
		for _, p := range []struct{ q, p string }{{q, "a"}, {q, "b"}, {r, "c"}} {
			k.pushEach(p.q, p.p, "m0", "m1")
			for _, g := range []string{fmt.Sprint("g", i), "keep", ports.QueueModeGroup} {
				k.take(p.q, p.p, g, 0, 0, false)
			}
		}
		queue := tt.queue
		if queue != "" && queue != "nope" {
			queue = fmt.Sprint(tt.queue, i)
		}
		g := fmt.Sprint("g", i)
		got, err := f.Store.DeleteGroup(ctx, tenant, g, queue, tt.subscriptions)
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("%s: DeleteGroup = %+v, want %+v", tt.name, got, tt.want)
		}
		var left []string
		names := strings.NewReplacer(q+":", "q:", r+":", "r:")
		for _, p := range pairsOf(t, f, tenant, g) {
			left = append(left, names.Replace(p))
		}
		if !slices.Equal(left, tt.left) {
			t.Errorf("%s: what is left of %s: %q, want %q", tt.name, g, left, tt.left)
		}
	}
	// The other groups' cursors and leases are whole on every queue.
	for _, g := range []string{"keep", ports.QueueModeGroup} {
		ps := positions(t, f, tenant, g)
		if len(ps) != 3*len(tests) {
			t.Fatalf("%s has %d positions, want %d", g, len(ps), 3*len(tests))
		}
		for _, p := range ps {
			if !p.Cursor || p.LeaseID == "" {
				t.Errorf("%s lost its cursor or lease: %s", g, positionKey(p))
			}
		}
	}
}

func testGroupDeleteReconsumes(t *testing.T, f GroupFixture) {
	tests := []struct {
		name          string
		subscriptions bool
		popMode       string
		wantStart     int64 // first offset the pop after the deletion claims; -1 = nothing
	}{
		{"subscription kept: the recorded one (all)", false, ports.SubscribeNew, 0},
		{"subscription deleted: the pop's own (new)", true, ports.SubscribeNew, -1},
		{"subscription deleted: the pop's own (all)", true, ports.SubscribeAll, 0},
	}
	k := newAdminKit(t, f.AdminWorld)
	ctx := context.Background()
	for i, tt := range tests {
		q := fmt.Sprint("q", i)
		pid := k.pushEach(q, "a", "m0", "m1", "m2")
		r, c := k.take(q, "a", "g", 0, 2, false)
		if res := k.ackOne(c, r, "m0", ports.AckCompleted); !res.OK {
			t.Fatalf("%s: ack: %+v", tt.name, res)
		}
		if _, err := f.Store.DeleteGroup(ctx, tenant, "g", q, tt.subscriptions); err != nil {
			t.Fatal(err)
		}
		// The lease went with the cursor: its acks find no consumer, it renews nothing.
		if res := k.ackOne(c, r, "m1", ports.AckCompleted); res.OK || res.Error != errNoConsumer {
			t.Errorf("%s: ack of the deleted cursor's lease: %+v", tt.name, res)
		}
		if n, _, err := k.w.Consume.ExtendLease(ctx, r.LeaseID, time.Minute); err != nil || n != 0 {
			t.Errorf("%s: extension of the deleted cursor's lease renewed %d (%v)", tt.name, n, err)
		}
		claims := k.pop(req(q, pinned("a"), group("g"), mode(tt.popMode, time.Time{})))
		start := int64(-1)
		if len(claims) > 0 {
			start = claims[0].Start
			if claims[0].Attempt != 1 || claims[0].PartitionID != pid {
				t.Errorf("%s: the pop after the deletion: %s", tt.name, spans(claims))
			}
		}
		if start != tt.wantStart {
			t.Errorf("%s: the pop after the deletion claims from %d, want %d (%s)", tt.name, start, tt.wantStart, spans(claims))
		}
	}
}

func testGroupSubscription(t *testing.T, f GroupFixture) {
	k := newAdminKit(t, f.AdminWorld)
	ctx := context.Background()
	pa := k.pushEach("q", "a", "m0", "m1")
	k.push("r", "b", "m0")
	k.take("q", "a", "g", 0, 0, true)                                               // g on q: cursor at 0
	k.pop(req("r", pinned("b"), group("g"), mode(ports.SubscribeNew, time.Time{}))) // g on r: new
	k.take("q", "a", "keep", 0, 0, true)
	// A partition g has not popped: a message an hour old, one just committed.
	late := k.push("q", "late", "m0").PartitionID
	k.age(late, time.Hour)
	k.push("q", "late", "m1")
	from := k.committed(late, 1).Add(-30 * time.Minute)
	before := positions(t, f, tenant, "g")

	for _, tc := range []struct {
		name, group string
		want        int
	}{
		{"a group on two queues", "g", 2},
		{"an unknown group", "nobody", 0},
		{"queue mode has no subscription", ports.QueueModeGroup, 0},
	} {
		if n, err := f.Store.SetGroupSubscription(ctx, tenant, tc.group, from); err != nil || n != tc.want {
			t.Errorf("%s: SetGroupSubscription = %d, %v; want %d", tc.name, n, err, tc.want)
		}
	}
	_, all := summaries(t, f, tenant)
	for _, s := range all {
		switch {
		case s.Group == "g" && (s.Subscription == nil || s.Subscription.Mode != ports.SubscribeTimestamp ||
			!sameTime(s.Subscription.From, &from)):
			t.Errorf("g on %s: subscription %+v, want timestamp from %v", s.Queue, s.Subscription, from)
		case s.Group == "keep" && (s.Subscription == nil || s.Subscription.Mode != ports.SubscribeAll || s.Subscription.From != nil):
			t.Errorf("keep's subscription changed: %+v", s.Subscription)
		}
	}
	// No cursor moved or appeared.
	after := positions(t, f, tenant, "g")
	for i := range min(len(before), len(after)) {
		if after[i].Cursor != before[i].Cursor || (after[i].Cursor && after[i].Committed != before[i].Committed) {
			t.Errorf("the update changed %s into %s", positionKey(before[i]), positionKey(after[i]))
		}
	}
	if c := slices.IndexFunc(after, func(p ports.GroupPosition) bool { return p.PartitionID == pa }); c < 0 || after[c].Committed != 0 {
		t.Errorf("g's cursor on a: %q", positionKeys(after))
	}
	// The first contact with the new partition starts at the instant: the message from an
	// hour ago is skipped, the recent one delivered.
	k.take("q", "late", "g", 1, 1, false)
}

func testGroupSeek(t *testing.T, f GroupFixture) {
	type part struct {
		committed int64
		leased    bool
	}
	tests := []struct {
		name  string
		seek  ports.GroupSeek
		at    func(k adminKit, pa string) time.Time // the timestamp, when not ToEnd
		want  ports.GroupSeekResult
		parts map[string]part // g's cursors afterwards; a missing key: no cursor
	}{
		// a: a0..a3, ak committed 4-k hours ago, g leases 0..1; b: b0, b1 now, no cursor of g.
		{"to the end", ports.GroupSeek{ToEnd: true}, nil,
			ports.GroupSeekResult{QueueFound: true, Partitions: 2, LeasesCleared: 1},
			map[string]part{"a": {3, false}, "b": {1, false}}},
		{"to a timestamp: before the first message at or after it", ports.GroupSeek{},
			func(k adminKit, pa string) time.Time { return k.committed(pa, 2) },
			ports.GroupSeekResult{QueueFound: true, Partitions: 2, LeasesCleared: 1},
			map[string]part{"a": {1, false}, "b": {-1, false}}},
		{"to a timestamp between two messages", ports.GroupSeek{},
			func(k adminKit, pa string) time.Time { return k.committed(pa, 2).Add(-30 * time.Minute) },
			ports.GroupSeekResult{QueueFound: true, Partitions: 2, LeasesCleared: 1},
			map[string]part{"a": {1, false}, "b": {-1, false}}},
		{"to the beginning", ports.GroupSeek{},
			func(k adminKit, pa string) time.Time { return k.committed(pa, 0).Add(-time.Hour) },
			ports.GroupSeekResult{QueueFound: true, Partitions: 2, LeasesCleared: 1},
			map[string]part{"a": {-1, false}, "b": {-1, false}}},
		{"to a timestamp after everything", ports.GroupSeek{},
			func(k adminKit, pa string) time.Time { return k.committed(pa, 3).Add(24 * time.Hour) },
			ports.GroupSeekResult{QueueFound: true, Partitions: 2, LeasesCleared: 1},
			map[string]part{"a": {3, false}, "b": {1, false}}},
		{"one partition", ports.GroupSeek{Partition: "b", ToEnd: true}, nil,
			ports.GroupSeekResult{QueueFound: true, PartitionFound: true, Partitions: 1},
			map[string]part{"a": {-1, true}, "b": {1, false}}},
		{"the leased partition", ports.GroupSeek{Partition: "a", ToEnd: true}, nil,
			ports.GroupSeekResult{QueueFound: true, PartitionFound: true, Partitions: 1, LeasesCleared: 1},
			map[string]part{"a": {3, false}}},
		{"an unknown partition", ports.GroupSeek{Partition: "nope", ToEnd: true}, nil,
			ports.GroupSeekResult{QueueFound: true}, map[string]part{"a": {-1, true}}},
		{"an unknown queue", ports.GroupSeek{Queue: "nope", ToEnd: true}, nil,
			ports.GroupSeekResult{}, map[string]part{"a": {-1, true}}},
	}
	k := newAdminKit(t, f.AdminWorld)
	ctx := context.Background()
	for i, tt := range tests {
		q := fmt.Sprint("q", i)
		var pa string
		for j := range 4 {
			pa = k.push(q, "a", fmt.Sprint("a", j)).PartitionID
			k.age(pa, time.Hour)
		}
		k.pushEach(q, "b", "b0", "b1")
		r, _ := k.take(q, "a", "g", 0, 1, false)
		k.take(q, "a", "other", 0, 3, true)
		s := tt.seek
		s.Group = "g"
		if s.Queue == "" {
			s.Queue = q
		}
		if tt.at != nil {
			s.Timestamp = tt.at(k, pa)
		}
		got, err := f.Store.SeekGroup(ctx, tenant, s)
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("%s: SeekGroup = %+v, want %+v", tt.name, got, tt.want)
		}
		var want []string
		for _, p := range []string{"a", "b"} {
			if w, ok := tt.parts[p]; ok {
				lag := map[string]int64{"a": 3, "b": 1}[p] - w.committed
				want = append(want, fmt.Sprintf("g/%s/%s cursor=true committed=%d lag=%d leased=%v", q, p, w.committed, lag, w.leased))
			}
		}
		var got2 []string
		for _, p := range positions(t, f, tenant, "g") {
			if p.Queue == q && p.Cursor {
				got2 = append(got2, positionKey(p))
			}
		}
		if !slices.Equal(got2, want) {
			t.Errorf("%s: g's cursors\n got %q\nwant %q", tt.name, got2, want)
		}
		for _, p := range positions(t, f, tenant, "other") {
			if p.Queue == q && p.Cursor && p.Committed != 3 {
				t.Errorf("%s: another group's cursor moved: %s", tt.name, positionKey(p))
			}
		}
		if w := tt.parts["a"]; !w.leased {
			// The cleared lease is refused and renews nothing; the span is where the seek put
			// the cursor, delivered as a first attempt.
			c := ports.Claim{PartitionID: pa}
			if res := k.ackOne(c, r, "a1", ports.AckCompleted); res.OK || res.Error != errLease {
				t.Errorf("%s: ack of the cleared lease: %+v", tt.name, res)
			}
			if n, _, err := k.w.Consume.ExtendLease(ctx, r.LeaseID, time.Minute); err != nil || n != 0 {
				t.Errorf("%s: extension of the cleared lease renewed %d (%v)", tt.name, n, err)
			}
			claims := k.pop(req(q, pinned("a"), group("g"), batch(10)))
			switch {
			case w.committed >= 3 && len(claims) != 0:
				t.Errorf("%s: a pop after a seek to the end claims %s", tt.name, spans(claims))
			case w.committed < 3 && (len(claims) != 1 || claims[0].Start != w.committed+1 || claims[0].End != 3 || claims[0].Attempt != 1):
				t.Errorf("%s: a pop after the seek claims %s, want %d..3 (first attempt)", tt.name, spans(claims), w.committed+1)
			}
		}
	}
}

func testGroupSeekLease(t *testing.T, f GroupFixture) {
	k := newAdminKit(t, f.AdminWorld)
	ctx := context.Background()
	pid := k.pushEach("q", "p", "m0", "m1", "m2")
	r, c := k.take("q", "p", "g", 0, 1, false)
	// A lease-less ack of a message before the seek's target is judged against the new
	// cursor: already committed.
	if got, err := f.Store.SeekGroup(ctx, tenant, ports.GroupSeek{Group: "g", Queue: "q", Timestamp: k.committed(pid, 2)}); err != nil ||
		got != (ports.GroupSeekResult{QueueFound: true, Partitions: 1, LeasesCleared: 1}) {
		t.Fatalf("SeekGroup = %+v, %v", got, err)
	}
	lessItem := of(c, r, "m0", ports.AckCompleted)
	lessItem.LeaseID = ""
	res, err := k.w.Consume.Ack(ctx, []ports.AckItem{lessItem})
	if err != nil || len(res) != 1 || !res[0].OK || !res[0].Noop {
		t.Fatalf("a lease-less ack below the new cursor: %+v, %v; want a no-op", res, err)
	}
	// A seek of a cursor whose lease expired clears nothing live.
	k.take("q", "p", "g", 2, 2, false)
	k.w.ExpireLease(t, pid, "g")
	if got, err := f.Store.SeekGroup(ctx, tenant, ports.GroupSeek{Group: "g", Queue: "q", ToEnd: true}); err != nil ||
		got != (ports.GroupSeekResult{QueueFound: true, Partitions: 1}) {
		t.Fatalf("SeekGroup over an expired lease = %+v, %v", got, err)
	}
	wantPositions(t, f, tenant, "g", "g/q/p cursor=true committed=2 lag=0 leased=false")
}

func testGroupTenants(t *testing.T, f GroupFixture) {
	k := newAdminKit(t, f.AdminWorld)
	ctx := context.Background()
	k.pushEach("q", "p", "m0", "m1")
	k.take("q", "p", "g", 0, 0, true)
	k.commit(segOf(otherTenant, "q", "p", "m0", "m1"))
	other := ports.PopRequest{Tenant: otherTenant, Queue: "q", Partition: "p", Group: "g", Batch: 1, Partitions: 1,
		AutoAck: true, SubscribeMode: ports.SubscribeAll}
	k.popSpan(other, 0, 0)
	k.popSpan(other, 1, 1)
	wantPositions(t, f, tenant, "g", "g/q/p cursor=true committed=0 lag=1 leased=false")
	wantPositions(t, f, otherTenant, "g", "g/q/p cursor=true committed=1 lag=0 leased=false")
	if got := pairsOf(t, f, "00000000-0000-0000-0000-000000000003", "g"); len(got) != 0 {
		t.Fatalf("an empty tenant lists %q", got)
	}
	// Moves of one tenant's group leave the other's alone.
	if r, err := f.Store.SeekGroup(ctx, otherTenant, ports.GroupSeek{Group: "g", Queue: "q", Timestamp: time.Unix(0, 0)}); err != nil ||
		r != (ports.GroupSeekResult{QueueFound: true, Partitions: 1}) {
		t.Fatalf("SeekGroup = %+v, %v", r, err)
	}
	if n, err := f.Store.SetGroupSubscription(ctx, otherTenant, "g", time.Unix(0, 0)); err != nil || n != 1 {
		t.Fatalf("SetGroupSubscription = %d, %v", n, err)
	}
	if d, err := f.Store.DeleteGroup(ctx, otherTenant, "g", "", true); err != nil ||
		d != (ports.GroupDeletion{QueueFound: true, Cursors: 1, Subscriptions: 1}) {
		t.Fatalf("DeleteGroup = %+v, %v", d, err)
	}
	wantPositions(t, f, tenant, "g", "g/q/p cursor=true committed=0 lag=1 leased=false")
	if got := pairsOf(t, f, tenant, "g"); !slices.Equal(got, []string{"q:1+sub"}) {
		t.Fatalf("the first tenant's g: %q", got)
	}
	if r, err := f.Store.SeekGroup(ctx, "00000000-0000-0000-0000-000000000003", ports.GroupSeek{Group: "g", Queue: "q", ToEnd: true}); err != nil ||
		r != (ports.GroupSeekResult{}) {
		t.Fatalf("a seek in a tenant without the queue = %+v, %v", r, err)
	}
}

func testGroupCancelled(t *testing.T, f GroupFixture) {
	k := newAdminKit(t, f.AdminWorld)
	k.pushEach("q", "p", "m0", "m1")
	k.take("q", "p", "g", 0, 0, true)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, call := range map[string]func() error{
		"GroupSummaries": func() error { _, _, err := f.Store.GroupSummaries(ctx, tenant, groupPage(1, 0)); return err },
		"GroupPositions": func() error { _, _, err := f.Store.GroupPositions(ctx, tenant, "g", groupPage(1, 0)); return err },
		"LaggingPositions": func() error {
			_, _, err := f.Store.LaggingPositions(ctx, tenant, 0, 1)
			return err
		},
		"DeleteGroup": func() error { _, err := f.Store.DeleteGroup(ctx, tenant, "g", "", true); return err },
		"SetGroupSubscription": func() error {
			_, err := f.Store.SetGroupSubscription(ctx, tenant, "g", time.Unix(0, 0))
			return err
		},
		"SeekGroup": func() error {
			_, err := f.Store.SeekGroup(ctx, tenant, ports.GroupSeek{Group: "g", Queue: "q", ToEnd: true})
			return err
		},
	} {
		if err := call(); err == nil {
			t.Errorf("%s with a cancelled context succeeded", name)
		}
	}
	wantPositions(t, f, tenant, "g", "g/q/p cursor=true committed=0 lag=1 leased=false")
	if got := pairsOf(t, f, tenant, "g"); !slices.Equal(got, []string{"q:1+sub"}) {
		t.Fatalf("after the cancelled calls g is %q", got)
	}
	if _, all := summaries(t, f, tenant); len(all) != 1 || all[0].Subscription.Mode != ports.SubscribeAll {
		t.Fatalf("after the cancelled calls: %+v", all)
	}
}

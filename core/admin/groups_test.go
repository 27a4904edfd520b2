package admin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/ports"
)

// The Groups tests run the service over the in-memory GroupStore (adapters/memory) on a
// clock the test moves: positions, lags and leases come from pushes, pops and acks.

var groupsT = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// newTestGroups returns the service over store, with every announced change recorded.
func newTestGroups(store ports.GroupStore) (*Groups, *[]notify.GroupChange) {
	changes := notify.NewGroupChanges()
	var got []notify.GroupChange
	changes.Subscribe(func(c notify.GroupChange) { got = append(got, c) })
	return NewGroups(store, GroupsOptions{Changes: changes, Logger: resQuietLogger()}), &got
}

func groupsPtr[T any](v T) *T { return &v }

// wantGroupsInputError fails unless err is an *InputError naming param whose text contains msg.
func wantGroupsInputError(t *testing.T, err error, param, msg string) {
	t.Helper()
	var ie *InputError
	if !errors.As(err, &ie) || ie.Param != param || !strings.Contains(ie.Msg, msg) {
		t.Fatalf("error %v, want an input error on %s containing %q", err, param, msg)
	}
}

func TestGroupsListStates(t *testing.T) {
	t.Parallel()
	ago := func(d time.Duration) time.Time { return groupsT.Add(-d) }
	tests := []struct {
		name string
		// lag is the age of g's one unconsumed message (nil: nothing to read); active the
		// age of its last pop; leased: that pop leased the unconsumed message.
		lag        *time.Duration
		active     time.Duration
		leased     bool
		wantState  GroupHealth
		wantMaxLag time.Duration
	}{
		{"nothing to read, long idle: stable", nil, 48 * time.Hour, false, GroupStable, 0},
		{"fresh lag: stable", groupsPtr(10 * time.Second), time.Second, false, GroupStable, 10 * time.Second},
		{"lag of exactly 300 s: stable", groupsPtr(300 * time.Second), time.Second, false, GroupStable, 300 * time.Second},
		{"lag over 300 s, consuming: lagging", groupsPtr(301 * time.Second), time.Second, false, GroupLagging, 301 * time.Second},
		{"lag, idle an hour, no lease: dead", groupsPtr(time.Minute), time.Hour, false, GroupDead, time.Minute},
		{"lag, idle an hour but a live lease: lagging", groupsPtr(2 * time.Hour), time.Hour, true, GroupLagging, 2 * time.Hour},
		{"lag, idle just under an hour: lagging", groupsPtr(2 * time.Hour), time.Hour - time.Second, false, GroupLagging, 2 * time.Hour},
		{"oldest message in the future (clock skew): no time lag", groupsPtr(-time.Second), time.Second, false, GroupStable, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// g's first contact with q is its pop of "act" (which it consumes whole); the
			// message to read, if any, is in p.
			w := newMemWorld(t, ago(tc.active+time.Minute))
			w.pushTxns("t", "q", "act", "a0")
			if tc.lag != nil {
				w.at(ago(*tc.lag)).pushTxns("t", "q", "p", "m0")
			}
			w.at(ago(tc.active))
			w.pop("t", "q", "act", "g", 1, true)
			cursors, lag := 1, int64(0)
			if tc.lag != nil {
				lag = 1
			}
			if tc.leased {
				w.pop("t", "q", "p", "g", 1, false)
				cursors++
			}
			w.at(groupsT)
			g, _ := newTestGroups(w.s)
			got, err := g.List(context.Background(), "t", GroupPageQuery{})
			if err != nil {
				t.Fatal(err)
			}
			want := GroupSummary{Name: "g", Queue: "q", Members: cursors, PartitionCursors: cursors, PartitionsWithLag: int(lag),
				TotalLag: lag, MaxTimeLag: tc.wantMaxLag, State: tc.wantState,
				Subscription: &ports.GroupSubscription{Mode: ports.SubscribeAll, CreatedAt: ago(tc.active)}}
			if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
				t.Fatalf("List = %+v\nwant %+v", got, want)
			}
		})
	}
}

// A summary without any sign of activity (the port allows it) is Dead when there is
// something to read, Stable otherwise.
func TestGroupsStateWithoutActivity(t *testing.T) {
	t.Parallel()
	g, _ := newTestGroups(nil)
	old := groupsT.Add(-2 * time.Hour)
	if s := g.state(ports.GroupSummary{TotalLag: 1, OldestUnconsumedAt: &old}, groupsT, 2*time.Hour); s != GroupDead {
		t.Errorf("lag, never active: %s, want Dead", s)
	}
	if s := g.state(ports.GroupSummary{}, groupsT, 0); s != GroupStable {
		t.Errorf("nothing to read, never active: %s, want Stable", s)
	}
}

func TestGroupsPaging(t *testing.T) {
	t.Parallel()
	// Queue q: partitions p00..p24 of one message each; groups g00..g24 subscribed to it
	// without a cursor: 25 (group, queue) pairs, and 25 positions of each group.
	w := newMemWorld(t, groupsT)
	var groups, parts []string
	for i := range 25 {
		p := fmt.Sprintf("p%02d", i)
		w.pushTxns("t", "q", p, "m0")
		parts = append(parts, p)
	}
	for i := range 25 {
		g := fmt.Sprintf("g%02d", i)
		w.subscribe("t", "q", g)
		groups = append(groups, g)
	}
	tests := []struct {
		name       string
		q          GroupPageQuery
		from, to   int // the page of the 25 rows
		wantParam  string
		wantSubstr string
	}{
		{"defaults", GroupPageQuery{}, 0, 25, "", ""},
		{"given", GroupPageQuery{Limit: groupsPtr(10), Offset: groupsPtr(20)}, 20, 25, "", ""},
		{"limit 0", GroupPageQuery{Limit: groupsPtr(0)}, 0, 0, "", ""},
		{"the maximum", GroupPageQuery{Limit: groupsPtr(1000)}, 0, 25, "", ""},
		{"over the maximum: clamped", GroupPageQuery{Limit: groupsPtr(1001)}, 0, 25, "", ""},
		{"what Queen's CLI asks: clamped", GroupPageQuery{Limit: groupsPtr(10000), Offset: groupsPtr(5)}, 5, 25, "", ""},
		{"negative limit", GroupPageQuery{Limit: groupsPtr(-1)}, 0, 0, "limit", "got -1"},
		{"negative offset", GroupPageQuery{Offset: groupsPtr(-5)}, 0, 0, "offset", "got -5"},
	}
	g, _ := newTestGroups(w.s)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := w.count()
			list, err := g.List(context.Background(), "t", tc.q)
			if tc.wantParam != "" {
				wantGroupsInputError(t, err, tc.wantParam, tc.wantSubstr)
				_, err = g.Describe(context.Background(), "t", "g00", tc.q)
				wantGroupsInputError(t, err, tc.wantParam, tc.wantSubstr)
				if n := w.count() - before; n != 0 {
					t.Fatalf("the store was asked %d times despite the bad page", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range list {
				names = append(names, s.Name)
			}
			if !slices.Equal(names, groups[tc.from:tc.to]) {
				t.Fatalf("List: %v, want %v", names, groups[tc.from:tc.to])
			}
			desc, err := g.Describe(context.Background(), "t", "g00", tc.q)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, q := range desc {
				for _, p := range q.Partitions {
					got = append(got, p.Partition)
				}
			}
			if !slices.Equal(got, parts[tc.from:tc.to]) {
				t.Fatalf("Describe: %v, want %v", got, parts[tc.from:tc.to])
			}
		})
	}
}

func TestGroupsDescribe(t *testing.T) {
	t.Parallel()
	now := groupsT
	w := newMemWorld(t, now.Add(-2*time.Hour))
	// a/p1: m0..m9, all consumed a minute ago. a/p2: m0..m4 two hours old, consumed an
	// hour ago; m5..m14 90 s old, leased just now. b/p1: three messages an hour old, g
	// subscribed to b but never popped it.
	id1 := w.pushTxns("t", "a", "p1", "m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9")
	id2 := w.pushTxns("t", "a", "p2", "m0", "m1", "m2", "m3", "m4")
	w.at(now.Add(-90*time.Second)).pushTxns("t", "a", "p2", "m5", "m6", "m7", "m8", "m9", "m10", "m11", "m12", "m13", "m14")
	id3 := w.at(now.Add(-time.Hour)).pushTxns("t", "b", "p1", "m0", "m1", "m2")
	w.pop("t", "a", "p2", "g", 5, true)
	w.subscribe("t", "b", "g")
	consumed := now.Add(-time.Minute)
	w.at(consumed).pop("t", "a", "p1", "g", 10, true)
	lease, _ := w.at(now).pop("t", "a", "p2", "g", 10, false)

	g, changes := newTestGroups(w.s)
	got, err := g.Describe(context.Background(), "t", "g", GroupPageQuery{})
	if err != nil {
		t.Fatal(err)
	}
	want := []GroupQueue{
		{Queue: "a", Partitions: []GroupPartition{
			{Partition: "p1", PartitionID: id1, LastConsumedAt: &consumed, TotalConsumed: 10},
			{Partition: "p2", PartitionID: id2, WorkerID: lease, LastConsumedAt: &now, TotalConsumed: 5, OffsetLag: 10,
				TimeLag: 90 * time.Second, LeaseActive: true},
		}},
		// No cursor yet: nothing consumed there, its whole backlog is lag.
		{Queue: "b", Partitions: []GroupPartition{{Partition: "p1", PartitionID: id3, OffsetLag: 3, TimeLag: time.Hour}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Describe =\n%+v\nwant\n%+v", got, want)
	}
	if len(*changes) != 0 {
		t.Fatalf("a read announced %v", *changes)
	}
	// An unknown group is described by nothing, not an error.
	empty, err := g.Describe(context.Background(), "t", "nobody", GroupPageQuery{})
	if err != nil || len(empty) != 0 {
		t.Fatalf("unknown group: %+v, %v", empty, err)
	}
}

func TestGroupsLagging(t *testing.T) {
	t.Parallel()
	now := groupsT
	w := newMemWorld(t, now.Add(-2*time.Hour))
	// p: a message two hours old that g leased ten minutes ago; p2: one 30 minutes old g
	// has not popped.
	pid := w.pushTxns("t", "q", "p", "m0")
	pid2 := w.at(now.Add(-30*time.Minute)).pushTxns("t", "q", "p2", "m0")
	popped := now.Add(-10 * time.Minute)
	lease, _ := w.at(popped).pop("t", "q", "p", "g", 1, false)
	w.at(now)
	p := LaggingPartition{Group: "g", Queue: "q", Partition: "p", PartitionID: pid, WorkerID: lease, OffsetLag: 1,
		TimeLag: 2 * time.Hour, OldestUnconsumedAt: now.Add(-2 * time.Hour), LastConsumedAt: &popped}
	p2 := LaggingPartition{Group: "g", Queue: "q", Partition: "p2", PartitionID: pid2, OffsetLag: 1,
		TimeLag: 30 * time.Minute, OldestUnconsumedAt: now.Add(-30 * time.Minute)}
	tests := []struct {
		name      string
		q         LaggingQuery
		want      []LaggingPartition
		wantParam string
	}{
		{"defaults: an hour, the maximum page", LaggingQuery{}, []LaggingPartition{p}, ""},
		{"given", LaggingQuery{MinLagSeconds: groupsPtr(60), Limit: groupsPtr(5)}, []LaggingPartition{p, p2}, ""},
		{"zero: every lagging partition", LaggingQuery{MinLagSeconds: groupsPtr(0)}, []LaggingPartition{p, p2}, ""},
		{"a page of one: the oldest", LaggingQuery{MinLagSeconds: groupsPtr(0), Limit: groupsPtr(1)}, []LaggingPartition{p}, ""},
		{"negative", LaggingQuery{MinLagSeconds: groupsPtr(-1)}, nil, "minLagSeconds"},
		{"beyond a duration", LaggingQuery{MinLagSeconds: groupsPtr(maxLagSeconds + 1)}, nil, "minLagSeconds"},
		{"limit over the maximum: clamped", LaggingQuery{Limit: groupsPtr(5000)}, []LaggingPartition{p}, ""},
		{"negative limit", LaggingQuery{Limit: groupsPtr(-1)}, nil, "limit"},
	}
	g, _ := newTestGroups(w.s)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := g.Lagging(context.Background(), "t", tc.q)
			if tc.wantParam != "" {
				wantGroupsInputError(t, err, tc.wantParam, "")
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Lagging = %+v, %v\nwant %+v", got, err, tc.want)
			}
		})
	}
}

// groupsDeleteWorld: queues q (partitions a, b) and r (c, d) of one message each; g
// leases all four, keep leases a.
func groupsDeleteWorld(t *testing.T) *memWorld {
	t.Helper()
	w := newMemWorld(t, groupsT)
	for _, p := range []struct{ q, p string }{{"q", "a"}, {"q", "b"}, {"r", "c"}, {"r", "d"}} {
		w.pushTxns("t", p.q, p.p, "m0")
		w.pop("t", p.q, p.p, "g", 1, false)
	}
	w.pop("t", "q", "a", "keep", 1, false)
	return w
}

// groupsLeft renders what the store lists of group: queue:cursors[+subscription].
func groupsLeft(t *testing.T, w *memWorld, group string) []string {
	t.Helper()
	_, sums, err := w.s.GroupSummaries(context.Background(), "t", ports.GroupPage{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range sums {
		if s.Group == group {
			k := fmt.Sprintf("%s:%d", s.Queue, s.Cursors)
			if s.Subscription != nil {
				k += "+sub"
			}
			out = append(out, k)
		}
	}
	return out
}

func TestGroupsDelete(t *testing.T) {
	t.Parallel()
	storeErr := errors.New("database gone")
	tests := []struct {
		name         string
		queue        string // "" = Delete, else DeleteOnQueue
		group        string
		metadata     bool
		fail         error // the store's failure
		want         GroupDeleted
		wantErr      string // "" = none
		wantNotFound bool
		wantChange   *notify.GroupChange
		left         []string // groupsLeft of g afterwards
		storeCalls   int      // -1: not checked
	}{
		{"every queue", "", "g", true, nil, GroupDeleted{Group: "g", DeletedPartitions: 4, MetadataDeleted: true}, "", false,
			&notify.GroupChange{Tenant: "t", Group: "g", Kind: notify.GroupDeleted}, nil, 1},
		{"subscriptions kept", "", "g", false, nil, GroupDeleted{Group: "g", DeletedPartitions: 4}, "", false,
			&notify.GroupChange{Tenant: "t", Group: "g", Kind: notify.GroupDeleted}, []string{"q:0+sub", "r:0+sub"}, 1},
		{"nothing to delete still answers and announces", "", "nobody", true, nil, GroupDeleted{Group: "nobody", MetadataDeleted: true}, "", false,
			&notify.GroupChange{Tenant: "t", Group: "nobody", Kind: notify.GroupDeleted}, []string{"q:2+sub", "r:2+sub"}, 1},
		{"one queue", "q", "g", true, nil, GroupDeleted{Group: "g", Queue: "q", DeletedPartitions: 2, MetadataDeleted: true}, "", false,
			&notify.GroupChange{Tenant: "t", Queue: "q", Group: "g", Kind: notify.GroupDeleted}, []string{"r:2+sub"}, 1},
		{"unknown queue", "nope", "g", true, nil, GroupDeleted{}, "Queue not found", true, nil, []string{"q:2+sub", "r:2+sub"}, 1},
		{"store failure", "", "g", true, storeErr, GroupDeleted{}, "database gone", false, nil, []string{"q:2+sub", "r:2+sub"}, -1},
		{"empty group name", "", "", true, nil, GroupDeleted{}, "must not be empty", false, nil, []string{"q:2+sub", "r:2+sub"}, 0},
		{"bad queue name", "bad\x01", "g", true, nil, GroupDeleted{}, "control character", false, nil, []string{"q:2+sub", "r:2+sub"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := groupsDeleteWorld(t)
			if tc.fail != nil {
				w.fail("DeleteGroup", tc.fail)
			}
			g, changes := newTestGroups(w.s)
			before := w.count()
			var got GroupDeleted
			var err error
			if tc.queue == "" {
				got, err = g.Delete(context.Background(), "t", tc.group, tc.metadata)
			} else {
				got, err = g.DeleteOnQueue(context.Background(), "t", tc.group, tc.queue, tc.metadata)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || errors.Is(err, ErrNotFound) != tc.wantNotFound {
					t.Fatalf("error %v, want %q (not found: %v)", err, tc.wantErr, tc.wantNotFound)
				}
			} else if err != nil || got != tc.want {
				t.Fatalf("= %+v, %v; want %+v", got, err, tc.want)
			}
			if n := w.count() - before; tc.storeCalls >= 0 && n != tc.storeCalls {
				t.Fatalf("%d store calls, want %d", n, tc.storeCalls)
			}
			var want []notify.GroupChange
			if tc.wantChange != nil {
				want = []notify.GroupChange{*tc.wantChange}
			}
			if !reflect.DeepEqual(*changes, want) {
				t.Fatalf("announced %+v, want %+v", *changes, want)
			}
			w.s.AdminFault = nil
			if left := groupsLeft(t, w, "g"); !slices.Equal(left, tc.left) {
				t.Fatalf("left of g: %q, want %q", left, tc.left)
			}
			if left := groupsLeft(t, w, "keep"); !slices.Equal(left, []string{"q:1+sub"}) {
				t.Fatalf("another group was touched: %q", left)
			}
		})
	}
}

func TestGroupsUpdateSubscription(t *testing.T) {
	t.Parallel()
	at := groupsT.Add(-time.Hour)
	w := newMemWorld(t, groupsT)
	for _, q := range []string{"q1", "q2", "q3"} {
		w.subscribe("t", q, "g")
	}
	w.subscribe("t", "q1", "keep")
	g, changes := newTestGroups(w.s)
	got, err := g.UpdateSubscription(context.Background(), "t", "g", &at)
	if err != nil || got != (SubscriptionUpdated{Group: "g", Timestamp: at, Updated: 3}) {
		t.Fatalf("= %+v, %v", got, err)
	}
	_, sums, err := w.s.GroupSummaries(context.Background(), "t", ports.GroupPage{Limit: 100})
	if err != nil || len(sums) != 4 {
		t.Fatalf("summaries %+v, %v", sums, err)
	}
	for _, s := range sums {
		sub := s.Subscription
		switch {
		case s.Group == "g" && (sub.Mode != ports.SubscribeTimestamp || sub.From == nil || !sub.From.Equal(at)):
			t.Errorf("g on %s: %+v, want from %v", s.Queue, sub, at)
		case s.Group == "keep" && sub.Mode != ports.SubscribeAll:
			t.Errorf("keep's subscription changed: %+v", sub)
		}
	}
	if len(*changes) != 0 {
		t.Fatalf("a subscription update moves no cursor, yet announced %+v", *changes)
	}
	before := w.count()
	_, err = g.UpdateSubscription(context.Background(), "t", "g", nil)
	wantGroupsInputError(t, err, "subscriptionTimestamp", "required")
	if w.count() != before {
		t.Fatal("the store was asked without a timestamp")
	}
}

func TestGroupsSeek(t *testing.T) {
	t.Parallel()
	at := groupsT.Add(-90 * time.Minute)
	tests := []struct {
		name         string
		queue        string
		partition    string
		to           SeekTarget
		updated      int
		committed    map[string]int64 // g's cursors afterwards (partition -> committed), when it succeeds
		wantErr      string
		wantParam    string // an input error on it
		wantNotFound bool
		storeCalls   int
	}{
		{"to end", "q", "", SeekTarget{ToEnd: true}, 3, map[string]int64{"a": 2, "b": 2, "c": 2}, "", "", false, 1},
		// m0 and m1 were committed before the timestamp, m2 after: replay from m2.
		{"to a timestamp", "q", "", SeekTarget{Timestamp: &at}, 3, map[string]int64{"a": 1, "b": 1, "c": 1}, "", "", false, 1},
		{"one partition", "q", "b", SeekTarget{ToEnd: true}, 1, map[string]int64{"a": -1, "b": 2}, "", "", false, 1},
		{"neither", "q", "", SeekTarget{}, 0, nil, "Must specify toEnd=true or a timestamp", "toEnd", false, 0},
		{"both", "q", "", SeekTarget{ToEnd: true, Timestamp: &at}, 0, nil, "exclusive", "timestamp", false, 0},
		{"unknown queue", "nope", "", SeekTarget{ToEnd: true}, 0, nil, "Queue not found", "", true, 1},
		{"unknown partition", "q", "nope", SeekTarget{ToEnd: true}, 0, nil, "Partition not found", "", true, 1},
		{"a partition of an unknown queue", "nope", "b", SeekTarget{ToEnd: true}, 0, nil, "Partition not found", "", true, 1},
		{"bad partition name", "q", "\x7f", SeekTarget{ToEnd: true}, 0, nil, "control", "partition", false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// q/a, q/b, q/c: m0 three hours ago, m1 two, m2 one; g leases m0 of a.
			w := newMemWorld(t, groupsT)
			for i := range 3 {
				w.at(groupsT.Add(-time.Duration(3-i) * time.Hour))
				for _, p := range []string{"a", "b", "c"} {
					w.pushTxns("t", "q", p, fmt.Sprint("m", i))
				}
			}
			w.at(groupsT).pop("t", "q", "a", "g", 1, false)
			g, changes := newTestGroups(w.s)
			before := w.count()
			var got SeekOutcome
			var err error
			if tc.partition == "" {
				got, err = g.Seek(context.Background(), "t", "g", tc.queue, tc.to)
			} else {
				got, err = g.SeekPartition(context.Background(), "t", "g", tc.queue, tc.partition, tc.to)
			}
			if n := w.count() - before; n != tc.storeCalls {
				t.Fatalf("%d store calls, want %d", n, tc.storeCalls)
			}
			switch {
			case tc.wantParam != "":
				wantGroupsInputError(t, err, tc.wantParam, tc.wantErr)
			case tc.wantErr != "":
				if err == nil || err.Error() != tc.wantErr || errors.Is(err, ErrNotFound) != tc.wantNotFound {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
			default:
				want := SeekOutcome{Group: "g", Queue: tc.queue, Partition: tc.partition, Target: tc.to, PartitionsUpdated: tc.updated}
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Fatalf("= %+v, %v; want %+v", got, err, want)
				}
				wantChange := []notify.GroupChange{{Tenant: "t", Queue: tc.queue, Group: "g", Partition: tc.partition, Kind: notify.GroupSeeked}}
				if !reflect.DeepEqual(*changes, wantChange) {
					t.Fatalf("announced %+v, want %+v", *changes, wantChange)
				}
				_, ps, err := w.s.GroupPositions(context.Background(), "t", "g", ports.GroupPage{Limit: 100})
				if err != nil {
					t.Fatal(err)
				}
				cursors := map[string]int64{}
				for _, p := range ps {
					if p.Cursor {
						cursors[p.Partition] = p.Committed
						if p.LeaseID != "" && p.Partition != "a" || p.LeaseID != "" && tc.partition == "" {
							t.Errorf("%s: a lease the seek should have cleared: %+v", p.Partition, p)
						}
					}
				}
				if !reflect.DeepEqual(cursors, tc.committed) {
					t.Fatalf("g's cursors %v, want %v", cursors, tc.committed)
				}
				return
			}
			if len(*changes) != 0 {
				t.Fatalf("a failed seek announced %+v", *changes)
			}
		})
	}
}

// A limit above MaxLimit is clamped to it on every group listing.
func TestGroupsClampTheLimit(t *testing.T) {
	t.Parallel()
	w := newMemWorld(t, groupsT)
	for i := range 5 {
		w.pushTxns("t", "q", fmt.Sprintf("p%d", i), "m0")
		w.subscribe("t", "q", fmt.Sprintf("g%d", i))
	}
	g := NewGroups(w.s, GroupsOptions{MaxLimit: 3, Logger: resQuietLogger()})
	ctx := context.Background()
	for _, limit := range []int{4, 10000, math.MaxInt} {
		q := GroupPageQuery{Limit: groupsPtr(limit)}
		list, err := g.List(ctx, "t", q)
		if err != nil || len(list) != 3 {
			t.Fatalf("List with limit %d: %d groups, %v; want the 3 of MaxLimit", limit, len(list), err)
		}
		desc, err := g.Describe(ctx, "t", "g0", q)
		if err != nil || len(desc) != 1 || len(desc[0].Partitions) != 3 {
			t.Fatalf("Describe with limit %d: %+v, %v; want 3 partitions", limit, desc, err)
		}
		lag, err := g.Lagging(ctx, "t", LaggingQuery{MinLagSeconds: groupsPtr(0), Limit: groupsPtr(limit)})
		if err != nil || len(lag) > 3 {
			t.Fatalf("Lagging with limit %d: %d rows, %v; want at most 3", limit, len(lag), err)
		}
	}
}

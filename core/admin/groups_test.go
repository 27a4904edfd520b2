package admin

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/ports"
)

// fakeGroupStore is an in-memory ports.GroupStore: it answers what the test put in it
// and records what it was asked.
type fakeGroupStore struct {
	asOf      time.Time
	summaries []ports.GroupSummary
	positions []ports.GroupPosition
	deletion  ports.GroupDeletion
	seek      ports.GroupSeekResult
	updated   int
	err       error

	// What the service asked for.
	page          ports.GroupPage
	minLag        time.Duration
	limit         int
	group, queue  string
	subscriptions bool
	from          time.Time
	seekReq       ports.GroupSeek
	calls         int
}

var _ ports.GroupStore = (*fakeGroupStore)(nil)

func (f *fakeGroupStore) GroupSummaries(_ context.Context, _ string, page ports.GroupPage) (time.Time, []ports.GroupSummary, error) {
	f.calls++
	f.page = page
	return f.asOf, f.summaries, f.err
}

func (f *fakeGroupStore) GroupPositions(_ context.Context, _, group string, page ports.GroupPage) (time.Time, []ports.GroupPosition, error) {
	f.calls++
	f.group, f.page = group, page
	return f.asOf, f.positions, f.err
}

func (f *fakeGroupStore) LaggingPositions(_ context.Context, _ string, minLag time.Duration, limit int) (time.Time, []ports.GroupPosition, error) {
	f.calls++
	f.minLag, f.limit = minLag, limit
	return f.asOf, f.positions, f.err
}

func (f *fakeGroupStore) DeleteGroup(_ context.Context, _, group, queue string, subscriptions bool) (ports.GroupDeletion, error) {
	f.calls++
	f.group, f.queue, f.subscriptions = group, queue, subscriptions
	return f.deletion, f.err
}

func (f *fakeGroupStore) SetGroupSubscription(_ context.Context, _, group string, from time.Time) (int, error) {
	f.calls++
	f.group, f.from = group, from
	return f.updated, f.err
}

func (f *fakeGroupStore) SeekGroup(_ context.Context, _ string, s ports.GroupSeek) (ports.GroupSeekResult, error) {
	f.calls++
	f.seekReq = s
	return f.seek, f.err
}

// newTestGroups returns the service over store, with every announced change recorded.
func newTestGroups(store *fakeGroupStore) (*Groups, *[]notify.GroupChange) {
	changes := notify.NewGroupChanges()
	var got []notify.GroupChange
	changes.Subscribe(func(c notify.GroupChange) { got = append(got, c) })
	return NewGroups(store, GroupsOptions{Changes: changes}), &got
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
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { return groupsPtr(now.Add(-d)) }
	tests := []struct {
		name       string
		s          ports.GroupSummary
		wantState  GroupHealth
		wantMaxLag time.Duration
	}{
		{"nothing to read, long idle: stable", ports.GroupSummary{LastActivity: ago(48 * time.Hour)}, GroupStable, 0},
		{"nothing to read, never active: stable", ports.GroupSummary{}, GroupStable, 0},
		{"fresh lag: stable", ports.GroupSummary{TotalLag: 5, OldestUnconsumedAt: ago(10 * time.Second),
			LastActivity: ago(time.Second)}, GroupStable, 10 * time.Second},
		{"lag of exactly 300 s: stable", ports.GroupSummary{TotalLag: 5, OldestUnconsumedAt: ago(300 * time.Second),
			LastActivity: ago(time.Second)}, GroupStable, 300 * time.Second},
		{"lag over 300 s, consuming: lagging", ports.GroupSummary{TotalLag: 5, OldestUnconsumedAt: ago(301 * time.Second),
			LastActivity: ago(time.Second)}, GroupLagging, 301 * time.Second},
		{"lag, idle an hour, no lease: dead", ports.GroupSummary{TotalLag: 1, OldestUnconsumedAt: ago(time.Minute),
			LastActivity: ago(time.Hour)}, GroupDead, time.Minute},
		{"lag, never active: dead", ports.GroupSummary{TotalLag: 1, OldestUnconsumedAt: ago(2 * time.Hour)}, GroupDead, 2 * time.Hour},
		{"lag, idle an hour but a live lease: lagging", ports.GroupSummary{TotalLag: 1, OldestUnconsumedAt: ago(2 * time.Hour),
			LastActivity: ago(time.Hour), LiveLeases: 1}, GroupLagging, 2 * time.Hour},
		{"lag, idle just under an hour: lagging", ports.GroupSummary{TotalLag: 1, OldestUnconsumedAt: ago(2 * time.Hour),
			LastActivity: ago(time.Hour - time.Second)}, GroupLagging, 2 * time.Hour},
		{"oldest message in the future (clock skew): no time lag", ports.GroupSummary{TotalLag: 1,
			OldestUnconsumedAt: groupsPtr(now.Add(time.Second)), LastActivity: ago(time.Second)}, GroupStable, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := tc.s
			s.Group, s.Queue, s.Cursors, s.PartitionsWithLag = "g", "q", 3, 2
			s.Subscription = &ports.GroupSubscription{Mode: ports.SubscribeAll, CreatedAt: now}
			g, _ := newTestGroups(&fakeGroupStore{asOf: now, summaries: []ports.GroupSummary{s}})
			got, err := g.List(context.Background(), ports.DefaultTenant, GroupPageQuery{})
			if err != nil {
				t.Fatal(err)
			}
			want := GroupSummary{Name: "g", Queue: "q", Members: 3, PartitionCursors: 3, PartitionsWithLag: 2,
				TotalLag: s.TotalLag, MaxTimeLag: tc.wantMaxLag, State: tc.wantState, Subscription: s.Subscription}
			if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
				t.Fatalf("List = %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestGroupsPaging(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		q          GroupPageQuery
		want       ports.GroupPage
		wantParam  string // "" = accepted
		wantSubstr string
	}{
		{"defaults", GroupPageQuery{}, ports.GroupPage{Limit: 1000}, "", ""},
		{"given", GroupPageQuery{Limit: groupsPtr(10), Offset: groupsPtr(20)}, ports.GroupPage{Limit: 10, Offset: 20}, "", ""},
		{"limit 0", GroupPageQuery{Limit: groupsPtr(0)}, ports.GroupPage{}, "", ""},
		{"the maximum", GroupPageQuery{Limit: groupsPtr(1000)}, ports.GroupPage{Limit: 1000}, "", ""},
		{"over the maximum", GroupPageQuery{Limit: groupsPtr(1001)}, ports.GroupPage{}, "limit", "between 0 and 1000"},
		{"negative limit", GroupPageQuery{Limit: groupsPtr(-1)}, ports.GroupPage{}, "limit", "got -1"},
		{"negative offset", GroupPageQuery{Offset: groupsPtr(-5)}, ports.GroupPage{}, "offset", "got -5"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, call := range []struct {
				name string
				run  func(*Groups) error
			}{
				{"List", func(g *Groups) error { _, err := g.List(context.Background(), "t", tc.q); return err }},
				{"Describe", func(g *Groups) error { _, err := g.Describe(context.Background(), "t", "g", tc.q); return err }},
			} {
				store := &fakeGroupStore{}
				g, _ := newTestGroups(store)
				err := call.run(g)
				if tc.wantParam != "" {
					wantGroupsInputError(t, err, tc.wantParam, tc.wantSubstr)
					if store.calls != 0 {
						t.Fatalf("%s: the store was asked despite the bad page", call.name)
					}
					continue
				}
				if err != nil || store.page != tc.want {
					t.Fatalf("%s: page %+v (%v), want %+v", call.name, store.page, err, tc.want)
				}
			}
		})
	}
}

func TestGroupsDescribe(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	consumed := now.Add(-time.Minute)
	store := &fakeGroupStore{asOf: now, positions: []ports.GroupPosition{
		{Group: "g", Queue: "a", Partition: "p1", PartitionID: "id1", Cursor: true, Committed: 9, LastOffset: 9,
			LastConsumedAt: &consumed},
		{Group: "g", Queue: "a", Partition: "p2", PartitionID: "id2", Cursor: true, Committed: 4, LastOffset: 14, Lag: 10,
			OldestUnconsumedAt: groupsPtr(now.Add(-90 * time.Second)), LeaseID: "L", LeaseExpiresAt: groupsPtr(now.Add(time.Minute))},
		{Group: "g", Queue: "b", Partition: "p1", PartitionID: "id3", Committed: -1, LastOffset: 2, Lag: 3,
			OldestUnconsumedAt: groupsPtr(now.Add(-time.Hour))},
	}}
	g, changes := newTestGroups(store)
	got, err := g.Describe(context.Background(), "t", "g", GroupPageQuery{})
	if err != nil {
		t.Fatal(err)
	}
	want := []GroupQueue{
		{Queue: "a", Partitions: []GroupPartition{
			{Partition: "p1", PartitionID: "id1", LastConsumedAt: &consumed, TotalConsumed: 10},
			{Partition: "p2", PartitionID: "id2", WorkerID: "L", TotalConsumed: 5, OffsetLag: 10, TimeLag: 90 * time.Second,
				LeaseActive: true},
		}},
		// No cursor yet: nothing consumed there, its whole backlog is lag.
		{Queue: "b", Partitions: []GroupPartition{{Partition: "p1", PartitionID: "id3", OffsetLag: 3, TimeLag: time.Hour}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Describe =\n%+v\nwant\n%+v", got, want)
	}
	if store.group != "g" || len(*changes) != 0 {
		t.Fatalf("asked for %q, announced %v", store.group, *changes)
	}
	// An unknown group is described by nothing, not an error.
	empty, err := NewGroups(&fakeGroupStore{asOf: now}, GroupsOptions{}).Describe(context.Background(), "t", "nobody", GroupPageQuery{})
	if err != nil || len(empty) != 0 {
		t.Fatalf("unknown group: %+v, %v", empty, err)
	}
}

func TestGroupsLagging(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	oldest := now.Add(-2 * time.Hour)
	tests := []struct {
		name       string
		q          LaggingQuery
		wantMinLag time.Duration
		wantLimit  int
		wantParam  string
	}{
		{"defaults: an hour, the maximum page", LaggingQuery{}, time.Hour, 1000, ""},
		{"given", LaggingQuery{MinLagSeconds: groupsPtr(60), Limit: groupsPtr(5)}, time.Minute, 5, ""},
		{"zero: every lagging partition", LaggingQuery{MinLagSeconds: groupsPtr(0)}, 0, 1000, ""},
		{"negative", LaggingQuery{MinLagSeconds: groupsPtr(-1)}, 0, 0, "minLagSeconds"},
		{"beyond a duration", LaggingQuery{MinLagSeconds: groupsPtr(maxLagSeconds + 1)}, 0, 0, "minLagSeconds"},
		{"limit over the maximum", LaggingQuery{Limit: groupsPtr(5000)}, 0, 0, "limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := &fakeGroupStore{asOf: now, positions: []ports.GroupPosition{{Group: "g", Queue: "q", Partition: "p",
				PartitionID: "id", Lag: 7, OldestUnconsumedAt: &oldest, LeaseID: "L"}}}
			g, _ := newTestGroups(store)
			got, err := g.Lagging(context.Background(), "t", tc.q)
			if tc.wantParam != "" {
				wantGroupsInputError(t, err, tc.wantParam, "")
				return
			}
			if err != nil || store.minLag != tc.wantMinLag || store.limit != tc.wantLimit {
				t.Fatalf("asked minLag %v limit %d (%v), want %v %d", store.minLag, store.limit, err, tc.wantMinLag, tc.wantLimit)
			}
			want := []LaggingPartition{{Group: "g", Queue: "q", Partition: "p", PartitionID: "id", WorkerID: "L",
				OffsetLag: 7, TimeLag: 2 * time.Hour, OldestUnconsumedAt: oldest}}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Lagging = %+v, want %+v", got, want)
			}
		})
	}
}

func TestGroupsDelete(t *testing.T) {
	t.Parallel()
	storeErr := errors.New("database gone")
	tests := []struct {
		name         string
		queue        string // "" = Delete, else DeleteOnQueue
		group        string
		store        fakeGroupStore
		want         GroupDeleted
		wantErr      string // "" = none
		wantNotFound bool
		wantChange   *notify.GroupChange
	}{
		{"every queue", "", "g", fakeGroupStore{deletion: ports.GroupDeletion{QueueFound: true, Cursors: 4, Subscriptions: 2}},
			GroupDeleted{Group: "g", DeletedPartitions: 4, MetadataDeleted: true}, "", false,
			&notify.GroupChange{Tenant: "t", Group: "g", Kind: notify.GroupDeleted}},
		{"nothing to delete still answers and announces", "", "nobody", fakeGroupStore{deletion: ports.GroupDeletion{QueueFound: true}},
			GroupDeleted{Group: "nobody", MetadataDeleted: true}, "", false,
			&notify.GroupChange{Tenant: "t", Group: "nobody", Kind: notify.GroupDeleted}},
		{"one queue", "q", "g", fakeGroupStore{deletion: ports.GroupDeletion{QueueFound: true, Cursors: 2}},
			GroupDeleted{Group: "g", Queue: "q", DeletedPartitions: 2, MetadataDeleted: true}, "", false,
			&notify.GroupChange{Tenant: "t", Queue: "q", Group: "g", Kind: notify.GroupDeleted}},
		{"unknown queue", "q", "g", fakeGroupStore{deletion: ports.GroupDeletion{}}, GroupDeleted{}, "Queue not found", true, nil},
		{"store failure", "", "g", fakeGroupStore{err: storeErr}, GroupDeleted{}, "database gone", false, nil},
		{"empty group name", "", "", fakeGroupStore{}, GroupDeleted{}, "must not be empty", false, nil},
		{"bad queue name", "bad\x01", "g", fakeGroupStore{}, GroupDeleted{}, "control character", false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := tc.store
			g, changes := newTestGroups(&store)
			var got GroupDeleted
			var err error
			if tc.queue == "" {
				got, err = g.Delete(context.Background(), "t", tc.group, true)
			} else {
				got, err = g.DeleteOnQueue(context.Background(), "t", tc.group, tc.queue, true)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || errors.Is(err, ErrNotFound) != tc.wantNotFound {
					t.Fatalf("error %v, want %q (not found: %v)", err, tc.wantErr, tc.wantNotFound)
				}
			} else if err != nil || got != tc.want || store.group != tc.group || store.queue != tc.queue || !store.subscriptions {
				t.Fatalf("= %+v, %v (store asked %q %q %v); want %+v", got, err, store.group, store.queue, store.subscriptions, tc.want)
			}
			var want []notify.GroupChange
			if tc.wantChange != nil {
				want = []notify.GroupChange{*tc.wantChange}
			}
			if !reflect.DeepEqual(*changes, want) {
				t.Fatalf("announced %+v, want %+v", *changes, want)
			}
		})
	}
	// deleteMetadata=false reaches the store and the answer.
	store := &fakeGroupStore{deletion: ports.GroupDeletion{QueueFound: true}}
	g, _ := newTestGroups(store)
	if got, err := g.Delete(context.Background(), "t", "g", false); err != nil || got.MetadataDeleted || store.subscriptions {
		t.Fatalf("deleteMetadata=false: %+v, %v, store asked %v", got, err, store.subscriptions)
	}
}

func TestGroupsUpdateSubscription(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	store := &fakeGroupStore{updated: 3}
	g, changes := newTestGroups(store)
	got, err := g.UpdateSubscription(context.Background(), "t", "g", &at)
	if err != nil || got != (SubscriptionUpdated{Group: "g", Timestamp: at, Updated: 3}) || !store.from.Equal(at) {
		t.Fatalf("= %+v, %v; store got %v", got, err, store.from)
	}
	if len(*changes) != 0 {
		t.Fatalf("a subscription update moves no cursor, yet announced %+v", *changes)
	}
	store.calls = 0
	_, err = g.UpdateSubscription(context.Background(), "t", "g", nil)
	wantGroupsInputError(t, err, "subscriptionTimestamp", "required")
	if store.calls != 0 {
		t.Fatal("the store was asked without a timestamp")
	}
}

func TestGroupsSeek(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	found := ports.GroupSeekResult{QueueFound: true, PartitionFound: true, Partitions: 3}
	tests := []struct {
		name         string
		partition    string
		to           SeekTarget
		store        fakeGroupStore
		wantReq      ports.GroupSeek
		wantErr      string
		wantParam    string // an input error on it
		wantNotFound bool
	}{
		{"to end", "", SeekTarget{ToEnd: true}, fakeGroupStore{seek: found},
			ports.GroupSeek{Group: "g", Queue: "q", ToEnd: true}, "", "", false},
		{"to a timestamp", "", SeekTarget{Timestamp: &at}, fakeGroupStore{seek: found},
			ports.GroupSeek{Group: "g", Queue: "q", Timestamp: at}, "", "", false},
		{"one partition", "p", SeekTarget{ToEnd: true}, fakeGroupStore{seek: found},
			ports.GroupSeek{Group: "g", Queue: "q", Partition: "p", ToEnd: true}, "", "", false},
		{"neither", "", SeekTarget{}, fakeGroupStore{}, ports.GroupSeek{}, "Must specify toEnd=true or a timestamp", "toEnd", false},
		{"both", "", SeekTarget{ToEnd: true, Timestamp: &at}, fakeGroupStore{}, ports.GroupSeek{}, "exclusive", "timestamp", false},
		{"unknown queue", "", SeekTarget{ToEnd: true}, fakeGroupStore{}, ports.GroupSeek{Group: "g", Queue: "q", ToEnd: true},
			"Queue not found", "", true},
		{"unknown partition", "p", SeekTarget{ToEnd: true}, fakeGroupStore{seek: ports.GroupSeekResult{QueueFound: true}},
			ports.GroupSeek{Group: "g", Queue: "q", Partition: "p", ToEnd: true}, "Partition not found", "", true},
		{"a partition of an unknown queue", "p", SeekTarget{ToEnd: true}, fakeGroupStore{},
			ports.GroupSeek{Group: "g", Queue: "q", Partition: "p", ToEnd: true}, "Partition not found", "", true},
		{"bad partition name", "\x7f", SeekTarget{ToEnd: true}, fakeGroupStore{}, ports.GroupSeek{}, "control", "partition", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := tc.store
			g, changes := newTestGroups(&store)
			var got SeekOutcome
			var err error
			if tc.partition == "" {
				got, err = g.Seek(context.Background(), "t", "g", "q", tc.to)
			} else {
				got, err = g.SeekPartition(context.Background(), "t", "g", "q", tc.partition, tc.to)
			}
			if store.seekReq != tc.wantReq {
				t.Fatalf("store asked %+v, want %+v", store.seekReq, tc.wantReq)
			}
			switch {
			case tc.wantParam != "":
				wantGroupsInputError(t, err, tc.wantParam, tc.wantErr)
			case tc.wantErr != "":
				if err == nil || err.Error() != tc.wantErr || errors.Is(err, ErrNotFound) != tc.wantNotFound {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
			default:
				want := SeekOutcome{Group: "g", Queue: "q", Partition: tc.partition, Target: tc.to, PartitionsUpdated: 3}
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Fatalf("= %+v, %v; want %+v", got, err, want)
				}
				wantChange := []notify.GroupChange{{Tenant: "t", Queue: "q", Group: "g", Partition: tc.partition, Kind: notify.GroupSeeked}}
				if !reflect.DeepEqual(*changes, wantChange) {
					t.Fatalf("announced %+v, want %+v", *changes, wantChange)
				}
				return
			}
			if len(*changes) != 0 {
				t.Fatalf("a failed seek announced %+v", *changes)
			}
		})
	}
}

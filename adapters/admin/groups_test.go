package admin

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/ports"
)

// Store-level tests of the GroupStore: what the admin routes read and how cursor moves
// interact with the hot path's pops, acks and pushes (adapters/postgres on the same
// database).

// groupFixture is a fixture with helpers for cursors.
type groupFixture struct{ *fixture }

func newGroupFixture(t *testing.T) groupFixture { return groupFixture{newFixture(t, Options{})} }

// pop claims through the hot-path store as a pop of group pinned to partition ("" =
// wildcard) would: batch messages under a new lease (autoAck: none). It returns the
// lease id and the claims.
func (f groupFixture) pop(t *testing.T, queue, partition, group string, batch int, autoAck bool, mode string) (string, []ports.Claim) {
	t.Helper()
	lease := uuid.NewString()
	if mode == "" {
		mode = ports.SubscribeAll
	}
	claims, _, err := f.store.Pop(context.Background(), ports.PopRequest{Tenant: tenant, Queue: queue, Partition: partition,
		Group: group, Batch: batch, Partitions: 1, AutoAck: autoAck, LeaseID: lease, SubscribeMode: mode})
	if err != nil {
		t.Fatalf("pop %s/%s as %s: %v", queue, partition, group, err)
	}
	return lease, claims
}

// hash is the transaction-id hash fixture.push gave message i of (queue, partition).
func hash(queue, partition string, i int) [16]byte {
	var h [16]byte
	copy(h[:], fmt.Sprintf("%-16.16s", fmt.Sprint(queue, partition, i)))
	return h
}

// ack acknowledges message i of (queue, partition) for group under lease.
func (f groupFixture) ack(t *testing.T, pid, queue, partition, group, lease string, i int) ports.AckResult {
	t.Helper()
	res, err := f.store.Ack(context.Background(), []ports.AckItem{{PartitionID: pid, Group: group,
		Hash: hash(queue, partition, i), TransactionID: fmt.Sprint(i), Status: ports.AckCompleted, LeaseID: lease}})
	if err != nil {
		t.Fatal(err)
	}
	return res[0]
}

type cursorRow struct {
	committed, batchEnd int64
	leased              bool
}

// cursor reads group's cursor on pid; ok is false when there is none.
func (f groupFixture) cursor(t *testing.T, pid, group string) (c cursorRow, ok bool) {
	t.Helper()
	n := f.count(t, `SELECT count(*) FROM queen.log_consumers WHERE partition_id = $1 AND consumer_group = $2`, pid, group)
	if n == 0 {
		return c, false
	}
	err := f.db.QueryRow(`SELECT committed, batch_end, lease_id IS NOT NULL FROM queen.log_consumers
		WHERE partition_id = $1 AND consumer_group = $2`, pid, group).Scan(&c.committed, &c.batchEnd, &c.leased)
	if err != nil {
		t.Fatal(err)
	}
	return c, true
}

// pushMore commits n single-frame segments to (queue, partition) whose hashes differ
// from push's (tag is part of them).
func (f groupFixture) pushMore(t *testing.T, queue, partition, tag string, n int) {
	t.Helper()
	for i := range n {
		h := []byte(fmt.Sprintf("%-16.16s", fmt.Sprint(tag, queue, partition, i)))
		res, err := f.store.PushSegments(context.Background(), []ports.Segment{{Tenant: tenant, Queue: queue,
			Partition: partition, Count: 1, Hashes: h, Verified: -1, Blob: []byte{1}}})
		if err != nil || res[0].Status != ports.SegmentQueued {
			t.Fatalf("push %s/%s: %+v, %v", queue, partition, res, err)
		}
	}
}

// age sets the commit time of every segment of pid to d before now, and each later one
// a second later (offset order), so time lags are known to the second.
func (f groupFixture) age(t *testing.T, pid string, d time.Duration) {
	t.Helper()
	f.exec(t, `UPDATE queen.log_segments SET created_at = now() - make_interval(secs => $2) + make_interval(secs => base_offset)
		WHERE partition_id = $1`, pid, d.Seconds())
}

// positionKey renders positions compactly for comparison: group/queue/partition
// cursor? committed lag leased.
func positionKey(p ports.GroupPosition) string {
	return fmt.Sprintf("%s/%s/%s cursor=%v committed=%d lag=%d leased=%v", p.Group, p.Queue, p.Partition, p.Cursor,
		p.Committed, p.Lag, p.LeaseID != "")
}

func TestGroupReads(t *testing.T) {
	t.Parallel()
	f := newGroupFixture(t)
	ctx := context.Background()
	// Queue q: a holds 0..4, b holds 0..2; queue r: c holds 0..1.
	pa := f.push(t, "q", "a", 5)
	pb := f.push(t, "q", "b", 3)
	pc := f.push(t, "r", "c", 2)
	f.age(t, pa, 2*time.Hour) // a's offset k was committed 2 h - k s ago
	f.age(t, pb, 10*time.Minute)
	f.age(t, pc, time.Minute)
	// g1 (mode all) consumed a up to 1 (autoAck) and never popped b: b is all to read.
	f.pop(t, "q", "a", "g1", 2, true, "")
	// Queue mode holds a live lease on b's first message and never popped a.
	qmLease, _ := f.pop(t, "q", "b", ports.QueueModeGroup, 1, false, "")
	// g2 (mode new) subscribed after every push: its first (wildcard) pop seeds cursors at
	// the ends of a and b; then b receives 0..3 more (offsets 3..6).
	f.pop(t, "q", "", "g2", 10, false, ports.SubscribeNew)
	f.pushMore(t, "q", "b", "more", 4)
	// g3 is a group of r by its subscription alone (it never created a cursor).
	f.exec(t, `INSERT INTO queen.consumer_groups (queue_id, name, subscription_mode)
		SELECT id, 'g3', 'all' FROM queen.queues WHERE name = 'r'`)
	// Another tenant's group is invisible.
	f.exec(t, `INSERT INTO queen.queues (tenant_id, name) VALUES ('00000000-0000-0000-0000-000000000002', 'q')`)
	f.exec(t, `INSERT INTO queen.consumer_groups (queue_id, name, subscription_mode)
		SELECT id, 'other', 'all' FROM queen.queues WHERE tenant_id = '00000000-0000-0000-0000-000000000002'`)
	// The parallel subtests may wait long for a slot on a busy machine: ages are judged
	// as of the end of the set-up.
	setUp := time.Now()

	t.Run("summaries", func(t *testing.T) {
		t.Parallel()
		asOf, got, err := f.admin.GroupSummaries(ctx, tenant, ports.GroupPage{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(asOf); d > time.Minute || d < -time.Minute {
			t.Fatalf("asOf %v is not the database's now", asOf)
		}
		type sum struct {
			key                      string
			cursors, withLag, leases int
			totalLag                 int64
			mode                     string // "" = no subscription
		}
		want := []struct {
			sum
			oldest time.Duration // age of the oldest unconsumed message, ±30 s
		}{
			// Queue mode: b leased from -1 (7), a without a cursor from log_start - 1 (5).
			{sum{ports.QueueModeGroup + "/q", 1, 2, 1, 12, ""}, 2 * time.Hour},
			// g1: a after 1 (3), b without a cursor from its subscription, all (7).
			{sum{"g1/q", 1, 2, 0, 10, "all"}, 2 * time.Hour},
			// g2: b's four new messages, committed just now.
			{sum{"g2/q", 2, 1, 0, 4, "new"}, 0},
			{sum{"g3/r", 0, 1, 0, 2, "all"}, time.Minute},
		}
		if len(got) != len(want) {
			t.Fatalf("%d summaries, want %d: %+v", len(got), len(want), got)
		}
		for i, s := range got {
			r := sum{s.Group + "/" + s.Queue, s.Cursors, s.PartitionsWithLag, s.LiveLeases, s.TotalLag, ""}
			if s.Subscription != nil {
				r.mode = s.Subscription.Mode
			}
			if r != want[i].sum {
				t.Errorf("summary %d: got %+v, want %+v", i, r, want[i].sum)
			}
			if s.OldestUnconsumedAt == nil {
				t.Errorf("%s: no oldest unconsumed message", r.key)
			} else if d := setUp.Sub(*s.OldestUnconsumedAt) - want[i].oldest; d > 30*time.Second || d < -30*time.Second {
				t.Errorf("%s: oldest unconsumed message %v old at the set-up's end, want %v", r.key, setUp.Sub(*s.OldestUnconsumedAt), want[i].oldest)
			}
			if s.LastActivity == nil {
				t.Errorf("%s: no last activity", r.key)
			}
		}
	})

	t.Run("summaries page", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name  string
			page  ports.GroupPage
			wantN int
			first string
		}{
			{"first two", ports.GroupPage{Limit: 2}, 2, ports.QueueModeGroup},
			{"offset", ports.GroupPage{Limit: 2, Offset: 3}, 1, "g3"},
			{"past the end", ports.GroupPage{Limit: 2, Offset: 10}, 0, ""},
			{"limit 0", ports.GroupPage{Limit: 0}, 0, ""},
		} {
			_, got, err := f.admin.GroupSummaries(ctx, tenant, tc.page)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.wantN || (tc.wantN > 0 && got[0].Group != tc.first) {
				t.Errorf("%s: %d rows starting %+v, want %d starting %s", tc.name, len(got), got, tc.wantN, tc.first)
			}
		}
	})

	t.Run("positions", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			group string
			page  ports.GroupPage
			want  []string
		}{
			{"g1", ports.GroupPage{Limit: 100}, []string{
				"g1/q/a cursor=true committed=1 lag=3 leased=false",
				"g1/q/b cursor=false committed=-1 lag=7 leased=false"}},
			{ports.QueueModeGroup, ports.GroupPage{Limit: 100}, []string{
				"__QUEUE_MODE__/q/a cursor=false committed=-1 lag=5 leased=false",
				"__QUEUE_MODE__/q/b cursor=true committed=-1 lag=7 leased=true"}},
			{"g2", ports.GroupPage{Limit: 100}, []string{
				"g2/q/a cursor=true committed=4 lag=0 leased=false",
				"g2/q/b cursor=true committed=2 lag=4 leased=false"}},
			{"g2", ports.GroupPage{Limit: 1, Offset: 1}, []string{
				"g2/q/b cursor=true committed=2 lag=4 leased=false"}},
			{"g3", ports.GroupPage{Limit: 100}, []string{"g3/r/c cursor=false committed=-1 lag=2 leased=false"}},
			{"nobody", ports.GroupPage{Limit: 100}, nil},
			{"other", ports.GroupPage{Limit: 100}, nil}, // another tenant's
		} {
			_, got, err := f.admin.GroupPositions(ctx, tenant, tc.group, tc.page)
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, p := range got {
				keys = append(keys, positionKey(p))
				if (p.Lag > 0) != (p.OldestUnconsumedAt != nil) {
					t.Errorf("%s: oldest unconsumed %v with lag %d", positionKey(p), p.OldestUnconsumedAt, p.Lag)
				}
				if (p.LeaseID != "") != (p.LeaseExpiresAt != nil) {
					t.Errorf("%s: lease %q expiring %v", positionKey(p), p.LeaseID, p.LeaseExpiresAt)
				}
				if p.LeaseID != "" && p.LeaseID != qmLease {
					t.Errorf("%s: worker %q, want the pop's lease %q", positionKey(p), p.LeaseID, qmLease)
				}
				if want := map[string]string{"a": pa, "b": pb, "c": pc}[p.Partition]; p.PartitionID != want {
					t.Errorf("%s: partition id %s, want %s", positionKey(p), p.PartitionID, want)
				}
			}
			if !slices.Equal(keys, tc.want) {
				t.Errorf("%s %+v:\n got %q\nwant %q", tc.group, tc.page, keys, tc.want)
			}
		}
	})

	t.Run("lagging", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name   string
			minLag time.Duration
			limit  int
			want   []string // group/queue/partition, oldest first
		}{
			{"over an hour", time.Hour, 100, []string{"__QUEUE_MODE__/q/a", "g1/q/a"}},
			{"over five minutes", 5 * time.Minute, 100, []string{"__QUEUE_MODE__/q/a", "g1/q/a", "__QUEUE_MODE__/q/b", "g1/q/b"}},
			{"limit", 5 * time.Minute, 1, []string{"__QUEUE_MODE__/q/a"}},
			{"limit 0", 0, 0, nil},
			{"over a day", 24 * time.Hour, 100, nil},
		} {
			_, got, err := f.admin.LaggingPositions(ctx, tenant, tc.minLag, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, p := range got {
				keys = append(keys, p.Group+"/"+p.Queue+"/"+p.Partition)
			}
			if !slices.Equal(keys, tc.want) {
				t.Errorf("%s: got %q, want %q", tc.name, keys, tc.want)
			}
		}
	})
}

func TestDeleteGroup(t *testing.T) {
	t.Parallel()
	const other = "00000000-0000-0000-0000-000000000002"
	tests := []struct {
		name          string
		queue         string // "" = every queue
		subscriptions bool
		want          ports.GroupDeletion
		// what remains of g afterwards: cursors on q/a, q/b, r/c, and subscriptions on q, r
		cursorsLeft, subsLeft []string
	}{
		{"every queue with metadata", "", true, ports.GroupDeletion{QueueFound: true, Cursors: 3, Subscriptions: 2}, nil, nil},
		{"every queue, metadata kept", "", false, ports.GroupDeletion{QueueFound: true, Cursors: 3}, nil, []string{"q", "r"}},
		{"one queue with metadata", "q", true, ports.GroupDeletion{QueueFound: true, Cursors: 2, Subscriptions: 1}, []string{"c"}, []string{"r"}},
		{"one queue, metadata kept", "r", false, ports.GroupDeletion{QueueFound: true, Cursors: 1}, []string{"a", "b"}, []string{"q", "r"}},
		{"unknown queue", "nope", true, ports.GroupDeletion{}, []string{"a", "b", "c"}, []string{"q", "r"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newGroupFixture(t)
			pids := map[string]string{"a": f.push(t, "q", "a", 2), "b": f.push(t, "q", "b", 2), "c": f.push(t, "r", "c", 2)}
			for _, p := range []struct{ q, p string }{{"q", "a"}, {"q", "b"}, {"r", "c"}} {
				for _, g := range []string{"g", "keep", ports.QueueModeGroup} {
					f.pop(t, p.q, p.p, g, 1, false, "") // a live lease each
				}
			}
			// The same group name in another tenant is another group.
			f.exec(t, `INSERT INTO queen.queues (tenant_id, name) VALUES ($1, 'q')`, other)
			f.exec(t, `INSERT INTO queen.consumer_groups (queue_id, name, subscription_mode)
				SELECT id, 'g', 'all' FROM queen.queues WHERE tenant_id = $1`, other)

			got, err := f.admin.DeleteGroup(context.Background(), tenant, "g", tc.queue, tc.subscriptions)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("DeleteGroup = %+v, want %+v", got, tc.want)
			}
			var cursors []string
			for _, p := range []string{"a", "b", "c"} {
				if _, ok := f.cursor(t, pids[p], "g"); ok {
					cursors = append(cursors, p)
				}
				for _, g := range []string{"keep", ports.QueueModeGroup} {
					if c, ok := f.cursor(t, pids[p], g); !ok || !c.leased {
						t.Errorf("group %s lost its cursor or lease on %s", g, p)
					}
				}
			}
			var subs []string
			rows, err := f.db.Query(`SELECT q.name FROM queen.consumer_groups cg JOIN queen.queues q ON q.id = cg.queue_id
				WHERE cg.name = 'g' AND q.tenant_id = $1 ORDER BY q.name`, tenant)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var q string
				if err := rows.Scan(&q); err != nil {
					t.Fatal(err)
				}
				subs = append(subs, q)
			}
			if err := rows.Close(); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(cursors, tc.cursorsLeft) || !slices.Equal(subs, tc.subsLeft) {
				t.Errorf("left cursors on %v and subscriptions on %v, want %v and %v", cursors, subs, tc.cursorsLeft, tc.subsLeft)
			}
			if n := f.count(t, `SELECT count(*) FROM queen.consumer_groups WHERE name = 'keep'`); n != 2 {
				t.Errorf("group keep has %d subscriptions, want 2", n)
			}
			if n := f.count(t, `SELECT count(*) FROM queen.consumer_groups cg JOIN queen.queues q ON q.id = cg.queue_id
				WHERE cg.name = 'g' AND q.tenant_id = $1`, other); n != 1 {
				t.Error("the other tenant's group g was touched")
			}
		})
	}
}

// After a deletion the group's next pop starts over from its subscription: the recorded
// one when the metadata was kept, the pop's own when it was deleted.
func TestDeleteGroupReconsumesPerSubscription(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		subscriptions bool
		popMode       string
		wantStart     int64 // first offset the pop after the deletion claims; -1 = nothing
	}{
		{"metadata kept: the recorded subscription (all)", false, ports.SubscribeNew, 0},
		{"metadata deleted: the pop's subscription (new)", true, ports.SubscribeNew, -1},
		{"metadata deleted: the pop's subscription (all)", true, ports.SubscribeAll, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newGroupFixture(t)
			pid := f.push(t, "q", "a", 3)
			lease, _ := f.pop(t, "q", "a", "g", 10, false, ports.SubscribeAll)
			for i := range 3 {
				f.ack(t, pid, "q", "a", "g", lease, i)
			}
			if _, err := f.admin.DeleteGroup(context.Background(), tenant, "g", "", tc.subscriptions); err != nil {
				t.Fatal(err)
			}
			// The old lease is gone with the cursor: its ack finds no consumer.
			if r := f.ack(t, pid, "q", "a", "g", lease, 2); r.OK || r.Error != "consumer not found" {
				t.Errorf("ack of the deleted group's lease: %+v", r)
			}
			_, claims := f.pop(t, "q", "a", "g", 10, false, tc.popMode)
			start := int64(-1)
			if len(claims) > 0 {
				start = claims[0].Start
			}
			if start != tc.wantStart {
				t.Fatalf("the pop after the deletion claims from %d, want %d (%+v)", start, tc.wantStart, claims)
			}
		})
	}
}

func TestSetGroupSubscription(t *testing.T) {
	t.Parallel()
	f := newGroupFixture(t)
	ctx := context.Background()
	pa := f.push(t, "q", "a", 2)
	f.push(t, "r", "b", 1)
	f.pop(t, "q", "a", "g", 1, true, ports.SubscribeAll) // g on q: cursor at 0
	f.pop(t, "r", "b", "g", 1, true, ports.SubscribeNew) // g on r: new
	f.pop(t, "q", "a", "keep", 1, true, ports.SubscribeAll)
	before := f.count(t, `SELECT count(*) FROM queen.log_consumers`)

	// Messages of a new partition committed before and after the new instant.
	f.push(t, "q", "late", 1)
	f.exec(t, `UPDATE queen.log_segments SET created_at = now() - interval '1 hour'
		WHERE partition_id = (SELECT id FROM queen.log_partitions WHERE name = 'late')`)
	f.pushMore(t, "q", "late", "after", 1)
	from := time.Now().Add(-30 * time.Minute).UTC().Truncate(time.Millisecond)

	for _, tc := range []struct {
		name, group string
		want        int
	}{
		{"a group on two queues", "g", 2},
		{"an unknown group", "nobody", 0},
		{"queue mode has no subscription", ports.QueueModeGroup, 0},
	} {
		n, err := f.admin.SetGroupSubscription(ctx, tenant, tc.group, from)
		if err != nil || n != tc.want {
			t.Errorf("%s: SetGroupSubscription = %d, %v; want %d", tc.name, n, err, tc.want)
		}
	}
	if n := f.count(t, `SELECT count(*) FROM queen.consumer_groups WHERE name = 'g' AND subscription_mode = 'timestamp'
		AND subscribed_from = $1`, from); n != 2 {
		t.Errorf("%d subscriptions of g record %v, want 2", n, from)
	}
	if n := f.count(t, `SELECT count(*) FROM queen.consumer_groups WHERE name = 'keep' AND subscription_mode = 'all'
		AND subscribed_from IS NULL`); n != 1 {
		t.Error("another group's subscription changed")
	}
	if c, ok := f.cursor(t, pa, "g"); !ok || c.committed != 0 {
		t.Errorf("g's existing cursor moved: %+v", c)
	}
	if n := f.count(t, `SELECT count(*) FROM queen.log_consumers`); n != before {
		t.Errorf("%d cursors, want %d: a subscription update creates none", n, before)
	}
	// The new partition's first contact seeds from the new instant: the message from an
	// hour ago is skipped, the one after it delivered.
	_, claims := f.pop(t, "q", "late", "g", 10, false, ports.SubscribeAll)
	if len(claims) != 1 || claims[0].Start != 1 || claims[0].End != 1 {
		t.Fatalf("first contact with a new partition claims %+v, want offset 1 only", claims)
	}
}

func TestSeekGroup(t *testing.T) {
	t.Parallel()
	type part struct {
		committed int64
		leased    bool
	}
	tests := []struct {
		name      string
		seek      ports.GroupSeek // Timestamp: see at
		at        time.Duration   // timestamp = now - at (when not ToEnd)
		want      ports.GroupSeekResult
		wantParts map[string]part // g's cursors afterwards; a missing key: no cursor
	}{
		// a: 0..3 (offset k committed 4 h - k h ago), g leased 0..1; b: 0..1, g has no cursor.
		{"to end", ports.GroupSeek{Queue: "q", ToEnd: true},
			0, ports.GroupSeekResult{QueueFound: true, Partitions: 2, LeasesCleared: 1},
			map[string]part{"a": {3, false}, "b": {1, false}}},
		{"to a timestamp: replay from the first message at or after it", ports.GroupSeek{Queue: "q"},
			150 * time.Minute, ports.GroupSeekResult{QueueFound: true, Partitions: 2, LeasesCleared: 1},
			map[string]part{"a": {1, false}, "b": {-1, false}}},
		{"to the beginning", ports.GroupSeek{Queue: "q"},
			48 * time.Hour, ports.GroupSeekResult{QueueFound: true, Partitions: 2, LeasesCleared: 1},
			map[string]part{"a": {-1, false}, "b": {-1, false}}},
		{"one partition", ports.GroupSeek{Queue: "q", Partition: "b", ToEnd: true},
			0, ports.GroupSeekResult{QueueFound: true, PartitionFound: true, Partitions: 1},
			map[string]part{"a": {-1, true}, "b": {1, false}}},
		{"unknown partition", ports.GroupSeek{Queue: "q", Partition: "nope", ToEnd: true},
			0, ports.GroupSeekResult{QueueFound: true},
			map[string]part{"a": {-1, true}}},
		{"unknown queue", ports.GroupSeek{Queue: "nope", ToEnd: true},
			0, ports.GroupSeekResult{},
			map[string]part{"a": {-1, true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newGroupFixture(t)
			pids := map[string]string{"a": f.push(t, "q", "a", 4), "b": f.push(t, "q", "b", 2)}
			f.exec(t, `UPDATE queen.log_segments SET created_at = now() - make_interval(hours => 4 - base_offset::int)
				WHERE partition_id = $1`, pids["a"])
			lease, _ := f.pop(t, "q", "a", "g", 2, false, "")
			f.pop(t, "q", "a", "other", 4, true, "") // another group's cursor stays at 3
			s := tc.seek
			s.Group = "g"
			if !s.ToEnd {
				s.Timestamp = time.Now().Add(-tc.at)
			}
			got, err := f.admin.SeekGroup(context.Background(), tenant, s)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("SeekGroup = %+v, want %+v", got, tc.want)
			}
			for _, p := range []string{"a", "b"} {
				c, ok := f.cursor(t, pids[p], "g")
				w, want := tc.wantParts[p]
				if ok != want || ok && (c.committed != w.committed || c.leased != w.leased || (!w.leased && c.batchEnd != c.committed)) {
					t.Errorf("cursor on %s: %+v (exists %v), want %+v (exists %v)", p, c, ok, w, want)
				}
			}
			if c, _ := f.cursor(t, pids["a"], "other"); c.committed != 3 {
				t.Errorf("another group's cursor moved to %d", c.committed)
			}
			if !tc.wantParts["a"].leased {
				// The cleared lease is refused, and its span is where the seek put the cursor.
				if r := f.ack(t, pids["a"], "q", "a", "g", lease, 1); r.OK || r.Error != "invalid or expired lease" {
					t.Errorf("ack of the cleared lease: %+v", r)
				}
				if n, _, err := f.store.ExtendLease(context.Background(), lease, time.Minute); err != nil || n != 0 {
					t.Errorf("extension of the cleared lease renewed %d (%v)", n, err)
				}
				_, claims := f.pop(t, "q", "a", "g", 10, false, "")
				wantStart := tc.wantParts["a"].committed + 1
				if wantStart > 3 {
					if len(claims) != 0 {
						t.Errorf("a pop after the seek to the end claims %+v", claims)
					}
				} else if len(claims) != 1 || claims[0].Start != wantStart || claims[0].End != 3 || claims[0].Attempt != 1 {
					t.Errorf("a pop after the seek claims %+v, want %d..3 (first attempt)", claims, wantStart)
				}
			}
		})
	}
}

// A cursor move waits for the cursor rows an ack (or a pop) holds, and for nothing else:
// pushes to the partition go through while it waits, pops skip the cursor it holds, and
// once the ack commits the move applies on top of it.
func TestSeekLocksCursorsOnly(t *testing.T) {
	t.Parallel()
	f := newGroupFixture(t)
	ctx := context.Background()
	pid := f.push(t, "q", "a", 3)
	f.pop(t, "q", "a", "g", 1, true, "")

	// An ack in flight: its transaction holds g's cursor row.
	tx, err := f.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.Exec(`SELECT 1 FROM queen.log_consumers WHERE partition_id = $1 AND consumer_group = 'g' FOR UPDATE`, pid); err != nil {
		t.Fatal(err)
	}

	type result struct {
		r   ports.GroupSeekResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := f.admin.SeekGroup(ctx, tenant, ports.GroupSeek{Group: "g", Queue: "q", ToEnd: true})
		done <- result{r, err}
	}()
	// The seek is waiting for the row lock.
	deadline := time.Now().Add(10 * time.Second)
	for f.count(t, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%log_consumers%FOR UPDATE%'`) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the seek never waited for the cursor row")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Meanwhile a push to the partition commits, and a pop of g skips the held row
	// instead of waiting.
	pushed := make(chan error, 1)
	go func() {
		_, err := f.store.PushSegments(ctx, []ports.Segment{{Tenant: tenant, Queue: "q", Partition: "a", Count: 1,
			Hashes: []byte("pushed-during-sk"), Verified: -1, Blob: []byte{1}}})
		pushed <- err
	}()
	select {
	case err := <-pushed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a push waited for the seek")
	}
	if _, claims := f.pop(t, "q", "a", "g", 10, false, ""); len(claims) != 0 {
		t.Fatalf("a pop claimed %+v from a cursor another transaction holds", claims)
	}
	select {
	case r := <-done:
		t.Fatalf("the seek finished before the ack: %+v", r)
	default:
	}
	// The ack commits its move; the seek then moves the cursor to the end, push included.
	if _, err := tx.Exec(`UPDATE queen.log_consumers SET committed = 1, batch_end = 1 WHERE partition_id = $1 AND consumer_group = 'g'`, pid); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.r.Partitions != 1 {
		t.Fatalf("seek = %+v, %v", r.r, r.err)
	}
	if c, _ := f.cursor(t, pid, "g"); c.committed != 3 {
		t.Fatalf("cursor at %d after the seek to the end, want 3 (the push during the wait included)", c.committed)
	}
}

// Seeks, deletions and subscription updates of one group racing each other and the
// group's pops and acks neither deadlock nor fail: they serialise on the cursor rows.
func TestGroupMovesUnderConcurrentPopsAndAcks(t *testing.T) {
	t.Parallel()
	f := newGroupFixture(t)
	ctx := context.Background()
	parts := []string{"p0", "p1", "p2", "p3"}
	pids := map[string]string{}
	for _, p := range parts {
		pids[p] = f.push(t, "q", p, 20)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				p := parts[(w+i)%len(parts)]
				lease := uuid.NewString()
				claims, _, err := f.store.Pop(ctx, ports.PopRequest{Tenant: tenant, Queue: "q", Partition: p, Group: "g",
					Batch: 3, Partitions: 1, LeaseID: lease, SubscribeMode: ports.SubscribeAll})
				if err != nil {
					errs <- err
					return
				}
				for _, c := range claims {
					var items []ports.AckItem
					for off := c.Start; off <= c.End; off++ {
						items = append(items, ports.AckItem{PartitionID: c.PartitionID, Group: "g",
							Hash: hash("q", p, int(off)), TransactionID: fmt.Sprint(off), Status: ports.AckCompleted, LeaseID: lease})
					}
					if _, err := f.store.Ack(ctx, items); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	for i := range 30 {
		var err error
		switch i % 4 {
		case 0:
			_, err = f.admin.SeekGroup(ctx, tenant, ports.GroupSeek{Group: "g", Queue: "q", ToEnd: true})
		case 1:
			_, err = f.admin.SeekGroup(ctx, tenant, ports.GroupSeek{Group: "g", Queue: "q", Timestamp: time.Now().Add(-time.Hour)})
		case 2:
			_, err = f.admin.DeleteGroup(ctx, tenant, "g", "", i%8 == 2)
		case 3:
			_, err = f.admin.SeekGroup(ctx, tenant, ports.GroupSeek{Group: "g", Queue: "q", Partition: parts[i%4], ToEnd: true})
		}
		if err != nil {
			errs <- err
			break
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Every cursor left is consistent: committed <= batch_end, a lease only on a span.
	if n := f.count(t, `SELECT count(*) FROM queen.log_consumers WHERE committed > batch_end
		OR (lease_id IS NULL) <> (lease_expires_at IS NULL)`); n != 0 {
		t.Fatalf("%d inconsistent cursor rows", n)
	}
}

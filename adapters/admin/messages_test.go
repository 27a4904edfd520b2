package admin

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/core/dedup"
	"github.com/queen-go/queen/ports"
)

// Store-level tests of the MessageStore (messages.go, dlq.go) on a real PostgreSQL.

const msgOtherTenant = "00000000-0000-0000-0000-000000000002"

var msgT0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

// msgSeg is a segment pushed by msgPush.
type msgSeg struct {
	pid       string
	base, end int64
}

// msgPush commits one segment of txns (real transaction-id hashes, a stand-in blob) to
// tenant's queue/partition, stamped at (created_at, and last_write_at as the allocator
// leaves it).
func (f *fixture) msgPush(t *testing.T, tenant, queue, partition string, at time.Time, txns ...string) msgSeg {
	t.Helper()
	var hashes []byte
	for _, txn := range txns {
		h := dedup.Hash(txn)
		hashes = append(hashes, h[:]...)
	}
	res, err := f.store.PushSegments(context.Background(), []ports.Segment{{Tenant: tenant, Queue: queue,
		Partition: partition, Count: len(txns), Hashes: hashes, Verified: -1, Blob: []byte(strings.Join(txns, ","))}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Status != ports.SegmentQueued {
		t.Fatalf("push of %v: %+v", txns, res[0])
	}
	s := msgSeg{pid: res[0].PartitionID, base: res[0].BaseOffset, end: res[0].BaseOffset + int64(len(txns)) - 1}
	f.exec(t, `UPDATE queen.log_txns SET created_at = $3 WHERE partition_id = $1 AND end_offset = $2`, s.pid, s.end, at)
	f.exec(t, `UPDATE queen.log_segments SET created_at = $3 WHERE partition_id = $1 AND base_offset = $2`, s.pid, s.base, at)
	f.exec(t, `UPDATE queen.log_partitions SET last_write_at = $2 WHERE id = $1`, s.pid, at)
	return s
}

// msgDead inserts a dead-letter row of offset off of partition pid for group, failed at
// at, and returns its id.
func (f *fixture) msgDead(t *testing.T, pid string, off int64, group, txn string, at time.Time) string {
	t.Helper()
	var id string
	if err := f.db.QueryRow(`INSERT INTO queen.dlq (queue_id, partition_id, consumer_group, msg_offset, transaction_id,
		error_message, retry_count, created_at, failed_at, frame_index, blob)
		SELECT lp.queue_id, lp.id, $2, $3, $4, 'why', 1, $5, $5, 0, '\x01' FROM queen.log_partitions lp WHERE lp.id = $1
		RETURNING id::text`, pid, group, off, txn, at).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// msgBrowseFixture: queue q (namespace ns, task tk) with partitions a and b, queue r,
// and the same queue name under another tenant; segments one second apart:
//
//	a [0..2] t0   b [0] t0+1s   a [3] t0+2s   r/x [0] t0+3s   b [1..2] t0+4s   other tenant's q/a t0+5s
//
// Group g holds a cursor on a (committed 1, leased to 3); b's offset 1 is dead-lettered.
type msgBrowseFixture struct {
	*fixture
	a1, b1, a2, x1, b2 msgSeg
	deadB1             string // the dead-letter row of b's offset 1
}

func newMsgBrowseFixture(t *testing.T) *msgBrowseFixture {
	f := &msgBrowseFixture{fixture: newFixture(t, Options{})}
	f.a1 = f.msgPush(t, tenant, "q", "a", msgT0, "a0", "a1", "a2")
	f.b1 = f.msgPush(t, tenant, "q", "b", msgT0.Add(time.Second), "b0")
	f.a2 = f.msgPush(t, tenant, "q", "a", msgT0.Add(2*time.Second), "a3")
	f.x1 = f.msgPush(t, tenant, "r", "x", msgT0.Add(3*time.Second), "x0")
	f.b2 = f.msgPush(t, tenant, "q", "b", msgT0.Add(4*time.Second), "b1", "b2")
	f.msgPush(t, msgOtherTenant, "q", "a", msgT0.Add(5*time.Second), "o0")
	f.exec(t, `UPDATE queen.queues SET namespace = 'ns', task = 'tk', priority = 7 WHERE name = 'q' AND tenant_id = $1`, tenant)
	f.exec(t, `INSERT INTO queen.log_consumers (partition_id, consumer_group, committed, batch_end, lease_id, lease_expires_at)
		VALUES ($1, 'g', 1, 3, gen_random_uuid(), now() + interval '1 hour')`, f.a1.pid)
	f.deadB1 = f.msgDead(t, f.b1.pid, 1, "g", "b1", msgT0)
	return f
}

func msgSegsOf(p ports.BrowsePage) []msgSeg {
	var out []msgSeg
	for _, s := range p.Segments {
		out = append(out, msgSeg{s.PartitionID, s.BaseOffset, s.EndOffset})
	}
	return out
}

func TestBrowseSegments(t *testing.T) {
	t.Parallel()
	f := newMsgBrowseFixture(t)
	ctx := context.Background()
	from := msgT0.Add(-time.Hour)
	keyOf := func(s msgSeg, at time.Time) *ports.BrowseKey {
		return &ports.BrowseKey{CreatedAt: at, PartitionID: s.pid, EndOffset: s.end}
	}
	tests := []struct {
		name  string
		f     ports.MessageFilter
		after *ports.BrowseKey
		limit int
		want  []msgSeg
	}{
		{"everything, newest first", ports.MessageFilter{From: from}, nil, 100, []msgSeg{f.b2, f.x1, f.a2, f.b1, f.a1}},
		{"limit", ports.MessageFilter{From: from}, nil, 2, []msgSeg{f.b2, f.x1}},
		{"after a key", ports.MessageFilter{From: from}, keyOf(f.x1, msgT0.Add(3*time.Second)), 2, []msgSeg{f.a2, f.b1}},
		{"after the last", ports.MessageFilter{From: from}, keyOf(f.a1, msgT0), 2, nil},
		{"queue", ports.MessageFilter{Queue: "q", From: from}, nil, 100, []msgSeg{f.b2, f.a2, f.b1, f.a1}},
		{"partition", ports.MessageFilter{Queue: "q", Partition: "a", From: from}, nil, 100, []msgSeg{f.a2, f.a1}},
		{"namespace and task", ports.MessageFilter{Namespace: "ns", Task: "tk", From: from}, nil, 1, []msgSeg{f.b2}},
		{"unknown task", ports.MessageFilter{Task: "zz", From: from}, nil, 100, nil},
		{"window", ports.MessageFilter{From: msgT0.Add(time.Second), To: msgT0.Add(3 * time.Second)}, nil, 100, []msgSeg{f.x1, f.a2, f.b1}},
		{"from after everything", ports.MessageFilter{From: msgT0.Add(time.Minute)}, nil, 100, nil},
		{"limit 0", ports.MessageFilter{From: from}, nil, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			page, err := f.admin.BrowseSegments(ctx, tenant, tt.f, tt.after, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if got := msgSegsOf(page); !slices.Equal(got, tt.want) {
				t.Fatalf("segments %v, want %v", got, tt.want)
			}
			// Every partition of the page comes once, with its queue, window and cursors.
			ids := map[string]bool{}
			for _, s := range page.Segments {
				ids[s.PartitionID] = true
			}
			if len(page.Partitions) != len(ids) {
				t.Fatalf("%d partitions for %d", len(page.Partitions), len(ids))
			}
			for _, p := range page.Partitions {
				if !ids[p.ID] {
					t.Fatalf("partition %s is not on the page", p.ID)
				}
			}
		})
	}

	t.Run("page details", func(t *testing.T) {
		t.Parallel()
		page, err := f.admin.BrowseSegments(ctx, tenant, ports.MessageFilter{Queue: "q", From: from}, nil, 100)
		if err != nil {
			t.Fatal(err)
		}
		if page.Now.IsZero() || time.Since(page.Now).Abs() > time.Minute {
			t.Errorf("now %v", page.Now)
		}
		if want := []ports.MessageAddr{{PartitionID: f.b1.pid, Offset: 1}}; !slices.Equal(page.DeadLetters, want) {
			t.Errorf("dead letters %v, want %v", page.DeadLetters, want)
		}
		var a, b ports.MessagePartition
		for _, p := range page.Partitions {
			switch p.ID {
			case f.a1.pid:
				a = p
			case f.b1.pid:
				b = p
			}
		}
		if a.Name != "a" || a.First != 0 || a.LastOffset != 3 || a.Queue.Name != "q" || a.Queue.Namespace != "ns" ||
			a.Queue.Task != "tk" || a.Queue.Priority != 7 || a.Queue.DedupWindowSeconds != 3600 || a.Queue.ID == "" {
			t.Errorf("partition a: %+v", a)
		}
		if len(a.Cursors) != 1 || a.Cursors[0].Group != "g" || a.Cursors[0].Committed != 1 || a.Cursors[0].BatchEnd != 3 ||
			a.Cursors[0].LeaseExpires.Before(time.Now()) {
			t.Errorf("cursors of a: %+v", a.Cursors)
		}
		if b.Name != "b" || b.LastOffset != 2 || len(b.Cursors) != 0 {
			t.Errorf("partition b: %+v", b)
		}
	})

	t.Run("other tenant", func(t *testing.T) {
		t.Parallel()
		page, err := f.admin.BrowseSegments(ctx, msgOtherTenant, ports.MessageFilter{From: from}, nil, 100)
		if err != nil || len(page.Segments) != 1 || page.Partitions[0].Queue.Name != "q" || page.Partitions[0].LastOffset != 0 {
			t.Fatalf("the other tenant's page: %+v (%v)", page, err)
		}
	})
}

// TestBrowseSegmentsWindow: only segments holding messages inside the retained window
// (offsets from greatest(log_start, txns_start)) are listed.
func TestBrowseSegmentsWindow(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, set string
		first     int64
		wantA     int // segments of a listed
	}{
		{"everything retained", "", 0, 2},
		{"hash sidecar purged below 3", "txns_start = 3", 3, 1},
		{"segments retained from 2", "log_start = 2", 2, 2},
		{"nothing retained", "log_start = 4, txns_start = 4", 4, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newMsgBrowseFixture(t)
			if tt.set != "" {
				f.exec(t, `UPDATE queen.log_partitions SET `+tt.set+` WHERE id = $1`, f.a1.pid)
			}
			page, err := f.admin.BrowseSegments(context.Background(), tenant,
				ports.MessageFilter{Queue: "q", Partition: "a", From: msgT0.Add(-time.Hour)}, nil, 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Segments) != tt.wantA {
				t.Fatalf("%d segments, want %d", len(page.Segments), tt.wantA)
			}
			if tt.wantA > 0 && page.Partitions[0].First != tt.first {
				t.Fatalf("first listable offset %d, want %d", page.Partitions[0].First, tt.first)
			}
		})
	}
}

// TestBrowseSegmentsTies: segments committed at the same instant are ordered by
// partition id, and a walk by keys neither skips nor repeats any.
func TestBrowseSegmentsTies(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	var want []msgSeg
	for _, p := range []string{"p1", "p2", "p3", "p4"} {
		want = append(want, f.msgPush(t, tenant, "ties", p, msgT0, "t"))
	}
	slices.SortFunc(want, func(a, b msgSeg) int { return cmp.Compare(a.pid, b.pid) })
	var got []msgSeg
	var after *ports.BrowseKey
	for {
		page, err := f.admin.BrowseSegments(context.Background(), tenant, ports.MessageFilter{From: msgT0}, after, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Segments) == 0 {
			break
		}
		got = append(got, msgSegsOf(page)...)
		k := page.Segments[0].Key()
		after = &k
	}
	if !slices.Equal(got, want) {
		t.Fatalf("walk %v, want %v", got, want)
	}
}

func TestBrowseModes(t *testing.T) {
	t.Parallel()
	f := newMsgBrowseFixture(t)
	f.exec(t, `INSERT INTO queen.log_consumers (partition_id, consumer_group, committed, batch_end) VALUES
		($1, '__QUEUE_MODE__', 0, 0), ($1, 'h', 0, 0), ($2, 'g', 0, 0)`, f.b1.pid, f.x1.pid)
	for _, tt := range []struct {
		name string
		f    ports.MessageFilter
		want ports.GroupModes
	}{
		{"everything", ports.MessageFilter{}, ports.GroupModes{QueueMode: true, NamedGroups: 2}},
		{"partition a", ports.MessageFilter{Queue: "q", Partition: "a"}, ports.GroupModes{NamedGroups: 1}},
		{"partition b", ports.MessageFilter{Queue: "q", Partition: "b"}, ports.GroupModes{QueueMode: true, NamedGroups: 1}},
		{"queue r", ports.MessageFilter{Queue: "r"}, ports.GroupModes{NamedGroups: 1}},
		{"no cursor", ports.MessageFilter{Queue: "none"}, ports.GroupModes{}},
	} {
		got, err := f.admin.BrowseModes(context.Background(), tenant, tt.f)
		if err != nil || got != tt.want {
			t.Errorf("%s: %+v (%v), want %+v", tt.name, got, err, tt.want)
		}
	}
	if got, err := f.admin.BrowseModes(context.Background(), msgOtherTenant, ports.MessageFilter{}); err != nil || got != (ports.GroupModes{}) {
		t.Errorf("other tenant: %+v (%v)", got, err)
	}
}

func TestSegmentBlobs(t *testing.T) {
	t.Parallel()
	f := newMsgBrowseFixture(t)
	got, err := f.admin.SegmentBlobs(context.Background(), []ports.SegmentRef{{PartitionID: f.a1.pid, BaseOffset: 0},
		{PartitionID: f.b2.pid, BaseOffset: 1}, {PartitionID: f.b2.pid, BaseOffset: 2}, {PartitionID: f.a1.pid, BaseOffset: 9}})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b ports.SegmentBlob) int { return cmp.Compare(string(a.Blob), string(b.Blob)) })
	if len(got) != 2 || string(got[0].Blob) != "a0,a1,a2" || got[0].Count != 3 || !got[0].CreatedAt.Equal(msgT0) ||
		got[0].PartitionID != f.a1.pid || string(got[1].Blob) != "b1,b2" || got[1].BaseOffset != 1 {
		t.Fatalf("blobs %+v, want the two existing segments", got)
	}
}

func TestFindMessage(t *testing.T) {
	t.Parallel()
	f := newMsgBrowseFixture(t)
	ctx := context.Background()
	// a1 pushed again once its queue deduplicates no more: the newest is found.
	f.exec(t, `UPDATE queen.queues SET dedup_window_seconds = 0 WHERE name = 'q'`)
	again := f.msgPush(t, tenant, "q", "a", msgT0.Add(6*time.Second), "x", "a1")
	dead2 := f.msgDead(t, f.b1.pid, 1, "h", "b1", msgT0.Add(time.Second))

	for _, tt := range []struct {
		name, tenant, pid, txn string
		found                  bool
		off, base              int64
		dead                   []string
	}{
		{"first frame", tenant, f.a1.pid, "a0", true, 0, 0, nil},
		{"a frame inside a segment", tenant, f.b1.pid, "b2", true, 2, 1, nil},
		{"the newest of two", tenant, f.a1.pid, "a1", true, again.end, again.base, nil},
		{"dead letters, newest first", tenant, f.b1.pid, "b1", true, 1, 1, []string{dead2, f.deadB1}},
		{"another partition's id", tenant, f.a1.pid, "b0", false, 0, 0, nil},
		{"unknown id", tenant, f.a1.pid, "zz", false, 0, 0, nil},
		{"unknown partition", tenant, "00000000-0000-4000-8000-000000000000", "a0", false, 0, 0, nil},
		{"another tenant's partition", msgOtherTenant, f.a1.pid, "a0", false, 0, 0, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sm, found, err := f.admin.FindMessage(ctx, tt.tenant, tt.pid, dedup.Hash(tt.txn))
			if err != nil || found != tt.found {
				t.Fatalf("found %v (%v), want %v", found, err, tt.found)
			}
			if !found {
				return
			}
			if sm.Offset != tt.off || sm.Segment.BaseOffset != tt.base || sm.Partition.ID != tt.pid || sm.Now.IsZero() {
				t.Fatalf("message %+v, want offset %d in the segment at %d", sm, tt.off, tt.base)
			}
			var dead []string
			for _, d := range sm.Dead {
				dead = append(dead, d.ID)
				if d.PartitionID != tt.pid || d.TransactionID != tt.txn || d.ErrorMessage == nil || *d.ErrorMessage != "why" ||
					d.Queue != "q" || d.Partition != "b" {
					t.Errorf("dead letter %+v", d)
				}
			}
			if !slices.Equal(dead, tt.dead) {
				t.Errorf("dead letters %v, want %v", dead, tt.dead)
			}
		})
	}

	t.Run("outside the hash window", func(t *testing.T) {
		f.exec(t, `UPDATE queen.log_partitions SET txns_start = 1 WHERE id = $1`, f.a1.pid)
		if _, found, err := f.admin.FindMessage(ctx, tenant, f.a1.pid, dedup.Hash("a0")); err != nil || found {
			t.Fatalf("found %v (%v), want not found below txns_start", found, err)
		}
	})
}

func TestSegmentAt(t *testing.T) {
	t.Parallel()
	f := newMsgBrowseFixture(t)
	f.exec(t, `UPDATE queen.log_partitions SET log_start = 1 WHERE id = $1`, f.b1.pid)
	for _, tt := range []struct {
		name, tenant, pid string
		off, base         int64
		found             bool
	}{
		{"inside", tenant, f.a1.pid, 2, 0, true},
		{"last", tenant, f.a1.pid, 3, 3, true},
		{"beyond the last", tenant, f.a1.pid, 4, 0, false},
		{"below log_start", tenant, f.b1.pid, 0, 0, false},
		{"from log_start", tenant, f.b1.pid, 1, 1, true},
		{"another tenant", msgOtherTenant, f.a1.pid, 0, 0, false},
	} {
		seg, found, err := f.admin.SegmentAt(context.Background(), tt.tenant, tt.pid, tt.off)
		if err != nil || found != tt.found || (found && seg.BaseOffset != tt.base) {
			t.Errorf("%s: %+v %v (%v), want found %v at %d", tt.name, seg, found, err, tt.found, tt.base)
		}
	}
}

func TestNewestDeadLetter(t *testing.T) {
	t.Parallel()
	f := newMsgBrowseFixture(t)
	ctx := context.Background()
	newer := f.msgDead(t, f.b1.pid, 1, "h", "b1", msgT0.Add(time.Hour))
	f.msgDead(t, f.b1.pid, 1, "i", "b1", msgT0.Add(time.Minute))
	if id, found, err := f.admin.NewestDeadLetter(ctx, tenant, f.b1.pid, "b1"); err != nil || !found || id != newer {
		t.Fatalf("newest %s %v (%v), want %s", id, found, err, newer)
	}
	for _, tt := range []struct{ tenant, pid, txn string }{{tenant, f.b1.pid, "b0"}, {tenant, f.a1.pid, "b1"}, {msgOtherTenant, f.b1.pid, "b1"}} {
		if _, found, err := f.admin.NewestDeadLetter(ctx, tt.tenant, tt.pid, tt.txn); err != nil || found {
			t.Errorf("%+v: found %v (%v)", tt, found, err)
		}
	}
}

func TestMoveDeadLetter(t *testing.T) {
	t.Parallel()
	f := newMsgBrowseFixture(t)
	ctx := context.Background()
	errMove := errors.New("the push failed")
	listed := func(id string) bool {
		return f.count(t, `SELECT count(*) FROM queen.dlq WHERE id = $1`, id) == 1
	}
	for _, tt := range []struct {
		name    string
		tenant  string
		remove  bool
		err     error
		want    ports.DeadLetterMove
		kept    bool
		unknown bool // the id names no row
	}{
		{name: "moved and removed", tenant: tenant, remove: true, want: ports.DeadLetterMove{Found: true, Removed: true}},
		{name: "moved, kept", tenant: tenant, want: ports.DeadLetterMove{Found: true}, kept: true},
		{name: "move failed", tenant: tenant, remove: true, err: errMove, want: ports.DeadLetterMove{Found: true}, kept: true},
		{name: "another tenant's row", tenant: msgOtherTenant, remove: true, kept: true},
		{name: "no such row", tenant: tenant, remove: true, unknown: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id := f.msgDead(t, f.b2.pid, 2, "g-"+tt.name, "b2", msgT0)
			if tt.unknown {
				id = "00000000-0000-4000-8000-000000000000"
			}
			calls := 0
			got, err := f.admin.MoveDeadLetter(ctx, tt.tenant, id, func(_ context.Context, d ports.DeadLetter) (bool, error) {
				calls++
				if d.ID != id || d.Queue != "q" || d.Partition != "b" || d.PartitionID != f.b2.pid || d.Offset != 2 ||
					d.TransactionID != "b2" || d.ConsumerGroup != "g-"+tt.name || string(d.Blob) != "\x01" {
					t.Errorf("row %+v", d)
				}
				// The row itself is not locked while the move runs: the push it makes may
				// wait for locks whose holders wait for dead-letter rows.
				if _, err := f.db.Exec(`SELECT 1 FROM queen.dlq WHERE id = $1 FOR UPDATE NOWAIT`, id); err != nil {
					t.Errorf("the row is locked during the move: %v", err)
				}
				return tt.remove, tt.err
			})
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) || got != tt.want {
				t.Fatalf("move = %+v, %v; want %+v, %v", got, err, tt.want, tt.err)
			}
			if wantCalls := map[bool]int{true: 1, false: 0}[tt.want.Found]; calls != wantCalls {
				t.Fatalf("move called %d times, want %d", calls, wantCalls)
			}
			if !tt.unknown && listed(id) != tt.kept {
				t.Fatalf("row kept: %v, want %v", listed(id), tt.kept)
			}
		})
	}

	t.Run("moves of one row take turns", func(t *testing.T) {
		t.Parallel()
		id := f.msgDead(t, f.b2.pid, 2, "turns", "b2", msgT0)
		inFirst, release := make(chan struct{}), make(chan struct{})
		var wg sync.WaitGroup
		var first, second ports.DeadLetterMove
		var errs [2]error
		wg.Go(func() {
			first, errs[0] = f.admin.MoveDeadLetter(ctx, tenant, id, func(context.Context, ports.DeadLetter) (bool, error) {
				close(inFirst)
				<-release
				return true, nil
			})
		})
		<-inFirst
		secondCalled := false
		wg.Go(func() {
			second, errs[1] = f.admin.MoveDeadLetter(ctx, tenant, id, func(context.Context, ports.DeadLetter) (bool, error) {
				secondCalled = true
				return true, nil
			})
		})
		// The second waits for the first's advisory lock.
		deadline := time.Now().Add(10 * time.Second)
		for f.count(t, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the second move does not wait for the first")
			}
			time.Sleep(10 * time.Millisecond)
		}
		close(release)
		wg.Wait()
		if errs[0] != nil || errs[1] != nil || first != (ports.DeadLetterMove{Found: true, Removed: true}) ||
			second != (ports.DeadLetterMove{}) || secondCalled {
			t.Fatalf("first %+v second %+v (called %v), errors %v", first, second, secondCalled, errs)
		}
	})
}

func TestDeleteAndPurgeDeadLetters(t *testing.T) {
	t.Parallel()
	f := newMsgBrowseFixture(t)
	ctx := context.Background()
	// b1 dead-lettered by g (fixture) and h; b2 by g.
	f.msgDead(t, f.b1.pid, 1, "h", "b1", msgT0)
	keep := f.msgDead(t, f.b2.pid, 2, "g", "b2", msgT0)

	if n, err := f.admin.DeleteDeadLetters(ctx, msgOtherTenant, f.b1.pid, "b1"); err != nil || n != 0 {
		t.Fatalf("another tenant deleted %d (%v)", n, err)
	}
	if n, err := f.admin.DeleteDeadLetters(ctx, tenant, f.b1.pid, "b1"); err != nil || n != 2 {
		t.Fatalf("deleted %d (%v), want both groups' rows", n, err)
	}
	if n, err := f.admin.DeleteDeadLetters(ctx, tenant, f.b1.pid, "b1"); err != nil || n != 0 {
		t.Fatalf("deleted %d again (%v)", n, err)
	}
	if n := f.count(t, `SELECT count(*) FROM queen.dlq WHERE id = $1`, keep); n != 1 {
		t.Fatal("another message's dead letter went too")
	}

	// Purges run in batches: more rows than one batch holds.
	f.exec(t, `INSERT INTO queen.dlq (queue_id, partition_id, consumer_group, msg_offset, transaction_id, retry_count,
		created_at, frame_index, blob)
		SELECT lp.queue_id, lp.id, 'g', 0, 'm' || i, 0, now(), 0, '\x01'
		  FROM queen.log_partitions lp, generate_series(1, $2::int) i WHERE lp.id = $1`, f.a1.pid, dlqPurgeBatch+3)
	f.msgDead(t, f.x1.pid, 0, "g", "x0", msgT0)
	for _, tt := range []struct {
		tenant, queue, group string
		want                 int64
	}{
		{msgOtherTenant, "q", "", 0},
		{tenant, "q", "h", 0},
		{tenant, "q", "g", dlqPurgeBatch + 4},
		{tenant, "q", "", 0},
		{tenant, "r", "", 1},
	} {
		if n, err := f.admin.PurgeDeadLetters(ctx, tt.tenant, tt.queue, tt.group); err != nil || n != tt.want {
			t.Fatalf("purge %+v: %d (%v), want %d", tt, n, err, tt.want)
		}
	}
	if n := f.count(t, `SELECT count(*) FROM queen.dlq`); n != 0 {
		t.Fatalf("%d dead letters left", n)
	}
}

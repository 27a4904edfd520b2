package shard_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/core/shard"
	"github.com/queen-go/queen/ports"
)

const tenant = "tenant"

// clock is the time of every store of a world: each step of the seeding sets it, so
// the single store and the shards record the same instants.
type clock struct {
	mu sync.Mutex
	at time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	c.at = t
	c.mu.Unlock()
}

// world is the same data twice: in one memory store (what one database answers) and
// over three memory shards, each queue on the shard placed for it.
type world struct {
	t      *testing.T
	clock  *clock
	single *memory.Store
	shards []*memory.Store
	placer *shard.Placer
	// calls records each shard's admin calls since the seeding ended.
	mu    sync.Mutex
	calls [][]string
	fail  []error // fail[n], when set, fails shard n's admin calls
	// txns are each partition's transaction ids in offset order, by queue/partition.
	txns map[string][]string
}

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newWorld(t *testing.T, shards int) *world {
	t.Helper()
	w := &world{t: t, clock: &clock{at: epoch}, single: memory.NewStore(), calls: make([][]string, shards),
		fail: make([]error, shards), txns: map[string][]string{}}
	w.single.Now = w.clock.now
	for n := range shards {
		s := memory.NewStore()
		s.Shard, s.Now = n, w.clock.now
		s.AdminFault = func(op string) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.calls[n] = append(w.calls[n], op)
			return w.fail[n]
		}
		w.shards = append(w.shards, s)
	}
	w.placer = shard.NewPlacer(&memory.Placements{}, shards, nil)
	return w
}

// place puts queue on shard n.
func (w *world) place(queue string, n int) {
	w.t.Helper()
	if _, err := w.placer.PlaceExplicit(context.Background(), tenant, queue, "", n); err != nil {
		w.t.Fatalf("place %s on %d: %v", queue, n, err)
	}
}

// on is the shard store holding queue.
func (w *world) on(queue string) *memory.Store {
	w.t.Helper()
	n, ok := w.placer.Cached(tenant, queue)
	if !ok {
		w.t.Fatalf("queue %s was not placed", queue)
	}
	return w.shards[n]
}

// reset forgets the calls recorded so far and clears the failures.
func (w *world) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = make([][]string, len(w.shards))
	w.fail = make([]error, len(w.shards))
}

func (w *world) failShard(n int, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fail[n] = err
}

// called is how many admin calls each shard took.
func (w *world) called() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]int, len(w.calls))
	for n, c := range w.calls {
		out[n] = len(c)
	}
	return out
}

func hashOf(txn string) [16]byte {
	var h [16]byte
	copy(h[:], fmt.Sprintf("%-16.16s", txn))
	return h
}

// push commits one segment of txns at the instant at, in the single store and on the
// queue's shard, and returns the two partition ids (single, sharded).
func (w *world) push(at time.Time, queue, partition string, txns ...string) (string, string) {
	w.t.Helper()
	var hs []byte
	for _, x := range txns {
		h := hashOf(x)
		hs = append(hs, h[:]...)
	}
	seg := ports.Segment{Tenant: tenant, Queue: queue, Partition: partition, Count: len(txns), Hashes: hs,
		Verified: -1, Blob: fmt.Appendf(nil, "blob %s/%s %v", queue, partition, txns)}
	w.clock.set(at)
	w.txns[queue+"/"+partition] = append(w.txns[queue+"/"+partition], txns...)
	var ids []string
	for _, s := range []*memory.Store{w.single, w.on(queue)} {
		res, err := s.PushSegments(context.Background(), []ports.Segment{seg})
		if err != nil || len(res) != 1 || res[0].Status != ports.SegmentQueued {
			w.t.Fatalf("push %s/%s: %+v, %v", queue, partition, res, err)
		}
		ids = append(ids, res[0].PartitionID)
	}
	return ids[0], ids[1]
}

// take pops offsets start..end of queue/partition as group in both worlds, auto-acked
// or leased, and dead-letters them when dead is set.
func (w *world) take(queue, partition, group string, n int, auto, dead bool) {
	w.t.Helper()
	for _, s := range []*memory.Store{w.single, w.on(queue)} {
		r := ports.PopRequest{Tenant: tenant, Queue: queue, Partition: partition, Group: group, Batch: n,
			Partitions: 1, LeaseSeconds: 600, AutoAck: auto, SubscribeMode: ports.SubscribeAll}
		if !auto {
			r.LeaseID = uuid.NewString()
		}
		claims, _, err := s.Pop(context.Background(), r)
		if err != nil || len(claims) != 1 {
			w.t.Fatalf("pop %s/%s as %s: %+v, %v", queue, partition, group, claims, err)
		}
		if !dead {
			continue
		}
		c := claims[0]
		var items []ports.AckItem
		for off := c.Start; off <= c.End; off++ {
			txn := w.txns[queue+"/"+partition][off]
			items = append(items, ports.AckItem{PartitionID: c.PartitionID, Group: group, Hash: hashOf(txn),
				TransactionID: txn, Status: ports.AckDLQ, LeaseID: r.LeaseID, Error: "failed " + txn})
		}
		res, err := s.Ack(context.Background(), items)
		if err != nil || len(res) != len(items) || !res[0].DLQ {
			w.t.Fatalf("dead-letter %s/%s as %s: %+v, %v", queue, partition, group, res, err)
		}
	}
}

// seedMessages spreads six queues of two partitions over the shards, each segment
// committed at its own second (the browse order then depends on no id), with cursors of
// several groups and dead letters on every shard.
func seedMessages(w *world) {
	w.t.Helper()
	queues := []string{"a.x", "b.x", "c.y", "d.y", "e.x", "f.z"}
	for i, q := range queues {
		w.place(q, i%len(w.shards))
	}
	at := epoch
	for round := range 3 {
		for i, q := range queues {
			for _, p := range []string{"p0", "p1"} {
				// Interleaved: shards' segments alternate in commit order.
				at = at.Add(time.Second)
				if (round+i)%4 == 3 && p == "p1" {
					continue
				}
				w.push(at, q, p, fmt.Sprintf("%s-%s-%d-0", q, p, round), fmt.Sprintf("%s-%s-%d-1", q, p, round))
			}
		}
	}
	w.clock.set(at.Add(time.Minute))
	w.take("a.x", "p0", "g1", 2, true, false)
	w.take("a.x", "p0", "g2", 1, false, true)
	w.take("b.x", "p1", "g1", 3, false, true)
	w.take("c.y", "p0", ports.QueueModeGroup, 2, true, false)
	w.take("d.y", "p0", "g3", 1, false, false)
	w.take("f.z", "p1", "g2", 2, false, true)
	w.reset()
}

func (w *world) messages() *shard.Messages {
	stores := make([]ports.MessageStore, len(w.shards))
	for n, s := range w.shards {
		stores[n] = distinctIDs{s.Messages(), n}
	}
	return shard.NewMessages(stores, w.placer)
}

// distinctIDs makes a shard's dead-letter ids its own: the memory store counts ids from
// one in every store, where PostgreSQL's random ids never repeat across shards. Its ids
// start with the shard's digit instead of a zero; an id of another shard reaches the
// store changed to one it does not know.
type distinctIDs struct {
	ports.MessageStore
	n int
}

func (d distinctIDs) NewestDeadLetter(ctx context.Context, tenant, pid, txn string) (string, bool, error) {
	id, ok, err := d.MessageStore.NewestDeadLetter(ctx, tenant, pid, txn)
	if ok {
		id = fmt.Sprint(d.n) + id[1:]
	}
	return id, ok, err
}

func (d distinctIDs) MoveDeadLetter(ctx context.Context, tenant, id string, move func(context.Context, ports.DeadLetter) (bool, error)) (ports.DeadLetterMove, error) {
	switch {
	case id == "":
	case id[:1] == fmt.Sprint(d.n):
		id = "0" + id[1:]
	default:
		id = "f" + id[1:] // no memory store's
	}
	return d.MessageStore.MoveDeadLetter(ctx, tenant, id, move)
}

// pageView renders a browse page without partition ids (the single store mints others):
// each segment as queue/partition base..end @time, then the partitions with their
// cursors, then the dead letters.
func pageView(p ports.BrowsePage) []string {
	names := map[string]string{}
	var out []string
	for _, mp := range p.Partitions {
		names[mp.ID] = mp.Queue.Name + "/" + mp.Name
		out = append(out, fmt.Sprintf("partition %s first %d last %d cursors %v", names[mp.ID], mp.First, mp.LastOffset,
			cursorsView(mp.Cursors)))
	}
	for _, s := range p.Segments {
		out = append(out, fmt.Sprintf("segment %s %d..%d @%s", names[s.PartitionID], s.BaseOffset, s.EndOffset,
			s.CreatedAt.Format(time.TimeOnly)))
	}
	for _, d := range p.DeadLetters {
		out = append(out, fmt.Sprintf("dead %s %d", names[d.PartitionID], d.Offset))
	}
	return out
}

func cursorsView(cs []ports.GroupCursor) []string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s:%d/%d", c.Group, c.Committed, c.BatchEnd))
	}
	return out
}

// browseAll pages through a browse of limit rows at a time, as core/admin does, and
// returns every page's view.
func browseAll(t *testing.T, s ports.MessageStore, f ports.MessageFilter, limit int) [][]string {
	t.Helper()
	var pages [][]string
	var after *ports.BrowseKey
	for range 100 {
		p, err := s.BrowseSegments(context.Background(), tenant, f, after, limit)
		if err != nil {
			t.Fatalf("BrowseSegments(%+v, %v, %d): %v", f, after, limit, err)
		}
		pages = append(pages, pageView(p))
		if len(p.Segments) < limit {
			return pages
		}
		k := p.Segments[len(p.Segments)-1].Key()
		after = &k
	}
	t.Fatalf("browse of %+v by %d did not end", f, limit)
	return nil
}

func TestMessagesBrowseIsOneDatabase(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 3)
	seedMessages(w)
	sharded := w.messages()
	from := epoch.Add(-time.Hour)
	filters := []struct {
		name string
		f    ports.MessageFilter
	}{
		{"every queue", ports.MessageFilter{From: from}},
		{"a namespace", ports.MessageFilter{Namespace: "a", From: from}},
		{"a task over shards", ports.MessageFilter{Task: "x", From: from}},
		{"a partition name over shards", ports.MessageFilter{Partition: "p1", From: from}},
		{"a window", ports.MessageFilter{From: epoch.Add(10 * time.Second), To: epoch.Add(30 * time.Second)}},
		{"one queue", ports.MessageFilter{Queue: "c.y", From: from}},
	}
	for _, tt := range filters {
		for _, limit := range []int{1, 2, 5, 7, 100} {
			want := browseAll(t, w.single.Messages(), tt.f, limit)
			got := browseAll(t, sharded, tt.f, limit)
			if len(want) < 2 && limit < 5 {
				t.Fatalf("%s by %d: %d pages: the world is too small to page", tt.name, limit, len(want))
			}
			if !slices.EqualFunc(got, want, slices.Equal) {
				t.Errorf("%s by %d:\n got %q\nwant %q", tt.name, limit, got, want)
			}
		}
	}
}

func TestMessagesBrowseModes(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 3)
	seedMessages(w)
	sharded := w.messages()
	for _, tt := range []struct {
		name string
		f    ports.MessageFilter
		// under is how many named groups the largest shard's count misses: groups with
		// cursors on different shards only.
		under int
	}{
		{"every queue", ports.MessageFilter{}, 0},
		{"one queue", ports.MessageFilter{Queue: "c.y"}, 0},
		{"a namespace", ports.MessageFilter{Namespace: "a"}, 0},
		{"a task over shards", ports.MessageFilter{Task: "x"}, 0},
		{"queue mode on one shard, a group on another", ports.MessageFilter{Task: "y"}, 0},
		{"g1 on shard 1 only, g2 on shard 2 only", ports.MessageFilter{Partition: "p1"}, 1},
		{"none", ports.MessageFilter{Namespace: "nowhere"}, 0},
	} {
		want, err := w.single.Messages().BrowseModes(context.Background(), tenant, tt.f)
		if err != nil {
			t.Fatal(err)
		}
		want.NamedGroups -= tt.under
		got, err := sharded.BrowseModes(context.Background(), tenant, tt.f)
		if err != nil || got != want {
			t.Errorf("%s: %+v, %v; want %+v", tt.name, got, err, want)
		}
	}
}

func TestMessagesOneQueueOrPartitionReachesItsShard(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 3)
	seedMessages(w)
	sharded := w.messages()
	ctx := context.Background()
	_, pid := w.push(epoch.Add(time.Hour), "e.x", "p0", "late")
	w.reset()
	queue := w.placer.Owner(tenant, "e.x", "")
	if queue != 1 || shard.OfID(pid) != 1 {
		t.Fatalf("e.x is on shard %d, its partition id %s names %d; want 1", queue, pid, shard.OfID(pid))
	}
	calls := []struct {
		name string
		call func() error
	}{
		{"browse of a queue", func() error {
			_, err := sharded.BrowseSegments(ctx, tenant, ports.MessageFilter{Queue: "e.x"}, nil, 10)
			return err
		}},
		{"modes of a queue", func() error {
			_, err := sharded.BrowseModes(ctx, tenant, ports.MessageFilter{Queue: "e.x"})
			return err
		}},
		{"find", func() error {
			m, ok, err := sharded.FindMessage(ctx, tenant, pid, hashOf("late"))
			if err == nil && (!ok || m.Partition.Queue.Name != "e.x") {
				return fmt.Errorf("found %v: %+v", ok, m)
			}
			return err
		}},
		{"segment at", func() error {
			_, ok, err := sharded.SegmentAt(ctx, tenant, pid, 6)
			if err == nil && !ok {
				return errors.New("not found")
			}
			return err
		}},
		{"newest dead letter", func() error { _, _, err := sharded.NewestDeadLetter(ctx, tenant, pid, "late"); return err }},
		{"delete dead letters", func() error { _, err := sharded.DeleteDeadLetters(ctx, tenant, pid, "late"); return err }},
		{"purge", func() error { _, err := sharded.PurgeDeadLetters(ctx, tenant, "e.x", ""); return err }},
		{"blobs", func() error {
			b, err := sharded.SegmentBlobs(ctx, []ports.SegmentRef{{PartitionID: pid, BaseOffset: 6}})
			if err == nil && len(b) != 1 {
				return fmt.Errorf("%d blobs", len(b))
			}
			return err
		}},
	}
	for _, tt := range calls {
		w.reset()
		if err := tt.call(); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
		if got := w.called(); !slices.Equal(got, []int{0, 1, 0}) {
			t.Errorf("%s: calls per shard %v, want only shard 1's", tt.name, got)
		}
	}
	// An id naming a shard this broker does not have goes to shard 0, which does not
	// know it.
	w.reset()
	far := uuid.UUID{0, 9, 0, 0, 0, 0, 0x80, 0, 0x80}
	if _, ok, err := sharded.SegmentAt(ctx, tenant, far.String(), 0); ok || err != nil {
		t.Errorf("SegmentAt(%s): %v, %v; want not found", far, ok, err)
	}
	if got := w.called(); !slices.Equal(got, []int{1, 0, 0}) {
		t.Errorf("an id of shard 9: calls per shard %v, want shard 0's", got)
	}
}

func TestMessagesSegmentBlobsInInputOrder(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 3)
	seedMessages(w)
	sharded := w.messages()
	p, err := sharded.BrowseSegments(context.Background(), tenant, ports.MessageFilter{From: epoch}, nil, 100)
	if err != nil || len(p.Segments) < 10 {
		t.Fatalf("browse: %d segments, %v", len(p.Segments), err)
	}
	var refs []ports.SegmentRef
	for _, s := range p.Segments {
		refs = append(refs, ports.SegmentRef{PartitionID: s.PartitionID, BaseOffset: s.BaseOffset})
	}
	// A ref of no segment is left out; a repeated one comes back twice.
	refs = slices.Insert(refs, 3, ports.SegmentRef{PartitionID: refs[0].PartitionID, BaseOffset: 99}, refs[1])
	got, err := sharded.SegmentBlobs(context.Background(), refs)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Delete(slices.Clone(refs), 3, 4)
	if len(got) != len(want) {
		t.Fatalf("%d blobs for %d refs", len(got), len(want))
	}
	for i, b := range got {
		if b.PartitionID != want[i].PartitionID || b.BaseOffset != want[i].BaseOffset || len(b.Blob) == 0 {
			t.Errorf("blob %d: %s@%d, want %s@%d", i, b.PartitionID, b.BaseOffset, want[i].PartitionID, want[i].BaseOffset)
		}
	}
	if got := w.called(); !slices.Equal(got, []int{2, 2, 2}) { // a browse and a blob read each
		t.Errorf("calls per shard %v", got)
	}
}

func TestMessagesMoveDeadLetterFindsItsShard(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 3)
	seedMessages(w)
	sharded := w.messages()
	ctx := context.Background()
	// f.z is on shard 2; its dead letter's id names no shard.
	pid, txn := "", ""
	{
		p, err := sharded.BrowseSegments(ctx, tenant, ports.MessageFilter{Queue: "f.z", Partition: "p1", From: epoch}, nil, 10)
		if err != nil || len(p.DeadLetters) == 0 {
			t.Fatalf("f.z/p1: %+v, %v", p, err)
		}
		pid = p.DeadLetters[0].PartitionID
		txn = w.txns["f.z/p1"][p.DeadLetters[0].Offset]
	}
	id, ok, err := sharded.NewestDeadLetter(ctx, tenant, pid, txn)
	if err != nil || !ok {
		t.Fatalf("NewestDeadLetter(%s, %s): %v, %v", pid, txn, ok, err)
	}
	var moved []string
	keep := func(_ context.Context, d ports.DeadLetter) (bool, error) {
		moved = append(moved, d.Queue+"/"+d.TransactionID)
		return false, nil
	}
	tests := []struct {
		name  string
		fail  int // the shard failing, -1 none
		want  ports.DeadLetterMove
		err   int // the shard of the *UnreachableError wanted, -1 none
		moves int
	}{
		{"found on shard 2", -1, ports.DeadLetterMove{Found: true}, -1, 1},
		{"another shard failing does not matter once found", 1, ports.DeadLetterMove{Found: true}, -1, 1},
		{"the holding shard failing", 2, ports.DeadLetterMove{}, 2, 0},
	}
	for _, tt := range tests {
		w.reset()
		if tt.fail >= 0 {
			w.failShard(tt.fail, errors.New("down"))
		}
		moved = nil
		got, err := sharded.MoveDeadLetter(ctx, tenant, id, keep)
		var ue *shard.UnreachableError
		if got != tt.want || len(moved) != tt.moves || (tt.err < 0) != (err == nil) ||
			(tt.err >= 0 && (!errors.As(err, &ue) || ue.Shard != tt.err)) {
			t.Errorf("%s: %+v, %v, moved %v", tt.name, got, err, moved)
		}
	}
	w.reset()
	if got, err := sharded.MoveDeadLetter(ctx, tenant, uuid.NewString(), keep); got.Found || err != nil {
		t.Errorf("an unknown id: %+v, %v", got, err)
	}
	if got := w.called(); !slices.Equal(got, []int{1, 1, 1}) {
		t.Errorf("an unknown id: calls per shard %v, want every shard's", got)
	}
	remove := func(context.Context, ports.DeadLetter) (bool, error) { return true, nil }
	if got, err := sharded.MoveDeadLetter(ctx, tenant, id, remove); !got.Removed || err != nil {
		t.Errorf("remove: %+v, %v", got, err)
	}
}

func TestMessagesFailingShardIsUnreachable(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 3)
	seedMessages(w)
	sharded := w.messages()
	ctx := context.Background()
	down := errors.New("connection refused")
	w.failShard(1, down)
	var refs []ports.SegmentRef
	for _, id := range []string{"00010000-0000-8000-8000-000000000001", uuid.NewString()} {
		refs = append(refs, ports.SegmentRef{PartitionID: id})
	}
	for name, call := range map[string]func() error{
		"browse": func() error {
			_, err := sharded.BrowseSegments(ctx, tenant, ports.MessageFilter{From: epoch}, nil, 10)
			return err
		},
		"modes": func() error { _, err := sharded.BrowseModes(ctx, tenant, ports.MessageFilter{}); return err },
		"blobs": func() error { _, err := sharded.SegmentBlobs(ctx, refs); return err },
	} {
		err := call()
		var ue *shard.UnreachableError
		if !errors.As(err, &ue) || ue.Shard != 1 || !errors.Is(err, down) {
			t.Errorf("%s: %v, want shard 1 unreachable", name, err)
		}
	}
}

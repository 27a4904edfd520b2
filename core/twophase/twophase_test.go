package twophase

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/core/dedup"
	"github.com/queen-go/queen/ports"
)

// segment is a one-frame segment of txn to queue/partition.
func segment(queue, txn string) ports.Segment {
	h := dedup.Hash(txn)
	return ports.Segment{Tenant: "t", Queue: queue, Partition: "p", Count: 1, Hashes: h[:], Verified: -1, Blob: []byte(txn)}
}

// stored reports whether txn is stored in queue: a push of it again is a duplicate.
// The probe stores it when it was not.
func stored(t *testing.T, s *memory.Store, queue, txn string) bool {
	t.Helper()
	res, err := s.PushSegments(context.Background(), []ports.Segment{segment(queue, txn)})
	if err != nil {
		t.Fatal(err)
	}
	return res[0].Status == ports.SegmentDuplicate
}

// flaky is a part's store whose CommitPrepared fails while failing is set.
type flaky struct {
	*memory.Store
	failing atomic.Bool
}

func (f *flaky) CommitPrepared(ctx context.Context, gid string) error {
	if f.failing.Load() {
		return ports.ErrUnavailable
	}
	return f.Store.CommitPrepared(ctx, gid)
}

// log is a decision log that can fail, or answer abort as if the recovery came first.
type log struct {
	memory.Decisions
	down, abortFirst atomic.Bool
}

func (l *log) Decide(ctx context.Context, gid string, commit bool) (bool, error) {
	if err := ctx.Err(); err != nil { // as a database call would
		return false, err
	}
	if l.down.Load() {
		return false, ports.ErrUnavailable
	}
	if l.abortFirst.Load() {
		_, _ = l.Decisions.Decide(ctx, gid, false)
	}
	return l.Decisions.Decide(ctx, gid, commit)
}

func inDoubt(t *testing.T, s ports.TwoPhaseStore) []string {
	t.Helper()
	gids, err := s.InDoubt(context.Background(), Prefix, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return gids
}

func TestRun(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		arrange   func(l *log, b *flaky)
		wantErr   error // nil: committed
		committed bool  // both parts' pushes landed (now or after the recovery)
		left      int   // parts left in doubt for the recovery
	}{
		{name: "both shards commit", committed: true},
		{name: "the recovery aborted first", arrange: func(l *log, _ *flaky) { l.abortFirst.Store(true) }, wantErr: ErrAborted},
		{name: "the decision log is down", arrange: func(l *log, _ *flaky) { l.down.Store(true) }, wantErr: ErrUndecided, left: 2},
		{name: "a commit after the decision fails", arrange: func(_ *log, b *flaky) { b.failing.Store(true) }, committed: true, left: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			a, b, l := memory.NewStore(), &flaky{Store: memory.NewStore()}, &log{}
			if c.arrange != nil {
				c.arrange(l, b)
			}
			res, err := NewCoordinator(l, Options{}).Run(context.Background(), []Part{
				{Shard: 0, Store: a, Segs: []ports.Segment{segment("qa", "x1")}},
				{Shard: 1, Store: b, Segs: []ports.Segment{segment("qb", "x2")}},
			})
			if !errors.Is(err, c.wantErr) || (err == nil) != (c.wantErr == nil) {
				t.Fatalf("Run: %v, want %v", err, c.wantErr)
			}
			if err == nil && (len(res) != 2 || res[0].Pushed[0].Status != ports.SegmentQueued || res[1].Pushed[0].Status != ports.SegmentQueued) {
				t.Fatalf("results %+v", res)
			}
			if got := len(inDoubt(t, a)) + len(inDoubt(t, b)); got != c.left {
				t.Fatalf("%d parts in doubt, want %d", got, c.left)
			}
			// The recovery resolves what is left as the decision log says.
			l.down.Store(false)
			b.failing.Store(false)
			rec := NewRecovery([]ports.TwoPhaseStore{a, b}, l, RecoveryOptions{Grace: time.Nanosecond})
			if _, err := rec.Pass(context.Background()); err != nil {
				t.Fatal(err)
			}
			if len(inDoubt(t, a))+len(inDoubt(t, b)) != 0 {
				t.Fatal("parts still in doubt after the recovery's pass")
			}
			sa, sb := stored(t, a, "qa", "x1"), stored(t, b.Store, "qb", "x2") // each probe stores what is missing
			if c.committed && !(sa && sb) || !c.committed && (sa || sb) {
				t.Fatalf("landed on shard 0: %v, on shard 1: %v; want both %v", sa, sb, c.committed)
			}
		})
	}
}

// A part the client's input makes roll back (a duplicate) fails the whole transaction
// with that rollback, and the other part prepared meanwhile is rolled back.
func TestRunRefusedPart(t *testing.T) {
	t.Parallel()
	a, b := memory.NewStore(), memory.NewStore()
	if _, err := b.PushSegments(context.Background(), []ports.Segment{segment("qb", "dup")}); err != nil {
		t.Fatal(err)
	}
	_, err := NewCoordinator(&log{}, Options{}).Run(context.Background(), []Part{
		{Shard: 0, Store: a, Segs: []ports.Segment{segment("qa", "x1")}},
		{Shard: 1, Store: b, Segs: []ports.Segment{segment("qb", "dup")}},
	})
	var rb *ports.RollbackError
	if !errors.As(err, &rb) || rb.Reason != "duplicate" {
		t.Fatalf("Run: %v, want the duplicate's rollback", err)
	}
	if len(inDoubt(t, a)) != 0 || stored(t, a, "qa", "x1") {
		t.Fatal("the prepared part of shard 0 was not rolled back")
	}
}

// The recovery leaves young prepared transactions to their coordinator, resolves old
// ones exactly once, and expires decisions only after a clean pass.
func TestRecoveryGraceAndExpiry(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	a := memory.NewStore()
	a.Now = clock
	l := &log{}
	l.Now = clock
	ctx := context.Background()
	if _, _, err := a.Prepare(ctx, PartGID(Prefix+"g1", 0), []ports.Segment{segment("q", "m1")}, nil, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Decide(ctx, Prefix+"g1", true); err != nil { // the coordinator decided, then died
		t.Fatal(err)
	}
	rec := NewRecovery([]ports.TwoPhaseStore{a}, l, RecoveryOptions{Grace: 30 * time.Second, Keep: time.Hour, Now: clock})
	if res, err := rec.Pass(ctx); err != nil || res != (Resolved{}) {
		t.Fatalf("pass within the grace: %+v, %v; want nothing done", res, err)
	}
	now = now.Add(time.Minute)
	if res, err := rec.Pass(ctx); err != nil || res.Committed != 1 {
		t.Fatalf("pass after the grace: %+v, %v; want one commit", res, err)
	}
	if !stored(t, a, "q", "m1") {
		t.Fatal("the decided commit did not land")
	}
	if res, err := rec.Pass(ctx); err != nil || res.Committed+res.RolledBack != 0 {
		t.Fatalf("a second pass: %+v, %v; want nothing left to resolve", res, err)
	}
	now = now.Add(2 * time.Hour)
	if res, err := rec.Pass(ctx); err != nil || res.Expired != 1 {
		t.Fatalf("a pass two hours later: %+v, %v; want the decision expired", res, err)
	}
}

func TestRecoveryKeepsDecisionsWhenAShardFails(t *testing.T) {
	t.Parallel()
	now := time.Now()
	l := &log{}
	l.Now = func() time.Time { return now.Add(-2 * time.Hour) }
	if _, err := l.Decide(context.Background(), Prefix+"old", true); err != nil {
		t.Fatal(err)
	}
	rec := NewRecovery([]ports.TwoPhaseStore{memory.NewStore(), down{}}, l, RecoveryOptions{})
	if res, err := rec.Pass(context.Background()); err == nil || res.Expired != 0 {
		t.Fatalf("pass with a shard down: %+v, %v; want an error and nothing expired", res, err)
	}
}

// down is a shard that does not answer.
type down struct{ ports.TwoPhaseStore }

func (down) InDoubt(context.Context, string, time.Time) ([]string, error) {
	return nil, ports.ErrUnavailable
}

func TestRecoveryStartStop(t *testing.T) {
	t.Parallel()
	a := memory.NewStore()
	if _, _, err := a.Prepare(context.Background(), PartGID(Prefix+"g", 0), []ports.Segment{segment("q", "m")}, nil, ""); err != nil {
		t.Fatal(err)
	}
	rec := NewRecovery([]ports.TwoPhaseStore{a}, &log{}, RecoveryOptions{Every: time.Millisecond, Grace: time.Nanosecond})
	rec.Start(context.Background())
	defer rec.Stop()
	deadline := time.Now().Add(10 * time.Second)
	for len(inDoubt(t, a)) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the running recovery resolved nothing within 10 s")
		}
		time.Sleep(time.Millisecond)
	}
	if stored(t, a, "q", "m") {
		t.Fatal("a transaction without a decision was committed")
	}
}

// hangUp is a part's store whose Prepare ends the request's context once it prepared:
// the client went away between PREPARE and the decision.
type hangUp struct {
	*memory.Store
	cancel context.CancelFunc
}

func (h hangUp) Prepare(ctx context.Context, gid string, segs []ports.Segment, acks []ports.AckItem, hint string) ([]ports.SegmentResult, []ports.AckResult, error) {
	p, a, err := h.Store.Prepare(ctx, gid, segs, acks, hint)
	h.cancel()
	return p, a, err
}

// The decision and the commits do not depend on the client staying: a transaction whose
// client hung up after the parts prepared still commits at once, instead of holding its
// rows locked until the recovery's grace runs out.
func TestRunOutlivesItsClient(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	a, b := memory.NewStore(), hangUp{Store: memory.NewStore(), cancel: cancel}
	_, err := NewCoordinator(&log{}, Options{}).Run(ctx, []Part{
		{Shard: 0, Store: a, Segs: []ports.Segment{segment("qa", "x1")}},
		{Shard: 1, Store: b, Segs: []ports.Segment{segment("qb", "x2")}},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(inDoubt(t, a))+len(inDoubt(t, b)) != 0 {
		t.Fatal("parts left in doubt after the client hung up")
	}
	if !stored(t, a, "qa", "x1") || !stored(t, b.Store, "qb", "x2") {
		t.Fatal("the transaction did not land")
	}
}

package porttest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

// TwoPhaseStore runs the conformance suite of ports.TwoPhaseStore; newFixture must
// return an isolated store whose TwoPhase, Transactions, Segments and Consume share one
// state. Prepared transactions hold row locks in PostgreSQL, so no case reads what a
// prepared transaction touches before resolving it.
func TwoPhaseStore(t *testing.T, newFixture func(t *testing.T) ConsumeFixture) {
	tests := []struct {
		name string
		run  func(k kit)
	}{
		{"prepared, then committed: the effects land", testPreparedCommit},
		{"prepared, then rolled back: nothing landed", testPreparedRollback},
		{"a rollback the client caused prepares nothing", testPrepareRefused},
		{"in doubt by prefix and age", testInDoubt},
		{"resolving twice, or an unknown gid, is a no-op", testResolveTwice},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(newKit(t, newFixture(t)))
		})
	}
}

// gid is a gid of this test only (stores of parallel tests may share one server).
func (k kit) gid(name string) string {
	return fmt.Sprintf("porttest:%s:%d", name, time.Now().UnixNano())
}

func (k kit) prepare(gid string, segs []ports.Segment, acks []ports.AckItem, hint string) ([]ports.SegmentResult, []ports.AckResult) {
	k.t.Helper()
	pushed, acked, err := k.f.TwoPhase.Prepare(context.Background(), gid, segs, acks, hint)
	// A case that fails must not leave a prepared transaction on a shared server (it
	// holds a slot and keeps its database from being dropped); resolved already: a no-op.
	k.t.Cleanup(func() { _ = k.f.TwoPhase.RollbackPrepared(context.Background(), gid) })
	if err != nil || len(pushed) != len(segs) || len(acked) != len(acks) {
		k.t.Fatalf("Prepare: %d segment and %d ack results for %d and %d, %v", len(pushed), len(acked), len(segs), len(acks), err)
	}
	for i, r := range pushed { // what pops will find once it is committed
		if r.Status == ports.SegmentQueued {
			k.pushed.Store(fmt.Sprint(r.PartitionID, "/", r.BaseOffset), string(segs[i].Blob))
		}
	}
	return pushed, acked
}

func (k kit) inDoubt(prefix string, before time.Time) []string {
	k.t.Helper()
	gids, err := k.f.TwoPhase.InDoubt(context.Background(), prefix, before)
	if err != nil {
		k.t.Fatalf("InDoubt: %v", err)
	}
	return gids
}

func testPreparedCommit(k kit) {
	c, r := k.leased("in", 1)
	gid := k.gid("commit")
	pushed, acked := k.prepare(gid, []ports.Segment{seg("out", "p", "o1", "o2")}, []ports.AckItem{of(c, r, "m0", ports.AckCompleted)}, r.LeaseID)
	wantQueued(k.t, pushed[0], 0)
	wantResults(k.t, acked, ok("in", "p", true))
	if got := k.inDoubt(gid, time.Now().Add(time.Minute)); !slices.Equal(got, []string{gid}) {
		k.t.Fatalf("InDoubt = %v, want the prepared %s", got, gid)
	}
	if err := k.f.TwoPhase.CommitPrepared(context.Background(), gid); err != nil {
		k.t.Fatalf("CommitPrepared: %v", err)
	}
	if got := k.inDoubt(gid, time.Now().Add(time.Minute)); len(got) != 0 {
		k.t.Fatalf("InDoubt after the commit = %v", got)
	}
	k.popNone(req("in"))
	wantSpan(k.t, k.popOne(req("out", pinned("p"))), 0, 1, 1)
}

func testPreparedRollback(k kit) {
	c, r := k.leased("in", 1)
	gid := k.gid("rollback")
	k.prepare(gid, []ports.Segment{seg("out", "p", "o1")}, []ports.AckItem{of(c, r, "m0", ports.AckCompleted)}, r.LeaseID)
	if err := k.f.TwoPhase.RollbackPrepared(context.Background(), gid); err != nil {
		k.t.Fatalf("RollbackPrepared: %v", err)
	}
	// Nothing landed: the transaction id is free and the lease still holds the span.
	pushed, acked := k.txn([]ports.Segment{seg("out", "p", "o1")}, []ports.AckItem{of(c, r, "m0", ports.AckCompleted)}, r.LeaseID)
	wantQueued(k.t, pushed[0], 0)
	wantResults(k.t, acked, ok("in", "p", true))
}

func testPrepareRefused(k kit) {
	k.push("out", "p", "o1")
	gid := k.gid("refused")
	pushed, acked, err := k.f.TwoPhase.Prepare(context.Background(), gid, []ports.Segment{seg("out", "p", "o1")}, nil, "")
	var rb *ports.RollbackError
	if !errors.As(err, &rb) || rb.Reason != "duplicate" || pushed != nil || acked != nil {
		k.t.Fatalf("Prepare of a duplicate: %+v, %+v, %v; want a rollback (duplicate)", pushed, acked, err)
	}
	if got := k.inDoubt(gid, time.Now().Add(time.Minute)); len(got) != 0 {
		k.t.Fatalf("InDoubt after a refused prepare = %v", got)
	}
}

func testInDoubt(k kit) {
	mine, other := k.gid("doubt"), k.gid("other")
	k.prepare(mine, []ports.Segment{seg("a", "p", "a1")}, nil, "")
	k.prepare(other, []ports.Segment{seg("b", "p", "b1")}, nil, "")
	if got := k.inDoubt(mine, time.Now().Add(time.Minute)); !slices.Equal(got, []string{mine}) {
		k.t.Fatalf("InDoubt(%q) = %v, want only it", mine, got)
	}
	if got := k.inDoubt(mine, time.Now().Add(-time.Minute)); len(got) != 0 {
		k.t.Fatalf("InDoubt before it was prepared = %v", got)
	}
}

func testResolveTwice(k kit) {
	gid := k.gid("twice")
	k.prepare(gid, []ports.Segment{seg("out", "p", "o1")}, nil, "")
	for range 2 {
		if err := k.f.TwoPhase.CommitPrepared(context.Background(), gid); err != nil {
			k.t.Fatalf("CommitPrepared: %v", err)
		}
	}
	if err := k.f.TwoPhase.RollbackPrepared(context.Background(), gid); err != nil {
		k.t.Fatalf("RollbackPrepared of a committed gid: %v", err)
	}
	wantSpan(k.t, k.popOne(req("out", pinned("p"))), 0, 0, 1)
}

// DecisionLog runs the conformance suite of ports.DecisionLog; newLog must return an
// empty log.
func DecisionLog(t *testing.T, newLog func(t *testing.T) ports.DecisionLog) {
	t.Run("the first outcome written wins", func(t *testing.T) {
		t.Parallel()
		l := newLog(t)
		ctx := context.Background()
		for _, c := range []struct {
			gid           string
			commit, first bool
		}{{"g1", true, true}, {"g1", false, true}, {"g2", false, false}, {"g2", true, false}} {
			got, err := l.Decide(ctx, c.gid, c.commit)
			if err != nil || got != c.first {
				t.Fatalf("Decide(%s, %v) = %v, %v; want %v", c.gid, c.commit, got, err, c.first)
			}
		}
	})
	t.Run("expire forgets the old outcomes only", func(t *testing.T) {
		t.Parallel()
		l := newLog(t)
		ctx := context.Background()
		if _, err := l.Decide(ctx, "old", true); err != nil {
			t.Fatal(err)
		}
		if n, err := l.Expire(ctx, time.Now().Add(-time.Hour)); err != nil || n != 0 {
			t.Fatalf("Expire an hour back = %d, %v; want 0", n, err)
		}
		if n, err := l.Expire(ctx, time.Now().Add(time.Minute)); err != nil || n != 1 {
			t.Fatalf("Expire = %d, %v; want 1", n, err)
		}
		// Forgotten: a new outcome may be written.
		if got, err := l.Decide(ctx, "old", false); err != nil || got {
			t.Fatalf("Decide after Expire = %v, %v; want false", got, err)
		}
	})
}

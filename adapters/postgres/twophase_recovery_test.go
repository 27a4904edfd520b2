package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/queen-go/queen/core/dedup"
	"github.com/queen-go/queen/core/twophase"
	"github.com/queen-go/queen/ports"
)

// crashing is a shard whose broker dies once the parts are prepared: its commits never
// run (the coordinator's process is gone; the prepared transactions stay on the server).
type crashing struct{ *Store }

func (crashing) CommitPrepared(context.Context, string) error   { return ports.ErrUnavailable }
func (crashing) RollbackPrepared(context.Context, string) error { return ports.ErrUnavailable }

// failingLog is a decision log that fails: the broker died before recording anything.
type failingLog struct{ ports.DecisionLog }

func (failingLog) Decide(context.Context, string, bool) (bool, error) {
	return false, ports.ErrUnavailable
}

// The crash between PREPARE and COMMIT PREPARED on real PostgreSQL: a broker that
// recorded commit and died leaves both shards' parts prepared; another broker's
// recovery (new pools: the first broker's are gone) commits both, exactly once. One that
// died before recording anything has its parts rolled back, and the transaction ids are
// free again.
func TestTwoPhaseRecoveryAfterACrash(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		decided bool
	}{{"decided commit, then crashed", true}, {"crashed before the decision", false}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			catalogue, shard1 := newStore(t, Options{PoolSize: 4}), newStore(t, Options{PoolSize: 4})
			needPrepared(t, catalogue)
			var log ports.DecisionLog = catalogue
			if !c.decided {
				log = failingLog{}
			}
			seg := func(queue, txn string) ports.Segment {
				h := dedup.Hash(txn)
				return ports.Segment{Tenant: ports.DefaultTenant, Queue: queue, Partition: "p", Count: 1, Hashes: h[:],
					Verified: -1, Blob: []byte(txn)}
			}
			_, err := twophase.NewCoordinator(log, twophase.Options{Cleanup: time.Second}).Run(ctx, []twophase.Part{
				{Shard: 0, Store: crashing{catalogue}, Segs: []ports.Segment{seg("a", "t1")}},
				{Shard: 1, Store: crashing{shard1}, Segs: []ports.Segment{seg("b", "t2")}},
			})
			if (err == nil) != c.decided {
				t.Fatalf("Run: %v", err)
			}

			// Another broker: its own pools on the same databases.
			later0, later1 := reopen(t, catalogue), reopen(t, shard1)
			rec := twophase.NewRecovery([]ports.TwoPhaseStore{later0, later1}, later0, twophase.RecoveryOptions{Grace: time.Nanosecond})
			res, err := rec.Pass(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := twophase.Resolved{Committed: 2}
			if !c.decided {
				want = twophase.Resolved{RolledBack: 2}
			}
			if res.Committed != want.Committed || res.RolledBack != want.RolledBack {
				t.Fatalf("recovery: %+v, want %+v", res, want)
			}
			if res, err := rec.Pass(ctx); err != nil || res.Committed+res.RolledBack != 0 {
				t.Fatalf("a second pass: %+v, %v; want nothing left", res, err)
			}
			for i, s := range []*Store{later0, later1} {
				queue, txn := map[int]string{0: "a", 1: "b"}[i], map[int]string{0: "t1", 1: "t2"}[i]
				got, err := s.PushSegments(ctx, []ports.Segment{seg(queue, txn)})
				if err != nil {
					t.Fatal(err)
				}
				if stored := got[0].Status == ports.SegmentDuplicate; stored != c.decided {
					t.Fatalf("shard %d holds %s: %v, want %v", i, txn, stored, c.decided)
				}
			}
		})
	}
}

// reopen is a second Store on s's database.
func reopen(t *testing.T, s *Store) *Store {
	t.Helper()
	o, err := Open(context.Background(), s.pool.Config().ConnString(), Options{PoolSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	return o
}

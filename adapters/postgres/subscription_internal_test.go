package postgres

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/ports"
)

// subPop is one pop of group g on queue/partition with subscription mode new.
func subPop(t *testing.T, s *Store, queue, lease string) []ports.Claim {
	t.Helper()
	claims, err := subPopErr(s, queue, lease)
	if err != nil {
		t.Fatal(err)
	}
	return claims
}

func subPopErr(s *Store, queue, lease string) ([]ports.Claim, error) {
	claims, _, err := s.Pop(context.Background(), ports.PopRequest{Tenant: ports.DefaultTenant, Queue: queue,
		Partition: "p", Group: "g", Batch: 10, Partitions: 1, LeaseID: lease, SubscribeMode: ports.SubscribeNew})
	return claims, err
}

// recordSubscription does what a pop's first contact does in log_group_from_v2, in tx
// and without committing: it takes the group's advisory lock and records a subscription
// of mode new at this instant.
func recordSubscription(t *testing.T, tx pgx.Tx, queue string) {
	t.Helper()
	ctx := context.Background()
	if _, err := tx.Exec(ctx, `
SELECT pg_advisory_xact_lock(hashtextextended('queen.group:' || q.id::text || ':g', 0))
  FROM queen.queues q WHERE q.name = $1`, queue); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `
INSERT INTO queen.consumer_groups (queue_id, name, subscription_mode, subscribed_from)
SELECT q.id, 'g', 'new', clock_timestamp() FROM queen.queues q WHERE q.name = $1`, queue); err != nil {
		t.Fatal(err)
	}
}

// TestSubscriptionNewAtFirstContact: a group subscribed with mode new reads every message
// stored after the instant its subscription records, also when a second pop makes first
// contact while the first is still recording it. The second pop waits for the record
// (an instant of its own would be later than the recorded one, and a cursor seeded from
// it would skip for good what was stored in between) and seeds from the recorded
// instant; when the record rolls back, it seeds nothing and the next pop records one.
func TestSubscriptionNewAtFirstContact(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		queue  string
		commit bool // the recording transaction commits (true) or rolls back (false)
		// racing is the offsets the pop racing the record claims, next the ones of the
		// pop after it.
		racing, next []int64
	}{
		// "before" was stored before the recorded instant, "after" after it.
		{name: "the racing pop starts from the recorded instant", queue: "subnew-commit", commit: true,
			racing: []int64{1}},
		// Nothing was recorded: the next pop is the first contact, and starts after both.
		{name: "a record rolled back leaves the next pop to make first contact", queue: "subnew-rollback"},
	}
	s := newStore(t, Options{PoolSize: 4})
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.PushSegments(ctx, []ports.Segment{oneFrame(tc.queue, "p", "before")}); err != nil {
				t.Fatal(err)
			}
			tx, err := s.pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			recordSubscription(t, tx, tc.queue)
			if _, err := s.PushSegments(ctx, []ports.Segment{oneFrame(tc.queue, "p", "after")}); err != nil {
				t.Fatal(err)
			}
			type answer struct {
				claims []ports.Claim
				err    error
			}
			racing := make(chan answer, 1)
			go func() {
				claims, err := subPopErr(s, tc.queue, "0191d7a2-0000-7000-8000-000000000011")
				racing <- answer{claims, err}
			}()
			waitForLockWaiter(t, s, "advisory", "pop")
			if tc.commit {
				err = tx.Commit(ctx)
			} else {
				err = tx.Rollback(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			a := <-racing
			if a.err != nil {
				t.Fatal(a.err)
			}
			if got := claimedOffsets(a.claims); !slices.Equal(got, tc.racing) {
				t.Fatalf("the pop racing the record claimed offsets %v, want %v", got, tc.racing)
			}
			if got := claimedOffsets(subPop(t, s, tc.queue, "0191d7a2-0000-7000-8000-000000000012")); !slices.Equal(got, tc.next) {
				t.Fatalf("the pop after it claimed offsets %v, want %v", got, tc.next)
			}
		})
	}
}

// claimedOffsets lists the offsets of claims.
func claimedOffsets(claims []ports.Claim) []int64 {
	var out []int64
	for _, c := range claims {
		for o := c.Start; o <= c.End; o++ {
			out = append(out, o)
		}
	}
	return out
}

// TestSubscriptionNewTakesConcurrentCommits: a push that took its partition lock before
// the group's first contact but commits after the group's cursor on the partition was
// seeded is delivered too. The cursor is seeded from what is committed, and a push's
// offsets are allocated under the partition lock, so what commits later lies above it:
// mode new can deliver a message stored just before the subscription, never skip one
// stored after it.
func TestSubscriptionNewTakesConcurrentCommits(t *testing.T) {
	t.Parallel()
	s := newStore(t, Options{PoolSize: 4})
	ctx := context.Background()
	const queue = "subnew-concurrent"
	if _, err := s.PushSegments(ctx, []ports.Segment{oneFrame(queue, "p", "committed")}); err != nil {
		t.Fatal(err)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := pushBundle(ctx, tx, []ports.Segment{oneFrame(queue, "p", "open")}); err != nil {
		t.Fatal(err)
	}
	if got := subPop(t, s, queue, "0191d7a2-0000-7000-8000-000000000021"); len(got) != 0 {
		t.Fatalf("first contact claimed %+v, want nothing: offset 0 was committed before it", got)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got := subPop(t, s, queue, "0191d7a2-0000-7000-8000-000000000022")
	if len(got) != 1 || got[0].Start != 1 || got[0].End != 1 {
		t.Fatalf("claims %+v, want offset 1 (the push that was open at first contact)", got)
	}
}

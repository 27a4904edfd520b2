package postgres

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/ports"
)

// subPop is one pop of group g on queue/partition with subscription mode new.
func subPop(t *testing.T, s *Store, queue, lease string) []ports.Claim {
	t.Helper()
	claims, _, err := s.Pop(context.Background(), ports.PopRequest{Tenant: ports.DefaultTenant, Queue: queue,
		Partition: "p", Group: "g", Batch: 10, Partitions: 1, LeaseID: lease, SubscribeMode: ports.SubscribeNew})
	if err != nil {
		t.Fatal(err)
	}
	return claims
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
// contact while the first is still recording it. The second pop seeds no cursor then
// (it could only seed one from an instant of its own, later than the recorded one, and
// skip for good what was stored in between); the next pop after the record commits
// seeds from the recorded instant.
func TestSubscriptionNewAtFirstContact(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// commit: the recording transaction commits (true) or rolls back (false).
		commit bool
		// want is the offsets the pop after the record ended claims.
		want []int64
	}{
		// "before" was stored before the recorded instant, "after" after it.
		{name: "the recorded instant is the one every cursor starts from", commit: true, want: []int64{1}},
		// Nothing was recorded: that pop is the first contact, and starts after both.
		{name: "a record rolled back leaves the next pop to make first contact", commit: false, want: nil},
	}
	s := newStore(t, Options{PoolSize: 4})
	ctx := context.Background()
	for i, tc := range cases {
		queue := []string{"subnew-commit", "subnew-rollback"}[i]
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.PushSegments(ctx, []ports.Segment{oneFrame(queue, "p", "before")}); err != nil {
				t.Fatal(err)
			}
			tx, err := s.pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			recordSubscription(t, tx, queue)
			if _, err := s.PushSegments(ctx, []ports.Segment{oneFrame(queue, "p", "after")}); err != nil {
				t.Fatal(err)
			}
			if got := subPop(t, s, queue, "0191d7a2-0000-7000-8000-000000000011"); len(got) != 0 {
				t.Fatalf("a pop racing the subscription's record claimed %+v, want nothing (busy)", got)
			}
			if tc.commit {
				err = tx.Commit(ctx)
			} else {
				err = tx.Rollback(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			got := subPop(t, s, queue, "0191d7a2-0000-7000-8000-000000000012")
			var offsets []int64
			for _, c := range got {
				for o := c.Start; o <= c.End; o++ {
					offsets = append(offsets, o)
				}
			}
			if len(offsets) != len(tc.want) || (len(offsets) > 0 && offsets[0] != tc.want[0]) {
				t.Fatalf("after the record ended the pop claimed offsets %v, want %v", offsets, tc.want)
			}
		})
	}
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

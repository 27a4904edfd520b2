package ports

import (
	"context"
	"time"
)

// TwoPhaseStore is one shard's side of a transaction that spans shards (PostgreSQL's
// two-phase commit; docs/design.md, "Operations that span shards"). A prepared
// transaction holds its effects and its row locks, invisible to everyone, until it is
// committed or rolled back by its global id (gid), from any session and after any
// crash.
type TwoPhaseStore interface {
	// Prepare applies segs and acks exactly as TransactionStore.Transaction does and
	// prepares them under gid instead of committing them. A *RollbackError, or any
	// other error, means nothing stays prepared.
	Prepare(ctx context.Context, gid string, segs []Segment, acks []AckItem, hint string) ([]SegmentResult, []AckResult, error)
	// CommitPrepared and RollbackPrepared resolve gid. Both return nil when gid is no
	// longer prepared: it was resolved already, which only the same decision does.
	CommitPrepared(ctx context.Context, gid string) error
	RollbackPrepared(ctx context.Context, gid string) error
	// InDoubt lists the gids starting with prefix that were prepared before before.
	InDoubt(ctx context.Context, prefix string, before time.Time) ([]string, error)
}

// DecisionLog keeps the outcome of every cross-shard transaction until it is resolved
// everywhere: the catalogue's record that makes a two-phase commit's outcome durable
// before any shard commits.
type DecisionLog interface {
	// Decide records commit as gid's outcome unless one is recorded already, and returns
	// the recorded outcome: the first writer wins, so a coordinator deciding commit and
	// a recovery deciding abort can never both act.
	Decide(ctx context.Context, gid string, commit bool) (bool, error)
	// Expire forgets the outcomes recorded before before, and returns how many.
	Expire(ctx context.Context, before time.Time) (int, error)
}

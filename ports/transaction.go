package ports

import (
	"context"
	"fmt"
)

// TransactionStore commits pushes and acks atomically (docs/api.md §5.4).
type TransactionStore interface {
	// Transaction commits every segment (through the same allocator as plain pushes,
	// Verified -1) and then applies every ack strictly, all in one database
	// transaction. hint is the request's single unambiguous lease hint ("" = none).
	// When the transaction must roll back for a reason the client caused (a
	// cross-request duplicate, an unknown transactionId, a lease failure) the error is a
	// *RollbackError and nothing was committed.
	Transaction(ctx context.Context, segs []Segment, acks []AckItem, hint string) ([]SegmentResult, []AckResult, error)
}

// RollbackError is a transaction the store rolled back on purpose.
type RollbackError struct {
	Reason string // duplicate | ack_rejected
	Msg    string
}

func (e *RollbackError) Error() string { return e.Msg }

// PlainRefusal is the rollback of a store transaction (a transaction, a streams cycle)
// with a segment answered SegmentEncrypted: all or nothing, as for any other refusal.
func PlainRefusal(sg Segment) *RollbackError {
	return &RollbackError{Reason: "encryption", Msg: fmt.Sprintf(
		"queue %q has encryptionEnabled and a payload for it was not encrypted (this broker's flag was stale); nothing was applied",
		sg.Queue)}
}

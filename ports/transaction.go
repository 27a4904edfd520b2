package ports

import "context"

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

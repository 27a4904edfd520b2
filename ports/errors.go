package ports

import "errors"

// Sentinel errors adapters translate their failures into.
var (
	// ErrUnavailable: the database could not be reached or the pool is exhausted.
	ErrUnavailable = errors.New("database unavailable")
	// ErrTimeout: a statement exceeded its timeout and was cancelled.
	ErrTimeout = errors.New("statement timeout")
	// ErrInvalid: the store rejected the input as malformed (a broker bug, not a client one).
	ErrInvalid = errors.New("invalid input")
)

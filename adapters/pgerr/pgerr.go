// Package pgerr translates PostgreSQL errors onto the ports' sentinel errors, once, at
// the edge of the adapters that speak to PostgreSQL: adapters/postgres (pgx) and
// adapters/admin (database/sql). It names no driver: it reads an error's SQLSTATE
// through the SQLState method both drivers' errors have, so it imports only ports and
// the standard library.
package pgerr

import (
	"context"
	"errors"
	"fmt"

	"github.com/queen-go/queen/ports"
)

// Translator maps the errors of one adapter. The zero value is usable; its messages
// then have no prefix.
type Translator struct {
	// Adapter prefixes every message ("postgres: op: ...").
	Adapter string
	// DataExceptions makes every data exception (SQLSTATE class 22: a value a statement
	// refused, such as a malformed UUID or a NUL byte in text) ErrInvalid. Off, only
	// 22023 (invalid_parameter_value, what our own functions raise for a bad argument)
	// is; the other data exceptions then wrap no sentinel. The hot path turns it on: its
	// statements take the clients' values. The admin adapter leaves it off: its values
	// are checked before they reach a statement, so another data exception is our bug.
	DataExceptions bool
}

// Translate wraps err with op and, when it recognises it, the ports sentinel that says
// what happened (nil stays nil):
//
//   - 57014 query_canceled (the statement timeout), a context deadline: ErrTimeout.
//   - 40P01 deadlock_detected, 40001 serialization_failure: ErrConflict, aborted for a
//     concurrent transaction; running it again may succeed.
//   - P0002 no_data_found (a row a function needs is not there), 22023
//     invalid_parameter_value, and with DataExceptions the rest of class 22: ErrInvalid.
//   - Classes 08 (connection), 53 (insufficient resources), 57 (operator intervention:
//     shutdown, crash) and 58 (system error): ErrUnavailable.
//   - Any other PostgreSQL error, or a cancelled context: no sentinel.
//   - Any other error (connection refused, reset, a closed pool): ErrUnavailable, the
//     database is not reachable.
func (t Translator) Translate(op string, err error) error {
	if err == nil {
		return nil
	}
	prefix := op
	if t.Adapter != "" {
		prefix = t.Adapter + ": " + op
	}
	if code, ok := SQLState(err); ok {
		if sentinel := t.classify(code); sentinel != nil {
			return fmt.Errorf("%s: %w: %w", prefix, sentinel, err)
		}
		return fmt.Errorf("%s: %w", prefix, err)
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %w: %w", prefix, ports.ErrTimeout, err)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: %w", prefix, err)
	}
	return fmt.Errorf("%s: %w: %w", prefix, ports.ErrUnavailable, err)
}

// classify is the sentinel of a SQLSTATE, nil when none applies.
func (t Translator) classify(code string) error {
	class := ""
	if len(code) == 5 {
		class = code[:2]
	}
	switch {
	case code == QueryCanceled:
		return ports.ErrTimeout
	case code == DeadlockDetected || code == SerializationFailure:
		return ports.ErrConflict
	case code == NoDataFound || code == InvalidParameterValue || (t.DataExceptions && class == "22"):
		return ports.ErrInvalid
	case class == "08" || class == "53" || class == "57" || class == "58":
		return ports.ErrUnavailable
	}
	return nil
}

// The SQLSTATEs the translation names on their own (PostgreSQL's appendix A).
const (
	QueryCanceled         = "57014" // the statement timeout, or a cancel request
	DeadlockDetected      = "40P01"
	SerializationFailure  = "40001"
	NoDataFound           = "P0002" // raised by our functions for a row that is not there
	InvalidParameterValue = "22023" // raised by our functions for a bad argument
)

// SQLState returns the SQLSTATE of the PostgreSQL error in err's chain, and whether
// there is one.
func SQLState(err error) (string, bool) {
	var st interface{ SQLState() string }
	if errors.As(err, &st) {
		return st.SQLState(), true
	}
	return "", false
}

// Retryable reports a transaction PostgreSQL aborted to resolve a conflict with another
// (deadlock, serialization failure): running it again may succeed.
func Retryable(err error) bool {
	code, _ := SQLState(err)
	return code == DeadlockDetected || code == SerializationFailure
}

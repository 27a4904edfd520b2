package admin

import (
	"errors"
	"fmt"
)

// ErrNotFound is wrapped by the errors of requests that name a resource that does not
// exist (a queue, a group, a message, a dead letter); the error's text is the answer's.
var ErrNotFound = errors.New("not found")

// notFound returns an error wrapping ErrNotFound whose text is msg (e.g. "Queue not
// found", the documented body).
func notFound(msg string) error { return &notFoundError{msg} }

type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }
func (e *notFoundError) Unwrap() error { return ErrNotFound }

// InputError is a request the service refuses: Param names the parameter at fault.
type InputError struct {
	Param string
	Msg   string
}

func (e *InputError) Error() string { return e.Msg }

func inputErrorf(param, format string, args ...any) *InputError {
	return &InputError{Param: param, Msg: fmt.Sprintf(format, args...)}
}

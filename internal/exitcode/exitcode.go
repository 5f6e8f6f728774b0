// Package exitcode classifies errors into the process exit codes innowarm promises:
// 2 for usage and input errors, 1 for runtime failures, 130 after an interrupt,
// and 3 when a readiness wait times out.
package exitcode

import (
	"context"
	"errors"
)

const (
	OK          = 0
	Runtime     = 1
	Usage       = 2
	Timeout     = 3
	Interrupted = 130
)

// Error carries the exit code an error should produce.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// UsageError marks err as the user's input being wrong (exit 2). Wrapping it again with
// fmt.Errorf("...: %w") keeps the classification.
func UsageError(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: Usage, Err: err}
}

// TimeoutError marks err as a readiness wait that ran out of time (exit 3).
func TimeoutError(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: Timeout, Err: err}
}

// Of returns the exit code for err.
func Of(err error) int {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if errors.Is(err, context.Canceled) {
		return Interrupted
	}
	return Runtime
}

// Package exitcode classifies errors into the process exit codes innowarm promises:
// 2 for usage and input errors (a privilege the user lacks among them: it is their setup),
// 1 for runtime failures, 130 after an interrupt, and 3 when a readiness wait times out.
package exitcode

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/innowarm/innowarm/internal/sqlerr"
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
	if sqlerr.PrivilegeMissing(err) {
		// Whichever statement met it first (a SET GLOBAL for --make-young, a read of an
		// information_schema table), the fix is a GRANT, as for --method native.
		return Usage
	}
	return Runtime
}

// FieldError is an input value a package refuses: Field names the option by its Go field
// name ("PoolSize"), Err says what is wrong with the value. A package speaks of values
// ("pool size 1M is too small"); the command line turns Field into its flag
// ("--pool-size 1M is too small").
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return Words(e.Field, " ") + " " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// BadValue is a usage error (exit 2) about the value of one field.
func BadValue(field, format string, args ...any) error {
	return &Error{Code: Usage, Err: &FieldError{Field: field, Err: fmt.Errorf(format, args...)}}
}

// Words splits a Go field name into lower-case words joined by sep: ("PoolSize", "-")
// gives "pool-size", ("MaxHot", " ") "max hot".
func Words(field, sep string) string {
	var b strings.Builder
	for i, r := range field {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteString(sep)
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

package manifest

import (
	"errors"
	"fmt"
	"strings"

	"github.com/innowarm/innowarm/internal/exitcode"
)

// The kinds of problem a manifest can have. Errors returned by this package wrap one of
// them (test with errors.Is) inside an exitcode.UsageError: a bad manifest is bad input.
var (
	ErrNotManifest = errors.New("not an innowarm manifest")
	ErrVersion     = errors.New("unsupported format version")
	ErrTruncated   = errors.New("truncated")
	ErrCorrupt     = errors.New("corrupt")
	ErrPageSize    = errors.New("incompatible page size")
	// ErrEmpty is returned by WriteFileAtomic when a capture had no pages and a manifest
	// already exists at the path: the existing one is kept. It is not a usage error.
	ErrEmpty = errors.New("capture has no pages")
)

// FormatError is a problem with a manifest's content, printed on one line as
// "manifest NAME: KIND: line N: DETAIL".
type FormatError struct {
	Name   string
	Kind   error // one of the Err* kinds above
	Line   int64 // 1-based; 0 when the problem is not on one line
	Detail string
	// Cause is the source's own error when it found the damage (an object's stored
	// checksum, say), so that errors.Is still finds its kind; its text is in Detail.
	Cause error
}

func (e *FormatError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "manifest %s: %s", e.Name, e.Kind)
	if e.Line > 0 {
		fmt.Fprintf(&b, ": line %d", e.Line)
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	// One line, whatever a quoted fragment of a hostile file contained.
	return strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(b.String())
}

func (e *FormatError) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Kind, e.Cause}
	}
	return []error{e.Kind}
}

// formatError builds a FormatError wrapped as a usage error (exit 2).
func formatError(name string, kind error, line int64, format string, args ...any) error {
	return exitcode.UsageError(&FormatError{Name: name, Kind: kind, Line: line, Detail: fmt.Sprintf(format, args...)})
}

// Damaged is implemented by the errors of a source whose own checks found its bytes
// damaged (objstore's checksum of an object): the reader reports the manifest as damaged,
// not the read as failed. errors.As finds it anywhere in an error's chain.
type Damaged interface{ Damaged() bool }

// quoteFragment quotes at most 40 bytes of a line for an error message.
func quoteFragment(b []byte) string {
	const max = 40
	if len(b) > max {
		return fmt.Sprintf("%q...", b[:max])
	}
	return fmt.Sprintf("%q", b)
}

package manifest

import (
	"errors"

	"github.com/innowarm/innowarm/internal/keys"
)

// Fields are separated by single spaces, so names are percent-escaped: '%', ASCII space and
// control bytes, DEL, bytes that are not valid UTF-8, and non-ASCII runes that are not
// printable (including Unicode spaces and line separators) become %XX per byte. Printable
// Unicode stays as it is so that grep and head show real names. The empty string is written
// as "-", so a name that is exactly "-" is written "%2D". Key values use the same escaping
// (keys.AppendEscaped), with the comma added.

// appendField appends s escaped as one field.
func appendField(dst []byte, s string) []byte {
	switch s {
	case "":
		return append(dst, '-')
	case "-":
		return append(dst, "%2D"...)
	}
	return keys.AppendEscaped(dst, s, "")
}

var errEmptyField = errors.New("empty field")

// parseField decodes one field written by appendField. It accepts either hex case but
// refuses raw control bytes and invalid UTF-8, which the writer never produces: they mean
// the file was damaged (or converted, e.g. to CRLF line ends).
func parseField(b []byte) (string, error) {
	if len(b) == 0 {
		return "", errEmptyField
	}
	if len(b) == 1 && b[0] == '-' {
		return "", nil
	}
	out, err := keys.Unescape(b)
	return string(out), err
}

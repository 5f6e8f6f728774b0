package manifest

import (
	"errors"
	"unicode"
	"unicode/utf8"
)

// Fields are separated by single spaces, so names are percent-escaped: '%', ASCII space and
// control bytes, DEL, bytes that are not valid UTF-8, and non-ASCII runes that are not
// printable (including Unicode spaces and line separators) become %XX per byte. Printable
// Unicode stays as it is so that grep and head show real names. The empty string is written
// as "-", so a name that is exactly "-" is written "%2D".

const upperHex = "0123456789ABCDEF"

// appendField appends s escaped as one field.
func appendField(dst []byte, s string) []byte {
	switch s {
	case "":
		return append(dst, '-')
	case "-":
		return append(dst, "%2D"...)
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c <= ' ' || c == 0x7f || c == '%' {
				dst = append(dst, '%', upperHex[c>>4], upperHex[c&15])
			} else {
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || !unicode.IsPrint(r) {
			for _, b := range []byte(s[i : i+size]) {
				dst = append(dst, '%', upperHex[b>>4], upperHex[b&15])
			}
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return dst
}

var (
	errEmptyField  = errors.New("empty field")
	errBadEscape   = errors.New("bad %-escape")
	errRawControl  = errors.New("unescaped control character")
	errInvalidUTF8 = errors.New("invalid UTF-8")
)

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
	escaped := false
	for _, c := range b {
		if c < ' ' || c == 0x7f {
			return "", errRawControl
		}
		if c == '%' {
			escaped = true
		}
	}
	if !utf8.Valid(b) {
		return "", errInvalidUTF8
	}
	if !escaped {
		return string(b), nil
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '%' {
			out = append(out, b[i])
			continue
		}
		if i+2 >= len(b) {
			return "", errBadEscape
		}
		hi, ok1 := unhex(b[i+1])
		lo, ok2 := unhex(b[i+2])
		if !ok1 || !ok2 {
			return "", errBadEscape
		}
		out = append(out, hi<<4|lo)
		i += 2
	}
	return string(out), nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

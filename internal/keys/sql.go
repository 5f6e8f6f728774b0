package keys

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// SessionTimeZone is the time zone a session must have (SET time_zone = '+00:00') for
// Literal's TIMESTAMP values, which are in UTC, to compare as the source's did: a
// TIMESTAMP column compares in the session's time zone.
const SessionTimeZone = "+00:00"

// Literal writes v as a SQL literal that MariaDB and MySQL compare with a column of type t
// exactly as the source compared its own value:
//
//   - numbers in decimal; FLOAT and DOUBLE in exponent form with every digit the value
//     needs (1.100000023841858e+00: a FLOAT holds that double exactly);
//   - ENUM and SET by their numbers, which is their order in an index;
//   - dates and times as quoted strings ('2024-02-29 13:04:05.250'), TIMESTAMP in UTC
//     (see SessionTimeZone);
//   - character strings as their bytes in hex behind their charset's introducer
//     (_utf8mb4 X'4dc3bc6c6c6572'): no escaping to get wrong, no conversion on the way;
//     the literal is coercible, so the column's collation decides the comparison;
//   - binary strings as X'...'.
//
// The hidden row id has no literal (ErrNotPortable).
func Literal(t Type, v Value) (string, error) {
	if v.Null {
		return "NULL", nil
	}
	switch t.Kind {
	case Int, Year:
		return strconv.FormatInt(v.I, 10), nil
	case Uint, Enum, Set, Bit:
		return strconv.FormatUint(v.U, 10), nil
	case Float, Double:
		return strconv.FormatFloat(v.F, 'e', -1, 64), nil
	case Decimal:
		if err := checkDecimal(t, v.Bytes); err != nil {
			return "", err
		}
		return string(v.Bytes), nil
	case Date, Datetime, Timestamp, Time:
		b, err := AppendValue(nil, t, v)
		if err != nil {
			return "", err
		}
		s := strings.Replace(strings.TrimSuffix(string(b), "Z"), "T", " ", 1)
		return "'" + s + "'", nil
	case Char, Varchar:
		return "_" + t.Charset() + " X'" + hex.EncodeToString(v.Bytes) + "'", nil
	case Binary, Varbinary:
		return "X'" + hex.EncodeToString(v.Bytes) + "'", nil
	case RowID:
		return "", ErrNotPortable
	}
	return "", fmt.Errorf("no SQL literal for kind %s", t.Kind)
}

// ErrNotComparable is returned by Compare for strings whose collation orders them by
// weights only the server knows: compare those with SQL.
var ErrNotComparable = errors.New("ordered by its collation's weights: compare with SQL")

// Comparable says whether Compare can order values of type t: every kind but character
// strings, and character strings whose collation orders by the bytes (binary collations:
// *_bin, *_nopad_bin, utf8mb4_0900_bin) of a charset whose byte order is its code point
// order (not utf16 and utf16le). Case- and accent-insensitive collations (utf8mb4_0900_ai_ci,
// utf8mb4_general_ci, latin1_swedish_ci, ...) are not.
func Comparable(t Type) bool {
	if !t.Kind.hasCharset() {
		return t.Kind != Invalid
	}
	switch t.Charset() {
	case "utf16", "utf16le":
		return false
	}
	return strings.HasSuffix(t.Collation, "_bin")
}

// noPad: the collation compares trailing spaces as any other character (MySQL's 0900 and
// MariaDB's nopad collations); the others compare as if the shorter string were padded
// with spaces.
func noPad(collation string) bool {
	return strings.Contains(collation, "_0900_") || strings.Contains(collation, "_nopad")
}

// Compare orders two values of type t as an index of that type does: NULL first. It fails
// for types Comparable refuses.
func Compare(t Type, a, b Value) (int, error) {
	if !Comparable(t) {
		return 0, fmt.Errorf("%s: %w", t, ErrNotComparable)
	}
	switch {
	case a.Null && b.Null:
		return 0, nil
	case a.Null:
		return -1, nil
	case b.Null:
		return 1, nil
	}
	switch t.Kind {
	case Int, Year, Date, Time:
		return cmp3(a.I, b.I), nil
	case Datetime, Timestamp:
		if c := cmp3(a.I, b.I); c != 0 {
			return c, nil
		}
		return cmp3(a.Micro, b.Micro), nil
	case Uint, Enum, Set, Bit, RowID:
		return cmp3(a.U, b.U), nil
	case Float, Double:
		return cmp3(a.F, b.F), nil
	case Decimal:
		return compareDecimal(string(a.Bytes), string(b.Bytes)), nil
	case Binary, Varbinary:
		return bytes.Compare(a.Bytes, b.Bytes), nil
	case Char, Varchar:
		if noPad(t.Collation) {
			return bytes.Compare(a.Bytes, b.Bytes), nil
		}
		return comparePadSpace(a.Bytes, b.Bytes, SpaceOf(t.Charset())), nil
	}
	return 0, fmt.Errorf("cannot compare kind %s", t.Kind)
}

// CompareKeys orders two keys over columns cs field by field, as the index does: a
// descending field (Column.Desc) the other way round, NULL last. When one key is a prefix
// of the other (fewer fields, equal on those), the shorter one is first: it is the lower
// bound of every key that starts with it.
func CompareKeys(cs Columns, a, b Key) (int, error) {
	n := min(len(a), len(b))
	if n > len(cs) {
		return 0, fmt.Errorf("keys of %d fields for %d columns", n, len(cs))
	}
	for i := 0; i < n; i++ {
		c, err := Compare(cs[i].Type, a[i], b[i])
		if err != nil || c != 0 {
			if cs[i].Desc {
				c = -c
			}
			return c, err
		}
	}
	return cmp3(len(a), len(b)), nil
}

func cmp3[T int | int32 | int64 | uint64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// SpaceOf is the space character's encoding in a charset: the pad of CHAR values and of
// PAD SPACE comparisons.
func SpaceOf(charset string) []byte {
	switch charset {
	case "ucs2", "utf16":
		return []byte{0, ' '}
	case "utf16le":
		return []byte{' ', 0}
	case "utf32":
		return []byte{0, 0, 0, ' '}
	}
	return []byte{' '}
}

// comparePadSpace compares as if the shorter string were padded with spaces: equal on
// the common length, the longer one's rest decides against spaces (so "a\t" < "a").
func comparePadSpace(a, b, space []byte) int {
	n := min(len(a), len(b))
	if c := bytes.Compare(a[:n], b[:n]); c != 0 {
		return c
	}
	sign, rest := 1, a[n:]
	if len(b) > len(a) {
		sign, rest = -1, b[n:]
	}
	for len(rest) > 0 {
		m := min(len(space), len(rest))
		if c := bytes.Compare(rest[:m], space[:m]); c != 0 {
			return sign * c
		}
		rest = rest[m:]
	}
	return 0
}

// compareDecimal orders two decimals in checkDecimal's canonical form.
func compareDecimal(a, b string) int {
	na, nb := strings.HasPrefix(a, "-"), strings.HasPrefix(b, "-")
	switch {
	case na && !nb:
		return -1
	case !na && nb:
		return 1
	}
	c := compareMagnitude(strings.TrimPrefix(a, "-"), strings.TrimPrefix(b, "-"))
	if na {
		return -c
	}
	return c
}

func compareMagnitude(a, b string) int {
	ai, af, _ := strings.Cut(a, ".")
	bi, bf, _ := strings.Cut(b, ".")
	ai, bi = strings.TrimLeft(ai, "0"), strings.TrimLeft(bi, "0")
	if c := cmp3(len(ai), len(bi)); c != 0 {
		return c
	}
	if c := strings.Compare(ai, bi); c != 0 {
		return c
	}
	n := max(len(af), len(bf))
	af += strings.Repeat("0", n-len(af))
	bf += strings.Repeat("0", n-len(bf))
	return strings.Compare(af, bf)
}

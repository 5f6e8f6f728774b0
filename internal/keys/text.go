package keys

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// The text form of a key is one word with no space in it, so that it fits a manifest line:
// its fields joined by commas, each written by its kind:
//
//	NULL                      \N
//	Int, Uint, Year, Enum,    decimal: -42, 18446744073709551615, 2024, 3
//	Set, Bit, RowID
//	Float, Double             the shortest decimal that reads back to the same value: 0.1, -1.5e+30
//	Decimal                   -12.3400
//	Date                      2024-02-29 (0000-00-00 for the zero date)
//	Datetime                  2024-02-29T13:04:05.250 (Scale fractional digits)
//	Timestamp                 2024-02-29T13:04:05.250Z, in UTC
//	Time                      -838:59:59.000000
//	Char, Varchar             ' then the bytes, escaped as below: 'Müller, '100%25%2C%20net
//	Binary, Varbinary         0x then the bytes in hex: 0x00ff, 0x (empty)
//
// Escaping (the manifest's rules, plus the comma): '%', ',', ASCII space and control bytes,
// DEL, bytes that are not valid UTF-8 and runes that are not printable are written %XX
// (upper-case hex) per byte; everything else as it is. The bytes are the column's charset's
// own: a latin1 é is %E9, a utf8mb4 é is é.

// AppendEscaped appends s escaped so that it contains none of the bytes in special, no
// '%', no space or line break, and reads back exactly with Unescape.
func AppendEscaped(dst []byte, s string, special string) []byte {
	// Special bytes are punctuation, compared directly when there are at most two (the
	// key text's "," and the columns' ",:"); 0 stands for none, and is escaped anyway.
	var sp0, sp1 byte
	few := len(special) <= 2
	if len(special) > 0 {
		sp0 = special[0]
	}
	if len(special) > 1 {
		sp1 = special[1]
	}
	for i := 0; i < len(s); {
		// A run of printable ASCII that needs no escape is copied at once.
		j := i
		for few && j < len(s) {
			c := s[j]
			if c <= ' ' || c >= 0x7f || c == '%' || c == sp0 || c == sp1 {
				break
			}
			j++
		}
		if j > i {
			dst = append(dst, s[i:j]...)
			if i = j; i == len(s) {
				break
			}
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c <= ' ' || c == 0x7f || c == '%' || strings.IndexByte(special, c) >= 0 {
				dst = append(dst, '%', upperHex[c>>4], upperHex[c&15])
			} else {
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || !unicode.IsPrint(r) {
			for j := i; j < i+size; j++ {
				dst = append(dst, '%', upperHex[s[j]>>4], upperHex[s[j]&15])
			}
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return dst
}

const upperHex = "0123456789ABCDEF"

// Errors of Unescape.
var (
	ErrBadEscape   = errors.New("bad %-escape")
	ErrRawControl  = errors.New("unescaped control character")
	ErrInvalidUTF8 = errors.New("invalid UTF-8")
)

// Unescape reads what AppendEscaped wrote. It accepts either hex case and refuses raw
// control bytes and invalid UTF-8, which AppendEscaped never writes.
func Unescape(b []byte) ([]byte, error) {
	escaped := false
	for _, c := range b {
		if c < ' ' || c == 0x7f {
			return nil, ErrRawControl
		}
		if c == '%' {
			escaped = true
		}
	}
	if !utf8.Valid(b) {
		return nil, ErrInvalidUTF8
	}
	if !escaped {
		return b, nil
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '%' {
			out = append(out, b[i])
			continue
		}
		if i+2 >= len(b) {
			return nil, ErrBadEscape
		}
		hi, ok1 := unhex(b[i+1])
		lo, ok2 := unhex(b[i+2])
		if !ok1 || !ok2 {
			return nil, ErrBadEscape
		}
		out = append(out, hi<<4|lo)
		i += 2
	}
	return out, nil
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

// nullText is how a NULL field is written.
const nullText = `\N`

// AppendKey appends k's text form (see the package's text grammar) for columns cs.
func AppendKey(dst []byte, cs Columns, k Key) ([]byte, error) {
	if len(k) == 0 || len(k) > len(cs) {
		return dst, fmt.Errorf("key of %d fields for %d columns", len(k), len(cs))
	}
	for i, v := range k {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = AppendValue(dst, cs[i].Type, v); err != nil {
			return dst, fmt.Errorf("key field %s: %w", cs[i].Name, err)
		}
	}
	return dst, nil
}

// ParseKey reads AppendKey's form. A key may have fewer fields than there are columns
// (a prefix of the key), never more.
func ParseKey(cs Columns, s []byte) (Key, error) {
	if len(s) == 0 {
		return nil, errors.New("empty key")
	}
	fields := bytes.Split(s, []byte{','})
	if len(fields) > len(cs) {
		return nil, fmt.Errorf("key of %d fields for %d columns", len(fields), len(cs))
	}
	k := make(Key, len(fields))
	for i, field := range fields {
		v, err := ParseValue(cs[i].Type, field)
		if err != nil {
			return nil, fmt.Errorf("key field %d (%s): %w", i+1, cs[i].Name, err)
		}
		k[i] = v
	}
	return k, nil
}

// AppendValue appends one field's text form.
func AppendValue(dst []byte, t Type, v Value) ([]byte, error) {
	if v.Null {
		return append(dst, nullText...), nil
	}
	switch t.Kind {
	case Int, Year:
		return strconv.AppendInt(dst, v.I, 10), nil
	case Uint, Enum, Set, Bit, RowID:
		return strconv.AppendUint(dst, v.U, 10), nil
	case Float:
		return strconv.AppendFloat(dst, v.F, 'g', -1, 32), nil
	case Double:
		return strconv.AppendFloat(dst, v.F, 'g', -1, 64), nil
	case Decimal:
		if err := checkDecimal(t, v.Bytes); err != nil {
			return dst, err
		}
		return append(dst, v.Bytes...), nil
	case Date:
		return appendDate(dst, v.I), nil
	case Datetime:
		dst = appendDate(dst, v.I/1000000)
		dst = append(dst, 'T')
		return appendClock(dst, v.I%1000000/10000, v.I%10000/100, v.I%100, v.Micro, t.Scale), nil
	case Timestamp:
		if v.I == 0 {
			dst = append(dst, "0000-00-00T00:00:00"...)
			dst = appendFraction(dst, v.Micro, t.Scale)
		} else {
			tm := time.Unix(v.I, 0).UTC()
			dst = tm.AppendFormat(dst, "2006-01-02T15:04:05")
			dst = appendFraction(dst, v.Micro, t.Scale)
		}
		return append(dst, 'Z'), nil
	case Time:
		us := v.I
		if us < 0 {
			dst = append(dst, '-')
			us = -us
		}
		secs := us / 1000000
		return appendClock(dst, secs/3600, secs/60%60, secs%60, int32(us%1000000), t.Scale), nil
	case Char, Varchar:
		dst = append(dst, '\'')
		return AppendEscaped(dst, unsafe.String(unsafe.SliceData(v.Bytes), len(v.Bytes)), ","), nil // not kept: no copy
	case Binary, Varbinary:
		dst = append(dst, "0x"...)
		return hex.AppendEncode(dst, v.Bytes), nil
	}
	return dst, fmt.Errorf("no text form for kind %s", t.Kind)
}

func appendDate(dst []byte, ymd int64) []byte {
	dst = appendPadded(dst, ymd/10000, 4)
	dst = append(dst, '-')
	dst = appendPadded(dst, ymd/100%100, 2)
	dst = append(dst, '-')
	return appendPadded(dst, ymd%100, 2)
}

func appendClock(dst []byte, h, m, s int64, micro int32, scale int) []byte {
	dst = appendPadded(dst, h, 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, m, 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, s, 2)
	return appendFraction(dst, micro, scale)
}

// appendPadded writes n as fmt's %0*d does, without fmt: a snapshot writes a key per
// page, and fmt's formatting was most of their cost.
func appendPadded(dst []byte, n int64, width int) []byte {
	if n < 0 {
		return fmt.Appendf(dst, "%0*d", width, n)
	}
	var digits [20]byte
	i := len(digits)
	for {
		i--
		digits[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	for len(digits)-i < width {
		dst = append(dst, '0')
		width--
	}
	return append(dst, digits[i:]...)
}

// appendFraction writes scale digits of the microseconds.
func appendFraction(dst []byte, micro int32, scale int) []byte {
	if scale <= 0 {
		return dst
	}
	if micro < 0 || micro > 999999 || scale > 6 {
		digits := fmt.Sprintf("%06d", micro)
		return append(append(dst, '.'), digits[:scale]...)
	}
	dst = append(dst, '.')
	for div := int32(100000); scale > 0; div, scale = div/10, scale-1 {
		dst = append(dst, byte('0'+micro/div%10))
	}
	return dst
}

// ParseValue reads one field's text form.
func ParseValue(t Type, b []byte) (Value, error) {
	s := string(b)
	if s == nullText {
		return Null, nil
	}
	bad := func(what string) (Value, error) {
		return Value{}, fmt.Errorf("%s value %q: %s", t.Kind, truncate(s), what)
	}
	switch t.Kind {
	case Int, Year:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || !isCanonicalInt(s) {
			return bad("not a whole number")
		}
		if t.Kind == Int && !fitsInt(n, t.Size) || t.Kind == Year && n != 0 && (n < 1901 || n > 2155) {
			return bad("out of range")
		}
		return Value{I: n}, nil
	case Uint, Enum, Set, Bit, RowID:
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil || !isCanonicalInt(s) || s[0] == '-' {
			return bad("not a whole number")
		}
		if t.Kind == Uint && t.Size < 8 && n >= 1<<(8*t.Size) || t.Kind == Set && t.Size < 8 && n >= 1<<(8*t.Size) ||
			t.Kind == Bit && t.Size < 64 && n >= 1<<t.Size || t.Kind == Enum && n > 65535 || t.Kind == RowID && n >= 1<<48 {
			return bad("out of range")
		}
		return Value{U: n}, nil
	case Float, Double:
		bits := 64
		if t.Kind == Float {
			bits = 32
		}
		f, err := strconv.ParseFloat(s, bits)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || strconv.FormatFloat(f, 'g', -1, bits) != s {
			return bad("not a finite number in its shortest form")
		}
		return Value{F: f}, nil
	case Decimal:
		if err := checkDecimal(t, b); err != nil {
			return Value{}, err
		}
		return Value{Bytes: []byte(s)}, nil
	case Date:
		ymd, ok := parseDate(s)
		if !ok {
			return bad("want YYYY-MM-DD")
		}
		return Value{I: ymd}, nil
	case Datetime:
		d, c, ok := strings.Cut(s, "T")
		ymd, ok1 := parseDate(d)
		hms, micro, ok2 := parseClock(c, t.Scale, false)
		if !ok || !ok1 || !ok2 {
			return bad("want YYYY-MM-DDThh:mm:ss[.fraction]")
		}
		return Value{I: ymd*1000000 + hms, Micro: micro}, nil
	case Timestamp:
		body, ok := strings.CutSuffix(s, "Z")
		d, c, ok2 := strings.Cut(body, "T")
		ymd, ok3 := parseDate(d)
		hms, micro, ok4 := parseClock(c, t.Scale, false)
		if !ok || !ok2 || !ok3 || !ok4 {
			return bad("want YYYY-MM-DDThh:mm:ss[.fraction]Z")
		}
		if ymd == 0 && hms == 0 {
			return Value{Micro: micro}, nil
		}
		tm := time.Date(int(ymd/10000), time.Month(ymd/100%100), int(ymd%100), int(hms/10000), int(hms/100%100), int(hms%100), 0, time.UTC)
		if tm.Unix() <= 0 || tm.Unix() > math.MaxUint32 || tm.Format("20060102150405") != fmt.Sprintf("%08d%06d", ymd, hms) {
			return bad("not a TIMESTAMP")
		}
		return Value{I: tm.Unix(), Micro: micro}, nil
	case Time:
		neg := strings.HasPrefix(s, "-")
		hms, micro, ok := parseClock(strings.TrimPrefix(s, "-"), t.Scale, true)
		if !ok || neg && hms == 0 && micro == 0 {
			return bad("want [-]hh:mm:ss[.fraction]")
		}
		us := (hms/10000*3600+hms/100%100*60+hms%100)*1000000 + int64(micro)
		if neg {
			us = -us
		}
		return Value{I: us}, nil
	case Char, Varchar:
		rest, ok := strings.CutPrefix(s, "'")
		if !ok {
			return bad("a string starts with '")
		}
		raw, err := Unescape([]byte(rest))
		if err != nil {
			return bad(err.Error())
		}
		if string(AppendEscaped(nil, string(raw), ",")) != rest {
			return bad("not escaped as written (upper-case %XX where needed, nothing else)")
		}
		return Value{Bytes: append([]byte{}, raw...)}, nil
	case Binary, Varbinary:
		h, ok := strings.CutPrefix(s, "0x")
		raw, err := hex.DecodeString(h)
		if !ok || err != nil || hex.EncodeToString(raw) != h {
			return bad("want 0x and lower-case hex digits")
		}
		if t.Kind == Binary && len(raw) != t.Size && t.Prefix == 0 {
			return bad(fmt.Sprintf("BINARY(%d) holds %d bytes", t.Size, t.Size))
		}
		return Value{Bytes: raw}, nil
	}
	return Value{}, fmt.Errorf("no text form for kind %s", t.Kind)
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// isCanonicalInt: an optional minus, then digits without leading zeros.
func isCanonicalInt(s string) bool {
	d := strings.TrimPrefix(s, "-")
	if d == "" || (len(d) > 1 && d[0] == '0') || (d == "0" && len(s) > 1) {
		return false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func fitsInt(n int64, size int) bool {
	if size >= 8 {
		return true
	}
	limit := int64(1) << (8*size - 1)
	return n >= -limit && n < limit
}

// parseDate reads YYYY-MM-DD into yyyymmdd, allowing the zero parts MySQL allows.
func parseDate(s string) (int64, bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return 0, false
	}
	y, e1 := strconv.Atoi(s[:4])
	m, e2 := strconv.Atoi(s[5:7])
	d, e3 := strconv.Atoi(s[8:])
	if e1 != nil || e2 != nil || e3 != nil || m > 12 || d > 31 || !allDigits(s[:4]+s[5:7]+s[8:]) {
		return 0, false
	}
	return int64(y)*10000 + int64(m)*100 + int64(d), true
}

// parseClock reads hh:mm:ss[.fraction] (hours may exceed 23 when long is set) into
// hhmmss and microseconds; the fraction must have exactly scale digits.
func parseClock(s string, scale int, long bool) (int64, int32, bool) {
	whole, frac, hasFrac := strings.Cut(s, ".")
	if hasFrac != (scale > 0) || (hasFrac && len(frac) != scale) || !allDigits(frac) {
		return 0, 0, false
	}
	parts := strings.Split(whole, ":")
	hours := parts[0]
	if len(parts) != 3 || len(parts[1]) != 2 || len(parts[2]) != 2 || !(len(hours) == 2 || long && len(hours) == 3 && hours[0] != '0') {
		return 0, 0, false
	}
	h, e1 := strconv.Atoi(parts[0])
	m, e2 := strconv.Atoi(parts[1])
	sec, e3 := strconv.Atoi(parts[2])
	maxHour := 23
	if long {
		maxHour = 838
	}
	if e1 != nil || e2 != nil || e3 != nil || h > maxHour || m > 59 || sec > 59 || !allDigits(parts[0]+parts[1]+parts[2]) {
		return 0, 0, false
	}
	var micro int32
	if hasFrac {
		n, _ := strconv.Atoi((frac + "000000")[:6])
		micro = int32(n)
	}
	return int64(h)*10000 + int64(m)*100 + int64(sec), micro, true
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// checkDecimal: an optional minus, at most Precision-Scale integer digits (at least one),
// a point and exactly Scale digits when Scale > 0; no "-0".
func checkDecimal(t Type, b []byte) error {
	s := unsafe.String(unsafe.SliceData(b), len(b)) // not kept: an error copies it
	bad := func() error {
		return fmt.Errorf("decimal value %q: not a DECIMAL(%d,%d) as written here", truncate(s), t.Precision, t.Scale)
	}
	body := strings.TrimPrefix(s, "-")
	intPart, frac, hasPoint := strings.Cut(body, ".")
	if hasPoint != (t.Scale > 0) || len(frac) != t.Scale || intPart == "" || !allDigits(intPart) || !allDigits(frac) {
		return bad()
	}
	if len(intPart) > 1 && intPart[0] == '0' || len(intPart) > max(t.Precision-t.Scale, 1) {
		return bad()
	}
	if body != s && strings.Trim(intPart+frac, "0") == "" {
		return bad() // negative zero
	}
	return nil
}

// AppendColumns appends the columns' text form: NAME:TYPE pairs joined by commas, the
// names escaped like string values (',' and ':' too), NAME:TYPE:desc for a descending
// field.
func AppendColumns(dst []byte, cs Columns) []byte {
	for i, c := range cs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendEscaped(dst, c.Name, ",:")
		dst = append(dst, ':')
		dst = append(dst, c.Type.String()...)
		if c.Desc {
			dst = append(dst, descSuffix...)
		}
	}
	return dst
}

// descSuffix follows the type of a descending key field (format version 4).
const descSuffix = ":desc"

// ParseColumns reads AppendColumns' form.
func ParseColumns(s []byte) (Columns, error) {
	if len(s) == 0 {
		return nil, errors.New("no key columns")
	}
	var cs Columns
	for _, part := range splitColumns(string(s)) {
		name, typ, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("key column %q: want NAME:TYPE", truncate(part))
		}
		n, err := Unescape([]byte(name))
		if err != nil {
			return nil, fmt.Errorf("key column %q: %w", truncate(part), err)
		}
		typ, order, desc := strings.Cut(typ, ":")
		if desc && order != descSuffix[1:] {
			return nil, fmt.Errorf("key column %q: want NAME:TYPE or NAME:TYPE%s", truncate(part), descSuffix)
		}
		t, err := ParseType(typ)
		if err != nil {
			return nil, err
		}
		cs = append(cs, Column{Name: string(n), Type: t, Desc: desc})
	}
	return cs, nil
}

// splitColumns cuts AppendColumns' form at the commas between columns. A name has its
// commas and colons escaped (it may hold parentheses), but a type's arguments are not:
// decimal(14,2) holds a comma, so in a column's type, after its name's colon, a comma
// inside parentheses belongs to the type.
func splitColumns(s string) []string {
	var parts []string
	inName, depth, start := true, 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ':' && inName:
			inName = false
		case inName:
		case c == '(':
			depth++
		case c == ')':
			depth = max(depth-1, 0)
		case c == ',' && depth == 0:
			parts = append(parts, s[start:i])
			start, inName = i+1, true
		}
	}
	return append(parts, s[start:])
}

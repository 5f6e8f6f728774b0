package pagekey

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/innowarm/innowarm/internal/keys"
)

// InnoDB's main types (data0type.h, DATA_*): how a column is stored in a record.
const (
	mtypeVarchar    = 1  // DATA_VARCHAR: VARCHAR in latin1_swedish_ci
	mtypeChar       = 2  // DATA_CHAR: CHAR in latin1_swedish_ci
	mtypeFixBinary  = 3  // DATA_FIXBINARY: BINARY, and the binary forms of DECIMAL, DATETIME, TIMESTAMP, TIME, BIT
	mtypeBinary     = 4  // DATA_BINARY: VARBINARY
	mtypeBlob       = 5  // DATA_BLOB: BLOB and TEXT
	mtypeInt        = 6  // DATA_INT: integers, DATE, YEAR, ENUM, SET (and the 5.5 temporal forms)
	mtypeSys        = 8  // DATA_SYS: DB_ROW_ID, DB_TRX_ID, DB_ROLL_PTR
	mtypeFloat      = 9  // DATA_FLOAT
	mtypeDouble     = 10 // DATA_DOUBLE
	mtypeDecimal    = 11 // DATA_DECIMAL: DECIMAL before MySQL 5.0.3, as text
	mtypeVarMySQL   = 12 // DATA_VARMYSQL: VARCHAR in other charsets
	mtypeMySQL      = 13 // DATA_MYSQL: CHAR in other charsets
	mtypeGeometry   = 14 // DATA_GEOMETRY
	mtypePoint      = 15 // DATA_POINT (MySQL)
	mtypeVarPoint   = 16 // DATA_VAR_POINT (MySQL)
	prtypeNotNull   = 256
	prtypeUnsigned  = 512
	prtypeVirtual   = 8192
	maxFixedColumn  = 768 // DICT_MAX_FIXED_COL_LEN: longer fixed columns are stored with a length
	datetimeIntOfs  = 0x8000000000
	timeIntOfs      = 0x800000
	timeOfs         = 0x800000000000
	packedFracShift = 24
)

// decodeValue turns a field's stored bytes into its portable value.
// With copyBytes unset, string values point into b.
func decodeValue(f *Field, b []byte, copyBytes bool) (keys.Value, error) {
	t := f.Type
	bad := func(format string, args ...any) (keys.Value, error) {
		return keys.Value{}, fmt.Errorf("field %s (%s): %s", f.Name, t, fmt.Sprintf(format, args...))
	}
	want := func(n int) error {
		if len(b) != n {
			return fmt.Errorf("field %s (%s): %d bytes stored, want %d", f.Name, t, len(b), n)
		}
		return nil
	}
	switch t.Kind {
	case keys.Int, keys.Uint:
		if err := want(t.Size); err != nil {
			return keys.Value{}, err
		}
		u := beUint(b)
		if !f.Unsigned {
			return keys.Value{I: signedFromStored(u, t.Size)}, nil
		}
		return keys.Value{U: u}, nil
	case keys.Year:
		if err := want(1); err != nil {
			return keys.Value{}, err
		}
		if b[0] == 0 {
			return keys.Value{I: 0}, nil
		}
		return keys.Value{I: 1900 + int64(b[0])}, nil
	case keys.Enum, keys.Set, keys.Bit:
		if len(b) == 0 || len(b) > 8 {
			return bad("%d bytes stored", len(b))
		}
		return keys.Value{U: beUint(b)}, nil
	case keys.RowID:
		// DB_ROW_ID takes 6 bytes; a hidden key field read as one (a system-versioned
		// table's row_end) 7 or 8.
		if err := want(max(f.FixedLen, 6)); err != nil {
			return keys.Value{}, err
		}
		return keys.Value{U: beUint(b)}, nil
	case keys.Float:
		if err := want(4); err != nil {
			return keys.Value{}, err
		}
		return keys.Value{F: float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))}, nil
	case keys.Double:
		if err := want(8); err != nil {
			return keys.Value{}, err
		}
		return keys.Value{F: math.Float64frombits(binary.LittleEndian.Uint64(b))}, nil
	case keys.Date:
		if err := want(3); err != nil {
			return keys.Value{}, err
		}
		n := beUint(b)
		if !f.Unsigned {
			n ^= 1 << 23
		}
		return keys.Value{I: int64(n>>9)*10000 + int64(n>>5&15)*100 + int64(n&31)}, nil
	case keys.Datetime:
		if err := want(5 + fracBytes(t.Scale)); err != nil {
			return keys.Value{}, err
		}
		intPart, micro := unpackFraction(int64(beUint(b[:5]))-datetimeIntOfs, b[5:], t.Scale)
		if intPart < 0 {
			return bad("negative DATETIME")
		}
		ymd, hms := intPart>>17, intPart&(1<<17-1)
		ym := ymd >> 5
		y, m, d := ym/13, ym%13, ymd&31
		h, mi, s := hms>>12, hms>>6&63, hms&63
		return keys.Value{I: ((y*100+m)*100+d)*1000000 + (h*100+mi)*100 + s, Micro: micro}, nil
	case keys.Timestamp:
		if err := want(4 + fracBytes(t.Scale)); err != nil {
			return keys.Value{}, err
		}
		var micro int32
		switch fb := b[4:]; len(fb) {
		case 1:
			micro = int32(fb[0]) * 10000
		case 2:
			micro = int32(beUint(fb)) * 100
		case 3:
			micro = int32(beUint(fb))
		}
		return keys.Value{I: int64(binary.BigEndian.Uint32(b)), Micro: micro}, nil
	case keys.Time:
		if err := want(3 + fracBytes(t.Scale)); err != nil {
			return keys.Value{}, err
		}
		var packed int64
		if t.Scale >= 5 {
			packed = int64(beUint(b[:6])) - timeOfs
		} else {
			intPart, micro := unpackFraction(int64(beUint(b[:3]))-timeIntOfs, b[3:], t.Scale)
			packed = intPart<<packedFracShift + int64(micro)
		}
		neg := packed < 0
		if neg {
			packed = -packed
		}
		hms := packed >> packedFracShift
		us := ((hms>>12)*3600+(hms>>6&63)*60+hms&63)*1000000 + packed%(1<<packedFracShift)
		if neg {
			us = -us
		}
		return keys.Value{I: us}, nil
	case keys.Decimal:
		s, err := decodeDecimal(b, t.Precision, t.Scale)
		if err != nil {
			return bad("%v", err)
		}
		return keys.Value{Bytes: []byte(s)}, nil
	case keys.Char, keys.Varchar, keys.Binary, keys.Varbinary:
		if copyBytes {
			b = append([]byte{}, b...)
		}
		if t.Kind == keys.Char {
			b = trimSpaces(b, f.Charset)
		}
		return keys.Value{Bytes: b}, nil
	}
	return bad("no decoder")
}

// signedFromStored undoes InnoDB's signed integer form: big-endian with the sign bit
// flipped, so that the bytes sort as the numbers.
func signedFromStored(u uint64, size int) int64 {
	bits := uint(8 * size)
	u ^= 1 << (bits - 1)
	return int64(u<<(64-bits)) >> (64 - bits)
}

func beUint(b []byte) uint64 {
	var u uint64
	for _, c := range b {
		u = u<<8 | uint64(c)
	}
	return u
}

// fracBytes is how many bytes the fractional seconds of a DATETIME/TIMESTAMP/TIME take.
func fracBytes(scale int) int { return (scale + 1) / 2 }

// unpackFraction reads the fractional part stored after a temporal value's integer part
// and returns both parts of the packed value (integer part << 24 + microseconds). MySQL
// 5.6's binary forms store a negative value's fraction reversed, for binary sort order,
// and then the integer part one lower (my_time_packed_from_binary).
func unpackFraction(intPart int64, frac []byte, scale int) (int64, int32) {
	var f int64
	switch len(frac) {
	case 0:
		return intPart, 0
	case 1:
		f = int64(frac[0])
		if intPart < 0 && f != 0 {
			intPart++
			f -= 0x100
		}
		f *= 10000
	case 2:
		f = int64(beUint(frac))
		if intPart < 0 && f != 0 {
			intPart++
			f -= 0x10000
		}
		f *= 100
	default:
		f = int64(beUint(frac))
	}
	return intPart, int32(f)
}

// decimal2bin's layout (strings/decimal.cc): nine digits per four bytes, a leading and a
// trailing group of fewer digits in as few bytes as they need; the sign as the first
// bit (set for positive), negative numbers with every bit inverted.
var digitsBytes = [10]int{0, 1, 1, 2, 2, 3, 3, 4, 4, 4}

// DecimalBytes is how many bytes a DECIMAL(precision, scale) takes.
func DecimalBytes(precision, scale int) int {
	intg := precision - scale
	return intg/9*4 + digitsBytes[intg%9] + scale/9*4 + digitsBytes[scale%9]
}

func decodeDecimal(stored []byte, precision, scale int) (string, error) {
	b, err := appendDecimal(nil, stored, precision, scale)
	return string(b), err
}

// pow10 are the powers of ten a DECIMAL's groups of up to 9 digits are checked against.
var pow10 = [10]uint64{1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000}

// appendDecimal appends the text of a stored DECIMAL(precision, scale) (decodeDecimal's),
// without allocating: a snapshot writes one per captured page of an index on one.
func appendDecimal(dst []byte, stored []byte, precision, scale int) ([]byte, error) {
	if len(stored) != DecimalBytes(precision, scale) || len(stored) == 0 {
		return dst, fmt.Errorf("%d bytes stored for DECIMAL(%d,%d), want %d", len(stored), precision, scale, DecimalBytes(precision, scale))
	}
	// The stored form: the sign bit flipped, and every byte inverted for a negative value.
	neg := stored[0]&0x80 == 0
	flip := byte(0)
	if neg {
		flip = 0xFF
	}
	at := 0
	take := func(n int) uint64 {
		var v uint64
		for k := range n {
			c := stored[at+k] ^ flip
			if at+k == 0 {
				c ^= 0x80
			}
			v = v<<8 | uint64(c)
		}
		at += n
		return v
	}
	start := len(dst)
	if neg {
		dst = append(dst, '-')
	}
	zero, leading := true, true // leading: the integer part's leading zeros are left out
	var digits [9]byte
	group := func(width, nbytes int) error {
		v := take(nbytes)
		if v >= pow10[width] {
			return fmt.Errorf("a group of %d digits holds %d", width, v)
		}
		for k := width - 1; k >= 0; k-- {
			digits[k] = byte('0' + v%10)
			v /= 10
		}
		for _, c := range digits[:width] {
			if c != '0' {
				zero, leading = false, false
			}
			if !leading {
				dst = append(dst, c)
			}
		}
		return nil
	}
	intg := precision - scale
	if lead := intg % 9; lead > 0 {
		if err := group(lead, digitsBytes[lead]); err != nil {
			return dst[:start], err
		}
	}
	for range intg / 9 {
		if err := group(9, 4); err != nil {
			return dst[:start], err
		}
	}
	if leading {
		dst = append(dst, '0')
		leading = false
	}
	if scale > 0 {
		dst = append(dst, '.')
	}
	for range scale / 9 {
		if err := group(9, 4); err != nil {
			return dst[:start], err
		}
	}
	if trail := scale % 9; trail > 0 {
		if err := group(trail, digitsBytes[trail]); err != nil {
			return dst[:start], err
		}
	}
	if neg && zero {
		// No negative zero: the minus goes.
		dst = append(dst[:start], dst[start+1:]...)
	}
	return dst, nil
}

// trimSpaces drops a CHAR value's trailing pad: InnoDB stores CHAR padded with spaces (or
// partly stripped), SQL reads it without them.
func trimSpaces(b []byte, cs Charset) []byte {
	space := cs.space()
	for len(b) >= len(space) && string(b[len(b)-len(space):]) == string(space) {
		b = b[:len(b)-len(space)]
	}
	return b
}

// appendText appends the text form (keys.AppendKey's) of the first n located fields of the
// record at o, integers straight from their stored bytes.
func (l *Layout) appendText(dst []byte, p Page, o int, fields [][]byte, n int) ([]byte, error) {
	for i, b := range fields[:min(n, len(fields))] {
		if i > 0 {
			dst = append(dst, ',')
		}
		var stored bool
		var err error
		if dst, stored, err = appendFieldText(dst, &l.Fields[i], b); err != nil {
			if stored {
				return dst, fmt.Errorf("%w: page %d record at %d: %w", ErrCorrupt, p.Number(), o, err)
			}
			return dst, err
		}
	}
	return dst, nil
}

// appendFieldText appends one stored field's text (keys.AppendValue's of its decoded
// value; nil is NULL), for the common kinds straight from the stored bytes. badStored says
// that an error is the stored bytes' (they do not decode), not the text form's.
func appendFieldText(dst []byte, f *Field, b []byte) (out []byte, badStored bool, err error) {
	if b == nil {
		return append(dst, `\N`...), false, nil
	}
	switch t := f.Type; {
	case (t.Kind == keys.Int || t.Kind == keys.Uint) && len(b) == t.Size:
		if f.Unsigned {
			return strconv.AppendUint(dst, beUint(b), 10), false, nil
		}
		return strconv.AppendInt(dst, signedFromStored(beUint(b), t.Size), 10), false, nil
	case t.Kind == keys.Decimal:
		// Its text is valid by construction: AppendValue's check is not needed.
		out, err := appendDecimal(dst, b, t.Precision, t.Scale)
		if err != nil {
			return out, true, fmt.Errorf("field %s (%s): %w", f.Name, t, err)
		}
		return out, false, nil
	}
	v, err := decodeValue(f, b, false)
	if err != nil {
		return dst, true, err
	}
	out, err = keys.AppendValue(dst, f.Type, v)
	return out, false, err
}

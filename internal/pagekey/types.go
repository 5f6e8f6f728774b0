package pagekey

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"

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
		if err := want(6); err != nil {
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
	if len(stored) != DecimalBytes(precision, scale) || len(stored) == 0 {
		return "", fmt.Errorf("%d bytes stored for DECIMAL(%d,%d), want %d", len(stored), precision, scale, DecimalBytes(precision, scale))
	}
	b := append([]byte{}, stored...)
	neg := b[0]&0x80 == 0
	b[0] ^= 0x80
	if neg {
		for i := range b {
			b[i] = ^b[i]
		}
	}
	intg := precision - scale
	var intDigits, fracDigits strings.Builder
	take := func(n int) uint64 {
		v := beUint(b[:n])
		b = b[n:]
		return v
	}
	group := func(sb *strings.Builder, digits, nbytes int) error {
		v := take(nbytes)
		s := strconv.FormatUint(v, 10)
		if len(s) > digits {
			return fmt.Errorf("a group of %d digits holds %d", digits, v)
		}
		sb.WriteString(strings.Repeat("0", digits-len(s)) + s)
		return nil
	}
	if lead := intg % 9; lead > 0 {
		if err := group(&intDigits, lead, digitsBytes[lead]); err != nil {
			return "", err
		}
	}
	for i := 0; i < intg/9; i++ {
		if err := group(&intDigits, 9, 4); err != nil {
			return "", err
		}
	}
	for i := 0; i < scale/9; i++ {
		if err := group(&fracDigits, 9, 4); err != nil {
			return "", err
		}
	}
	if trail := scale % 9; trail > 0 {
		if err := group(&fracDigits, trail, digitsBytes[trail]); err != nil {
			return "", err
		}
	}
	ip := strings.TrimLeft(intDigits.String(), "0")
	if ip == "" {
		ip = "0"
	}
	s := ip
	if scale > 0 {
		s += "." + fracDigits.String()
	}
	if neg && strings.Trim(ip+fracDigits.String(), "0") != "" {
		s = "-" + s
	}
	return s, nil
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
		f := &l.Fields[i]
		if b == nil {
			dst = append(dst, `\N`...)
			continue
		}
		switch t := f.Type; {
		case (t.Kind == keys.Int || t.Kind == keys.Uint) && len(b) == t.Size:
			if f.Unsigned {
				dst = strconv.AppendUint(dst, beUint(b), 10)
			} else {
				dst = strconv.AppendInt(dst, signedFromStored(beUint(b), t.Size), 10)
			}
			continue
		}
		v, err := decodeValue(f, b, false)
		if err != nil {
			return dst, fmt.Errorf("%w: page %d record at %d: %w", ErrCorrupt, p.Number(), o, err)
		}
		if dst, err = keys.AppendValue(dst, f.Type, v); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

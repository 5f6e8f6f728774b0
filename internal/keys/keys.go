// Package keys is the portable form of an index key: typed values that name a position in
// an index on any copy of the data (a logical replica, a rebuilt table, another flavor),
// where a page number names a position only on a page-for-page copy.
//
// A Key is the values of an index's key fields in index order; Columns describe them once
// per index (type, charset and collation, prefix length). A key read from one server can
//
//   - be written as text and read back exactly (AppendKey, ParseKey), the form manifests
//     carry (docs/manifest-format.md);
//   - be written as SQL literals another server compares exactly as the source did
//     (Literal; strings as hex bytes with their charset, TIMESTAMP in UTC: see Literal);
//   - be compared in Go where the column's order is the order of its bytes or numbers
//     (Compare; Comparable says where: integers, decimals, dates and times, binary strings
//     and binary collations, ENUM and SET by their numbers). Strings in other collations
//     (case- and accent-insensitive ones, which are most) compare by the collation's
//     weights, which only the server knows: compare those with SQL.
//
// InnoDB's hidden row id (DB_ROW_ID, the key of a table without a primary or unique NOT
// NULL key) is a counter the server assigns as rows arrive: the same row has another id on
// any other copy, so it is no portable key (RowID; Literal refuses it).
package keys

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Kind is what a key field holds.
type Kind uint8

// The kinds. Their names are the ones Type.String writes.
const (
	Invalid   Kind = iota
	Int            // TINYINT ... BIGINT, signed (Type.Size bytes: 1, 2, 3, 4 or 8)
	Uint           // the same, UNSIGNED
	Float          // FLOAT
	Double         // DOUBLE (REAL)
	Decimal        // DECIMAL(Precision, Scale)
	Date           // DATE
	Datetime       // DATETIME(Scale)
	Timestamp      // TIMESTAMP(Scale), carried in UTC
	Time           // TIME(Scale)
	Year           // YEAR
	Char           // CHAR in a character set: trailing spaces carry no meaning
	Varchar        // VARCHAR, and TEXT key prefixes
	Binary         // BINARY(Size): fixed length, padded with 0x00
	Varbinary      // VARBINARY, and BLOB key prefixes
	Enum           // ENUM, by its number (1 for the first member)
	Set            // SET, as its bitmap (Type.Size bytes)
	Bit            // BIT(Size bits)
	RowID          // InnoDB's hidden DB_ROW_ID: not portable
)

var kindNames = [...]string{
	Invalid: "invalid", Int: "int", Uint: "uint", Float: "float", Double: "double", Decimal: "decimal",
	Date: "date", Datetime: "datetime", Timestamp: "timestamp", Time: "time", Year: "year",
	Char: "char", Varchar: "varchar", Binary: "binary", Varbinary: "varbinary",
	Enum: "enum", Set: "set", Bit: "bit", RowID: "rowid",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind" + strconv.Itoa(int(k))
}

// IsString says whether values of the kind are byte strings (Value.Bytes).
func (k Kind) IsString() bool { return k == Char || k == Varchar || k == Binary || k == Varbinary }

// hasCharset: character strings, whose Type names a collation.
func (k Kind) hasCharset() bool { return k == Char || k == Varchar }

// Type is a key field's type: enough to read and write its values exactly and to say
// how they compare.
type Type struct {
	Kind Kind
	// Size is the integer's bytes (Int, Uint: 1, 2, 3, 4, 8), the SET's bytes (1-4, 8),
	// BIT's bits, BINARY's length in bytes; 0 otherwise.
	Size int
	// Precision and Scale of a DECIMAL; Scale is also the fractional seconds digits (0-6)
	// of DATETIME, TIMESTAMP and TIME.
	Precision, Scale int
	// Collation of a character string (Char, Varchar), e.g. utf8mb4_0900_ai_ci: the
	// values are bytes in its character set.
	Collation string
	// Prefix is the key part's length in characters (bytes for binary strings) when the
	// index holds only a prefix of the column (information_schema.STATISTICS.SUB_PART);
	// 0 for the whole column. A key with a prefix field is a prefix of the column values.
	Prefix int
}

// Charset is the character set of a character string's collation: the part of its name
// before the first underscore (utf8mb4_0900_ai_ci: utf8mb4), which holds for every
// collation both servers ship. "binary" for binary strings.
func (t Type) Charset() string {
	if !t.Kind.hasCharset() {
		return "binary"
	}
	cs, _, _ := strings.Cut(t.Collation, "_")
	return cs
}

// String is the type's text form: KIND, then (ARGS) where the kind has any, @COLLATION
// for character strings and /PREFIX for a prefix key part: int4, uint8, decimal(12,4),
// datetime(3), varchar@utf8mb4_0900_ai_ci/20, binary(16).
func (t Type) String() string {
	var b strings.Builder
	b.WriteString(t.Kind.String())
	switch t.Kind {
	case Int, Uint, Set, Bit, Binary:
		b.WriteString(strconv.Itoa(t.Size))
	case Decimal:
		fmt.Fprintf(&b, "(%d,%d)", t.Precision, t.Scale)
	case Datetime, Timestamp, Time:
		fmt.Fprintf(&b, "(%d)", t.Scale)
	}
	if t.Kind.hasCharset() {
		b.WriteString("@" + t.Collation)
	}
	if t.Prefix > 0 {
		b.WriteString("/" + strconv.Itoa(t.Prefix))
	}
	return b.String()
}

// ParseType reads Type.String's form.
func ParseType(s string) (Type, error) {
	bad := func(why string) (Type, error) { return Type{}, fmt.Errorf("key type %q: %s", s, why) }
	rest := s
	var t Type
	if i := strings.LastIndexByte(rest, '/'); i >= 0 {
		n, err := strconv.Atoi(rest[i+1:])
		if err != nil || n <= 0 {
			return bad("bad prefix length")
		}
		t.Prefix, rest = n, rest[:i]
	}
	if i := strings.IndexByte(rest, '@'); i >= 0 {
		t.Collation, rest = rest[i+1:], rest[:i]
		if t.Collation == "" {
			return bad("empty collation")
		}
	}
	name, args := rest, ""
	if i := strings.IndexByte(rest, '('); i >= 0 {
		if !strings.HasSuffix(rest, ")") {
			return bad("unclosed (")
		}
		name, args = rest[:i], rest[i+1:len(rest)-1]
	}
	// Sized kinds end in digits.
	digits := len(name)
	for digits > 0 && name[digits-1] >= '0' && name[digits-1] <= '9' {
		digits--
	}
	if digits < len(name) && args == "" {
		n, _ := strconv.Atoi(name[digits:])
		name, t.Size = name[:digits], n
	}
	for k, n := range kindNames {
		if n == name && Kind(k) != Invalid {
			t.Kind = Kind(k)
		}
	}
	if t.Kind == Invalid {
		return bad("unknown kind")
	}
	switch t.Kind {
	case Int, Uint:
		if t.Size != 1 && t.Size != 2 && t.Size != 3 && t.Size != 4 && t.Size != 8 {
			return bad("integer size must be 1, 2, 3, 4 or 8 bytes")
		}
	case Set:
		if t.Size < 1 || t.Size > 8 {
			return bad("SET size must be 1 to 8 bytes")
		}
	case Bit:
		if t.Size < 1 || t.Size > 64 {
			return bad("BIT size must be 1 to 64 bits")
		}
	case Binary:
		if t.Size < 0 || t.Size > 255 {
			return bad("BINARY size must be 0 to 255 bytes")
		}
	default:
		if t.Size != 0 {
			return bad("no size expected")
		}
	}
	switch t.Kind {
	case Decimal:
		p, sc, ok := strings.Cut(args, ",")
		var err1, err2 error
		t.Precision, err1 = strconv.Atoi(p)
		t.Scale, err2 = strconv.Atoi(sc)
		if !ok || err1 != nil || err2 != nil || t.Precision < 1 || t.Precision > 65 || t.Scale < 0 || t.Scale > 30 || t.Scale > t.Precision {
			return bad("want decimal(PRECISION,SCALE)")
		}
	case Datetime, Timestamp, Time:
		n, err := strconv.Atoi(args)
		if err != nil || n < 0 || n > 6 {
			return bad("want fractional digits 0 to 6")
		}
		t.Scale = n
	default:
		if args != "" {
			return bad("no arguments expected")
		}
	}
	if t.Kind.hasCharset() != (t.Collation != "") {
		return bad("character strings, and only they, name a collation")
	}
	if t.Prefix > 0 && !t.Kind.IsString() {
		return bad("only strings have prefix key parts")
	}
	return t, nil
}

// Column is one key field: the column's name and type, and its order in the index.
type Column struct {
	Name string
	Type Type
	// Desc: the field is a descending key part (KEY (c DESC): MariaDB 10.8+, MySQL 8.0+),
	// ordered from its greatest value to its least, NULL last. A secondary index's
	// appended primary key fields keep the primary key's order. The stored bytes are the
	// same either way; only the order differs.
	Desc bool
}

// Columns are an index's key fields in order.
type Columns []Column

// Portable says whether keys over these columns name rows on another copy of the data:
// not when the key is InnoDB's hidden row id alone (the hidden clustered index). A key
// that ends with it (a secondary index of a table without a primary key) is portable up to
// it (PortableFields).
func (cs Columns) Portable() bool { return cs.PortableFields() > 0 }

// Exact says whether a key over these columns names one position in the index: no field
// is a prefix of its column, and none is the hidden row id (which keys leave out, see
// Portable). Otherwise rows that share the key's portable part can sit on both sides of a
// page boundary, so a range's high key must be taken as inclusive.
func (cs Columns) Exact() bool {
	for _, c := range cs {
		if c.Type.Prefix > 0 || c.Type.Kind == RowID {
			return false
		}
	}
	return true
}

// PortableFields is how many leading fields of a key over these columns another copy
// shares: all of them, or those before the hidden row id (a secondary index of a table
// without a primary key ends with it; the hidden clustered index is nothing else).
func (cs Columns) PortableFields() int {
	for i, c := range cs {
		if c.Type.Kind == RowID {
			return i
		}
	}
	return len(cs)
}

// Value is one field of a key. Which member holds it depends on the kind:
//
//	Int, Year (the year, 0 for 0000)          I
//	Date                                      I = yyyymmdd (0 for 0000-00-00)
//	Datetime                                  I = yyyymmddhhmmss, Micro
//	Timestamp (UTC)                           I = seconds since 1970 (0: the zero timestamp), Micro
//	Time                                      I = signed microseconds
//	Uint, Enum, Set, Bit, RowID               U
//	Float, Double                             F
//	Decimal                                   Bytes = its text, e.g. -12.3400 (Scale digits after the point)
//	Char, Varchar, Binary, Varbinary          Bytes = the stored bytes in the column's charset
//	                                          (Char without its trailing spaces)
type Value struct {
	Null  bool
	I     int64
	U     uint64
	F     float64
	Micro int32
	Bytes []byte
}

// Key is the values of a key's fields, in index order.
type Key []Value

// ErrNotPortable is returned for InnoDB's hidden row id, which no other copy shares.
var ErrNotPortable = errors.New("InnoDB's hidden row id (DB_ROW_ID) is no portable key: another copy numbers its rows otherwise")

// Null is the SQL NULL value.
var Null = Value{Null: true}

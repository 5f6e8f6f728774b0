package pagekey

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"testing"

	"github.com/innowarm/innowarm/internal/keys"
)

// Stored forms worked out by hand from the formats (strings/decimal.cc's decimal2bin and
// its documented example, my_time.cc's packed temporal forms, InnoDB's integers).
func TestDecodeStoredValues(t *testing.T) {
	utf8 := Charset{Name: "utf8mb4", MinLen: 1, MaxLen: 4}
	ucs2 := Charset{Name: "ucs2", MinLen: 2, MaxLen: 2}
	for _, c := range []struct {
		name   string
		f      Field
		stored string // hex
		want   string // keys text form
	}{
		{"tinyint -1", Field{Type: keys.Type{Kind: keys.Int, Size: 1}}, "7f", "-1"},
		{"tinyint min", Field{Type: keys.Type{Kind: keys.Int, Size: 1}}, "00", "-128"},
		{"tinyint 0", Field{Type: keys.Type{Kind: keys.Int, Size: 1}}, "80", "0"},
		{"mediumint -8388608", Field{Type: keys.Type{Kind: keys.Int, Size: 3}}, "000000", "-8388608"},
		{"int 1", Field{Type: keys.Type{Kind: keys.Int, Size: 4}}, "80000001", "1"},
		{"bigint min", Field{Type: keys.Type{Kind: keys.Int, Size: 8}}, "0000000000000000", "-9223372036854775808"},
		{"bigint unsigned max", Field{Type: keys.Type{Kind: keys.Uint, Size: 8}, Unsigned: true}, "ffffffffffffffff", "18446744073709551615"},
		{"smallint unsigned", Field{Type: keys.Type{Kind: keys.Uint, Size: 2}, Unsigned: true}, "0102", "258"},
		{"decimal(14,4) documented", Field{Type: keys.Type{Kind: keys.Decimal, Precision: 14, Scale: 4}}, "810dfb38d204d2", "1234567890.1234"},
		{"decimal(14,4) negative", Field{Type: keys.Type{Kind: keys.Decimal, Precision: 14, Scale: 4}}, "7ef204c72dfb2d", "-1234567890.1234"},
		{"decimal(5,2)", Field{Type: keys.Type{Kind: keys.Decimal, Precision: 5, Scale: 2}}, "807b2d", "123.45"},
		{"decimal(5,2) negative", Field{Type: keys.Type{Kind: keys.Decimal, Precision: 5, Scale: 2}}, "7f84d2", "-123.45"},
		{"decimal(5,2) zero", Field{Type: keys.Type{Kind: keys.Decimal, Precision: 5, Scale: 2}}, "800000", "0.00"},
		{"decimal(3,3)", Field{Type: keys.Type{Kind: keys.Decimal, Precision: 3, Scale: 3}}, "81f4", "0.500"},
		{"date", Field{Type: keys.Type{Kind: keys.Date}}, "8fd05d", "2024-02-29"},
		{"date zero", Field{Type: keys.Type{Kind: keys.Date}}, "800000", "0000-00-00"},
		{"datetime(0)", Field{Type: keys.Type{Kind: keys.Datetime}}, "998dd4b5a1", "2012-11-10T11:22:33"},
		{"datetime(2)", Field{Type: keys.Type{Kind: keys.Datetime, Scale: 2}}, "998dd4b5a10c", "2012-11-10T11:22:33.12"},
		{"datetime(4)", Field{Type: keys.Type{Kind: keys.Datetime, Scale: 4}}, "998dd4b5a104d2", "2012-11-10T11:22:33.1234"},
		{"datetime(6)", Field{Type: keys.Type{Kind: keys.Datetime, Scale: 6}}, "998dd4b5a101e240", "2012-11-10T11:22:33.123456"},
		{"timestamp(0)", Field{Type: keys.Type{Kind: keys.Timestamp}}, "65e08e45", "2024-02-29T14:01:41Z"},
		{"timestamp(3)", Field{Type: keys.Type{Kind: keys.Timestamp, Scale: 3}}, "65e08e450bb8", "2024-02-29T14:01:41.300Z"},
		{"time(0) zero", Field{Type: keys.Type{Kind: keys.Time}}, "800000", "00:00:00"},
		{"time(0) -1s", Field{Type: keys.Type{Kind: keys.Time}}, "7fffff", "-00:00:01"},
		{"time(0) 838h", Field{Type: keys.Type{Kind: keys.Time}}, "b46efb", "838:59:59"},
		{"time(1) -0.1s", Field{Type: keys.Type{Kind: keys.Time, Scale: 1}}, "7ffffff6", "-00:00:00.1"},
		{"time(4) -1.5s", Field{Type: keys.Type{Kind: keys.Time, Scale: 4}}, "7ffffeec78", "-00:00:01.5000"},
		{"time(6) -1h", Field{Type: keys.Type{Kind: keys.Time, Scale: 6}}, "7fefffffffff", "-01:00:00.000001"},
		{"year", Field{Type: keys.Type{Kind: keys.Year}, Unsigned: true}, "7c", "2024"},
		{"year 0000", Field{Type: keys.Type{Kind: keys.Year}, Unsigned: true}, "00", "0"},
		{"enum", Field{Type: keys.Type{Kind: keys.Enum}, Unsigned: true}, "03", "3"},
		{"set 8 bytes", Field{Type: keys.Type{Kind: keys.Set, Size: 8}, Unsigned: true}, "8000000000000001", "9223372036854775809"},
		{"bit(10)", Field{Type: keys.Type{Kind: keys.Bit, Size: 10}, Unsigned: true}, "03ff", "1023"},
		{"row id", Field{Type: keys.Type{Kind: keys.RowID}}, "000000000201", "513"},
		{"char utf8mb4 padded", Field{Type: keys.Type{Kind: keys.Char, Collation: "utf8mb4_bin"}, Charset: utf8}, "c3bc2020", "'ü"},
		{"char ucs2 padded", Field{Type: keys.Type{Kind: keys.Char, Collation: "ucs2_bin"}, Charset: ucs2}, "00610020", "'%00a"},
		{"varchar keeps spaces", Field{Type: keys.Type{Kind: keys.Varchar, Collation: "utf8mb4_bin"}, Charset: utf8}, "6120", "'a%20"},
		{"binary keeps zeros", Field{Type: keys.Type{Kind: keys.Binary, Size: 3}}, "610000", "0x610000"},
	} {
		stored, _ := hex.DecodeString(c.stored)
		v, err := decodeValue(&c.f, stored, true)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		got, err := keys.AppendValue(nil, c.f.Type, v)
		if err != nil || string(got) != c.want {
			t.Errorf("%s: %s decodes to %q (%v), want %q", c.name, c.stored, got, err, c.want)
		}
	}
	fl := make([]byte, 4)
	binary.LittleEndian.PutUint32(fl, math.Float32bits(-1.5))
	if v, err := decodeValue(&Field{Type: keys.Type{Kind: keys.Float}}, fl, true); err != nil || v.F != -1.5 {
		t.Errorf("float: %v %v", v, err)
	}
	db := make([]byte, 8)
	binary.LittleEndian.PutUint64(db, math.Float64bits(1e300))
	if v, err := decodeValue(&Field{Type: keys.Type{Kind: keys.Double}}, db, true); err != nil || v.F != 1e300 {
		t.Errorf("double: %v %v", v, err)
	}
	// Wrong sizes are corruption, not a value.
	for _, f := range []Field{{Type: keys.Type{Kind: keys.Int, Size: 4}}, {Type: keys.Type{Kind: keys.Datetime, Scale: 3}}, {Type: keys.Type{Kind: keys.Decimal, Precision: 5, Scale: 2}}, {Type: keys.Type{Kind: keys.Double}}} {
		if v, err := decodeValue(&f, []byte{1, 2}, true); err == nil {
			t.Errorf("%s from 2 bytes: %+v", f.Type, v)
		}
	}
}

func TestDecimalBytes(t *testing.T) {
	for _, c := range []struct{ p, s, want int }{{1, 0, 1}, {9, 0, 4}, {10, 0, 5}, {14, 4, 7}, {65, 30, 30}, {9, 9, 4}, {20, 5, 10}} {
		if got := DecimalBytes(c.p, c.s); got != c.want {
			t.Errorf("DECIMAL(%d,%d): %d bytes, want %d", c.p, c.s, got, c.want)
		}
	}
}

// pageBuilder writes a COMPACT index page with one INT NOT NULL key, as InnoDB lays it out:
// infimum and supremum, then records each pointing to the next.
func compactIntPage(level int, ks []int32, children []uint32) Page {
	p := make(Page, 16384)
	binary.BigEndian.PutUint32(p[filPageOffset:], 7)
	binary.BigEndian.PutUint16(p[filPageType:], typeIndex)
	binary.BigEndian.PutUint16(p[pageHeader+pageNHeap:], 0x8000|uint16(2+len(ks)))
	binary.BigEndian.PutUint16(p[pageHeader+pageNRecs:], uint16(len(ks)))
	binary.BigEndian.PutUint16(p[pageHeader+pageLevel:], uint16(level))
	p[infimumCompact-3] = statusInfimum
	p[supremumCompact-3] = statusSupremum
	copy(p[infimumCompact:], "infimum\x00")
	copy(p[supremumCompact:], "supremum")
	status := byte(statusOrdinary)
	if level > 0 {
		status = statusNodePtr
	}
	prev, at := infimumCompact, 125
	for i, k := range ks {
		p[at-3] = status
		binary.BigEndian.PutUint16(p[prev-2:], uint16(at-prev))
		binary.BigEndian.PutUint32(p[at:], uint32(k)^1<<31)
		size := 4
		if level > 0 {
			binary.BigEndian.PutUint32(p[at+4:], children[i])
			size += 4
		}
		prev, at = at, at+size+5
	}
	binary.BigEndian.PutUint16(p[prev-2:], uint16(supremumCompact-prev))
	return p
}

var intLayout = &Layout{Fields: []Field{{Name: "id", Type: keys.Type{Kind: keys.Int, Size: 4}, FixedLen: 4}}, Format: MySQLRecords}

func TestSyntheticPages(t *testing.T) {
	leaf := compactIntPage(0, []int32{-5, 0, 7}, nil)
	recs, err := intLayout.Records(leaf)
	if err != nil || len(recs) != 3 || recs[0].Key[0].I != -5 || recs[2].Key[0].I != 7 {
		t.Fatalf("leaf records %+v, %v", recs, err)
	}
	node := compactIntPage(1, []int32{-100, 50}, []uint32{10, 11})
	ptrs, err := intLayout.NodePointers(node)
	if err != nil || len(ptrs) != 2 || ptrs[1].Child != 11 || ptrs[1].Key[0].I != 50 {
		t.Fatalf("node pointers %+v, %v", ptrs, err)
	}
	if _, err := intLayout.NodePointers(leaf); err == nil {
		t.Error("node pointers of a leaf page")
	}
	// A record list that loops, or points out of the page, is corruption.
	loop := compactIntPage(0, []int32{1, 2}, nil)
	binary.BigEndian.PutUint16(loop[125+9-2:], 0xfff7) // -9: back to the first record
	if _, err := intLayout.Records(loop); !errors.Is(err, ErrCorrupt) {
		t.Errorf("looping list: %v", err)
	}
	out := compactIntPage(0, []int32{1}, nil)
	binary.BigEndian.PutUint16(out[125-2:], 0x3ff0)
	if _, err := intLayout.Records(out); !errors.Is(err, ErrCorrupt) {
		t.Errorf("list out of the page: %v", err)
	}
	if _, _, err := intLayout.FirstKey(make(Page, 16384)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("zeroed page: %v", err)
	}
}

// FuzzRecords: no page, however damaged, makes the decoder panic or loop.
func FuzzRecords(f *testing.F) {
	f.Add([]byte(compactIntPage(0, []int32{1, 2, 3}, nil)), uint8(0))
	f.Add([]byte(compactIntPage(1, []int32{1, 2}, []uint32{4, 5})), uint8(1))
	layouts := []*Layout{
		intLayout,
		{Fields: []Field{{Name: "s", Type: keys.Type{Kind: keys.Varchar, Collation: "utf8mb4_bin"}, Nullable: true, Big: true}, {Name: "d", Type: keys.Type{Kind: keys.Datetime, Scale: 6}, FixedLen: 8}}, Nulls: Nulls{Plain: 3, ByVersion: []int{3, 4}}, Format: MySQLRecords},
		{Fields: []Field{{Name: "s", Type: keys.Type{Kind: keys.Char, Collation: "utf8mb4_bin"}, Nullable: true}}, Nulls: Nulls{Plain: 1, CoreFields: 4, ByFieldCount: []int{0, 1, 1, 1, 1, 2, 3}}, Format: MariaDBRecords},
	}
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		p := make(Page, 16384)
		copy(p, data)
		l := layouts[int(which)%len(layouts)]
		_, _ = l.Records(p)
		_, _, _ = l.FirstKey(p)
		_, _ = l.NodePointers(p)
	})
}

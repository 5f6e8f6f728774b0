package keys

import (
	"errors"
	"math"
	"reflect"
	"testing"
)

func TestTypeTextRoundTrip(t *testing.T) {
	for _, s := range []string{
		"int1", "int2", "int3", "int4", "int8", "uint1", "uint8", "float", "double",
		"decimal(65,30)", "decimal(1,0)", "decimal(10,2)", "date", "datetime(0)", "datetime(6)",
		"timestamp(3)", "time(0)", "time(6)", "year", "char@utf8mb4_0900_ai_ci", "varchar@latin1_swedish_ci/10",
		"binary16", "binary0", "varbinary", "varbinary/8", "enum", "set1", "set8", "bit1", "bit64", "rowid",
		"varchar@utf8mb4_uca1400_ai_ci",
	} {
		typ, err := ParseType(s)
		if err != nil {
			t.Errorf("%s: %v", s, err)
			continue
		}
		if got := typ.String(); got != s {
			t.Errorf("%s reads as %+v, writes %s", s, typ, got)
		}
	}
	for _, s := range []string{"", "int", "int5", "uint16", "decimal", "decimal(66,0)", "decimal(5,6)", "datetime(7)", "datetime", "char", "varchar@", "int4@latin1_bin", "int4/3", "set9", "bit0", "bit65", "foo", "binary256", "date(1)", "year2"} {
		if typ, err := ParseType(s); err == nil {
			t.Errorf("%q accepted as %+v", s, typ)
		}
	}
}

func TestValueTextRoundTrip(t *testing.T) {
	ty := func(s string) Type {
		typ, err := ParseType(s)
		if err != nil {
			t.Fatal(err)
		}
		return typ
	}
	cases := []struct {
		typ  string
		v    Value
		text string
	}{
		{"int1", Value{I: -128}, "-128"},
		{"int8", Value{I: math.MinInt64}, "-9223372036854775808"},
		{"int4", Value{I: 0}, "0"},
		{"uint8", Value{U: math.MaxUint64}, "18446744073709551615"},
		{"uint3", Value{U: 1<<24 - 1}, "16777215"},
		{"float", Value{F: float64(float32(1.1))}, "1.1"},
		{"double", Value{F: -1.5e300}, "-1.5e+300"},
		{"decimal(10,2)", Value{Bytes: []byte("-12345678.90")}, "-12345678.90"},
		{"decimal(5,0)", Value{Bytes: []byte("0")}, "0"},
		{"decimal(5,5)", Value{Bytes: []byte("-0.00001")}, "-0.00001"},
		{"date", Value{I: 20240229}, "2024-02-29"},
		{"date", Value{I: 0}, "0000-00-00"},
		{"datetime(0)", Value{I: 99991231235959}, "9999-12-31T23:59:59"},
		{"datetime(3)", Value{I: 10000101000000, Micro: 250000}, "1000-01-01T00:00:00.250"},
		{"datetime(6)", Value{I: 20240229130405, Micro: 1}, "2024-02-29T13:04:05.000001"},
		{"timestamp(2)", Value{I: 1709211845, Micro: 120000}, "2024-02-29T13:04:05.12Z"},
		{"timestamp(0)", Value{I: 0}, "0000-00-00T00:00:00Z"},
		{"time(0)", Value{I: -838*3600e6 - 59*60e6 - 59e6}, "-838:59:59"},
		{"time(6)", Value{I: -1500000}, "-00:00:01.500000"},
		{"time(1)", Value{I: 100*3600e6 + 100000}, "100:00:00.1"},
		{"year", Value{I: 2155}, "2155"},
		{"year", Value{I: 0}, "0"},
		{"char@utf8mb4_general_ci", Value{Bytes: []byte("Müller, 100% net")}, "'Müller%2C%20100%25%20net"},
		{"varchar@latin1_swedish_ci", Value{Bytes: []byte{'c', 0xE9}}, "'c%E9"},
		{"varchar@utf8mb4_bin", Value{Bytes: []byte{}}, "'"},
		{"varchar@utf8mb4_bin", Value{Bytes: []byte(`\N`)}, `'\N`},
		{"varchar@utf8mb4_bin", Value{Bytes: []byte("tab\there\nnul\x00\u00a0'")}, "'tab%09here%0Anul%00%C2%A0'"},
		{"binary4", Value{Bytes: []byte{0, 1, 0xfe, 0xff}}, "0x0001feff"},
		{"varbinary", Value{Bytes: []byte{}}, "0x"},
		{"enum", Value{U: 3}, "3"},
		{"set8", Value{U: 1 << 63}, "9223372036854775808"},
		{"bit12", Value{U: 4095}, "4095"},
		{"rowid", Value{U: 1<<48 - 1}, "281474976710655"},
		{"int4", Null, `\N`},
		{"varchar@utf8mb4_bin", Null, `\N`},
	}
	for _, c := range cases {
		typ := ty(c.typ)
		got, err := AppendValue(nil, typ, c.v)
		if err != nil || string(got) != c.text {
			t.Errorf("%s %+v: wrote %q (%v), want %q", c.typ, c.v, got, err, c.text)
			continue
		}
		back, err := ParseValue(typ, got)
		if err != nil {
			t.Errorf("%s %q: %v", c.typ, got, err)
			continue
		}
		if typ.Kind.IsString() && !back.Null && back.Bytes == nil {
			back.Bytes = []byte{}
		}
		if !reflect.DeepEqual(back, c.v) {
			t.Errorf("%s %q reads as %+v, want %+v", c.typ, got, back, c.v)
		}
	}
	for _, c := range []struct{ typ, text string }{
		{"int1", "128"}, {"int1", "01"}, {"int4", "-0"}, {"int4", "+1"}, {"int4", ""}, {"uint1", "256"}, {"uint8", "-1"},
		{"decimal(5,2)", "1234.00"}, {"decimal(5,2)", "1.0"}, {"decimal(5,2)", "-0.00"}, {"decimal(5,2)", "01.00"},
		{"date", "2024-2-29"}, {"date", "2024-13-01"}, {"datetime(0)", "2024-02-29 13:04:05"}, {"datetime(2)", "2024-02-29T13:04:05.1"},
		{"datetime(0)", "2024-02-29T24:00:00"}, {"timestamp(0)", "2024-02-29T13:04:05"}, {"timestamp(0)", "2040-02-30T13:04:05Z"},
		{"timestamp(0)", "2110-01-01T00:00:00Z"}, {"time(0)", "-00:00:00"}, {"time(0)", "839:00:00"}, {"year", "1900"},
		{"varchar@utf8mb4_bin", "abc"}, {"varchar@utf8mb4_bin", "'a%4"}, {"varchar@utf8mb4_bin", "'a\tb"},
		{"binary2", "0x00"}, {"varbinary", "00ff"}, {"varbinary", "0xzz"}, {"rowid", "281474976710656"}, {"bit3", "8"},
		{"double", "NaN"}, {"double", "1e999"},
	} {
		if v, err := ParseValue(ty(c.typ), []byte(c.text)); err == nil {
			t.Errorf("%s %q accepted as %+v", c.typ, c.text, v)
		}
	}
}

func TestKeyAndColumnsText(t *testing.T) {
	cs := Columns{
		{Name: "a,b:c", Type: Type{Kind: Int, Size: 4}},
		{Name: "名前", Type: Type{Kind: Varchar, Collation: "utf8mb4_0900_ai_ci", Prefix: 10}},
		{Name: "", Type: Type{Kind: Datetime, Scale: 3}, Desc: true},
	}
	text := AppendColumns(nil, cs)
	if string(text) != "a%2Cb%3Ac:int4,名前:varchar@utf8mb4_0900_ai_ci/10,:datetime(3):desc" {
		t.Errorf("columns written %s", text)
	}
	back, err := ParseColumns(text)
	if err != nil || !reflect.DeepEqual(back, cs) {
		t.Fatalf("columns read back %+v, %v", back, err)
	}
	// A type's arguments hold commas (decimal(14,2)), and a name may hold parentheses: a
	// list of such columns, as every version writes it, reads back whole.
	withDecimals := Columns{
		{Name: "f(x,y)", Type: Type{Kind: Decimal, Precision: 14, Scale: 2}},
		{Name: "e", Type: Type{Kind: Decimal, Precision: 5, Scale: 0}, Desc: true},
		{Name: "id", Type: Type{Kind: Decimal, Precision: 30, Scale: 10}},
		{Name: "ts", Type: Type{Kind: Timestamp, Scale: 6}},
	}
	text = AppendColumns(nil, withDecimals)
	if string(text) != "f(x%2Cy):decimal(14,2),e:decimal(5,0):desc,id:decimal(30,10),ts:timestamp(6)" {
		t.Errorf("columns written %s", text)
	}
	if back, err := ParseColumns(text); err != nil || !reflect.DeepEqual(back, withDecimals) {
		t.Errorf("columns with decimals read back %+v, %v", back, err)
	}
	k := Key{{I: -7}, {Bytes: []byte("x,y")}, Null}
	kt, err := AppendKey(nil, cs, k)
	if err != nil || string(kt) != `-7,'x%2Cy,\N` {
		t.Fatalf("key written %s, %v", kt, err)
	}
	kb, err := ParseKey(cs, kt)
	if err != nil || !reflect.DeepEqual(kb, k) {
		t.Fatalf("key read back %+v, %v", kb, err)
	}
	// A prefix of the key reads; more fields than columns do not.
	if kb, err := ParseKey(cs, []byte("-7")); err != nil || len(kb) != 1 {
		t.Errorf("prefix key: %+v, %v", kb, err)
	}
	for _, bad := range []string{"", "-7,'a,\\N,1", "-7,", ",'a"} {
		if kb, err := ParseKey(cs, []byte(bad)); err == nil {
			t.Errorf("key %q accepted as %+v", bad, kb)
		}
	}
	for _, bad := range []string{"k:int4:asc", "k:int4:desc:desc", "k:int4:", "k:desc", "k:decimal(5,2", "k:decimal(5,2),", "k:decimal5,2)"} {
		if cs, err := ParseColumns([]byte(bad)); err == nil {
			t.Errorf("columns %q accepted as %+v", bad, cs)
		}
	}
	if !cs.Portable() || cs.Exact() {
		t.Errorf("portable %v exact %v", cs.Portable(), cs.Exact())
	}
	if (Columns{{Name: "DB_ROW_ID", Type: Type{Kind: RowID}}}).Portable() {
		t.Error("a row id key is portable")
	}
	withRowID := Columns{{Name: "y", Type: Type{Kind: Int, Size: 4}}, {Name: "DB_ROW_ID", Type: Type{Kind: RowID}}}
	if !withRowID.Portable() || withRowID.PortableFields() != 1 || withRowID.Exact() {
		t.Errorf("a secondary key ending in the row id: portable %v fields %d exact %v", withRowID.Portable(), withRowID.PortableFields(), withRowID.Exact())
	}
}

func TestLiteral(t *testing.T) {
	for _, c := range []struct {
		typ  Type
		v    Value
		want string
	}{
		{Type{Kind: Int, Size: 8}, Value{I: -5}, "-5"},
		{Type{Kind: Uint, Size: 8}, Value{U: math.MaxUint64}, "18446744073709551615"},
		{Type{Kind: Float}, Value{F: float64(float32(1.1))}, "1.100000023841858e+00"},
		{Type{Kind: Decimal, Precision: 6, Scale: 2}, Value{Bytes: []byte("-1.50")}, "-1.50"},
		{Type{Kind: Datetime, Scale: 2}, Value{I: 20240229130405, Micro: 120000}, "'2024-02-29 13:04:05.12'"},
		{Type{Kind: Timestamp}, Value{I: 1709211845}, "'2024-02-29 13:04:05'"},
		{Type{Kind: Time, Scale: 1}, Value{I: -1500000}, "'-00:00:01.5'"},
		{Type{Kind: Varchar, Collation: "utf8mb4_0900_ai_ci"}, Value{Bytes: []byte("Mü")}, "_utf8mb4 X'4dc3bc'"},
		{Type{Kind: Char, Collation: "latin1_swedish_ci"}, Value{Bytes: []byte{}}, "_latin1 X''"},
		{Type{Kind: Varbinary}, Value{Bytes: []byte{0, 0xff}}, "X'00ff'"},
		{Type{Kind: Enum}, Value{U: 2}, "2"},
		{Type{Kind: Int, Size: 4}, Null, "NULL"},
	} {
		got, err := Literal(c.typ, c.v)
		if err != nil || got != c.want {
			t.Errorf("%s %+v: %s (%v), want %s", c.typ, c.v, got, err, c.want)
		}
	}
	if _, err := Literal(Type{Kind: RowID}, Value{U: 1}); !errors.Is(err, ErrNotPortable) {
		t.Errorf("row id literal: %v", err)
	}
}

func TestCompare(t *testing.T) {
	order := func(typ Type, vals ...Value) {
		t.Helper()
		for i := range vals {
			for j := range vals {
				c, err := Compare(typ, vals[i], vals[j])
				if err != nil {
					t.Fatalf("%s: %v", typ, err)
				}
				if want := cmp3(i, j); c != want {
					t.Errorf("%s: compare(%+v, %+v) = %d, want %d", typ, vals[i], vals[j], c, want)
				}
			}
		}
	}
	order(Type{Kind: Int, Size: 8}, Null, Value{I: math.MinInt64}, Value{I: -1}, Value{I: 0}, Value{I: 7})
	order(Type{Kind: Uint, Size: 8}, Null, Value{U: 0}, Value{U: math.MaxUint64})
	order(Type{Kind: Decimal, Precision: 10, Scale: 2}, Value{Bytes: []byte("-100.00")}, Value{Bytes: []byte("-99.99")},
		Value{Bytes: []byte("-0.01")}, Value{Bytes: []byte("0.00")}, Value{Bytes: []byte("0.10")}, Value{Bytes: []byte("9.99")}, Value{Bytes: []byte("10.00")})
	order(Type{Kind: Datetime, Scale: 6}, Value{I: 0}, Value{I: 20240229130405}, Value{I: 20240229130405, Micro: 1}, Value{I: 20240229130406})
	order(Type{Kind: Time, Scale: 6}, Value{I: -3600e6}, Value{I: -1}, Value{I: 0}, Value{I: 3600e6})
	order(Type{Kind: Varbinary}, Value{Bytes: []byte{}}, Value{Bytes: []byte{0}}, Value{Bytes: []byte{0, 0}}, Value{Bytes: []byte{1}})
	// PAD SPACE: 'a' equals 'a  ', and a tab sorts before the pad.
	pad := Type{Kind: Varchar, Collation: "utf8mb4_bin"}
	order(pad, Value{Bytes: []byte("a\t")}, Value{Bytes: []byte("a")}, Value{Bytes: []byte("ab")}, Value{Bytes: []byte("é")})
	if c, _ := Compare(pad, Value{Bytes: []byte("a")}, Value{Bytes: []byte("a  ")}); c != 0 {
		t.Errorf("utf8mb4_bin: 'a' vs 'a  ' = %d", c)
	}
	nopad := Type{Kind: Varchar, Collation: "utf8mb4_0900_bin"}
	order(nopad, Value{Bytes: []byte("a")}, Value{Bytes: []byte("a\t")}, Value{Bytes: []byte("a ")})
	ucs2 := Type{Kind: Char, Collation: "ucs2_bin"}
	if c, _ := Compare(ucs2, Value{Bytes: []byte{0, 'a'}}, Value{Bytes: []byte{0, 'a', 0, ' '}}); c != 0 {
		t.Errorf("ucs2_bin pad: %d", c)
	}
	for _, coll := range []string{"utf8mb4_0900_ai_ci", "utf8mb4_general_ci", "latin1_swedish_ci", "utf16_bin", "utf8mb4_uca1400_ai_ci"} {
		typ := Type{Kind: Varchar, Collation: coll}
		if Comparable(typ) {
			t.Errorf("%s said comparable", coll)
		}
		if _, err := Compare(typ, Value{}, Value{}); !errors.Is(err, ErrNotComparable) {
			t.Errorf("%s: %v", coll, err)
		}
	}
	cs := Columns{{Type: Type{Kind: Int, Size: 4}}, {Type: Type{Kind: Varbinary}}}
	for _, c := range []struct {
		a, b Key
		want int
	}{
		{Key{{I: 1}}, Key{{I: 1}, {Bytes: []byte{0}}}, -1},
		{Key{{I: 2}}, Key{{I: 1}, {Bytes: []byte{0}}}, 1},
		{Key{{I: 1}, Null}, Key{{I: 1}, {Bytes: []byte{}}}, -1},
		{Key{{I: 1}, {Bytes: []byte{1}}}, Key{{I: 1}, {Bytes: []byte{1}}}, 0},
	} {
		if got, err := CompareKeys(cs, c.a, c.b); err != nil || got != c.want {
			t.Errorf("CompareKeys(%v, %v) = %d, %v; want %d", c.a, c.b, got, err, c.want)
		}
	}
	// KEY (k DESC, id): k from its greatest value, NULL last; id ascending within a k; a
	// shorter key still bounds the keys that start with it.
	desc := Columns{{Name: "k", Type: Type{Kind: Int, Size: 4}, Desc: true}, {Name: "id", Type: Type{Kind: Int, Size: 4}}}
	inOrder := []Key{{{I: 9}}, {{I: 9}, {I: 1}}, {{I: 9}, {I: 2}}, {{I: 3}, {I: 1}}, {{I: -4}, {I: 0}}, {Null, {I: 1}}}
	for i := range inOrder {
		for j := range inOrder {
			if got, err := CompareKeys(desc, inOrder[i], inOrder[j]); err != nil || got != cmp3(i, j) {
				t.Errorf("descending: CompareKeys(%v, %v) = %d, %v; want %d", inOrder[i], inOrder[j], got, err, cmp3(i, j))
			}
		}
	}
}

// FuzzValueText: whatever ParseValue accepts writes back to the same text.
func FuzzValueText(f *testing.F) {
	for _, s := range []string{"int4 -5", "decimal(10,2) -1.50", "varchar@utf8mb4_bin 'a%2Cb", "datetime(3) 2024-02-29T13:04:05.250", "time(2) -100:00:00.25", "timestamp(0) 2024-02-29T13:04:05Z", "binary2 0x00ff", "double 1e+300", "float 0.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		typText, valText, ok := cutSpace(in)
		if !ok {
			return
		}
		typ, err := ParseType(typText)
		if err != nil {
			return
		}
		v, err := ParseValue(typ, []byte(valText))
		if err != nil {
			return
		}
		out, err := AppendValue(nil, typ, v)
		if err != nil || string(out) != valText {
			t.Fatalf("%s %q read as %+v writes %q (%v)", typ, valText, v, out, err)
		}
	})
}

func cutSpace(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			return s[:i], s[i+1:], true
		}
	}
	return "", "", false
}

package warm

import (
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/innowarm/innowarm/internal/catalog"
)

func TestIntBounds(t *testing.T) {
	b := intBounds("1", "1000", 4)
	if len(b) != 3 || b[0] != "250" || b[1] != "500" || b[2] != "750" {
		t.Errorf("intBounds = %v", b)
	}
	// BIGINT UNSIGNED beyond int64.
	b = intBounds("0", "18446744073709551615", 2)
	if len(b) != 1 || b[0] != "9223372036854775807" {
		t.Errorf("unsigned bigint = %v", b)
	}
	// Narrow ranges give fewer, distinct boundaries.
	b = intBounds("1", "3", 10)
	if len(b) != 1 || b[0] != "2" {
		t.Errorf("narrow = %v", b)
	}
	if intBounds("5", "5", 4) != nil || intBounds("-10", "10", 2)[0] != "0" {
		t.Error("degenerate or negative ranges")
	}
}

func TestTextBounds(t *testing.T) {
	lo, hi := "00000a3e9b...", "ffff1c2d..."
	b := textBounds(lo, hi, 16)
	if len(b) != 15 {
		t.Fatalf("hex md5 strings: %d boundaries", len(b))
	}
	if !sort.StringsAreSorted(b) || b[0] <= lo || b[len(b)-1] >= hi {
		t.Errorf("boundaries not inside (lo, hi) in order: %q", b)
	}
	// A long common prefix is kept, and the split happens after it.
	b = textBounds("user_000001", "user_999999", 4)
	for _, s := range b {
		if !strings.HasPrefix(s, "user_") {
			t.Errorf("%q lost the common prefix", s)
		}
	}
	// Non-ASCII input yields valid UTF-8 without surrogates or NULs.
	b = textBounds("Ägypten", "Žilina", 8)
	for _, s := range b {
		if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
			t.Errorf("invalid boundary %q", s)
		}
	}
	if textBounds("same", "same", 4) != nil {
		t.Error("equal bounds must not split")
	}
}

func TestBytesAndTimeBounds(t *testing.T) {
	b := bytesBounds([]byte{0x00}, []byte{0xff, 0xff}, 4)
	if len(b) != 3 {
		t.Fatalf("bytes: %v", b)
	}
	for i := 1; i < len(b); i++ {
		if string(b[i].([]byte)) <= string(b[i-1].([]byte)) {
			t.Errorf("bytes not increasing: %x", b)
		}
	}
	tb := timeBounds("2023-01-01", "2023-12-31", 4)
	if len(tb) != 3 || tb[0] != "2023-04-02" {
		t.Errorf("dates: %v", tb)
	}
	tb = timeBounds("2023-01-01 00:00:00", "2023-01-01 00:00:04", 4)
	if len(tb) != 3 || tb[0] != "2023-01-01 00:00:01" {
		t.Errorf("datetimes: %v", tb)
	}
	if timeBounds("0000-00-00", "2023-01-01", 4) != nil {
		t.Error("zero dates must not split")
	}
	fb := floatBounds("0", "1", 4)
	if len(fb) != 3 || fb[1] != "0.5" {
		t.Errorf("floats: %v", fb)
	}
}

func TestRangeConditionCoversNulls(t *testing.T) {
	p := &params{inline: true}
	if got := rangeCondition("c", &KeyRange{High: "m", IncludeNull: true}, p); got != "(`c` < 'm' OR `c` IS NULL)" {
		t.Error(got)
	}
	if got := rangeCondition("c`x", &KeyRange{Low: 5, High: 9}, p); got != "`c``x` >= 5 AND `c``x` < 9" {
		t.Error(got)
	}
	pp := &params{}
	if got := rangeCondition("c", &KeyRange{Low: "it's"}, pp); got != "`c` >= ?" || pp.args[0] != "it's" {
		t.Error(got, pp.args)
	}
}

func TestSplitColumnRules(t *testing.T) {
	intCol := &catalog.Column{Name: "id", DataType: "int"}
	textCol := &catalog.Column{Name: "s", DataType: "varchar", Collation: "utf8mb4_general_ci"}
	enumCol := &catalog.Column{Name: "e", DataType: "enum"}
	cases := []struct {
		name string
		ix   *catalog.Index
		want string
	}{
		{"int column", &catalog.Index{Columns: []catalog.IndexColumn{{Name: "id", Column: intCol}}}, "id"},
		{"prefix of a text column", &catalog.Index{Columns: []catalog.IndexColumn{{Name: "s", Column: textCol, SubPart: 10}}}, ""},
		{"text column first", &catalog.Index{Columns: []catalog.IndexColumn{{Name: "s", Column: textCol}, {Name: "id", Column: intCol}}}, "s"},
		{"enum column", &catalog.Index{Columns: []catalog.IndexColumn{{Name: "e", Column: enumCol}}}, ""},
		{"hidden index", &catalog.Index{Hidden: true}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ""
			if col := splitColumn(c.ix); col != nil {
				got = col.Name
			}
			if got != c.want {
				t.Errorf("split column %q, want %q", got, c.want)
			}
		})
	}
}

func TestParseBudget(t *testing.T) {
	b, err := ParseBudget("70%")
	if err != nil || b.Percent != 70 {
		t.Errorf("70%%: %+v %v", b, err)
	}
	b, err = ParseBudget("2G")
	if err != nil || b.Bytes != 2<<30 {
		t.Errorf("2G: %+v %v", b, err)
	}
	b, err = ParseBudget("4096")
	if err != nil || b.Bytes != 4096 {
		t.Errorf("4096: %+v %v", b, err)
	}
	for _, bad := range []string{"0%", "150%", "x", "-1G", "0", "10", "1k", "4095"} {
		if _, err := ParseBudget(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

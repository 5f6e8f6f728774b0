package warm

import (
	"testing"

	"github.com/innowarm/innowarm/internal/keys"
)

// TestRangeCond: a key run's bounds written out field by field, NULL first, a prefix key
// part ending the exact part of a bound.
func TestRangeCond(t *testing.T) {
	cols := func(s string) keys.Columns {
		cs, err := keys.ParseColumns([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	for _, c := range []struct {
		cols, low, high, want string
	}{
		{"id:int4", "~", "~", "1"},
		{"id:int4", "10", "~", "`id` >= 10"},
		{"id:int4", "~", "20", "`id` < 20"},
		{"id:int4", "10", "20", "`id` >= 10 AND `id` < 20"},
		{"k:int4,id:int4", "5,10", "", "(`k` > 5 OR `k` = 5 AND `id` >= 10)"},
		{"k:int4,id:int4", "5,10", "6,1", "(`k` > 5 OR `k` = 5 AND `id` >= 10) AND (`k` < 6 OR `k` = 6 AND `id` < 1)"},
		{"n:int4,id:int4", "\\N,10", "", "(`n` IS NOT NULL OR `n` IS NULL AND `id` >= 10)"},
		{"n:int4,id:int4", "~", "\\N,7", "`n` IS NULL AND `id` < 7"},
		{"n:int4,id:int4", "~", "3,7", "((`n` < 3 OR `n` IS NULL) OR `n` = 3 AND `id` < 7)"},
		{"n:int4", "~", "\\N", "0"},
		// A prefix key part: the low bound keeps it, the high bound ends before it.
		{"s:varchar@latin1_swedish_ci/3,id:int4", "'abc,4", "'abd,9", "`s` >= _latin1 X'616263'"},
		{"id:int4,s:varchar@latin1_swedish_ci/3", "1,'abc", "2,'abd", "(`id` > 1 OR `id` = 1 AND `s` >= _latin1 X'616263') AND `id` <= 2"},
	} {
		got, err := rangeCond(cols(c.cols), func(col string) bool { return col == "n" }, c.low, c.high)
		if err != nil {
			t.Fatalf("%s %s..%s: %v", c.cols, c.low, c.high, err)
		}
		if got != c.want {
			t.Errorf("%s %s..%s:\n got %s\nwant %s", c.cols, c.low, c.high, got, c.want)
		}
	}
}

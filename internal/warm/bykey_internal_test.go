package warm

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/innowarm/innowarm/internal/keys"
	"github.com/innowarm/innowarm/internal/manifest"
)

// TestRangeCond: a key run's bounds written out field by field in the index's order (NULL
// first, descending fields the other way), a prefix key part ending the exact part of a
// bound.
func TestRangeCond(t *testing.T) {
	cols := func(s string) keys.Columns {
		cs, err := keys.ParseColumns([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	// n and en may be NULL; e and en are ENUMs of 4 members, big one of 300.
	here := columnsHere{
		nullable: func(col string) bool { return col == "n" || col == "en" },
		enumMembers: func(col string) int {
			switch col {
			case "e", "en":
				return 4
			case "big":
				return 300
			}
			return 0
		},
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
		// Descending fields (KEY (k DESC)): greater values first, NULL last; the primary
		// key's fields after them keep their own order.
		{"k:int4:desc", "10", "5", "`k` <= 10 AND `k` > 5"},
		{"k:int4:desc", "~", "5", "`k` > 5"},
		{"k:int4:desc,id:int4", "5,10", "3,1", "(`k` < 5 OR `k` = 5 AND `id` >= 10) AND (`k` > 3 OR `k` = 3 AND `id` < 1)"},
		{"k:int4,id:int4:desc", "5,10", "", "(`k` > 5 OR `k` = 5 AND `id` <= 10)"},
		{"n:int4:desc,id:int4", "3,7", "~", "((`n` < 3 OR `n` IS NULL) OR `n` = 3 AND `id` >= 7)"},
		{"n:int4:desc,id:int4", "\\N,7", "~", "`n` IS NULL AND `id` >= 7"},
		{"n:int4:desc,id:int4", "~", "\\N,7", "(`n` IS NOT NULL OR `n` IS NULL AND `id` < 7)"},
		{"n:int4:desc", "~", "\\N", "`n` IS NOT NULL"},
		{"n:int4:desc", "\\N", "~", "`n` IS NULL"},
		{"n:int4:desc", "2", "~", "(`n` <= 2 OR `n` IS NULL)"},
		// An ENUM's bounds list its members by number (0: the invalid value ''): both
		// servers make ranges of its equalities, not of its < and >.
		{"e:enum,id:int4", "2,10", "3,5", "(`e` IN (3,4) OR `e` = 2 AND `id` >= 10) AND (`e` IN (0,1,2) OR `e` = 3 AND `id` < 5)"},
		{"e:enum", "1", "4", "`e` IN (1,2,3,4) AND `e` IN (0,1,2,3)"},
		{"e:enum,id:int4", "4,1", "~", "`e` = 4 AND `id` >= 1"},
		{"e:enum,id:int4", "0,1", "~", "(`e` IN (1,2,3,4) OR `e` = 0 AND `id` >= 1)"},
		{"e:enum,id:int4", "~", "0,1", "`e` = 0 AND `id` < 1"},
		{"en:enum,id:int4", "~", "0,1", "(`en` IS NULL OR `en` = 0 AND `id` < 1)"},
		{"en:enum,id:int4", "~", "2,1", "((`en` IN (0,1) OR `en` IS NULL) OR `en` = 2 AND `id` < 1)"},
		{"e:enum:desc,id:int4", "3,1", "1,1", "(`e` IN (0,1,2) OR `e` = 3 AND `id` >= 1) AND (`e` IN (2,3,4) OR `e` = 1 AND `id` < 1)"},
		// A member the target lacks (its ENUM is shorter) bounds nothing after it.
		{"e:enum,id:int4", "6,1", "~", "`e` = 6 AND `id` >= 1"},
		// Too many members for a list: a comparison.
		{"big:enum", "2", "~", "`big` >= 2"},
		// A high key of fewer fields sorts before every key that starts with it.
		{"k:int4:desc,id:int4", "~", "3", "`k` > 3"},
		// A descending prefix key part: the high bound keeps it (every value with the
		// prefix is >= it), the low bound stops before it (descendingPrefix keeps such
		// an index off the sql path).
		{"id:int4,s:varchar@latin1_swedish_ci/3:desc", "1,'abd", "2,'abc", "`id` >= 1 AND (`id` < 2 OR `id` = 2 AND `s` >= _latin1 X'616263')"},
	} {
		got, err := rangeCond(cols(c.cols), here, c.low, c.high)
		if err != nil {
			t.Fatalf("%s %s..%s: %v", c.cols, c.low, c.high, err)
		}
		if got != c.want {
			t.Errorf("%s %s..%s:\n got %s\nwant %s", c.cols, c.low, c.high, got, c.want)
		}
	}
}

// TestDescendingPrefix: an index with a descending prefix key part stays off the sql path
// (its low bound cannot hold that field); ascending prefixes and whole descending fields
// do not.
func TestDescendingPrefix(t *testing.T) {
	for cols, want := range map[string]string{
		"id:int4,s:varchar@latin1_swedish_ci/3:desc": "s",
		"s:varchar@latin1_swedish_ci/3,id:int4":      "",
		"k:int4:desc,id:int4:desc":                   "",
	} {
		cs, err := keys.ParseColumns([]byte(cols))
		if err != nil {
			t.Fatal(err)
		}
		if got := descendingPrefix(cs); got != want {
			t.Errorf("%s: %q, want %q", cols, got, want)
		}
	}
}

// TestKeyRuns: neighbours both chosen ("@N" to a chosen page) are one run from the first
// one's low key to the last one's high key; "@N" to a page not chosen ends at that page's
// low key, to a page not in the manifest is unknown; runs come hottest first.
func TestKeyRuns(t *testing.T) {
	m := &manifest.Manifest{Ranges: []manifest.Range{
		{Low: "~", High: "@2"},  // page 1
		{Low: "10", High: "@3"}, // page 2
		{Low: "20", High: "30"}, // page 3
		{Low: "50", High: "@9"}, // page 5: page 9 is in no entry
		{Low: "60", High: "@7"}, // page 6: page 7 is not chosen
		{Low: "70", High: "~"},  // page 7
	}}
	r := &Resolved{m: m}
	entry := func(page, rng uint32, rank int32) keyedEntry {
		return keyedEntry{object: 0, page: page, rng: rng, rank: rank}
	}
	r.keyed = []keyedEntry{entry(1, 1, 0), entry(3, 3, 1), entry(5, 4, 2), entry(2, 2, 3), entry(6, 5, 4), entry(7, 6, 5)}
	lows := map[[2]uint32]string{}
	for _, e := range r.keyed {
		lows[[2]uint32{e.object, e.page}] = m.Ranges[e.rng-1].Low
	}
	chosen := r.keyed[:5] // not page 7
	got := r.keyRuns(chosen, lows)
	want := []keyRun{{low: "~", high: "30", pages: 3, rank: 0, members: []runMember{{"~", 0}, {"10", 3}, {"20", 1}}},
		{low: "50", high: "", pages: 1, rank: 2, members: []runMember{{"50", 2}}},
		{low: "60", high: "70", pages: 1, rank: 4, members: []runMember{{"60", 4}}}}
	if len(got) != len(want) {
		t.Fatalf("runs %+v, want %+v", got, want)
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("run %d: %+v, want %+v (members in key order)", i, got[i], want[i])
		}
	}
}

// TestLeafRuns: a run whose range holds no other entry's low key than its members' is a
// run of leaves (the sql path reads all of it, grown); a non-leaf page's range holds its
// children's low keys, an unknown high bound or keys only the server orders are not known
// to be one.
func TestLeafRuns(t *testing.T) {
	m := &manifest.Manifest{Ranges: []manifest.Range{
		{Low: "~", High: "100"}, // page 3, level 1: holds pages 4, 5 and 6's lows
		{Low: "~", High: "@5"},  // page 4, the leftmost leaf
		{Low: "10", High: "@6"}, // page 5
		{Low: "20", High: "30"}, // page 6
		{Low: "100", High: "~"}, // page 7, level 1, the last: holds page 8's low
		{Low: "150", High: "~"}, // page 8, the last leaf
		{Low: "40", High: "-"},  // page 9: its high is unknown
		{Low: "100", High: "~"}, // page 10, the first leaf under page 7 (low as its parent's)
	}}
	r := &Resolved{m: m}
	for i := range m.Ranges {
		r.keyed = append(r.keyed, keyedEntry{target: 0, object: 0, page: uint32(i + 3), rng: uint32(i + 1), rank: int32(i)})
	}
	// Entries of another index do not count.
	m.Ranges = append(m.Ranges, manifest.Range{Low: "15", High: "16"})
	r.keyed = append(r.keyed, keyedEntry{target: 1, page: 40, rng: uint32(len(m.Ranges))})
	cs, err := keys.ParseColumns([]byte("id:int4"))
	if err != nil {
		t.Fatal(err)
	}
	runs := []keyRun{
		{low: "~", high: "100", pages: 1},  // page 3
		{low: "~", high: "30", pages: 3},   // pages 4-6
		{low: "10", high: "30", pages: 1},  // page 5 alone, as if its neighbours were cut
		{low: "100", high: "~", pages: 1},  // page 7 (or 10: the same range)
		{low: "150", high: "~", pages: 1},  // page 8
		{low: "40", high: "", pages: 1},    // page 9
		{low: "20", high: "100", pages: 1}, // holds page 9's low 40
	}
	want := []bool{false, true, false, false, true, false, false}
	got := r.leafRuns(cs, 0, runs)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("run %+v: leaf %v, want %v", runs[i], got[i], want[i])
		}
	}
	// Strings their collation orders: the server's order, unknown here.
	ci, err := keys.ParseColumns([]byte("id:varchar@utf8mb4_general_ci"))
	if err != nil {
		t.Fatal(err)
	}
	for i, leaf := range r.leafRuns(ci, 0, runs[4:5]) {
		if leaf {
			t.Errorf("run %d: a leaf run by a collation's order", i)
		}
	}
}

// TestTreeColumns: the tree path compares the manifest's keys by this server's key types
// (a copy on the other flavor, or restored with another collation, orders its B-tree by
// its own), and leaves for the sql path when the manifest's values are other bytes or
// this server's collation orders by weights.
func TestTreeColumns(t *testing.T) {
	cols := func(s string) keys.Columns {
		t.Helper()
		cs, err := keys.ParseColumns([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	for _, c := range []struct{ manifest, here, why string }{
		{"k:int4,id:int4", "k:int4,id:int4", ""},
		{"s:varchar@utf8mb4_0900_bin,id:int4", "s:varchar@utf8mb4_bin,id:int4", ""},
		{"id:int4", "id:int8", "its column id is int8 here and int4 in the manifest"},
		{"k:int4,id:int4", "k:int4", "its key has 1 fields here and 2 in the manifest"},
		{"k:int4,id:int4", "j:int4,id:int4", "its key field 1 is j here and k in the manifest"},
		{"s:varchar@latin1_bin", "s:varchar@utf8mb4_bin", "its column s holds utf8mb4 here and latin1 in the manifest"},
		{"s:varchar@utf8mb4_bin", "s:varchar@utf8mb4_general_ci", "its column s compares by its collation's weights here (varchar@utf8mb4_general_ci), which only the server knows"},
		{"s:varchar@utf8mb4_bin/3", "s:varchar@utf8mb4_bin/4", "its column s is varchar@utf8mb4_bin/4 here and varchar@utf8mb4_bin/3 in the manifest"},
		{"k:int4:desc,id:int4", "k:int4:desc,id:int4", ""},
		{"k:int4:desc,id:int4", "k:int4,id:int4", "its key field k is ascending here and descending in the manifest"},
		{"k:int4,id:int4", "k:int4,id:int4:desc", "its key field id is descending here and ascending in the manifest"},
	} {
		got, why := treeColumns(cols(c.manifest), cols(c.here))
		if why != c.why {
			t.Errorf("%s in the manifest, %s here: %q, want %q", c.manifest, c.here, why, c.why)
		}
		if why == "" && string(keys.AppendColumns(nil, got)) != c.here {
			t.Errorf("%s in the manifest, %s here: compares by %s, want this server's", c.manifest, c.here, keys.AppendColumns(nil, got))
		}
	}
	// MySQL's utf8mb4_0900_bin does not pad, MariaDB's utf8mb4_bin does: in a MariaDB tree
	// restored from MySQL, 'a' and 'a ' are one key, and the tree path must say so.
	cs, _ := treeColumns(cols("s:varchar@utf8mb4_0900_bin"), cols("s:varchar@utf8mb4_bin"))
	a, err := keys.ParseKey(cs, []byte("'a"))
	if err != nil {
		t.Fatal(err)
	}
	aSpace, err := keys.ParseKey(cs, []byte("'a%20"))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := keys.CompareKeys(cs, a, aSpace); c != 0 || err != nil {
		t.Errorf("'a' against 'a ' by this server's utf8mb4_bin: %d, %v; want 0 (PAD SPACE)", c, err)
	}
}

// TestLikelyLeaves: of the leaves a range overlaps, those holding most of it (the largest
// share, and any mostly inside it) rank with the run; keys without a position on a line
// rank every leaf alike.
func TestLikelyLeaves(t *testing.T) {
	ints, err := keys.ParseColumns([]byte("id:int4"))
	if err != nil {
		t.Fatal(err)
	}
	strs, err := keys.ParseColumns([]byte("s:varbinary"))
	if err != nil {
		t.Fatal(err)
	}
	key := func(cs keys.Columns, s string) keys.Key {
		k, err := keys.ParseKey(cs, []byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	lows := []string{"0", "100", "200", "300"}
	lowOf := func(i int) keys.Key { return key(ints, lows[i]) }
	for _, c := range []struct {
		low, high  string
		start, end int
		want       []bool
	}{
		{"150", "220", 1, 3, []bool{true, false}},            // 50 of the 70 in leaf 1
		{"180", "290", 1, 3, []bool{false, true}},            // 90 of 110 in leaf 2
		{"90", "310", 0, 4, []bool{false, true, true, true}}, // leaf 0 holds 10 of its 100; the last leaf's span ends with the range
		{"150", "180", 1, 2, nil},                            // one leaf: nothing to choose
		{"50", "250", 0, 3, []bool{true, true, true}},        // half of leaf 0 and of leaf 2 are inside
		{"120", "120", 1, 2, nil},                            // an empty span
	} {
		got := likelyLeaves(ints, key(ints, c.low), key(ints, c.high), true, c.start, c.end, len(lows), lowOf)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("[%s, %s) over leaves %d-%d: %v, want %v", c.low, c.high, c.start, c.end-1, got, c.want)
		}
	}
	// A descending key: leaves from the greatest values down; leaf 0 holds 30 of the
	// range's 100, leaf 1 the other 70.
	desc, err := keys.ParseColumns([]byte("id:int4:desc"))
	if err != nil {
		t.Fatal(err)
	}
	descLows := []string{"300", "200", "100", "0"}
	descLow := func(i int) keys.Key { return key(desc, descLows[i]) }
	if got := likelyLeaves(desc, key(desc, "230"), key(desc, "130"), true, 0, 2, len(descLows), descLow); fmt.Sprint(got) != "[false true]" {
		t.Errorf("descending [230, 130) over leaves 0-1: %v, want [false true]", got)
	}
	if got := likelyLeaves(ints, key(ints, "150"), nil, false, 1, 3, len(lows), lowOf); got != nil {
		t.Errorf("an open range: %v, want nil", got)
	}
	sLow := func(i int) keys.Key { return key(strs, []string{"0x61", "0x6d", "0x74"}[i]) }
	if got := likelyLeaves(strs, key(strs, "0x62"), key(strs, "0x70"), true, 0, 2, 3, sLow); got != nil {
		t.Errorf("string keys: %v, want nil", got)
	}
}

// TestMemberRanks: a run's leaves rank by the hottest member whose range they hold, the
// leaf where one member's range ends and the next begins by the hotter of the two; a run
// whose members rank alike, or of one leaf, ranks as one.
func TestMemberRanks(t *testing.T) {
	// Leaves 10-19 start at keys 0, 100, ..., 900; the run's members start at keys 0, 250,
	// 500 and 750, the last the hottest (a scan's latest pages).
	parse := func(tok string) (keys.Key, bool, error) {
		var n int64
		if _, err := fmt.Sscan(tok, &n); err != nil {
			return nil, false, err
		}
		return keys.Key{{I: n}}, true, nil
	}
	leafOf := func(k keys.Key) int { return 10 + int(k[0].I/100) }
	run := keyRun{low: "0", rank: 3, members: []runMember{{"0", 9}, {"250", 7}, {"500", 5}, {"750", 3}}}
	got, err := memberRanks(run, 10, 20, parse, leafOf)
	if err != nil {
		t.Fatal(err)
	}
	// Members' first leaves: 10, 12, 15, 17; each holds up to the next's first leaf.
	want := []int32{9, 9, 7, 7, 7, 5, 5, 3, 3, 3}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("leaf ranks %v, want %v", got, want)
	}
	// A member whose low key lies past the run's last leaf (a copy that holds fewer rows
	// there) ranks the last leaf.
	got, _ = memberRanks(keyRun{members: []runMember{{"0", 4}, {"5000", 1}}}, 10, 13, parse, leafOf)
	if want := []int32{4, 4, 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("leaf ranks %v, want %v", got, want)
	}
	if got, _ := memberRanks(keyRun{members: []runMember{{"0", 2}, {"250", 2}}}, 10, 20, parse, leafOf); got != nil {
		t.Errorf("members ranked alike: %v, want nil (the run's rank)", got)
	}
	if got, _ := memberRanks(keyRun{members: []runMember{{"0", 2}, {"250", 1}}}, 10, 11, parse, leafOf); got != nil {
		t.Errorf("a run of one leaf: %v, want nil", got)
	}
}

// TestSplitRuns: a run longer than the most members a part holds is cut in key order into
// parts bounded by their members' low keys (the first keeps the run's low bound, the last
// its high), each ranked by its hottest member, and every run sorted hottest first; a run
// of the whole index is not cut.
func TestSplitRuns(t *testing.T) {
	long := keyRun{low: "~", high: "90", pages: 5, rank: 0, growth: 2, members: []runMember{{"~", 9}, {"10", 8}, {"20", 7}, {"30", 1}, {"40", 0}}}
	short := keyRun{low: "90", high: "95", pages: 1, rank: 3, growth: maxGrowth, members: []runMember{{"90", 3}}}
	runs, leaf := splitRuns([]keyRun{long, short}, []bool{false, true}, 2)
	want := []keyRun{
		{low: "40", high: "90", pages: 1, rank: 0, growth: 2, members: []runMember{{"40", 0}}},
		{low: "20", high: "40", pages: 2, rank: 1, growth: 2, members: []runMember{{"20", 7}, {"30", 1}}},
		{low: "90", high: "95", pages: 1, rank: 3, growth: maxGrowth, members: []runMember{{"90", 3}}},
		{low: "~", high: "20", pages: 2, rank: 8, growth: 2, members: []runMember{{"~", 9}, {"10", 8}}},
	}
	if !reflect.DeepEqual(runs, want) || !reflect.DeepEqual(leaf, []bool{false, false, true, false}) {
		t.Errorf("split into\n%+v %v\nwant\n%+v", runs, leaf, want)
	}
	if got, _ := splitRuns([]keyRun{short}, nil, 2); !reflect.DeepEqual(got, []keyRun{short}) {
		t.Errorf("a short run became %+v", got)
	}
	// The whole index is one scan from its start.
	whole := long
	whole.high = "~"
	if got, _ := splitRuns([]keyRun{whole}, nil, 2); !reflect.DeepEqual(got, []keyRun{whole}) {
		t.Errorf("a run of the whole index became %+v", got)
	}
}

// TestHotWindow: the n members of a run whose ranks sum least, as a range's bounds; the
// run's low end (its own condition) and a window from an open bound say no.
func TestHotWindow(t *testing.T) {
	run := keyRun{low: "~", high: "99", members: []runMember{{"~", 5}, {"10", 6}, {"20", 2}, {"30", 1}, {"40", 7}}}
	for _, c := range []struct {
		n         int
		low, high string
		ok        bool
	}{
		{2, "20", "40", true}, // 2+1
		{1, "30", "40", true},
		{4, "", "", false},    // the low end: 5+6+2+1 against 6+2+1+7
		{3, "10", "40", true}, // 6+2+1 against 2+1+7
		{5, "", "", false},    // the whole run
		{0, "", "", false},
	} {
		low, high, ok := hotWindow(run, c.n)
		if low != c.low || high != c.high || ok != c.ok {
			t.Errorf("n=%d: %q %q %v, want %q %q %v", c.n, low, high, ok, c.low, c.high, c.ok)
		}
	}
	coldHigh := keyRun{low: "~", high: "~", members: []runMember{{"~", 0}, {"10", 1}, {"20", 9}}}
	if _, _, ok := hotWindow(coldHigh, 2); ok {
		t.Errorf("the run's low end is its own condition's")
	}
}

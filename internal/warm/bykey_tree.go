package warm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/keys"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/pagekey"
)

// PathTree: the key ranges, found in this server's own B-tree (its non-leaf pages read
// from the tablespace file, about 1% of the index) and loaded natively like manifest pages.
const (
	PathTree  = "tree"
	ByKeyTree = PathTree
)

// treeable says why keys over cs cannot be placed in a B-tree in Go ("" when they can):
// every field must compare in Go (keys.Comparable: numbers, dates, binary strings and
// binary collations) and name one position (no prefix part, no hidden row id).
func treeable(cs keys.Columns) string {
	if !cs.Exact() {
		return "its keys have a prefix part or InnoDB's row id"
	}
	for _, c := range cs {
		if !keys.Comparable(c.Type) {
			return fmt.Sprintf("its column %s compares by its collation's weights (%s), which only the server knows", c.Name, c.Type)
		}
	}
	return ""
}

// treeColumns are the columns the tree path compares the manifest's keys with in this
// server's B-tree, here the target's key columns (from its own dictionary): the manifest
// was read on its source, maybe of another flavor or a copy whose DDL a restore changed
// (MySQL's utf8mb4_0900_bin becomes MariaDB's utf8mb4_bin, a latin1 column utf8mb4), and
// this tree is ordered by this server's collations. The manifest's values must be the
// same bytes (kind, size, precision, charset and prefix alike) and this server's types
// must compare in Go; why says otherwise ("" when they can), and the sql path, where the
// server converts a literal to its column's charset and compares by its collation, reads
// the ranges instead.
func treeColumns(manifestCols, here keys.Columns) (cs keys.Columns, why string) {
	if len(manifestCols) != len(here) {
		return nil, fmt.Sprintf("its key has %d fields here and %d in the manifest", len(here), len(manifestCols))
	}
	for i, m := range manifestCols {
		h := here[i]
		mt, ht := m.Type, h.Type
		switch {
		case !strings.EqualFold(m.Name, h.Name):
			return nil, fmt.Sprintf("its key field %d is %s here and %s in the manifest", i+1, h.Name, m.Name)
		case mt.Kind != ht.Kind || mt.Size != ht.Size || mt.Precision != ht.Precision || mt.Scale != ht.Scale || mt.Prefix != ht.Prefix:
			return nil, fmt.Sprintf("its column %s is %s here and %s in the manifest", h.Name, ht, mt)
		case mt.Charset() != ht.Charset():
			return nil, fmt.Sprintf("its column %s holds %s here and %s in the manifest", h.Name, ht.Charset(), mt.Charset())
		case !keys.Comparable(ht):
			return nil, fmt.Sprintf("its column %s compares by its collation's weights here (%s), which only the server knows", h.Name, ht)
		case m.Desc != h.Desc:
			// The manifest's ranges run in the source's order, this tree in its own.
			return nil, fmt.Sprintf("its key field %s is %s here and %s in the manifest", h.Name, direction(h.Desc), direction(m.Desc))
		}
	}
	return here, ""
}

func direction(desc bool) string {
	if desc {
		return "descending"
	}
	return "ascending"
}

// treePages finds, for each target of the tree path, the leaf pages of this server's own
// index that hold its chosen runs (hottest run first), and the index's non-leaf pages
// (every descent reads them). A run reads at most twice its manifest pages and one more:
// a manifest's non-leaf page (the root's range is the whole index) then reads a few
// leaves, not all below it. A target whose tree cannot be read here goes back to the sql
// path, with the reason in fallback.
func (r *Resolved) treePages(ctx context.Context, conn *connection.Conn, kts []keyedTarget, lows map[[2]uint32]string) (pages map[TargetKey][]rankedPage, fallback map[TargetKey]string) {
	pages, fallback = map[TargetKey][]rankedPage{}, map[TargetKey]string{}
	fail := func(why string) (map[TargetKey][]rankedPage, map[TargetKey]string) {
		for _, kt := range kts {
			fallback[kt.key] = why
		}
		return pages, fallback
	}
	spaceOf := map[TargetKey]uint32{}
	for _, kt := range kts {
		_, p, ix := findIndex(r.Catalog, kt.key)
		if ix == nil || !p.SpaceKnown {
			fallback[kt.key] = "its tablespace is unknown here"
			continue
		}
		spaceOf[kt.key] = p.Space
	}
	kd, err := pagekey.ReadKeyDictionary(ctx, conn, r.catalogs, r.Catalog)
	if err != nil {
		return fail(err.Error())
	}
	files, roots, dict := kd.Files, kd.Roots, kd.Dict
	whole := r.wholeIndexOnly()
	for _, kt := range kts {
		if _, ok := fallback[kt.key]; ok {
			continue
		}
		list, err := r.treeOf(conn, dict, kt, files[spaceOf[kt.key]], roots[spaceOf[kt.key]], lows, whole[kt.key])
		if err != nil {
			fallback[kt.key] = err.Error()
			continue
		}
		for _, pg := range list {
			pages[kt.key] = append(pages[kt.key], rankedPage{page: MakePageID(spaceOf[kt.key], pg.page), rank: pg.rank})
		}
	}
	return pages, fallback
}

// maxGrowth is how many times its manifest pages a key run's leaves may be on this server
// and still be read whole (its keys' rows inserted since, or pages that hold fewer rows
// here); a wider one is a non-leaf page's.
const maxGrowth = 16

// treePage is a page of the target's tree with the rank of the hottest run it holds; the
// non-leaf pages, which every descent reads, have the index's hottest rank.
type treePage struct {
	page uint32
	rank int32
}

// treeOf reads one index's tree from path and places the target's runs in it; whole says
// that each of the index's ranges is the whole index (wholeIndexOnly).
func (r *Resolved) treeOf(conn *connection.Conn, dict *pagekey.Dictionary, kt keyedTarget, path string, roots map[string]indexRoot, lows map[[2]uint32]string, whole bool) ([]treePage, error) {
	t, p, ix := findIndex(r.Catalog, kt.key)
	cs, err := keys.ParseColumns([]byte(r.keyColumns[kt.key]))
	if err != nil {
		return nil, err
	}
	src, err := pagekey.OpenSource(path, conn.Server.PageSize)
	if err != nil {
		return nil, fmt.Errorf("the tablespace file is not readable here: %w", err)
	}
	defer src.Close()
	var clusteredRoot uint32
	if c := t.Clustered(); c != nil {
		clusteredRoot = roots[c.Name].Root
	}
	layouts, errs := dict.Layouts(t, p, src, clusteredRoot)
	l := layouts[ix.Name]
	if l == nil {
		return nil, fmt.Errorf("its keys cannot be read from the file: %w", errs[ix.Name])
	}
	// An index whose every range is the whole index is all of its tree: no key is compared.
	cmpCols, why := treeColumns(cs, l.Columns)
	if why != "" && !whole {
		return nil, errors.New(why)
	}
	if len(kt.chosen) == 0 {
		return nil, nil // only checked: the budget left none of its ranges
	}
	root, ok := roots[ix.Name]
	if !ok {
		return nil, fmt.Errorf("its root page is unknown")
	}
	tree, err := pagekey.ReadTree(src, l, root.ID, root.Root)
	if err != nil {
		return nil, fmt.Errorf("read its tree: %w", err)
	}
	leaves := tree.Leaves
	lowOf := func(i int) keys.Key { return tree.Spans[leaves[i]].Low }
	parse := func(tok string) (keys.Key, bool, error) {
		if tok == "" || tok == manifest.OpenBound {
			return nil, false, nil
		}
		k, err := keys.ParseKey(cs, []byte(tok))
		return k, err == nil, err
	}
	var cmpErr error
	compare := func(a, b keys.Key) int {
		if a == nil { // the index's start
			return -1
		}
		c, err := keys.CompareKeys(cmpCols, a, b)
		if err != nil && cmpErr == nil {
			cmpErr = err
		}
		return c
	}
	// leafOf is the last leaf whose range starts at or before k.
	leafOf := func(k keys.Key) int {
		return max(sort.Search(len(leaves), func(i int) bool { return compare(lowOf(i), k) > 0 })-1, 0)
	}
	var out []treePage
	at := map[uint32]int{} // page -> its place in out
	add := func(pg uint32, rank int32) {
		if i, ok := at[pg]; ok {
			out[i].rank = min(out[i].rank, rank)
			return
		}
		at[pg] = len(out)
		out = append(out, treePage{pg, rank})
	}
	// A run's range overlaps the leaves it holds rows of, and a range a leaf or less wide
	// straddles two (a range 0.7 leaves wide overlaps 1.7 on average): the manifest says
	// which rows its page held, not which were read. Where keys have a position on a line
	// (numbers, dates and times) the leaves that hold most of a run's range rank with the
	// run, the others behind every run's (after the manifest's last rank): a budget that
	// cannot hold every overlapped leaf takes the likeliest first.
	behind := int32(len(r.m.Entries))
	hottest := kt.chosen[0].rank
	for _, e := range kt.chosen {
		hottest = min(hottest, e.rank)
	}
	for n, s := range tree.Spans {
		if s.Level > 0 {
			add(n, hottest)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].page < out[j].page })
	runs := r.keyRuns(kt.chosen, lows)
	// Hottest run first: a leaf two runs hold takes the hotter one's rank.
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].rank < runs[j].rank })
	for _, run := range runs {
		low, hasLow, err := parse(run.low)
		if err != nil {
			return nil, err
		}
		high, hasHigh, err := parse(run.high)
		if err != nil {
			return nil, err
		}
		start := 0
		if hasLow {
			start = leafOf(low)
		}
		// A run with a high bound (a key, or the index's end) holds every leaf up to it, as
		// the sql path's range scan reads every row up to it: a table grown by inserts since
		// the snapshot holds a hot range in more leaves than the source did (every leaf
		// split: 3-4 for each of the manifest's), and a cap of twice its manifest pages and
		// one left the workload 45 misses of 178 where the ranges' leaves had none. A range
		// wider than maxGrowth times its pages is a coarser page's (a non-leaf page's range
		// spans its whole subtree, whose hot leaves have entries of their own) and, as one
		// with an unknown high bound, ends within twice its manifest pages and one.
		end := len(leaves)
		if hasHigh {
			end = sort.Search(len(leaves), func(i int) bool { return compare(lowOf(i), high) >= 0 })
		}
		if !hasHigh && run.high != manifest.OpenBound || end-start > maxGrowth*int(run.pages)+1 {
			end = start + int(2*run.pages) + 1
		}
		end = max(min(end, len(leaves)), start+1)
		likely := likelyLeaves(cmpCols, low, high, hasLow && hasHigh, start, end, len(leaves), lowOf)
		ranks, err := memberRanks(run, start, end, parse, leafOf)
		if err != nil {
			return nil, err
		}
		for i := start; i < end; i++ {
			rank := run.rank
			if ranks != nil {
				rank = ranks[i-start]
			}
			if likely != nil && !likely[i-start] {
				rank += behind
			}
			add(leaves[i], rank)
		}
		if cmpErr != nil {
			return nil, cmpErr
		}
	}
	return out, nil
}

// likelyLeaves says, of the leaves [start, end) a range [low, high) overlaps, which hold
// most of it: the one with the largest share of the range's key span, and any whose own
// span is mostly inside the range. Keys are placed on a line by their first field
// (keyPosition); nil where they cannot be (strings, open bounds, a first field equal at both
// ends): then every leaf ranks alike.
func likelyLeaves(cs keys.Columns, low, high keys.Key, bounded bool, start, end, nLeaves int, lowOf func(int) keys.Key) []bool {
	if !bounded || end-start < 2 {
		return nil
	}
	lo, ok1 := keyPosition(cs, low)
	hi, ok2 := keyPosition(cs, high)
	if !ok1 || !ok2 || hi <= lo {
		return nil
	}
	type span struct{ a, b float64 }
	spans := make([]span, end-start)
	for i := start; i < end; i++ {
		a, ok := keyPosition(cs, lowOf(i))
		if !ok {
			return nil
		}
		b := hi
		if i+1 < nLeaves {
			if b, ok = keyPosition(cs, lowOf(i+1)); !ok {
				return nil
			}
		}
		spans[i-start] = span{a, b}
	}
	out := make([]bool, len(spans))
	best, bestShare := 0, -1.0
	for i, sp := range spans {
		in := min(hi, sp.b) - max(lo, sp.a)
		if in > bestShare {
			best, bestShare = i, in
		}
		if w := sp.b - sp.a; w > 0 && in >= w/2 {
			out[i] = true
		}
	}
	out[best] = true
	return out
}

// keyPosition places a key on a line by its first field, where that field's order is its
// number's: integers, floats, dates and times (their numbers grow with them, not evenly
// for DATE and DATETIME, which is enough to tell which leaf holds more of a range). A
// descending field's line runs the other way, so that positions grow in the index's order.
func keyPosition(cs keys.Columns, k keys.Key) (float64, bool) {
	if len(k) == 0 || len(cs) == 0 || k[0].Null {
		return 0, false
	}
	v := k[0]
	var pos float64
	switch cs[0].Type.Kind {
	case keys.Int, keys.Date, keys.Datetime, keys.Timestamp, keys.Time, keys.Year:
		pos = float64(v.I) + float64(v.Micro)/1e6
	case keys.Uint, keys.Enum:
		pos = float64(v.U)
	case keys.Float, keys.Double:
		pos = v.F
	default:
		return 0, false
	}
	if cs[0].Desc {
		pos = -pos
	}
	return pos, true
}

// memberRanks ranks each leaf of a run's [start, end) by the hottest member whose range it
// holds rows of, rather than every leaf by the run's hottest: a run is a contiguous hot set
// (a scan's pages, a range of recent rows), hotter at one end, and a budget that holds part
// of it took its leaves in key order, the low end whatever its rank (a copy with room for
// half of a scanned table's ranges loaded the half read first, the coldest). A member's
// range starts in the leaf that holds its low key (leafOf) and ends in the one where the
// next member's starts, which both hold. nil when every member ranks alike.
func memberRanks(run keyRun, start, end int, parse func(string) (keys.Key, bool, error), leafOf func(keys.Key) int) ([]int32, error) {
	ms := run.members
	if len(ms) < 2 || end-start < 2 {
		return nil, nil
	}
	alike := true
	for _, m := range ms[1:] {
		alike = alike && m.rank == ms[0].rank
	}
	if alike {
		return nil, nil
	}
	first := make([]int, len(ms)) // each member's first leaf, in [start, end)
	first[0] = start
	for k := 1; k < len(ms); k++ {
		first[k] = first[k-1]
		low, ok, err := parse(ms[k].low)
		if err != nil {
			return nil, err
		}
		if ok {
			first[k] = min(max(leafOf(low), first[k-1]), end-1)
		}
	}
	ranks := make([]int32, end-start)
	for i := range ranks {
		ranks[i] = math.MaxInt32
	}
	for k, m := range ms {
		last := end - 1
		if k+1 < len(ms) {
			last = first[k+1]
		}
		for i := first[k]; i <= last; i++ {
			ranks[i-start] = min(ranks[i-start], m.rank)
		}
	}
	return ranks, nil
}

package warm

import (
	"testing"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/dumpfile"
)

// TestTargetLoadedCountsWhatTheLoadBroughtIn: a page is loaded once, by the load, only if
// it was asked for and is resident after and not before; a page two targets list counts
// for the first.
func TestTargetLoadedCountsWhatTheLoadBroughtIn(t *testing.T) {
	pk := TargetKey{Schema: "s", Table: "t", Index: "PRIMARY", Kind: KindIndex}
	file := TargetKey{Schema: "s", Table: "t", Kind: KindFile}
	other := TargetKey{Schema: "s", Table: "u", Index: "PRIMARY", Kind: KindIndex}
	page := func(n uint32) PageID { return dumpfile.MakePageID(7, n) }
	r := &Resolved{
		targets: []TargetKey{pk, file, other},
		// 10-13 the primary key's, 0 and 11 by number (11 listed twice), 20-21 another
		// table's (which loses page 21 to an eviction).
		Pages:    []PageID{page(10), page(11), page(12), page(13), page(0), page(11), page(20), page(21)},
		targetOf: []uint32{0, 0, 0, 0, 1, 1, 2, 2},
	}
	set := func(pages ...uint32) bufferpool.PageSet {
		s := bufferpool.PageSet{}
		for _, p := range pages {
			s.Add(7, p)
		}
		return s
	}
	requested := set(11, 12, 13, 0, 20)
	before := set(10, 21)
	// 13 was asked for but evicted again; 10 was there before; 22 the server read for
	// itself, and no target lists it.
	after := set(10, 11, 12, 0, 20, 22)
	got := r.TargetLoaded(requested, before, after)
	want := map[TargetKey]int64{pk: 2, file: 1, other: 1}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: loaded %d, want %d (all: %v)", IndexLabel(k.Index, k.Kind), got[k], n, got)
		}
	}
}

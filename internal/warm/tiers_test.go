package warm

import (
	"slices"
	"testing"
)

func TestHotnessTiers(t *testing.T) {
	var pages []PageID
	for i := 5000; i > 0; i-- { // hottest first, in falling page order
		pages = append(pages, MakePageID(7, uint32(i)))
	}
	tiers := hotnessTiers(pages, coldestFirst)
	if len(tiers) != 4 {
		t.Fatalf("%d tiers, want 4", len(tiers))
	}
	total := 0
	for i, tier := range tiers {
		total += len(tier)
		if !slices.IsSorted(tier) {
			t.Errorf("tier %d is not sorted by page", i)
		}
	}
	if total != len(pages) {
		t.Errorf("tiers hold %d pages, want %d", total, len(pages))
	}
	// The coldest (the lowest page numbers here) load first, the hottest last.
	if first, last := tiers[0][0].Page(), tiers[3][len(tiers[3])-1].Page(); first != 1 || last != 5000 {
		t.Errorf("first tier starts at page %d, last ends at %d: want the coldest first", first, last)
	}
	// Queries waiting (or --until-coverage): the hottest eighth loads first.
	up := hotnessTiers(pages, hottestFirst)
	if len(up) != 8 || up[0][len(up[0])-1].Page() != 5000 || up[0][0].Page() != 5000-uint32(len(up[0]))+1 {
		t.Errorf("hottest first: %d tiers, the first from page %d to %d: want 8, the hottest first", len(up), up[0][0].Page(), up[0][len(up[0])-1].Page())
	}
	// A long tight load goes in finer tiers: the server sorts each by page number, so a
	// coarse tier's eviction order is its page order, not its hotness (here the lowest
	// pages are the hottest, as sysbench's pareto keys make them).
	var long []PageID
	for i := 1; i <= 70000; i++ {
		long = append(long, MakePageID(7, uint32(i)))
	}
	fine := hotnessTiers(long, coldestFirst)
	if len(fine) != maxColdTiers {
		t.Errorf("70,000 pages coldest first: %d tiers, want %d", len(fine), maxColdTiers)
	}
	prevFirst := uint32(70001)
	for i, tier := range fine {
		if !slices.IsSorted(tier) || len(tier) > 2*coldTierPages || tier[len(tier)-1].Page() >= prevFirst {
			t.Errorf("tier %d of %d: %d pages from %d to %d (the one before starts at %d): want sorted, colder tiers first", i, len(fine), len(tier), tier[0].Page(), tier[len(tier)-1].Page(), prevFirst)
			break
		}
		prevFirst = tier[0].Page()
	}
	// Where the hottest pages are the highest page numbers (the newest rows hottest), the
	// server's sort within a tier already is the hotness order: 4 tiers, as before.
	var newestHot []PageID
	for i := 70000; i > 0; i-- {
		newestHot = append(newestHot, MakePageID(7, uint32(70000+i)))
	}
	if got := hotnessTiers(slices.Clone(newestHot), coldestFirst); len(got) != 4 {
		t.Errorf("70,000 pages, the highest numbers hottest: %d tiers, want 4", len(got))
	}
	if roomy := hotnessTiers(pages, oneLoad); len(roomy) != 1 || !slices.IsSorted(roomy[0]) {
		t.Errorf("with room to spare the pages load at once, sorted: %d tiers", len(roomy))
	}
	if small := hotnessTiers(pages[:100], coldestFirst); len(small) != 1 || !slices.IsSorted(small[0]) {
		t.Errorf("a small list is one sorted tier, got %d", len(small))
	}
}

func TestChooseTierOrder(t *testing.T) {
	for _, c := range []struct {
		tight, until, traffic bool
		want                  tierOrder
	}{
		{false, false, false, oneLoad},
		{true, false, false, coldestFirst},
		{true, false, true, hottestFirst}, // the traffic makes what it reads young itself
		{false, false, true, hottestFirst},
		{false, true, false, hottestFirst},
		{true, true, false, hottestFirst},
	} {
		if got := chooseTierOrder(c.tight, c.until, c.traffic); got != c.want {
			t.Errorf("tight %v, until-coverage %v, traffic %v: %s, want %s", c.tight, c.until, c.traffic, got, c.want)
		}
	}
}

// A hot set whose ranks interleave its extents (the hottest page of every extent, then
// the second hottest of each...) loads extent by extent: each tier is runs of whole
// extents, which a disk that merges neighbouring reads serves at one read per run.
func TestHottestTiersKeepExtentsTogether(t *testing.T) {
	const extents = 80
	var pages []PageID
	for j := range extentPages {
		for e := range extents {
			pages = append(pages, MakePageID(3, uint32(e*extentPages+j)))
		}
	}
	tiers := hotnessTiers(pages, hottestFirst)
	if len(tiers) != 8 {
		t.Fatalf("%d tiers, want 8", len(tiers))
	}
	total := 0
	for i, tier := range tiers {
		total += len(tier)
		runs := 1
		for k := 1; k < len(tier); k++ {
			if tier[k] != tier[k-1]+1 {
				runs++
			}
		}
		if runs > 1 {
			t.Errorf("tier %d: %d pages in %d runs, want one run of whole extents", i, len(tier), runs)
		}
		if len(tier)%extentPages != 0 {
			t.Errorf("tier %d holds %d pages: not whole extents", i, len(tier))
		}
	}
	if total != len(pages) {
		t.Errorf("tiers hold %d pages, want %d", total, len(pages))
	}
	// Extents go by their pages' mean rank: here the lower extents rank first.
	if tiers[0][0].Page() != 0 || tiers[7][len(tiers[7])-1].Page() != extents*extentPages-1 {
		t.Errorf("first tier starts at page %d, last ends at %d", tiers[0][0].Page(), tiers[7][len(tiers[7])-1].Page())
	}

	// An extent whose pages are colder on the whole goes after one that is hotter on the
	// whole, even when it holds the single hottest page.
	var mixed []PageID
	mixed = append(mixed, MakePageID(3, 0)) // extent 0's one hot page
	for p := range extentPages {
		mixed = append(mixed, MakePageID(3, uint32(extentPages+p))) // extent 1, all hot
	}
	for p := 1; p < extentPages; p++ {
		mixed = append(mixed, MakePageID(3, uint32(p))) // the rest of extent 0, colder
	}
	got := byHotExtent(mixed)
	if len(got) != 2 || got[0][0].Page() != extentPages || got[1][0].Page() != 0 || len(got[0])+len(got[1]) != len(mixed) {
		t.Errorf("extent 1 (all hot) should go before extent 0 (one hot page): got %d extents, %v first", len(got), got[0][:1])
	}
}

func TestHotPagesHigh(t *testing.T) {
	const n = 10000
	ascending, descending, scattered := make([]PageID, n), make([]PageID, n), make([]PageID, n)
	for i := range n {
		ascending[i] = MakePageID(3, uint32(i))    // hottest first: the lowest pages hottest
		descending[i] = MakePageID(3, uint32(n-i)) // the highest pages hottest
		scattered[i] = MakePageID(3, uint32(i*7919%n))
	}
	if hotPagesHigh(ascending) || !hotPagesHigh(descending) || hotPagesHigh(scattered) {
		t.Errorf("lowest hottest %v, highest hottest %v, scattered %v: want false, true, false", hotPagesHigh(ascending), hotPagesHigh(descending), hotPagesHigh(scattered))
	}
	// Two tablespaces, each with its highest pages hottest, interleaved: per tablespace.
	var two []PageID
	for i := range n {
		two = append(two, MakePageID(uint32(1+i%2), uint32(n-i)))
	}
	if !hotPagesHigh(two) {
		t.Errorf("two tablespaces, each highest hottest: want true")
	}
	if hotPagesHigh(nil) || hotPagesHigh(ascending[:1]) {
		t.Errorf("no pages or one: want false")
	}
}

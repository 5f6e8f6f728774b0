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

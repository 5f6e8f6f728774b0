package warm

import (
	"slices"
	"testing"
)

func TestHotnessTiers(t *testing.T) {
	var hottestFirst []PageID
	for i := 5000; i > 0; i-- { // hottest first, in falling page order
		hottestFirst = append(hottestFirst, MakePageID(7, uint32(i)))
	}
	tiers := hotnessTiers(hottestFirst, true, false)
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
	if total != len(hottestFirst) {
		t.Errorf("tiers hold %d pages, want %d", total, len(hottestFirst))
	}
	// The coldest (the lowest page numbers here) load first, the hottest last.
	if first, last := tiers[0][0].Page(), tiers[3][len(tiers[3])-1].Page(); first != 1 || last != 5000 {
		t.Errorf("first tier starts at page %d, last ends at %d: want the coldest first", first, last)
	}
	if up := hotnessTiers(hottestFirst, true, true); up[0][len(up[0])-1].Page() != 5000 {
		t.Errorf("with --until-coverage the hottest tier must load first")
	}
	if roomy := hotnessTiers(hottestFirst, false, false); len(roomy) != 1 || !slices.IsSorted(roomy[0]) {
		t.Errorf("with room to spare the pages load at once, sorted: %d tiers", len(roomy))
	}
	if small := hotnessTiers(hottestFirst[:100], true, false); len(small) != 1 || !slices.IsSorted(small[0]) {
		t.Errorf("a small list is one sorted tier, got %d", len(small))
	}
}

package warm

import "testing"

// Hottest keeps the first n pages and recounts the pages per index from them.
func TestResolvedHottest(t *testing.T) {
	a := TargetKey{Schema: "s", Table: "t", Index: "PRIMARY"}
	b := TargetKey{Schema: "s", Table: "t", Index: "k"}
	r := &Resolved{
		Pages:    []PageID{MakePageID(5, 10), MakePageID(5, 11), MakePageID(6, 3), MakePageID(5, 12)},
		ByTarget: map[TargetKey]int64{a: 3, b: 1},
		Dropped:  map[string]int64{DropPastEOF: 2},
		targets:  []TargetKey{a, b},
		targetOf: []uint32{0, 0, 1, 0},
	}
	for _, c := range []struct {
		name  string
		n     int
		pages int
		byA   int64
		byB   int64
	}{
		{"cut after the secondary's page", 3, 3, 2, 1},
		{"cut before it", 2, 2, 2, 0},
		{"nothing", 0, 0, 0, 0},
		{"longer than the list", 10, 4, 3, 1},
		{"no limit", -1, 4, 3, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := r.Hottest(c.n)
			if len(h.Pages) != c.pages || len(h.targetOf) != c.pages || h.ByTarget[a] != c.byA || h.ByTarget[b] != c.byB || h.Dropped[DropPastEOF] != 2 {
				t.Errorf("Hottest(%d): %d pages, by index %v, dropped %v", c.n, len(h.Pages), h.ByTarget, h.Dropped)
			}
		})
	}
	if len(r.Pages) != 4 || r.ByTarget[a] != 3 {
		t.Errorf("Hottest changed the list it cut: %v", r.ByTarget)
	}
}

package catalog

import (
	"slices"
	"testing"
)

func TestKnownRootsKeepsWhatWasRead(t *testing.T) {
	a := map[string]IndexRoot{"PRIMARY": {ID: 10, Root: 3}}
	spaces := map[uint32]bool{1: true, 2: true, 3: true}
	missingOf := func(c *Catalog) []uint32 {
		_, m := c.KnownRoots(spaces)
		slices.Sort(m)
		return m
	}
	var literal Catalog
	if m := missingOf(&literal); !slices.Equal(m, []uint32{1, 2, 3}) {
		t.Errorf("a catalog not made by Load: missing %v, want every space", m)
	}
	literal.RememberRoots([]uint32{1}, true, map[uint32]map[string]IndexRoot{1: a})
	if m := missingOf(&literal); len(m) != 3 {
		t.Errorf("a catalog not made by Load remembered: missing %v", m)
	}
	var nilCat *Catalog
	if m := missingOf(nilCat); len(m) != 3 {
		t.Errorf("a nil catalog: missing %v", m)
	}

	c := &Catalog{memo: newLoadMemo()}
	c.RememberRoots([]uint32{1, 2}, false, map[uint32]map[string]IndexRoot{1: a})
	known, missing := c.KnownRoots(spaces)
	if !slices.Equal(missing, []uint32{3}) {
		t.Errorf("after reading spaces 1 and 2: missing %v, want [3]", missing)
	}
	if len(known) != 1 || known[1]["PRIMARY"] != a["PRIMARY"] {
		t.Errorf("known %v, want space 1's root only (space 2 has no row)", known)
	}
	sub := *c // Cache.Load's subsets share the load's memo
	if m := missingOf(&sub); !slices.Equal(m, []uint32{3}) {
		t.Errorf("a subset of the load: missing %v, want [3]", m)
	}
	c.RememberRoots(nil, true, map[uint32]map[string]IndexRoot{3: a})
	if m := missingOf(c); len(m) != 0 {
		t.Errorf("after the whole view: missing %v", m)
	}
	if known, _ := c.KnownRoots(map[uint32]bool{4: true}); len(known) != 0 {
		t.Errorf("a space the whole view did not list: %v", known)
	}
}

// TestEnumMembers: an ENUM's members counted from its COLUMN_TYPE, quotes within members
// doubled, commas and parentheses within them not counted.
func TestEnumMembers(t *testing.T) {
	for typ, want := range map[string]int{
		"enum('a','b','c','d')":          4,
		"enum('x')":                      1,
		"ENUM('a,b','c)')":               2,
		"enum('it''s','','q''''')":       3,
		"set('a','b')":                   0,
		"int":                            0,
		"enum('red','green','blue','x')": 4,
	} {
		if got := (&Column{ColumnType: typ}).EnumMembers(); got != want {
			t.Errorf("%s: %d members, want %d", typ, got, want)
		}
	}
}

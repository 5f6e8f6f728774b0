package warm

import (
	"slices"
	"strings"
	"testing"
)

// TestPickTablesToOpen: each table once, hottest first, none that is open, and no more than
// the table cache has room for (more would close the workload's tables).
func TestPickTablesToOpen(t *testing.T) {
	a, b, c, d := tableRef{"s", "a"}, tableRef{"s", "b"}, tableRef{"s", "c"}, tableRef{"s", "d"}
	tables := []tableRef{a, b, a, c, d}
	open := map[tableRef]bool{b: true}
	todo, r := pickTablesToOpen(tables, open, 10)
	if !slices.Equal(todo, []tableRef{a, c, d}) || r.already != 1 || r.left != 0 {
		t.Errorf("room 10: %v %+v, want a, c, d with b already open", todo, r)
	}
	todo, r = pickTablesToOpen(tables, open, 2)
	if !slices.Equal(todo, []tableRef{a, c}) || r.left != 1 || !strings.Contains(r.why, "room for 2") {
		t.Errorf("room 2: %v %+v, want the hottest two and one left out, saying why", todo, r)
	}
	if todo, r = pickTablesToOpen(tables, open, -5); len(todo) != 0 || r.left != 3 {
		t.Errorf("no room: %v %+v, want none opened, 3 left out", todo, r)
	}
}

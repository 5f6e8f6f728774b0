package manifest

import (
	"reflect"
	"slices"
	"testing"
)

func TestSortByHotness(t *testing.T) {
	entries := []Entry{
		{Object: 0, Page: 1, LRU: 9, Old: true},
		{Object: 1, Page: 2, LRU: 0, Old: false},
		{Object: 0, Page: 3, LRU: 5, Old: false},
		{Object: 2, Page: 4, LRU: 1, Old: true}, // a second pool instance: positions restart
		{Object: 1, Page: 5, LRU: 5, Old: false},
	}
	SortByHotness(entries)
	var pagesInOrder []uint32
	for _, e := range entries {
		pagesInOrder = append(pagesInOrder, e.Page)
	}
	if want := []uint32{2, 3, 5, 4, 1}; !slices.Equal(pagesInOrder, want) {
		t.Errorf("order %v, want %v (young by LRU, then old by LRU)", pagesInOrder, want)
	}
	if got := CutToBudget(entries, 2); len(got) != 2 || got[1].Page != 3 {
		t.Errorf("cut to 2: %+v", got)
	}
	if got := CutToBudget(entries, 0); len(got) != 0 {
		t.Errorf("cut to 0: %+v", got)
	}
	if got := CutToBudget(entries, -1); len(got) != 5 {
		t.Errorf("no budget: %d entries", len(got))
	}
	if got := CutToBudget(entries, 100); len(got) != 5 {
		t.Errorf("budget above size: %d entries", len(got))
	}
	h := Header{PageSize: 16 << 10}
	if got := h.BudgetPages(1 << 30); got != 65536 {
		t.Errorf("1 GiB of 16 KiB pages = %d", got)
	}
}

// With history, the score decides before the newest capture's LRU list: a page the
// workload kept touching outranks one a load left at the head of the list.
func TestSortByHotnessScoreFirst(t *testing.T) {
	entries := []Entry{
		{Object: 0, Page: 1, LRU: 0, Seen: 1, Score: 200_000},               // left by a load, at the head now
		{Object: 0, Page: 2, LRU: 4000, Old: true, Seen: 3, Score: 610_000}, // hot, made old by a scan just now
		{Object: 0, Page: 3, LRU: 10, Seen: 3, Score: 900_000},
		{Object: 0, Page: 4, LRU: 20, Seen: 2, Last: 1, Score: 200_000}, // same score as page 1: young, LRU decide
	}
	SortByHotness(entries)
	var pages []uint32
	for _, e := range entries {
		pages = append(pages, e.Page)
	}
	if want := []uint32{3, 2, 1, 4}; !slices.Equal(pages, want) {
		t.Errorf("order %v, want %v", pages, want)
	}
}

func TestGroupAndCountByObject(t *testing.T) {
	entries := []Entry{
		{Object: 1, Page: 10}, {Object: 0, Page: 20, Old: true}, {Object: 1, Page: 11, Old: true}, {Object: 1, Page: 9},
	}
	groups := PagesByObject(entries, 3)
	want := [][]uint32{{20}, {10, 11, 9}, {}}
	if !reflect.DeepEqual(groups, want) {
		t.Errorf("groups %v, want %v", groups, want)
	}
	// Groups share one array but must not overwrite each other when a caller appends.
	groups[0] = append(groups[0], 99)
	if groups[1][0] != 10 {
		t.Error("appending to one group overwrote another")
	}
	counts := CountByObject(entries, 3)
	if want := []PageCount{{Old: 1}, {Young: 2, Old: 1}, {}}; !slices.Equal(counts, want) {
		t.Errorf("counts %v, want %v", counts, want)
	}
}

func TestStats(t *testing.T) {
	s := &Summary{
		Objects: []Object{
			{PageType: "INDEX", Schema: "shop", Table: "orders", Partition: "p0", Index: "PRIMARY"},
			{PageType: "INDEX", Schema: "shop", Table: "orders", Partition: "p1", Index: "PRIMARY"},
			{PageType: "BLOB", Schema: "shop", Table: "orders", Partition: "p1"},
			{PageType: "INDEX", Schema: "shop", Table: "users", Index: "email"},
			{PageType: "INDEX", Schema: "crm", Table: "leads", Index: "PRIMARY"},
			{PageType: "INDEX", Schema: "crm", Table: "idle", Index: "PRIMARY"},
		},
		Counts: []PageCount{{Young: 10, Old: 2}, {Young: 5}, {Old: 7}, {Young: 3}, {Young: 20, Old: 1}, {}},
	}
	st := s.Stats()
	if st.Pages != 48 || st.Young != 38 || st.Old != 10 {
		t.Errorf("totals %d/%d/%d", st.Pages, st.Young, st.Old)
	}
	if want := []Count{{Schema: "shop", PageCount: PageCount{Young: 18, Old: 9}}, {Schema: "crm", PageCount: PageCount{Young: 20, Old: 1}}}; !slices.Equal(st.Schemas, want) {
		t.Errorf("schemas %+v", st.Schemas)
	}
	if want := []Count{
		{Schema: "shop", Table: "orders", PageCount: PageCount{Young: 15, Old: 9}},
		{Schema: "crm", Table: "leads", PageCount: PageCount{Young: 20, Old: 1}},
		{Schema: "shop", Table: "users", PageCount: PageCount{Young: 3}},
		{Schema: "crm", Table: "idle"},
	}; !slices.Equal(st.Tables, want) {
		t.Errorf("tables %+v", st.Tables)
	}
	if want := []Count{
		{Schema: "crm", Table: "leads", Index: "PRIMARY", PageCount: PageCount{Young: 20, Old: 1}},
		{Schema: "shop", Table: "orders", Index: "PRIMARY", PageCount: PageCount{Young: 15, Old: 2}},
		{Schema: "shop", Table: "orders", PageType: "BLOB", PageCount: PageCount{Old: 7}},
		{Schema: "shop", Table: "users", Index: "email", PageCount: PageCount{Young: 3}},
		{Schema: "crm", Table: "idle", Index: "PRIMARY"},
	}; !slices.Equal(st.Indexes, want) {
		t.Errorf("indexes %+v", st.Indexes)
	}
	if len(st.Objects) != 6 || st.Objects[0].Pages() != 21 || st.Objects[0].Partition != "" || st.Objects[1].Partition != "p0" {
		t.Errorf("objects %+v", st.Objects)
	}
}

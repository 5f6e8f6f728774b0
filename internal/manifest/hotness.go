package manifest

import (
	"cmp"
	"slices"
)

// compareHotness orders by score (highest first: the history of several captures), then
// young pages before old ones, then by LRU position (most recently used first). Object and
// page number break ties (positions repeat across buffer pool instances) so the order does
// not depend on the sort algorithm. Without history every score is 0 and the newest
// capture's LRU list decides alone.
func compareHotness(a, b Entry) int {
	if a.Score != b.Score {
		return cmp.Compare(b.Score, a.Score)
	}
	if a.Old != b.Old {
		if a.Old {
			return 1
		}
		return -1
	}
	return cmp.Or(cmp.Compare(a.LRU, b.LRU), cmp.Compare(a.Object, b.Object), cmp.Compare(a.Page, b.Page))
}

// SortByHotness sorts entries hottest first: by score, then young before old, then by LRU
// position. A snapshot writes pages in that order, so this is usually a linear check.
func SortByHotness(entries []Entry) {
	if !slices.IsSortedFunc(entries, compareHotness) {
		slices.SortFunc(entries, compareHotness)
	}
}

// CutToBudget returns at most maxPages entries from the front of entries (sort them with
// SortByHotness first to keep the hottest). A negative budget means no limit.
func CutToBudget(entries []Entry, maxPages int64) []Entry {
	if maxPages < 0 || maxPages >= int64(len(entries)) {
		return entries
	}
	return entries[:maxPages]
}

// BudgetPages converts a byte budget (--budget 2G) into pages of the manifest's size.
func (h Header) BudgetPages(budgetBytes int64) int64 {
	if h.PageSize <= 0 {
		return 0
	}
	return budgetBytes / int64(h.PageSize)
}

// CountByObject counts young and old pages per object id; objects is the number of objects.
func CountByObject(entries []Entry, objects int) []PageCount {
	counts := make([]PageCount, objects)
	for _, e := range entries {
		if int(e.Object) >= objects {
			continue
		}
		if e.Old {
			counts[e.Object].Old++
		} else {
			counts[e.Object].Young++
		}
	}
	return counts
}

// PagesByObject groups page numbers by object id, keeping the order of entries within each
// object. All groups share one backing array: two passes, no growth.
func PagesByObject(entries []Entry, objects int) [][]uint32 {
	sizes := make([]int, objects)
	for _, e := range entries {
		if int(e.Object) < objects {
			sizes[e.Object]++
		}
	}
	backing := make([]uint32, 0, len(entries))
	groups := make([][]uint32, objects)
	offset := 0
	for i, n := range sizes {
		groups[i] = backing[offset : offset : offset+n]
		offset += n
	}
	for _, e := range entries {
		if int(e.Object) < objects {
			groups[e.Object] = append(groups[e.Object], e.Page)
		}
	}
	return groups
}

// Count is the number of pages of one group of objects. Fields below the grouping level
// are empty: a schema count has only Schema set.
type Count struct {
	Schema    string `json:"schema"`
	Table     string `json:"table,omitempty"`
	Partition string `json:"partition,omitempty"`
	Index     string `json:"index,omitempty"`
	// PageType is set at the object level, and at the index level for pages of no index
	// (BLOB/LOB), which are grouped by type under their table.
	PageType string `json:"page_type,omitempty"`
	PageCount
}

// Stats are a manifest's page counts at every level, each list largest first.
type Stats struct {
	Pages   int64   `json:"pages"`
	Young   int64   `json:"young"`
	Old     int64   `json:"old"`
	Schemas []Count `json:"schemas"`
	// Tables fold the partitions of a table together.
	Tables []Count `json:"tables"`
	// Indexes fold partitions too; off-page pages appear with an empty Index and their
	// PageType.
	Indexes []Count `json:"indexes"`
	// Objects are the manifest's objects as they are (per partition and page type).
	Objects []Count `json:"objects"`
}

// Stats computes the page counts of a manifest from its summary.
func (s *Summary) Stats() Stats {
	var st Stats
	type level struct {
		key  func(Object) Count
		into *[]Count
	}
	levels := []level{
		{func(o Object) Count { return Count{Schema: o.Schema} }, &st.Schemas},
		{func(o Object) Count { return Count{Schema: o.Schema, Table: o.Table} }, &st.Tables},
		{func(o Object) Count {
			c := Count{Schema: o.Schema, Table: o.Table, Index: o.Index}
			if o.Index == "" {
				c.PageType = o.PageType
			}
			return c
		}, &st.Indexes},
		{func(o Object) Count {
			return Count{Schema: o.Schema, Table: o.Table, Partition: o.Partition, Index: o.Index, PageType: o.PageType}
		}, &st.Objects},
	}
	for _, l := range levels {
		pos := map[Count]int{}
		for i, o := range s.Objects {
			var pc PageCount
			if i < len(s.Counts) {
				pc = s.Counts[i]
			}
			k := l.key(o)
			j, ok := pos[k]
			if !ok {
				j = len(*l.into)
				pos[k] = j
				*l.into = append(*l.into, k)
			}
			(*l.into)[j].Young += pc.Young
			(*l.into)[j].Old += pc.Old
		}
		slices.SortStableFunc(*l.into, func(a, b Count) int {
			return cmp.Or(cmp.Compare(b.Pages(), a.Pages()),
				cmp.Compare(a.Schema, b.Schema), cmp.Compare(a.Table, b.Table),
				cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Index, b.Index),
				cmp.Compare(a.PageType, b.PageType))
		})
	}
	for _, pc := range s.Counts {
		st.Young += pc.Young
		st.Old += pc.Old
	}
	st.Pages = st.Young + st.Old
	return st
}

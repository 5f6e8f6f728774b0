package bufferpool

import (
	"context"
	"sort"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/logx"
)

// Group sums index rows into one row per table (by "table") or per schema (by "schema"),
// largest first; by "index" returns rows as they are. A group's size is exact only when
// every index's is.
func Group(rows []IndexResidency, by string) []IndexResidency {
	if by == "index" {
		return rows
	}
	sums := map[string]*IndexResidency{}
	var order []string
	for _, r := range rows {
		k := r.Schema
		g := IndexResidency{Schema: r.Schema, Known: true}
		if by == "table" {
			k += "\x00" + r.Table
			g.Table = r.Table
		}
		s := sums[k]
		if s == nil {
			s = &g
			sums[k] = s
			order = append(order, k)
		}
		s.Resident += r.Resident
		s.Old += r.Old
		s.Dirty += r.Dirty
		s.LOBResident += r.LOBResident
		s.LeafPages += r.LeafPages
		s.Pages += r.Pages
		s.MinPages += r.MinPages
		s.SizePages += r.SizePages
		s.LOBPages += r.LOBPages
		s.Known = s.Known && r.Known
	}
	out := make([]IndexResidency, 0, len(order))
	for _, k := range order {
		s := sums[k]
		if s.Pages > 0 {
			s.Coverage = min(1, float64(s.Resident)/float64(s.Pages))
		}
		out = append(out, *s)
	}
	sort.SliceStable(out, func(i, j int) bool {
		return out[i].Resident+out[i].LOBResident > out[j].Resident+out[j].LOBResident
	})
	return out
}

// SelectionCount is how many B-tree pages of the catalog's indexes are resident, and how
// many they have at most: a readiness gate must not say ready on a size that may be too
// small, so where an index's size is only a range (no file to count it in, statistics of a
// small index, estimates from information_schema.TABLES) it counts against its upper
// bound. Where that bound is of the B-tree and its off-page LOB pages together
// (PagesIncludeLOB), resident LOB pages count too.
func SelectionCount(ctx context.Context, conn *connection.Conn, cat *catalog.Catalog) (covered, total int64, err error) {
	// The server's dump where it can be borrowed (ReadSelection): a probe then costs what
	// the selection holds, not what the pool holds.
	return SelectionCountFrom(ctx, conn, cat, PageListAuto)
}

// SelectionCountFrom is SelectionCount from the given page list source (SourceLRUTable
// for measures taken while a native load holds the dump file).
func SelectionCountFrom(ctx context.Context, conn *connection.Conn, cat *catalog.Catalog, source string) (covered, total int64, err error) {
	// Its info lines are left out: a probe runs again and again.
	res, err := ReadSelection(ctx, conn, cat, ReadOptions{IncludeZero: true, OnlyCatalog: true}, source, logx.New(logx.Default().Writer(), true))
	if err != nil {
		return 0, 0, err
	}
	for _, r := range res.Indexes {
		if r.Fulltext {
			// Sized by their files, free pages included: a bound a warm server may
			// never reach, and the gate would wait forever.
			continue
		}
		have := r.Resident
		if r.PagesIncludeLOB {
			have += r.LOBResident
		}
		total += r.Pages
		covered += min(have, r.Pages)
	}
	return covered, total, nil
}

package catalog

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/ibd"
)

// maxTreeRead bounds the page headers read to count one clustered index's leaves: the
// pages above its leaves, about one per few hundred leaves (4,096 of them: an index of a
// million leaves and more keeps its statistics' range).
const maxTreeRead = 4096

// sizesFromFiles counts every index's B-tree in the tablespace files (ibd.Tree), where
// innowarm can read them (on the database host, the datadir readable): statistics are
// sampled, recomputed only after a tenth of a table changed, and for a clustered index with
// off-page columns count its BLOB pages with its leaves on both servers (measured: a
// 16-page tree with 2,180 LOB pages reports 2,195 leaf pages), which made warm plan 3,000
// pages for a 22-page index and 22 for its LOB pages, and a readiness gate divide by the
// wrong size. It reads a few pages per file (the space header, the descriptor and inode
// pages, the roots), and for a clustered index that may have off-page columns the pages
// above its leaves. A file is as the server last wrote it. Elsewhere the statistics stay,
// with a note where that leaves a clustered index's size to a range.
//
// roots is the whole view of index roots, started beside the load where the datadir is
// readable (nil: read here, once a file proved readable). Without countTrees only the
// roots are kept for the load (KnownRoots).
func sizesFromFiles(ctx context.Context, conn *connection.Conn, sess *connection.Session, cat *Catalog, roots *pendingRead[map[uint32]map[string]IndexRoot], countTrees bool) {
	srv := conn.Server
	type partRef struct {
		t *Table
		p *Part
	}
	want := map[uint32]partRef{}
	for _, t := range cat.Tables {
		for _, p := range t.Parts {
			// A tablespace several tables share has an index of each name per table: its
			// trees are not told apart by name here, and the statistics size them instead.
			if p.SpaceKnown && p.Space != 0 && !p.SharedSpace {
				want[p.Space] = partRef{t, p}
			}
		}
	}
	if len(want) == 0 {
		return
	}
	var why string
	defer func() {
		// The note is of the sizes, which a load without them does not give.
		if why == "" || !countTrees {
			return
		}
		var bounded []string
		for _, t := range cat.Tables {
			c := t.Clustered()
			if c == nil || !t.MayHoldLOBs() {
				continue
			}
			for _, p := range t.Parts {
				if !t.SizeExact(c, p) {
					bounded = append(bounded, t.FullName()+partLabel(p))
				}
			}
		}
		if len(bounded) == 0 {
			return
		}
		sort.Strings(bounded)
		if len(bounded) > 3 {
			bounded = append(bounded[:3], fmt.Sprintf("and %d more", len(bounded)-3))
		}
		cat.Notes = append(cat.Notes, fmt.Sprintf("the B-tree size of %s is a range: statistics count off-page BLOB/TEXT pages with the clustered index's leaves, and the tablespace file that tells them apart cannot be read here (%s)", strings.Join(bounded, ", "), why))
	}()
	spaces := map[uint32]bool{}
	for s := range want {
		spaces[s] = true
	}
	paths, err := TablespaceFiles(ctx, conn, spaces)
	if err != nil {
		why = err.Error()
		return
	}
	// A file that cannot be read here (innowarm on another host) spares the view's read:
	// on MySQL it builds every table's definition (about 5 s at 20,000 tables).
	if err := oneReadable(paths, want); err != nil {
		why = err.Error()
		return
	}
	// The whole view: kept for the load (KnownRoots), it spares the page lists' and the key
	// capture's reads of it.
	var viewRoots map[uint32]map[string]IndexRoot
	if roots != nil {
		viewRoots, err = roots.wait()
	} else {
		viewRoots, err = ReadIndexRoots(ctx, sess, srv, "")
	}
	if err != nil {
		why = "read the index roots: " + err.Error()
		return
	}
	cat.RememberRoots(nil, true, viewRoots)
	if !countTrees {
		return
	}
	allRoots, err := withPartitionRoots(cat, spaces, paths, viewRoots, srv.PageSize)
	if err != nil {
		why = err.Error()
	}
	bySpace := map[uint32][]ibd.Index{}
	for space := range spaces {
		for _, r := range allRoots[space] {
			bySpace[space] = append(bySpace[space], ibd.Index{ID: r.ID, Root: r.Root})
		}
		slices.SortFunc(bySpace[space], func(a, b ibd.Index) int { return cmp.Compare(a.ID, b.ID) })
	}
	for space, ref := range want {
		path, ok := paths[space]
		if !ok {
			why = fmt.Sprintf("no data file listed for tablespace %d", space)
			continue
		}
		if len(bySpace[space]) == 0 {
			// MySQL's INNODB_INDEXES leaves out the indexes of partitioned tables, and the
			// table's SDI did not give them either.
			why = fmt.Sprintf("%s lists no index of tablespace %d", srv.IndexesTable(), space)
			continue
		}
		m, err := ibd.Open(path, srv.PageSize, bySpace[space])
		if err != nil {
			why = err.Error()
			continue
		}
		lobs := ref.t.MayHoldLOBs()
		for _, ix := range ref.t.Indexes {
			r, ok := allRoots[space][ix.Name]
			id := r.ID
			if !ok || ix.Type == "FULLTEXT" {
				continue
			}
			tree, err := m.Tree(path, id, ix.Clustered && lobs, maxTreeRead)
			if err != nil {
				why = fmt.Sprintf("%s: %v", path, err)
				continue
			}
			sz := ix.Sizes[ref.p.Name]
			sz.FromFile, sz.TreePages, sz.FileLOBPages = true, tree.Pages, 0
			if ix.Clustered {
				sz.FileLOBPages = tree.LOBPages
			}
			ix.Sizes[ref.p.Name] = sz
		}
	}
}

// withPartitionRoots is the view's index roots and, for the wanted spaces (spaces) of
// partitions the view lists no index of, their roots from the partitioned table's
// serialized dictionary (SDI): MySQL 8.0+ lists no index of a partitioned table in
// INNODB_INDEXES, and keeps the table's SDI, with every partition's index ids and roots, in
// one of its partitions' files (the first one's). Without them a partition's size was left
// to its statistics, wrong by any amount when they are stale (1 page for a table filled
// since it was created), where MariaDB's were counted in the file. The view's map is not
// changed: the load keeps it (RememberRoots). err says why some table's SDI gave none.
func withPartitionRoots(cat *Catalog, spaces map[uint32]bool, paths map[uint32]string, view map[uint32]map[string]IndexRoot, pageSize int) (map[uint32]map[string]IndexRoot, error) {
	out, cloned := view, false
	var last error
	for _, t := range cat.Tables {
		if !t.Partitioned() {
			continue
		}
		// The table's spaces, with the id of each part's InnoDB table.
		ids := map[uint32]uint64{}
		missing := false
		for _, p := range t.Parts {
			if !p.SpaceKnown {
				continue
			}
			ids[p.Space] = p.TableID
			if spaces[p.Space] && len(view[p.Space]) == 0 {
				missing = true
			}
		}
		if !missing {
			continue
		}
		for _, p := range t.Parts {
			path := paths[p.Space]
			if !p.SpaceKnown || path == "" {
				continue
			}
			roots, found, err := ibd.PartitionRoots(path, pageSize, t.Name)
			if err != nil {
				last = fmt.Errorf("%s: the SDI of %s: %w", path, t.FullName(), err)
				continue
			}
			if !found {
				continue
			}
			for space, byName := range roots {
				if _, ours := ids[space]; !ours || !spaces[space] || len(view[space]) > 0 {
					continue
				}
				if !cloned {
					out, cloned = maps.Clone(view), true
					if out == nil {
						out = map[uint32]map[string]IndexRoot{}
					}
				}
				named := make(map[string]IndexRoot, len(byName))
				for name, ix := range byName {
					named[name] = IndexRoot{ID: ix.ID, Root: ix.Root, Table: ids[space]}
				}
				out[space] = named
			}
			break
		}
	}
	return out, last
}

func partLabel(p *Part) string {
	if p.Name == "" {
		return ""
	}
	return " partition " + p.Name
}

// oneReadable opens the first of the wanted spaces' files (by space id) that the server
// lists: nil when it can be read here.
func oneReadable[T any](paths map[uint32]string, want map[uint32]T) error {
	spaces := make([]uint32, 0, len(want))
	for s := range want {
		if paths[s] != "" {
			spaces = append(spaces, s)
		}
	}
	if len(spaces) == 0 {
		return nil // each space says why below
	}
	f, err := os.Open(paths[slices.Min(spaces)])
	if err != nil {
		return fmt.Errorf("the tablespace files are not readable here: %w", err)
	}
	return f.Close()
}

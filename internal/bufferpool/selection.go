package bufferpool

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/dumpfile"
	"github.com/innowarm/innowarm/internal/ibd"
	"github.com/innowarm/innowarm/internal/logx"
)

// PageListAuto asks ReadSelection for the server's dump where it can be borrowed, and
// INNODB_BUFFER_PAGE_LRU elsewhere.
const PageListAuto = "auto"

// ErrFilesUnreadable: ReadDump could not read the allocation metadata of a tablespace with
// resident pages (encrypted, page-compressed, no file listed).
var ErrFilesUnreadable = errors.New("tablespace files unreadable")

// ReadSelection is Read from the page list source asks for: SourceDump (ReadDump),
// SourceLRUTable (Read), or PageListAuto (the dump where dumpfile.Check allows it and every
// file it needs is readable, and where it names the pages of tables whose header page is
// not written yet or the pool is too large to list cheaply (cheapLRUTablePages); the LRU
// table otherwise, with the reason in PageListNote).
//
// A whole-pool read (OnlyCatalog false; cat holds every user table) from the dump names
// the user tables' pages and counts every other page in Other: the system tablespace, undo
// logs and the system schemas' tables (mysql.*), whose indexes only the server's view
// names. That is what lets a whole-pool inspect cost a copy of the LRU list instead of a
// temporary table of the pool.
func ReadSelection(ctx context.Context, conn *connection.Conn, cat *catalog.Catalog, o ReadOptions, source string, log *logx.Logger) (*Residency, error) {
	if source == SourceLRUTable {
		return Read(ctx, conn, cat, o)
	}
	a := dumpfile.Check(ctx, conn)
	if a.OK {
		if shared := SharedSpaces(cat); len(shared) > 0 {
			a.OK, a.Reason = false, "tables share a tablespace ("+strings.Join(shared, "; ")+"): their files do not say which table a page is of"
		} else if source != SourceDump && dumpfile.Busy(ctx, conn) {
			a.OK, a.Reason = false, "another innowarm holds the server's dump file (a native load)"
		}
	}
	if !a.OK {
		if source == SourceDump {
			return nil, fmt.Errorf("the server's dump cannot be used: %s", a.Reason)
		}
		return readWithNote(ctx, conn, cat, o, a.Reason)
	}
	res, err := ReadDump(ctx, conn, cat, log, o)
	if errors.Is(err, ErrFilesUnreadable) && source != SourceDump {
		return readWithNote(ctx, conn, cat, o, err.Error())
	}
	if err == nil && source != SourceDump && res.unnamedFresh > 0 && res.Totals.PagesTotal <= cheapLRUTablePages {
		return readWithNote(ctx, conn, cat, o, fmt.Sprintf("the files cannot name %d resident pages of tables whose header page the server has not written yet, and a pool of %d pages costs little to read from the LRU table", res.unnamedFresh, res.Totals.PagesTotal))
	}
	return res, err
}

// cheapLRUTablePages: a pool of at most this many pages (1 GiB of 16 KiB pages) costs the
// server about 0.3 s and a temporary table of some 20 MB to list in
// INNODB_BUFFER_PAGE_LRU, so where a table's header page is not written yet and the files
// leave its unwritten pages unnamed (every page of a table created since the last flush),
// ReadSelection reads it instead of listing them under UnknownIndex. A larger pool keeps
// the dump's cheaper, coarser answer. The few pages of other tables that a file cannot name
// (allocated since, or on MySQL never-written pages its read-ahead reads, which the LRU
// table counts as no index's) do not make the switch, as before.
const cheapLRUTablePages = 65536

// SharedSpaces lists the tablespaces the catalog's tables share (MySQL's general
// tablespaces, and the system tablespace): a page there names its index by id only, and
// ReadDump keeps one table per tablespace.
func SharedSpaces(cat *catalog.Catalog) []string {
	if cat == nil {
		return nil
	}
	owner := map[uint32]string{}
	seen := map[uint32]bool{}
	var out []string
	var system []string
	for _, t := range cat.Tables {
		for _, p := range t.Parts {
			if p.SpaceKnown && p.Space == 0 && len(system) < 3 {
				system = append(system, t.Schema+"."+t.Name)
			}
			if !p.SpaceKnown || p.Space == 0 {
				continue
			}
			name := t.Schema + "." + t.Name
			if p.Name != "" {
				name += " partition " + p.Name
			}
			prev, ok := owner[p.Space]
			switch {
			case !ok:
				owner[p.Space] = name
			case prev != name && !seen[p.Space]:
				seen[p.Space] = true
				out = append(out, fmt.Sprintf("space %d: %s and %s", p.Space, prev, name))
			}
		}
	}
	// A selected table whose tablespace holds tables the selection leaves out: their
	// pages would be taken for its own.
	for _, t := range cat.Tables {
		for _, p := range t.Parts {
			if p.SharedSpace && p.SpaceKnown && !seen[p.Space] {
				seen[p.Space] = true
				out = append(out, fmt.Sprintf("space %d: %s and tables not selected", p.Space, owner[p.Space]))
			}
		}
	}
	if len(system) > 0 {
		out = append(out, "the system tablespace: "+strings.Join(system, ", ")+" (created while innodb_file_per_table was off)")
	}
	return out
}

func readWithNote(ctx context.Context, conn *connection.Conn, cat *catalog.Catalog, o ReadOptions, note string) (*Residency, error) {
	res, err := Read(ctx, conn, cat, o)
	if res != nil {
		res.PageListNote = note
	}
	return res, err
}

// ReadDump is Read for the catalog's tables (as with ReadOptions.OnlyCatalog) at the cost
// of what they hold rather than of what the pool holds: the server writes its LRU list to
// its dump file (innodb_buffer_pool_dump_now: a copy of the list, no table built), innowarm
// keeps the pages of the selected tablespaces, and names each one's index from the
// tablespace file's allocation metadata (ibd.Map: a few pages per file). The LRU order and
// each instance's old sublist length give the old flags, as in StreamDump. It needs
// innowarm on the database host (dumpfile.Check). The dump knows no dirty pages: Dirty is
// 0.
//
// Off-page BLOB/TEXT pages are allocated from the clustered index's leaf segment, so the
// segment map alone cannot tell them from its leaf pages. ReadDump reads the page type
// (FIL_PAGE_TYPE) from the header of each resident page of that segment, in the file
// (ibd.ReadHeaders: pages close together in one read), for tables whose records can hold
// off-page columns only (mayHoldLOBs): for the others it needs no reading.
// That is exact for every page written since its last change, costs reads of the
// selection's resident clustered pages and nothing of the server, and leaves the cheaper
// alternatives aside: statistics only estimate the LOB share, and walking the B-tree's
// upper levels to list its leaves would need every index's record format. The page's
// index id (PAGE_INDEX_ID) is read the same way for pages the metadata on disk does not
// assign (allocated since the server last wrote the descriptors). A page never written
// since its allocation reads as zeros: it is counted under UnknownIndex and in Unnamed.
// With no dirty page in the pool the descriptors on disk are current, and a page they call
// free is nobody's (MySQL's linear read-ahead reads a segment's unused pages; the server
// lists them as ALLOCATED): it is counted in Other, as Read counts it.
func ReadDump(ctx context.Context, conn *connection.Conn, cat *catalog.Catalog, log *logx.Logger, o ReadOptions) (*Residency, error) {
	t0 := time.Now()
	spaces := spaceOwners(cat)
	b, err := dumpfile.Borrow(ctx, conn, log)
	if err != nil {
		return nil, err
	}
	// Only the selection's pages are kept, with their place in the list.
	type listed struct {
		pos int64
		id  dumpfile.PageID
	}
	var kept []listed
	var n int64
	// Read before the dump: a page that leaves the pool between the two is missing from the
	// list and counted as left, so a proof from these counters (AfterLoad) errs on the side
	// of reading the pool again.
	counters, countersErr := ReadPageCounters(ctx, conn)
	aux := auxOwners(cat)
	var keptAux []listed
	listSeconds, total, err := b.DumpEach(ctx, conn, log, func(id dumpfile.PageID) {
		if _, ok := spaces[id.Space()]; ok {
			kept = append(kept, listed{n, id})
		} else if _, ok := aux[id.Space()]; ok {
			keptAux = append(keptAux, listed{n, id})
		}
		n++
	})
	b.Return()
	if err != nil {
		return nil, err
	}
	instances, err := readInstances(ctx, conn)
	if err != nil {
		return nil, err
	}
	present := map[uint32]bool{}
	for _, k := range kept {
		present[k.id.Space()] = true
	}
	namer, err := newFileNamer(ctx, conn, cat, present)
	if err != nil {
		return nil, err
	}
	if len(namer.unreadable) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrFilesUnreadable, strings.Join(namer.unreadable, "; "))
	}
	if err := namer.unlistedError(conn.Server.IndexesTable()); err != nil {
		return nil, err
	}
	totals, err := ReadTotals(ctx, conn)
	if err != nil {
		return nil, err
	}
	res := &Residency{Totals: totals, PageList: SourceDump, ListSeconds: listSeconds, Other: total - int64(len(kept)+len(keptAux))}
	if countersErr == nil {
		proof := &loadProof{counters: counters, resident: PageSet{}, namer: namer, spaces: spaces, cat: cat, includeZero: o.IncludeZero}
		for _, k := range kept {
			proof.resident.Add(k.id.Space(), k.id.Page())
		}
		res.proof = proof
	}
	rb := newResidencyBuilder()
	unknown := func(space uint32, old bool) {
		r := rb.get(space, spaces[space], UnknownIndex)
		r.Resident++
		if old {
			r.Old++
		}
		res.Unnamed++
		if namer.fresh[space] {
			res.unnamedFresh++
		}
	}
	type pendingPage struct {
		page uint32
		old  bool
	}
	pending := map[uint32][]pendingPage{}
	walk := newInstanceWalker(instances, total)
	// A FULLTEXT index's auxiliary tables are its own: their pages need no file to be
	// named, but the fixed metadata pages of their files, which are no index's.
	sdiRoot := conn.Server.NewTablespaceSDIRoot()
	for _, k := range keptAux {
		_, old := walk.at(k.pos)
		pageType := "INDEX"
		if page := k.id.Page(); ibd.FixedMetadataPage(page, conn.Server.PageSize) || (sdiRoot != 0 && page == sdiRoot) {
			pageType = "FILE_SPACE_HEADER"
		}
		rb.addAux(res, aux[k.id.Space()], pageType, 1, oldCount(old), 0)
	}
	lobs := map[indexKey]bool{}
	mayHoldLOB := func(space uint32, t *catalog.Table, name string) bool {
		k := indexKey{space, "", name}
		v, ok := lobs[k]
		if !ok {
			v = mayHoldLOBs(t, name)
			lobs[k] = v
		}
		return v
	}
	for _, k := range kept {
		_, old := walk.at(k.pos)
		space, page := k.id.Space(), k.id.Page()
		owner := spaces[space]
		res.Selected++
		if namer.fresh[space] {
			pending[space] = append(pending[space], pendingPage{page, old})
			continue
		}
		kind, id, leaf := namer.maps[space].Segment(page)
		name, named := namer.names[id]
		switch {
		case kind == ibd.FileMetadata:
			res.Other++
		case kind == ibd.IndexPage && named && !(leaf && mayHoldLOB(space, owner.t, name)):
			r := rb.get(space, owner, name)
			r.Resident++
			if old {
				r.Old++
			}
		default:
			// A clustered leaf page or a LOB page; or a page the metadata does not assign.
			pending[space] = append(pending[space], pendingPage{page, old})
		}
	}
	// The descriptors on disk are current when nothing in the pool waits to be written;
	// otherwise a page they call free may be freshly allocated.
	clean := totals.PagesDirty == 0
	for space, pages := range pending {
		owner := spaces[space]
		// m is nil for a fresh tablespace (its header page not written yet): its pages are
		// named by their own headers only.
		m := namer.maps[space]
		pageSize := namer.pageSize
		if m != nil {
			pageSize = m.PageSize
		}
		clustered := clusteredName(owner.t)
		olds := make(map[uint32]bool, len(pages))
		nums := make([]uint32, len(pages))
		for i, p := range pages {
			nums[i] = p.page
			olds[p.page] = p.old
		}
		err := ibd.ReadHeaders(namer.paths[space], pageSize, nums, func(page uint32, h ibd.Header) {
			old := olds[page]
			var r *IndexResidency
			kind, name := namer.headerOwner(space, page, h, m, clean, clustered)
			switch kind {
			case ownedUnknown:
				unknown(space, old)
				return
			case ownedIndex:
				r = rb.get(space, owner, name)
				r.Resident++
			case ownedLOB:
				r = rb.get(space, owner, name)
				r.LOBResident++
			default:
				res.Other++
				return
			}
			if old {
				r.Old++
			}
		})
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrFilesUnreadable, err)
		}
	}
	rb.finish(res, cat, o.IncludeZero)
	res.ReadSeconds = time.Since(t0).Seconds()
	return res, nil
}

// mayHoldLOBs says whether the leaf segment of index name of t can hold off-page column
// pages: only a clustered index's, of a table whose records can outgrow the page
// (catalog.Table.MayHoldLOBs). A table of short columns has no LOB page, and its clustered
// pages need no reading.
func mayHoldLOBs(t *catalog.Table, name string) bool {
	c := t.Clustered()
	return c != nil && c.Name == name && t.MayHoldLOBs()
}

func oldCount(old bool) int64 {
	if old {
		return 1
	}
	return 0
}

package bufferpool

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/dumpfile"
	"github.com/innowarm/innowarm/internal/flavor"
	"github.com/innowarm/innowarm/internal/ibd"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/pagekey"
)

// Where a page list comes from.
const (
	// SourceDump: the server writes its LRU list to its dump file (space and page numbers,
	// most recently used first) and innowarm names each page from the tablespace file's own
	// allocation metadata. Costs the server a copy of its list, about 0.2 µs per page.
	SourceDump = "dump"
	// SourceLRUTable: INFORMATION_SCHEMA.INNODB_BUFFER_PAGE_LRU, which makes the server build
	// a row for every page of its pool (2-3 µs per page, and a temporary table).
	SourceLRUTable = "lru-table"
)

// Page types of pages a dump-sourced list names: the server's dump carries no page type.
const (
	// PageTypeSegment: a page of the index's file segments, a B-tree node or, for a
	// clustered index, an off-page BLOB/TEXT page.
	PageTypeSegment = "INDEX_SEGMENT"
	// PageTypeFileMetadata: the tablespace header, extent descriptor and inode pages.
	PageTypeFileMetadata = "FILE_METADATA"
	// PageTypeUnnamed: a page of the table's file that its metadata on disk does not
	// assign yet (allocated since the server last wrote its descriptors).
	PageTypeUnnamed = "UNNAMED"
)

// StreamDump is StreamLRU from the server's own dump of its LRU list: the same pages in the
// same order with the same LRU distances and old flags, named from the tablespace files
// instead of by the server. It needs innowarm on the database host (dumpfile.Check). A
// tablespace with resident pages whose index roots neither the server's dictionary view
// nor its table's SDI gives (MySQL's partitions, where the SDI is not readable) fails it
// with ErrFilesUnreadable before any page is given to each.
// Differences: page types are PageTypeSegment/FileMetadata/Unnamed rather than the
// server's, but for off-page BLOB/TEXT pages, whose type (and no index, as the server
// lists them) is read from their headers in the file as ReadDump reads it (readLOBTypes);
// pages of tables outside the catalog (system tables) are not named; the old flag comes
// from each instance's old sublist length read just after the dump.
func StreamDump(ctx context.Context, conn *connection.Conn, cat *catalog.Catalog, log *logx.Logger, each func(LRUPage) error) (LRUStats, error) {
	t0 := time.Now()
	st := LRUStats{Source: SourceDump}
	spaces := spaceOwners(cat)
	aux := auxOwners(cat)
	b, err := dumpfile.Borrow(ctx, conn, log)
	if err != nil {
		return st, err
	}
	// Only the selection's pages are kept, with their place in the list: the list is the
	// whole pool, the selection may be a small part of it.
	type keptPage struct {
		pos int64
		id  dumpfile.PageID
	}
	// Sized once: grown by doubling, a list of 750,000 pages took a fifth of the
	// snapshot's time (copies, and the collector's work on each new array).
	kept := make([]keptPage, 0, residentBound(conn.Server, cat))
	var n int64
	present := map[uint32]bool{}
	seconds, total, err := b.DumpEach(ctx, conn, log, func(id dumpfile.PageID) {
		if _, ok := spaces[id.Space()]; ok {
			kept = append(kept, keptPage{n, id})
			present[id.Space()] = true
		} else if _, ok := aux[id.Space()]; ok {
			kept = append(kept, keptPage{n, id})
		}
		n++
	})
	b.Return()
	if err != nil {
		return st, err
	}
	st.ListSeconds = seconds
	instances, err := readInstances(ctx, conn)
	if err != nil {
		return st, err
	}
	namer, err := newFileNamer(ctx, conn, cat, present)
	if err != nil {
		return st, err
	}
	if err := namer.unlistedError(conn.Server.IndexesTable()); err != nil {
		return st, err
	}
	for _, n := range namer.unreadable {
		log.Infof("%s: its pages are listed by table, without their index", n)
	}
	listed := func(yield func(space, page uint32)) {
		for _, k := range kept {
			yield(k.id.Space(), k.id.Page())
		}
	}
	fromHeaders, err := nameFreshPages(namer, spaces, listed, log)
	if err != nil {
		return st, err
	}
	lobs, err := readLOBTypes(namer, spaces, listed)
	if err != nil {
		return st, err
	}
	pos := newInstanceWalker(instances, total)
	st.Pages = total
	st.Unattributed = total - int64(len(kept))
	for _, k := range kept {
		lru, old := pos.at(k.pos)
		p := LRUPage{LRU: lru, Old: old, Space: k.id.Space(), Page: k.id.Page()}
		if o, ok := spaces[p.Space]; ok {
			p.Schema, p.Table, p.Partition = o.t.Schema, o.t.Name, o.p.Name
			p.PageType, p.Index = namer.name(p.Space, p.Page)
			if hp, ok := fromHeaders[k.id]; ok {
				p.PageType, p.Index = PageTypeSegment, hp.name
				if hp.lob != "" {
					p.PageType, p.Index = hp.lob, ""
				}
			} else if lob, ok := lobs[k.id]; ok {
				// An off-page column page, which StreamLRU lists by its type, with no index.
				p.PageType, p.Index = lob, ""
			}
			if p.PageType == PageTypeUnnamed {
				st.Unnamed++
			}
		} else {
			a := aux[p.Space]
			p.Schema, p.Table, p.Index, p.PageType = a.t.Schema, a.t.Name, a.role, PageTypeSegment
		}
		st.Attributed++
		if err := each(p); err != nil {
			return st, err
		}
	}
	st.Seconds = time.Since(t0).Seconds()
	return st, nil
}

// headerPage is what a fresh tablespace's page header names: its index, and for an
// off-page column page (of the clustered index named) its page type.
type headerPage struct {
	name string
	lob  string // the LOB page type (lobTypeName), "" for a B-tree page
}

// nameFreshPages names the listed pages of namer's fresh tablespaces from their headers
// (fileNamer.headerPages), keyed by page id, and says for each such tablespace how many it
// could name: the rest are listed by table only.
func nameFreshPages(namer *fileNamer, spaces map[uint32]spaceOwner, listed func(yield func(space, page uint32)), log *logx.Logger) (map[dumpfile.PageID]headerPage, error) {
	if len(namer.fresh) == 0 {
		return nil, nil
	}
	bySpace := map[uint32][]uint32{}
	listed(func(space, page uint32) {
		if namer.fresh[space] {
			bySpace[space] = append(bySpace[space], page)
		}
	})
	out := map[dumpfile.PageID]headerPage{}
	for space, pages := range bySpace {
		names, err := namer.headerPages(space, pages, clusteredName(spaces[space].t))
		if err != nil {
			return nil, fmt.Errorf("read the page headers of tablespace %d: %w", space, err)
		}
		for page, hp := range names {
			out[dumpfile.MakePageID(space, page)] = hp
		}
		log.Infof("%s: its header page is not written yet (a table created since the server last flushed it): %d of its %d resident pages named from their own headers, the rest listed by table", namer.paths[space], len(names), len(pages))
	}
	return out, nil
}

type poolInstance struct{ pages, old int64 }

func readInstances(ctx context.Context, conn *connection.Conn) ([]poolInstance, error) {
	rows, err := conn.DB.QueryContext(ctx, conn.Server.PoolInstancesQuery())
	if err != nil {
		return nil, fmt.Errorf("read the buffer pool instances: %w", err)
	}
	defer rows.Close()
	var out []poolInstance
	for rows.Next() {
		var id int
		var in poolInstance
		if err := rows.Scan(&id, &in.pages, &in.old); err != nil {
			return nil, fmt.Errorf("read the buffer pool instances: %w", err)
		}
		out = append(out, in)
	}
	return out, rows.Err()
}

// instanceWalker gives each page of a dump its distance from its instance's LRU head and its
// old flag. The dump lists the instances one after another, each from its head; their
// lengths are read a moment later, so with several instances they are scaled to the dump's
// total.
type instanceWalker struct {
	bounds []instanceBound
	i      int
	start  int64 // first page of instance i
}

type instanceBound struct{ end, oldFrom int64 }

func newInstanceWalker(instances []poolInstance, total int64) *instanceWalker {
	var sum int64
	for _, in := range instances {
		sum += in.pages
	}
	w := &instanceWalker{}
	var start int64
	for k, in := range instances {
		length := total
		if sum > 0 && len(instances) > 1 {
			length = in.pages * total / sum
		}
		if k == len(instances)-1 {
			length = total - start
		}
		// The old sublist is the list's tail: its length counts from the end, as the
		// server counts it (the dump may leave out a few pages, e.g. temporary ones).
		old := min(length, in.old)
		w.bounds = append(w.bounds, instanceBound{end: start + length, oldFrom: start + length - old})
		start += length
	}
	if len(w.bounds) == 0 {
		w.bounds = []instanceBound{{end: total, oldFrom: total}}
	}
	return w
}

// at is the LRU distance and old flag of the page at position n of the list; successive
// calls must not go back.
func (w *instanceWalker) at(n int64) (lru uint32, old bool) {
	for w.i < len(w.bounds)-1 && n >= w.bounds[w.i].end {
		w.start = w.bounds[w.i].end
		w.i++
	}
	b := w.bounds[w.i]
	return uint32(n - w.start), n >= b.oldFrom
}

// fileNamer names pages of the catalog's tablespaces from their files.
type fileNamer struct {
	maps       map[uint32]*ibd.Map
	paths      map[uint32]string
	names      map[uint64]string // index id -> name
	spaceOf    map[uint64]uint32 // index id -> tablespace
	unreadable []string
	// fresh: tablespaces whose header page is not written yet (ibd.ErrHeaderNotWritten):
	// no map, but the pages the server has written name themselves (headerNames).
	fresh map[uint32]bool
	// pageSize: the server's innodb_page_size, the fresh files' page size (a compressed
	// table's smaller pages fail ReadHeaders' offset check and stay unnamed).
	pageSize int
	// sdiRoot: the page a new tablespace's SDI is rooted at (MySQL), 0 for none: file
	// metadata to a fresh tablespace's reader, as the layout's own pages are.
	sdiRoot uint32
	// unlisted: tablespaces whose indexes the dictionary view does not list (their pages
	// are named FileMetadata or Unnamed only).
	unlisted []string
}

// unlistedError says, where there are such tablespaces, that the dictionary view lists no
// index of some: MySQL's partitions, whose pages could be named by table only, where the
// LRU table names their indexes.
func (fn *fileNamer) unlistedError(indexesTable string) error {
	if len(fn.unlisted) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s lists no index of %d of the selection's tablespaces with resident pages (partitions, on MySQL), so the files cannot say which index their pages are of", ErrFilesUnreadable, indexesTable, len(fn.unlisted))
}

// newFileNamer reads the allocation metadata of the present tablespaces: a few pages per
// file (one descriptor page per 256 MiB, the inode pages, the index roots), not the data.
func newFileNamer(ctx context.Context, conn *connection.Conn, cat *catalog.Catalog, present map[uint32]bool) (*fileNamer, error) {
	fn := &fileNamer{maps: map[uint32]*ibd.Map{}, names: map[uint64]string{}, spaceOf: map[uint64]uint32{}, fresh: map[uint32]bool{}, pageSize: conn.Server.PageSize, sdiRoot: conn.Server.NewTablespaceSDIRoot()}
	if len(present) == 0 {
		return fn, nil
	}
	srv := conn.Server
	paths, err := catalog.TablespaceFiles(ctx, conn, present)
	if err != nil {
		return nil, err
	}
	fn.paths = paths
	// A MySQL partition's roots come from its table's SDI: INNODB_INDEXES lists none.
	byName, err := pagekey.IndexRoots(ctx, conn, cat, present)
	if err != nil {
		return nil, fmt.Errorf("read the index roots: %w", err)
	}
	roots := map[uint32][]ibd.Index{}
	for space, ixs := range byName {
		for name, r := range ixs {
			roots[space] = append(roots[space], ibd.Index{ID: r.ID, Root: r.Root})
			fn.names[r.ID] = name
			fn.spaceOf[r.ID] = space
		}
		sort.Slice(roots[space], func(i, j int) bool { return roots[space][i].ID < roots[space][j].ID })
	}
	for space := range present {
		path, ok := paths[space]
		if !ok {
			fn.unreadable = append(fn.unreadable, fmt.Sprintf("tablespace %d has no data file listed", space))
			continue
		}
		if len(roots[space]) == 0 {
			// MySQL's INNODB_INDEXES leaves out the indexes of partitioned tables, and their
			// table's SDI was not readable: the file's segments can be read, but not told apart.
			fn.unlisted = append(fn.unlisted, fmt.Sprintf("tablespace %d: no index of it is listed in %s", space, srv.IndexesTable()))
		}
		m, err := ibd.Open(path, srv.PageSize, roots[space])
		if errors.Is(err, ibd.ErrHeaderNotWritten) {
			fn.fresh[space] = true
			continue
		}
		if err != nil {
			// Encrypted or compressed files, a file dropped since: its pages stay unnamed.
			fn.unreadable = append(fn.unreadable, fmt.Sprintf("%s: %v", path, err))
			continue
		}
		fn.maps[space] = m
	}
	return fn, nil
}

// headerNames names pages of a fresh tablespace (fn.fresh) from their own headers on disk:
// a B-tree page of one of the space's indexes by that index, an off-page column page by
// the clustered index (when the table has one). A page not written since its allocation,
// one whose header names another page (not the server's page size) and any other page
// are left out.
func (fn *fileNamer) headerNames(space uint32, pages []uint32, clustered string) (map[uint32]string, error) {
	hps, err := fn.headerPages(space, pages, clustered)
	out := make(map[uint32]string, len(hps))
	for page, hp := range hps {
		out[page] = hp.name
	}
	return out, err
}

// headerPages is headerNames with each off-page column page's type.
func (fn *fileNamer) headerPages(space uint32, pages []uint32, clustered string) (map[uint32]headerPage, error) {
	out := make(map[uint32]headerPage, len(pages))
	err := ibd.ReadHeaders(fn.paths[space], fn.pageSize, pages, func(page uint32, h ibd.Header) {
		switch kind, name := fn.headerOwner(space, page, h, nil, false, clustered); kind {
		case ownedIndex:
			out[page] = headerPage{name: name}
		case ownedLOB:
			out[page] = headerPage{name: name, lob: lobTypeName(h.Type)}
		}
	})
	return out, err
}

// readLOBTypes reads, from the tablespace files, the page type of each listed page of a
// clustered index's leaf segment of a table whose records can hold off-page columns
// (mayHoldLOBs), as ReadDump does: InnoDB allocates off-page BLOB/TEXT pages from that
// segment, so the segment map alone cannot tell them from the leaves. It returns the
// off-page column pages' types (lobTypeName) by page id. Other tables' pages, and fresh
// tablespaces (nameFreshPages reads their headers), are not read: a pool without such
// tables costs a map look-up per listed page.
func readLOBTypes(namer *fileNamer, spaces map[uint32]spaceOwner, listed func(yield func(space, page uint32))) (map[dumpfile.PageID]string, error) {
	// By tablespace with a map: its clustered index's id, where its table may hold LOBs.
	clustered := map[uint32]uint64{}
	for id, name := range namer.names {
		space := namer.spaceOf[id]
		o, ok := spaces[space]
		if !ok || namer.maps[space] == nil || !mayHoldLOBs(o.t, name) {
			continue
		}
		clustered[space] = id
	}
	if len(clustered) == 0 {
		return nil, nil
	}
	bySpace := map[uint32][]uint32{}
	listed(func(space, page uint32) {
		cid, ok := clustered[space]
		if !ok {
			return
		}
		if kind, id, leaf := namer.maps[space].Segment(page); kind == ibd.IndexPage && leaf && id == cid {
			bySpace[space] = append(bySpace[space], page)
		}
	})
	out := map[dumpfile.PageID]string{}
	for space, pages := range bySpace {
		m := namer.maps[space]
		err := ibd.ReadHeaders(namer.paths[space], m.PageSize, pages, func(page uint32, h ibd.Header) {
			if h.Written && h.Offset == page && h.IsLOB() {
				out[dumpfile.MakePageID(space, page)] = lobTypeName(h.Type)
			}
		})
		if err != nil {
			return nil, fmt.Errorf("%w: read the page headers of tablespace %d: %w", ErrFilesUnreadable, space, err)
		}
	}
	return out, nil
}

// lobTypeName is the server's name of an off-page column page type (FIL_PAGE_TYPE), as
// INNODB_BUFFER_PAGE_LRU's PAGE_TYPE says it (IsLOBPageType).
func lobTypeName(t uint16) string {
	switch t {
	case 10:
		return "BLOB"
	case 11:
		return "COMPRESSED_BLOB"
	case 12:
		return "COMPRESSED_BLOB2"
	case 22:
		return "LOB_INDEX"
	case 23:
		return "LOB_DATA"
	case 24:
		return "LOB_FIRST"
	case 25:
		return "ZLOB_FIRST"
	case 26:
		return "ZLOB_DATA"
	case 27:
		return "ZLOB_INDEX"
	case 28:
		return "ZLOB_FRAG"
	case 29:
		return "ZLOB_FRAG_ENTRY"
	}
	return "BLOB"
}

// clusteredName is t's clustered index's name, "" for none.
func clusteredName(t *catalog.Table) string {
	if c := t.Clustered(); c != nil {
		return c.Name
	}
	return ""
}

// What a page's header on disk says it is, to headerOwner.
type headerKind int

const (
	ownedOther   headerKind = iota // file metadata, SDI, undo, a stale page: no index's
	ownedUnknown                   // not written since its allocation: some index's, which one unknown
	ownedIndex                     // a B-tree page of the named index
	ownedLOB                       // an off-page column page of the named (clustered) index
)

// headerOwner places page of space from its header h. m is the file's map, nil for a fresh
// tablespace (whose layout alone then marks the metadata pages); clean says that no page
// of the pool is dirty, so that a page the map calls free is nobody's (MySQL's read-ahead
// reads a segment's unused pages). clustered names the table's clustered index, "" for none.
func (fn *fileNamer) headerOwner(space, page uint32, h ibd.Header, m *ibd.Map, clean bool, clustered string) (headerKind, string) {
	switch {
	case m == nil && fn.freshMetadata(page):
		return ownedOther, ""
	case clean && m != nil && m.FreeOnDisk(page):
		return ownedOther, ""
	case !h.Written || h.Offset != page:
		// Not written since its allocation; or, in a fresh tablespace, read at a page size
		// that is not the file's.
		return ownedUnknown, ""
	case h.IsIndex():
		if name, ok := fn.names[h.IndexID]; ok && fn.spaceOf[h.IndexID] == space {
			return ownedIndex, name
		}
		return ownedOther, "" // an SDI page (MySQL: an index of no table), or a stale page
	case h.IsLOB() && clustered != "":
		return ownedLOB, clustered
	}
	return ownedOther, ""
}

// freshMetadata says whether page of a fresh tablespace is file metadata by the layout of
// a new tablespace alone: ibd.FixedMetadataPage, and MySQL's SDI root.
func (fn *fileNamer) freshMetadata(page uint32) bool {
	return ibd.FixedMetadataPage(page, fn.pageSize) || (fn.sdiRoot != 0 && page == fn.sdiRoot)
}

// name returns the page's type and index name (empty for metadata and unnamed pages).
func (fn *fileNamer) name(space, page uint32) (pageType, index string) {
	m, ok := fn.maps[space]
	if !ok {
		return PageTypeUnnamed, ""
	}
	kind, id := m.Owner(page)
	switch kind {
	case ibd.IndexPage:
		if name, ok := fn.names[id]; ok {
			return PageTypeSegment, name
		}
	case ibd.FileMetadata:
		return PageTypeFileMetadata, ""
	}
	return PageTypeUnnamed, ""
}

// residentBound bounds how many pages of the catalog's tablespaces the pool can hold: the
// pool's pages, or fewer when their files are smaller (a selection of a few tables on a
// large pool). Memory given but not filled is not touched.
func residentBound(srv flavor.Server, cat *catalog.Catalog) int {
	if cat == nil {
		return 0
	}
	pageSize := int64(max(srv.PageSize, 1))
	bound := max(srv.PoolSize/pageSize, 0)
	var files int64
	for _, t := range cat.Tables {
		for _, p := range t.Parts {
			if !p.SpaceKnown || p.Space == 0 {
				continue // not kept (spaceOwners)
			}
			if p.FileSize <= 0 {
				return int(min(bound, 1<<26))
			}
			files += p.FileSize / pageSize
		}
		for _, a := range t.Aux {
			files += a.FileSize / pageSize
		}
	}
	return int(min(bound, files, 1<<26))
}

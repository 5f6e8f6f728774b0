package snapshot

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/keys"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/pagekey"
)

// KeyStats says what a capture learned of its pages' keys (format version 3's ranges).
type KeyStats struct {
	// Indexes counts the indexes whose trees were read; Pages the index pages the capture
	// held, of which Keyed got a key range: from their parents on disk, or from the page
	// itself (ReadAlone of them were read so, up to a bound, KeyedAlone got a range) when no
	// parent on disk points to it (a split since the server last wrote the parent). The
	// others (Keyless) were not written yet, or past the bound.
	Indexes    int   `json:"indexes"`
	Pages      int64 `json:"index_pages"`
	Keyed      int64 `json:"keyed_pages"`
	ReadAlone  int64 `json:"pages_read_alone,omitempty"`
	KeyedAlone int64 `json:"keyed_alone,omitempty"`
	Keyless    int64 `json:"keyless_pages"`
	// TreePages counts the non-leaf pages read for the ranges.
	TreePages int64   `json:"tree_pages_read"`
	Seconds   float64 `json:"seconds"`
	// NoPortableKey counts pages of tables without a primary or unique NOT NULL key: their
	// clustered index's only key is InnoDB's hidden row id, which no other copy shares.
	NoPortableKey int64 `json:"no_portable_key_pages,omitempty"`
	// Unplaced counts pages of the captured tables that the page list names by tablespace
	// only (a dump-sourced list: allocated since the server last wrote the file's
	// descriptors, mostly splits not written yet): they carry no key.
	Unplaced int64 `json:"unplaced_pages,omitempty"`
	// Note says why no keys were captured at all (files not readable here).
	Note string `json:"note,omitempty"`
	// Skipped lists indexes whose keys could not be read, with the reason.
	Skipped []string `json:"skipped,omitempty"`
}

// objectTable interns a capture's objects; a History keeps one across captures.
type objectTable struct {
	objects []manifest.Object // without KeyColumns: the same index keeps its id
	ids     map[manifest.Object]uint32
	keyCols []string // per object: the key columns its newest ranges were read with
}

func newObjectTable() *objectTable { return &objectTable{ids: map[manifest.Object]uint32{}} }

func (t *objectTable) id(p bufferpool.LRUPage) uint32 {
	o := manifest.Object{SpaceID: p.Space, PageType: p.PageType, Schema: p.Schema, Table: p.Table, Partition: p.Partition, Index: p.Index}
	id, ok := t.ids[o]
	if !ok {
		id = uint32(len(t.objects))
		t.objects = append(t.objects, o)
		t.ids[o] = id
		t.keyCols = append(t.keyCols, "")
	}
	return id
}

// object is what the manifest names: the object with its current key columns.
func (t *objectTable) object(id uint32) manifest.Object {
	o := t.objects[id]
	o.KeyColumns = t.keyCols[id]
	return o
}

// keyCapture reads the key range of captured index pages from the tablespace files:
// for each index, its non-leaf pages (about 1% of it) give every page they point to the
// range from its first key to its right neighbour's.
type keyCapture struct {
	conn *connection.Conn
	cat  *catalog.Catalog
	// open opens a tablespace file (pagekey.OpenSource; tests stand in for a remote host).
	open func(path string, pageSize int) (*pagekey.Source, error)
	// history: the ranges go into a History, which writes its pages later, not all of them:
	// every range keeps its end as a key (a single capture writes "@N" instead where page N
	// starts it).
	history bool
	dict    *pagekey.Dictionary
	arena   textArena
	// maxSelfReads bounds the pages read themselves because no parent on disk points to
	// them.
	maxSelfReads int64
}

// selfReadShare: of the captured index pages, at most this share (and at least
// minSelfReads) is read page by page when the tree on disk does not point to them.
const (
	selfReadShare = 0.02
	minSelfReads  = 500
)

// capture fills pages[i].rng and the objects' key columns. It never fails the capture: what
// it cannot read stays without keys, with the reason in the stats.
func (kc *keyCapture) capture(ctx context.Context, objs *objectTable, pages []observed) (st KeyStats) {
	t0 := time.Now()
	defer func() { st.Seconds = time.Since(t0).Seconds() }()

	// Which pages of which index: B-tree pages of named indexes.
	byObject := map[uint32][]int{}
	for i, p := range pages {
		o := objs.objects[p.object]
		if o.PageType == bufferpool.PageTypeUnnamed {
			st.Unplaced++
		}
		if o.Index == "" || (o.PageType != "INDEX" && o.PageType != bufferpool.PageTypeSegment) {
			continue
		}
		byObject[p.object] = append(byObject[p.object], i)
		st.Pages++
	}
	if len(byObject) == 0 {
		return st
	}
	kc.maxSelfReads = max(minSelfReads, int64(selfReadShare*float64(st.Pages)))
	parts := map[uint32]struct {
		t *catalog.Table
		p *catalog.Part
	}{}
	for _, t := range kc.cat.Tables {
		for _, p := range t.Parts {
			if p.SpaceKnown {
				parts[p.Space] = struct {
					t *catalog.Table
					p *catalog.Part
				}{t, p}
			}
		}
	}
	spaces := map[uint32][]uint32{} // space -> objects
	for id := range byObject {
		spaces[objs.objects[id].SpaceID] = append(spaces[objs.objects[id].SpaceID], id)
	}
	want := map[uint32]bool{}
	for s := range spaces {
		want[s] = true
	}
	files, err := catalog.TablespaceFiles(ctx, kc.conn, want)
	if err != nil {
		st.Note = fmt.Sprintf("key ranges not captured: %v", err)
		return st
	}
	roots, err := kc.indexRoots(ctx, want)
	if err != nil {
		st.Note = fmt.Sprintf("key ranges not captured: %v", err)
		return st
	}
	if kc.dict, err = pagekey.LoadDictionary(ctx, kc.conn, kc.cat); err != nil {
		st.Note = fmt.Sprintf("key ranges not captured: %v", err)
		return st
	}
	order := make([]uint32, 0, len(spaces))
	for s := range spaces {
		order = append(order, s)
	}
	sort.Slice(order, func(i, j int) bool { return order[i] < order[j] })
	for _, space := range order {
		if ctx.Err() != nil {
			break
		}
		tp, ok := parts[space]
		path := files[space]
		if !ok || path == "" {
			continue
		}
		open := kc.open
		if open == nil {
			open = pagekey.OpenSource
		}
		src, err := open(path, kc.conn.Server.PageSize)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
				// Not on the database host (or not allowed to read its files): no keys at all.
				st.Note = fmt.Sprintf("the tablespace files are not readable here (%v)", err)
				break
			}
			st.Skipped = append(st.Skipped, fmt.Sprintf("%s: %v", path, err))
			continue
		}
		kc.space(&st, objs, pages, byObject, spaces[space], tp.t, tp.p, src, roots[space])
		src.Close()
	}
	return st
}

// space reads the ranges of the captured pages of one tablespace's indexes.
func (kc *keyCapture) space(st *KeyStats, objs *objectTable, pages []observed, byObject map[uint32][]int, ids []uint32, t *catalog.Table, part *catalog.Part, src *pagekey.Source, roots map[string]indexRoot) {
	layouts, errs := kc.dict.Layouts(t, part, src, roots[clusteredName(t)].root)
	// slot[page] is the captured page's place in pages (its object is the index's).
	slot := make([]int32, src.Pages)
	for i := range slot {
		slot[i] = -1
	}
	for _, id := range ids {
		for _, i := range byObject[id] {
			if p := pages[i].page; p < src.Pages {
				slot[p] = int32(i)
			}
		}
	}
	for _, id := range ids {
		o := objs.objects[id]
		n := int64(len(byObject[id]))
		ix, hasRoot := roots[o.Index]
		l := layouts[o.Index]
		switch {
		case l == nil || !hasRoot:
			if err := errs[o.Index]; err != nil {
				st.Skipped = append(st.Skipped, fmt.Sprintf("%s.%s index %s: %v", o.Schema, o.Table, o.Index, err))
			}
			st.Keyless += n
			continue
		case !l.Columns.Portable():
			st.NoPortableKey += n
			st.Keyless += n
			continue
		}
		cols := string(keys.AppendColumns(nil, l.Columns))
		mine := func(page uint32) bool { return page < src.Pages && slot[page] >= 0 && pages[slot[page]].object == id }
		keyed := int64(0)
		read, err := pagekey.Ranges(src, l, ix.id, ix.root, pagekey.RangeOptions{Fields: l.Columns.PortableFields(), Want: mine, HighFromNext: !kc.history},
			func(page uint32, r pagekey.TextRange) {
				p := &pages[slot[page]]
				p.rng, p.next, p.cols = kc.textRange(r), noPage, cols
				if r.High == nil && r.Next != pagekey.NoPage && !r.HighOpen && !r.HighUnknown {
					p.next = r.Next
				}
				keyed++
			})
		st.TreePages += int64(read)
		if err != nil {
			st.Skipped = append(st.Skipped, fmt.Sprintf("%s.%s index %s: %v", o.Schema, o.Table, o.Index, err))
			st.Keyless += n
			for _, i := range byObject[id] {
				pages[i].rng, pages[i].cols = manifest.Range{}, ""
			}
			continue
		}
		st.Indexes++
		objs.keyCols[id] = cols
		// Pages no parent on disk points to (split since the parent was written) are read
		// alone, up to a bound.
		for _, i := range byObject[id] {
			p := &pages[i]
			if p.cols != "" {
				continue
			}
			if st.ReadAlone >= kc.maxSelfReads {
				break
			}
			st.ReadAlone++
			a, ok, err := pagekey.ReadAlone(src, l, ix.id, p.page)
			if err != nil || !ok {
				continue
			}
			low := manifest.OpenBound
			if a.First != nil {
				low = kc.arena.key(l.Columns, a.First[:min(len(a.First), l.Columns.PortableFields())])
			}
			p.rng, p.next, p.cols = manifest.Range{Low: low}, noPage, cols
			if mine(a.Next) {
				p.next = a.Next // its range ends where its right neighbour's starts
			}
			st.KeyedAlone++
			keyed++
		}
		st.Keyed += keyed
		st.Keyless += n - keyed
	}
}

// textRange turns a range's text into manifest tokens, the text kept in the arena.
func (kc *keyCapture) textRange(r pagekey.TextRange) manifest.Range {
	var out manifest.Range
	switch {
	case r.LowOpen:
		out.Low = manifest.OpenBound
	default:
		out.Low = kc.arena.str(r.Low)
	}
	switch {
	case r.HighOpen:
		out.High = manifest.OpenBound
	case r.High != nil:
		out.High = kc.arena.str(r.High)
	}
	return out
}

// textArena keeps many short strings in a few large blocks: a string per captured page
// would otherwise be an allocation per page.
type textArena struct{ block []byte }

func (a *textArena) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if cap(a.block)-len(a.block) < len(b) {
		a.block = make([]byte, 0, max(64<<10, len(b)))
	}
	start := len(a.block)
	a.block = append(a.block, b...)
	return unsafe.String(&a.block[start], len(b))
}

func (a *textArena) key(cs keys.Columns, k keys.Key) string {
	b, err := keys.AppendKey(nil, cs, k)
	if err != nil {
		return ""
	}
	return a.str(b)
}

func clusteredName(t *catalog.Table) string {
	if c := t.Clustered(); c != nil {
		return c.Name
	}
	return ""
}

type indexRoot struct {
	id   uint64
	root uint32
}

// indexRoots reads each index's id and root page in the given tablespaces.
func (kc *keyCapture) indexRoots(ctx context.Context, spaces map[uint32]bool) (map[uint32]map[string]indexRoot, error) {
	ids := make([]string, 0, len(spaces))
	for s := range spaces {
		ids = append(ids, strconv.FormatUint(uint64(s), 10))
	}
	q := kc.conn.Server.IndexRootsQuery() + " WHERE SPACE IN (" + strings.Join(ids, ",") + ")"
	rows, err := kc.conn.DB.QueryContext(ctx, q)
	if err != nil {
		return nil, catalog.ExplainPrivilege(err, kc.conn.Server.IndexesTable())
	}
	defer rows.Close()
	out := map[uint32]map[string]indexRoot{}
	for rows.Next() {
		var ix indexRoot
		var name string
		var space uint32
		var root sql.NullInt64
		if err := rows.Scan(&ix.id, &name, &space, &root); err != nil {
			return nil, err
		}
		if !root.Valid {
			continue
		}
		ix.root = uint32(root.Int64)
		if out[space] == nil {
			out[space] = map[string]indexRoot{}
		}
		out[space][name] = ix
	}
	return out, rows.Err()
}

// RemoteKeysNote is the one line snapshot gives when it cannot read the source's files.
func RemoteKeysNote(why string) string {
	return "key ranges not captured: " + why + ": the manifest names pages by number, which warms a page-for-page copy of this server " +
		"(a restart, a physical clone); to warm a logical copy, a rebuilt table or a managed server, run snapshot on the database host, " +
		"or warm the copy by replaying this server's workload (warm --replay performance_schema)"
}

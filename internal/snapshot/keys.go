package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"sync"
	"sync/atomic"
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

// all is every object as the manifest names it.
func (t *objectTable) all() []manifest.Object {
	out := make([]manifest.Object, len(t.objects))
	for i := range out {
		out[i] = t.object(uint32(i))
	}
	return out
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
	// catalogs, when set, keeps the dictionary's reads from one capture to the next while
	// the catalog it gave is the same load (catalog.Cache.Derived).
	catalogs *catalog.Cache
	mu       sync.Mutex // guards the object table's key columns while spaces are read at once
	alone    atomic.Int64
	txt      texts // the ranges' text, pages' keyText point into it
	// maxSelfReads bounds the pages read themselves because no parent on disk points to
	// them.
	maxSelfReads int64
	// walkers bounds the indexes whose trees are read at once.
	walkers chan struct{}
	// stopPrefetch stops prefetch and waits for it; prefetched is closed once it is done.
	stopPrefetch func()
	prefetched   chan struct{}
	// prepared is closed once prep holds what the server's dictionary says (prepare).
	prepared chan struct{}
	prep     keyDictionary
	// share holds the dictionary's reads and the page list's, which run at once: where the
	// server refuses more connections (max_user_connections), each waits for another to
	// end instead of failing (nil: the dictionary's reads share among themselves only).
	share *connection.Share
}

// keyDictionary is what the ranges need of the server's dictionary: the tablespaces'
// files, the indexes' ids and roots, the columns' stored types.
type keyDictionary struct {
	files map[uint32]string
	roots map[uint32]map[string]indexRoot
	dict  *pagekey.Dictionary
	err   error
}

// prepare starts reading the dictionary for every tablespace of the catalog, to be called
// before the page list is read: its queries then wait on the server while the page list's
// do (the server writes its dump, or builds its LRU table), instead of after them. capture
// waits for it; ctx's end stops it.
func (kc *keyCapture) prepare(ctx context.Context) {
	kc.prepared = make(chan struct{})
	pctx, cancel := context.WithCancel(ctx)
	kc.prefetched = make(chan struct{})
	kc.stopPrefetch = func() {
		cancel()
		<-kc.prefetched
	}
	go func() {
		d, err := pagekey.ReadKeyDictionaryIn(ctx, kc.conn, kc.catalogs, kc.cat, kc.share)
		kc.prep.files, kc.prep.roots, kc.prep.dict, kc.prep.err = d.Files, d.Roots, d.Dict, err
		close(kc.prepared)
		defer close(kc.prefetched)
		if kc.prep.err == nil {
			kc.prefetch(pctx)
		}
	}()
}

// prefetchShare: the non-leaf pages of every index of the catalog are read while the
// page list is read when its tables take at most this many times the pool.
const prefetchShare = 2

// prefetch reads the non-leaf pages of every index of the catalog's tablespaces, until ctx
// ends (capture stops it once the page list is read): the capture reads them again, from
// the OS page cache, instead of waiting on the disk after the list. It is done only when
// the tables are at most prefetchShare times the pool, so that most of their indexes have
// pages in the pool, whose trees the capture reads anyway: those pages are about 1% of
// the tables, on disk they are scattered (a random read each), and the list's reading is
// mostly the server's work (its dump).
func (kc *keyCapture) prefetch(ctx context.Context) {
	var total int64
	type spaceOf struct {
		t *catalog.Table
		p *catalog.Part
	}
	var todo []spaceOf
	for _, t := range kc.cat.Tables {
		for _, p := range t.Parts {
			if p.SpaceKnown && kc.prep.files[p.Space] != "" && len(kc.prep.roots[p.Space]) > 0 {
				total += p.FileSize
				todo = append(todo, spaceOf{t, p})
			}
		}
	}
	if len(todo) == 0 || kc.conn.Server.PoolSize <= 0 || total > prefetchShare*kc.conn.Server.PoolSize {
		return
	}
	open := kc.open
	if open == nil {
		open = pagekey.OpenSource
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(spaceWorkers, len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(todo) {
					return
				}
				t, p := todo[i].t, todo[i].p
				src, err := open(kc.prep.files[p.Space], kc.conn.Server.PageSize)
				if err != nil {
					continue
				}
				roots := kc.prep.roots[p.Space]
				layouts, _ := kc.prep.dict.Layouts(t, p, src, roots[clusteredName(t)].Root)
				for name, l := range layouts {
					ix, ok := roots[name]
					if !ok || ctx.Err() != nil {
						continue
					}
					_, _ = pagekey.Ranges(src, l, ix.ID, ix.Root, pagekey.RangeOptions{Want: func(uint32) bool { return false }}, func(uint32, pagekey.TextRange) {})
				}
				src.Close()
			}
		}()
	}
	wg.Wait()
}

// spaceWorkers tablespaces are read at once, and as many trees: the trees' pages lie
// scattered over the files (a random read each, mostly waited for), and the disk serves
// many reads in the time of one.
const spaceWorkers = 16

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
	defer func() {
		if kc.stopPrefetch != nil {
			kc.stopPrefetch()
		}
	}()

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
			// A tablespace several tables share (MySQL's general tablespaces) names its
			// trees by index id only: its pages go by page number, without keys.
			if p.SpaceKnown && !p.SharedSpace {
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
	if kc.prepared == nil {
		kc.prepare(ctx)
	}
	select {
	case <-kc.prepared:
	case <-ctx.Done():
		st.Note = fmt.Sprintf("key ranges not captured: %v", ctx.Err())
		return st
	}
	kc.stopPrefetch() // what it has read is in the OS page cache; the rest is read now
	if kc.prep.err != nil {
		st.Note = fmt.Sprintf("key ranges not captured: %v", kc.prep.err)
		return st
	}
	files, roots := kc.prep.files, kc.prep.roots
	kc.dict = kc.prep.dict
	order := make([]uint32, 0, len(spaces))
	for s := range spaces {
		order = append(order, s)
	}
	sort.Slice(order, func(i, j int) bool { return order[i] < order[j] })
	// Tablespaces are read at once, a few at a time: their non-leaf pages lie scattered
	// over the files, and the disk serves several reads in the time of one.
	results := make([]spaceResult, len(order))
	kc.walkers = make(chan struct{}, spaceWorkers)
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(spaceWorkers, len(order)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				space := order[i]
				res := &results[i]
				res.space = space
				tp, ok := parts[space]
				path := files[space]
				if !ok || path == "" || ctx.Err() != nil {
					continue
				}
				open := kc.open
				if open == nil {
					open = pagekey.OpenSource
				}
				src, err := open(path, kc.conn.Server.PageSize)
				if err != nil {
					if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
						// Not on the database host (or not allowed to read its files).
						res.note = fmt.Sprintf("the tablespace files are not readable here (%v)", err)
					} else {
						res.st.Skipped = append(res.st.Skipped, fmt.Sprintf("%s: %v", path, err))
					}
					continue
				}
				kc.space(res, objs, pages, byObject, spaces[space], tp.t, tp.p, src, roots[space])
				src.Close()
			}
		}()
	}
	for i := range order {
		work <- i
	}
	close(work)
	wg.Wait()
	for _, res := range results {
		if res.note != "" && st.Note == "" {
			st.Note = res.note
		}
		for _, ot := range res.texts {
			block := uint32(len(kc.txt.blocks))
			kc.txt.blocks = append(kc.txt.blocks, ot.txt.buf)
			for _, i := range byObject[ot.id] {
				pages[i].kt.block = block
			}
		}
		st.add(res.st)
	}
	if st.Note != "" {
		// No keys at all: the manifest must not mix a few keyed tablespaces with others.
		for i := range pages {
			pages[i].kt = keyText{}
		}
		for i := range objs.keyCols {
			objs.keyCols[i] = ""
		}
		st.Keyless, st.Keyed, st.Indexes = st.Pages, 0, 0
	}
	return st
}

// space reads the ranges of the captured pages of one tablespace's indexes.
// Its indexes are read at once (a large table's indexes are most of the work), each into a
// text block of its own, at most cap(kc.walkers) of them in all.
func (kc *keyCapture) space(res *spaceResult, objs *objectTable, pages []observed, byObject map[uint32][]int, ids []uint32, t *catalog.Table, part *catalog.Part, src *pagekey.Source, roots map[string]indexRoot) {
	layouts, errs := kc.dict.Layouts(t, part, src, roots[clusteredName(t)].Root)
	// slot[page] is the captured page's place in pages, with its object: Want asks it of
	// every page the tree points to, and pages is in LRU order, far from the tree's.
	slot := make([]pageSlot, src.Pages)
	for i := range slot {
		slot[i].at = -1
	}
	for _, id := range ids {
		for _, i := range byObject[id] {
			if p := pages[i].page; p < src.Pages {
				slot[p] = pageSlot{int32(i), id}
			}
		}
	}
	stats := make([]KeyStats, len(ids))
	res.texts = make([]objectText, len(ids))
	var wg sync.WaitGroup
	for k, id := range ids {
		res.texts[k] = objectText{id: id, txt: textBlock{buf: make([]byte, 0, 40*len(byObject[id]))}} // a range is 30-45 bytes in most indexes
		kc.walkers <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-kc.walkers }()
			kc.index(&stats[k], &res.texts[k].txt, id, objs, pages, byObject[id], layouts, errs, slot, src, roots)
		}()
	}
	wg.Wait()
	for _, x := range stats {
		res.st.add(x)
	}
}

// pageSlot is a page of a tablespace as a capture holds it: its place in the page list
// (-1: not captured), and its object.
type pageSlot struct {
	at     int32
	object uint32
}

// index reads the ranges of one index's captured pages (object id: pages[i] for i in its).
func (kc *keyCapture) index(st *KeyStats, txt *textBlock, id uint32, objs *objectTable, pages []observed, its []int, layouts map[string]*pagekey.Layout, errs map[string]error, slot []pageSlot, src *pagekey.Source, roots map[string]indexRoot) {
	o := objs.objects[id]
	n := int64(len(its))
	ix, hasRoot := roots[o.Index]
	l := layouts[o.Index]
	switch {
	case l == nil || !hasRoot:
		switch err := errs[o.Index]; {
		case err != nil:
			st.Skipped = append(st.Skipped, fmt.Sprintf("%s.%s index %s: %v", o.Schema, o.Table, o.Index, err))
		case !hasRoot && o.Partition != "":
			// MySQL 8+ lists no index of a partition in INNODB_INDEXES, and its table's SDI
			// did not give the root either.
			st.Skipped = append(st.Skipped, fmt.Sprintf("%s.%s partition %s index %s: no root page: the server's %s does not list it (MySQL lists no partition's index), nor does its table's SDI here",
				o.Schema, o.Table, o.Partition, o.Index, kc.conn.Server.IndexesTable()))
		}
		st.Keyless += n
		return
	case !l.Columns.Portable():
		st.NoPortableKey += n
		st.Keyless += n
		return
	}
	cols := string(keys.AppendColumns(nil, l.Columns))
	mine := func(page uint32) bool { return page < src.Pages && slot[page].at >= 0 && slot[page].object == id }
	keyed := int64(0)
	read, err := pagekey.Ranges(src, l, ix.ID, ix.Root, pagekey.RangeOptions{Fields: l.Columns.PortableFields(), Want: mine, HighFromNext: !kc.history},
		func(page uint32, r pagekey.TextRange) {
			p := &pages[slot[page].at]
			k, ok := txt.keyTextOf(r)
			if !ok {
				return
			}
			p.kt, p.next = k, noPage
			if r.High == nil && r.Next != pagekey.NoPage && !r.HighOpen && !r.HighUnknown {
				p.next = r.Next
			}
			keyed++
		})
	st.TreePages += int64(read)
	if err != nil {
		st.Skipped = append(st.Skipped, fmt.Sprintf("%s.%s index %s: %v", o.Schema, o.Table, o.Index, err))
		st.Keyless += n
		for _, i := range its {
			pages[i].kt = keyText{}
		}
		return
	}
	st.Indexes++
	kc.mu.Lock()
	objs.keyCols[id] = cols
	kc.mu.Unlock()
	// Pages no parent on disk points to (split since the parent was written) are read
	// alone, up to a bound.
	for _, i := range its {
		p := &pages[i]
		if p.kt.flags&ktRange != 0 {
			continue
		}
		if kc.alone.Add(1) > kc.maxSelfReads {
			break
		}
		st.ReadAlone++
		a, ok, err := pagekey.ReadAlone(src, l, ix.ID, p.page)
		if err != nil || !ok {
			continue
		}
		r := pagekey.TextRange{LowOpen: a.First == nil, HighUnknown: true}
		if a.First != nil {
			if r.Low, err = keys.AppendKey(nil, l.Columns, a.First[:min(len(a.First), l.Columns.PortableFields())]); err != nil {
				continue
			}
		}
		k, ok := txt.keyTextOf(r)
		if !ok {
			continue
		}
		p.kt, p.next = k, noPage
		if mine(a.Next) {
			p.next = a.Next // its range ends where its right neighbour's starts
		}
		st.KeyedAlone++
		keyed++
	}
	st.Keyed += keyed
	st.Keyless += n - keyed
}

// spaceResult is what the capture read of one tablespace.
type spaceResult struct {
	space uint32
	st    KeyStats
	texts []objectText
	note  string
}

// objectText is the key text of one index's pages.
type objectText struct {
	id  uint32
	txt textBlock
}

// add adds the counts of another part of the capture.
func (st *KeyStats) add(x KeyStats) {
	st.Indexes += x.Indexes
	st.Keyed += x.Keyed
	st.ReadAlone += x.ReadAlone
	st.KeyedAlone += x.KeyedAlone
	st.Keyless += x.Keyless
	st.TreePages += x.TreePages
	st.NoPortableKey += x.NoPortableKey
	st.Skipped = append(st.Skipped, x.Skipped...)
}

// keyText is a page's key range as a capture holds it: offsets into one block of the
// capture's text (so that the pages carry no pointers for the collector to scan).
type keyText struct {
	block           uint32
	lowOff, highOff uint32
	lowLen, highLen uint16
	flags           uint8
}

const (
	ktRange    = 1 << iota // the page has a range, read with its object's key columns
	ktLowOpen              // its Low is the index's start
	ktHighOpen             // its High is the index's end
)

// texts holds a capture's key text, a block per tablespace.
type texts struct{ blocks [][]byte }

// textBlock is one tablespace's text while it is read.
type textBlock struct{ buf []byte }

func (t *textBlock) add(b []byte) (uint32, uint16, bool) {
	if len(b) > 0xFFFF || len(t.buf)+len(b) > 0xFFFFFFFF {
		return 0, 0, false
	}
	off := uint32(len(t.buf))
	t.buf = append(t.buf, b...)
	return off, uint16(len(b)), true
}

// keyTextOf stores a TextRange's keys.
func (t *textBlock) keyTextOf(r pagekey.TextRange) (keyText, bool) {
	k := keyText{flags: ktRange}
	ok1, ok2 := true, true
	switch {
	case r.LowOpen:
		k.flags |= ktLowOpen
	default:
		k.lowOff, k.lowLen, ok1 = t.add(r.Low)
	}
	switch {
	case r.HighOpen:
		k.flags |= ktHighOpen
	case r.High != nil:
		k.highOff, k.highLen, ok2 = t.add(r.High)
	}
	return k, ok1 && ok2
}

// rangeOf is the range's tokens; they point into the text.
func (t *texts) rangeOf(k keyText) manifest.Range {
	if k.flags&ktRange == 0 || int(k.block) >= len(t.blocks) {
		return manifest.Range{}
	}
	buf := t.blocks[k.block]
	str := func(off uint32, n uint16) string {
		if n == 0 {
			return ""
		}
		return unsafe.String(&buf[off], int(n))
	}
	r := manifest.Range{Low: str(k.lowOff, k.lowLen), High: str(k.highOff, k.highLen)}
	if k.flags&ktLowOpen != 0 {
		r.Low = manifest.OpenBound
	}
	if k.flags&ktHighOpen != 0 {
		r.High = manifest.OpenBound
	}
	return r
}

func clusteredName(t *catalog.Table) string {
	if c := t.Clustered(); c != nil {
		return c.Name
	}
	return ""
}

type indexRoot = pagekey.IndexRoot

// RemoteKeysNote is the one line snapshot gives when it cannot read the source's files.
func RemoteKeysNote(why string) string {
	return "key ranges not captured: " + why + ": the manifest names pages by number, which warms a page-for-page copy of this server " +
		"(a restart, a physical clone); to warm a logical copy, a rebuilt table or a managed server, run snapshot on the database host, " +
		"or warm the copy by replaying this server's workload (warm --replay performance_schema)"
}

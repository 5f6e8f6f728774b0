package pagekey

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/innowarm/innowarm/internal/keys"
)

// Span is the key range a page of an index holds: from Low (inclusive) to High (exclusive:
// the next page's lowest key). A nil Low is the start of the index (the leftmost page of
// its level), a nil High its end; HighUnknown says that the page's right neighbour was not
// read, so nothing bounds it but the index's end.
type Span struct {
	Low, High   keys.Key
	HighUnknown bool
	Level       int
	// Next is the page whose range starts where this one ends (its right neighbour on
	// the level), NoPage when there is none or it is not known.
	Next uint32
}

// Tree is the key range of every page of one index that its non-leaf pages on disk point
// to: the node pointers of level L+1 hold the lowest key of each page of level L, in key
// order, so the pages of the levels above the leaves (about 1% of an index) give the range
// of every leaf page without reading the leaves.
//
// The file is read as it is on disk: a page split since the server last wrote the parent
// is not pointed to yet (Spans lacks it; ReadPage reads such a page itself).
type Tree struct {
	Layout *Layout
	Root   uint32
	Spans  map[uint32]Span
	// Leaves are the leaf pages the tree points to, in key order.
	Leaves []uint32
	// Height is the number of levels (1: the root is the only, leaf, page).
	Height int
	// Read counts the pages read (the non-leaf pages and the root).
	Read int

	indexID uint64
}

// ReadTree reads the non-leaf pages of index indexID from its root down, a level at a
// time, each level's pages in page order (pages close together are read together).
func ReadTree(src *Source, l *Layout, indexID uint64, root uint32) (*Tree, error) {
	t := &Tree{Layout: l, Root: root, Spans: map[uint32]Span{}, indexID: indexID}
	rp, err := src.Page(root)
	if err != nil {
		return nil, err
	}
	t.Read++
	if !rp.IsIndex() || rp.IndexID() != indexID {
		return nil, corrupt(rp, "the root page of index %d has type %d and index %d", indexID, rp.Type(), rp.IndexID())
	}
	t.Height = rp.Level() + 1
	t.Spans[root] = Span{Level: rp.Level(), Next: NoPage}
	level := []Page{rp}
	if rp.Level() == 0 {
		t.Leaves = []uint32{root}
	}
	for lvl := rp.Level(); lvl > 0; lvl-- {
		var children []uint32
		for _, p := range level {
			parent := t.Spans[p.Number()]
			ptrs, err := l.NodePointers(p)
			if err != nil {
				return nil, err
			}
			for i, np := range ptrs {
				s := Span{Level: lvl - 1, Low: np.Key, High: parent.High, HighUnknown: parent.HighUnknown}
				if i == 0 && (np.MinRec || parent.Low == nil) {
					s.Low = parent.Low
				}
				if i+1 < len(ptrs) {
					s.High, s.HighUnknown = ptrs[i+1].Key, false
				}
				if _, dup := t.Spans[np.Child]; dup || np.Child >= src.Pages {
					return nil, corrupt(p, "node pointer to page %d, already pointed to or past the file's end", np.Child)
				}
				s.Next = NoPage
				t.Spans[np.Child] = s
				children = append(children, np.Child)
			}
		}
		// Each child's right neighbour is the next child in key order, where their ranges
		// meet (a parent left out as unreadable leaves a gap).
		for j := 0; j+1 < len(children); j++ {
			s, next := t.Spans[children[j]], t.Spans[children[j+1]]
			if s.High != nil && keysEqual(s.High, next.Low) {
				s.Next = children[j+1]
				t.Spans[children[j]] = s
			}
		}
		if lvl == 1 {
			t.Leaves = children
			break
		}
		level, err = t.readLevel(src, children, lvl-1)
		if err != nil {
			return nil, err
		}
	}
	return t, nil
}

// readLevel reads the pages of one non-leaf level, in page order for the disk, and returns
// them in the given (key) order; a page that is not (yet) what its parent says is dropped
// with the pages below it.
func (t *Tree) readLevel(src *Source, pages []uint32, lvl int) ([]Page, error) {
	sorted := append([]uint32(nil), pages...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	read := make(map[uint32]Page, len(sorted))
	err := src.ReadPages(sorted, func(n uint32, p Page) error {
		t.Read++
		if !p.IsIndex() || p.Level() != lvl || p.Number() != n || p.IndexID() != t.indexID {
			delete(t.Spans, n) // written since, or not yet: its children stay unknown
			return nil
		}
		read[n] = append(Page(nil), p...)
		return nil
	})
	out := make([]Page, 0, len(read))
	for _, n := range pages {
		if p, ok := read[n]; ok {
			out = append(out, p)
		}
	}
	return out, err
}

// ReadPage reads a page the tree does not point to (split since its parent was written)
// and returns its range: from its first key, to its right neighbour's lowest key when the
// tree has that neighbour, else unknown. ok is false for a page that is not a page of the
// index on disk (not written yet, or reused).
func (t *Tree) ReadPage(src *Source, n uint32) (Span, bool, error) {
	t.Read++
	a, ok, err := ReadAlone(src, t.Layout, t.indexID, n)
	if err != nil || !ok {
		return Span{}, false, err
	}
	s := Span{Low: a.First, Level: a.Level, HighUnknown: true, Next: NoPage}
	if a.Next == NoPage {
		s.HighUnknown = false
	} else if next, ok := t.Spans[a.Next]; ok && next.Level == s.Level && next.Low != nil {
		s.High, s.HighUnknown, s.Next = next.Low, false, a.Next
	}
	return s, true, nil
}

// Alone is what a page says of itself.
type Alone struct {
	// First is its first key; nil for the leftmost page of its level (the index's start).
	First keys.Key
	// Next is its right neighbour on its level (NoPage at the end).
	Next  uint32
	Level int
}

// ReadAlone reads page n of index indexID by itself. ok is false when the page on disk is
// not a page of the index (not written yet, or freed and reused) or holds no record.
func ReadAlone(src *Source, l *Layout, indexID uint64, n uint32) (Alone, bool, error) {
	p, err := src.Page(n)
	if err != nil {
		return Alone{}, false, err
	}
	if !p.IsIndex() || p.IndexID() != indexID || p.Number() != n {
		return Alone{}, false, nil
	}
	first, ok, err := l.FirstKey(p)
	if err != nil || !ok {
		return Alone{}, false, err
	}
	a := Alone{First: first, Next: p.Next(), Level: p.Level()}
	if p.Prev() == NoPage {
		a.First = nil
	}
	return a, true, nil
}

// keysEqual: the same values field by field.
func keysEqual(a, b keys.Key) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Null != y.Null || x.I != y.I || x.U != y.U || x.F != y.F || x.Micro != y.Micro || string(x.Bytes) != string(y.Bytes) {
			return false
		}
	}
	return true
}

// runGap: pages at most this far apart are read in one request; maxRun bounds a request.
// readDepth requests are in flight at once: the non-leaf pages of an index lie scattered
// over its file, and a disk serves several random reads in the time of one.
const (
	runGap    = 8
	maxRun    = 64
	readDepth = 8
)

// ReadPages reads the given pages (sorted, no repeats) and calls each with each, in page
// order, reading pages close to one another in one request and up to readDepth requests
// at once. A page given to each is valid until each returns.
func (s *Source) ReadPages(sorted []uint32, each func(n uint32, p Page) error) error {
	type run struct{ first, last uint32 }
	var runs []run
	var bounds [][2]int // each run's slice of sorted
	for i := 0; i < len(sorted); {
		first := sorted[i]
		j := i + 1
		for j < len(sorted) && sorted[j]-sorted[j-1] <= runGap && int(sorted[j]-first) < maxRun {
			j++
		}
		if sorted[j-1] >= s.Pages {
			return fmt.Errorf("page %d is past the end of the file (%d pages)", sorted[j-1], s.Pages)
		}
		runs = append(runs, run{first, sorted[j-1]})
		bounds = append(bounds, [2]int{i, j})
		i = j
	}
	// readDepth readers take the runs in order; the pages are given to each in order, a
	// run once it and those before it are read. No goroutine, channel or buffer per run:
	// a capture reads thousands of runs of a page or two.
	type result struct {
		buf []byte
		err error
	}
	results := make([]result, len(runs))
	done := make(chan int, len(runs))
	phys := s.physical()
	var inflated Page // a compressed page inflated, for each alone to read
	if s.zipSize > 0 {
		inflated = make(Page, s.PageSize)
	}
	// window bounds the runs read and not yet given to each (their buffers).
	window := make(chan struct{}, 2*readDepth)
	quit := make(chan struct{})
	var next atomic.Int64
	var wg sync.WaitGroup
	defer func() {
		close(quit)
		wg.Wait()
		for i := range results {
			if results[i].buf != nil {
				putRunBuffer(results[i].buf)
			}
		}
	}()
	for range min(readDepth, len(runs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case window <- struct{}{}:
				case <-quit:
					return
				}
				i := int(next.Add(1) - 1)
				if i >= len(runs) {
					return
				}
				r := runs[i]
				buf := runBuffer(int(r.last-r.first+1) * phys)
				_, err := s.r.ReadAt(buf, int64(r.first)*int64(phys))
				if err != nil {
					err = fmt.Errorf("read pages %d-%d: %w", r.first, r.last, err)
				}
				results[i] = result{buf, err}
				done <- i
			}
		}()
	}
	ready := make([]bool, len(runs))
	for i, r := range runs {
		for !ready[i] {
			ready[<-done] = true
		}
		res := results[i]
		if res.err != nil {
			return res.err
		}
		for _, n := range sorted[bounds[i][0]:bounds[i][1]] {
			off := int(n-r.first) * phys
			p := Page(res.buf[off : off+phys])
			if s.zipSize > 0 {
				if _, err := s.logical(p, inflated); err != nil {
					return err
				}
				p = inflated
			}
			if err := each(n, p); err != nil {
				return err
			}
		}
		putRunBuffer(res.buf)
		results[i].buf = nil
		<-window
	}
	return nil
}

// runBuffers hold buffers for runs of pages, by size class: class k holds buffers of
// 16 KiB << k (up to maxRun 64 KiB pages). They are shared by every Source: a capture opens a
// Source per tablespace and mostly reads runs of a page or two, so a buffer of the run's
// size, reused, is what it needs; a new one would be zeroed first.
var runBuffers [16]sync.Pool // of *[]byte

func runBufferClass(n int) int {
	k := 0
	for 16<<10<<k < n {
		k++
	}
	return k
}

// runBuffer returns a buffer of n bytes (n <= maxRun pages).
func runBuffer(n int) []byte {
	k := runBufferClass(n)
	if k < len(runBuffers) {
		if b, ok := runBuffers[k].Get().(*[]byte); ok {
			buf := (*b)[:n]
			*b = nil
			bufferHolders.Put(b)
			return buf
		}
		return make([]byte, 16<<10<<k)[:n]
	}
	return make([]byte, n)
}

// bufferHolders recycles the *[]byte that runBuffers hold, so that giving a buffer back
// allocates nothing.
var bufferHolders = sync.Pool{New: func() any { return new([]byte) }}

// putRunBuffer gives a runBuffer's buffer back.
func putRunBuffer(b []byte) {
	k := runBufferClass(cap(b))
	if k < len(runBuffers) && cap(b) == 16<<10<<k {
		h := bufferHolders.Get().(*[]byte)
		*h = b[:cap(b)]
		runBuffers[k].Put(h)
	}
}

// TextRange is a page's key range with its keys as text (keys.AppendKey's form), as Ranges
// gives it; Low and High are valid only during the callback.
type TextRange struct {
	Low, High []byte
	// LowOpen: the start of the index; HighOpen: its end; HighUnknown: nothing read
	// bounds it.
	LowOpen, HighOpen, HighUnknown bool
	// Next is the page that starts where this range ends (its right neighbour), when it
	// is known; then High may be nil, for "where Next starts", if Ranges was asked not to
	// write keys the caller has for Next.
	Next uint32
}

// RangeOptions shape Ranges.
type RangeOptions struct {
	// Fields is how many leading key fields to write (keys.Columns.PortableFields).
	Fields int
	// Want says which pages the caller wants ranges of.
	Want func(page uint32) bool
	// HighFromNext: leave High nil where Next is a wanted page (its Low bounds the range).
	HighFromNext bool
}

// node is a non-leaf page to read, with its range.
type node struct {
	page      uint32
	low, high keys.Key // owned; a nil low is the index's start, a nil high its end unless highUnk
	highUnk   bool
}

// Ranges calls each with the range of every page of the index that o.Want wants, reading
// the index's non-leaf pages from the root down as ReadTree does, but decoding and
// formatting only the wanted pages' keys, and taking the pages of level 1 (which point to
// the leaves, nearly all of the non-leaf pages) in one at a time. It returns how many pages
// it read.
func Ranges(src *Source, l *Layout, indexID uint64, root uint32, o RangeOptions, each func(page uint32, r TextRange)) (int, error) {
	read := 0
	rp, err := src.Page(root)
	if err != nil {
		return 0, err
	}
	read++
	if !rp.IsIndex() || rp.IndexID() != indexID {
		return read, corrupt(rp, "the root page of index %d has type %d and index %d", indexID, rp.Type(), rp.IndexID())
	}
	w := &rangeWalk{l: l, o: o, each: each, indexID: indexID, pages: src.Pages}
	w.fields = min(max(o.Fields, 0), len(l.Columns))
	if o.Want(root) {
		w.emit(root, nil, nil, false, NoPage, false)
	}
	level := []node{{page: root}}
	held := map[uint32]Page{root: rp}
	for lvl := rp.Level(); lvl >= 1; lvl-- {
		byPage := make(map[uint32]node, len(level))
		for _, nd := range level {
			byPage[nd.page] = nd
		}
		var below []node
		visit := func(n uint32, p Page) error {
			nd := byPage[n]
			if !p.IsIndex() || p.Level() != lvl || p.IndexID() != indexID || p.Number() != n {
				return nil // written since, or not yet: the pages below stay unknown
			}
			return w.children(p, nd, lvl, &below)
		}
		if lvl == rp.Level() {
			if err := visit(root, rp); err != nil {
				return read, err
			}
		} else {
			// The levels above 1 are few pages, held in key order; level 1 is read in page
			// order, a run at a time, each page done with before the next run.
			for _, nd := range level {
				if p, ok := held[nd.page]; ok {
					if err := visit(nd.page, p); err != nil {
						return read, err
					}
				}
			}
		}
		if lvl == 2 {
			sorted := make([]uint32, 0, len(below))
			for _, nd := range below {
				sorted = append(sorted, nd.page)
			}
			sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
			byPage = make(map[uint32]node, len(below))
			for _, nd := range below {
				byPage[nd.page] = nd
			}
			var leaves []node
			err := src.ReadPages(sorted, func(n uint32, p Page) error {
				read++
				if !p.IsIndex() || p.Level() != 1 || p.IndexID() != indexID || p.Number() != n {
					return nil
				}
				return w.children(p, byPage[n], 1, &leaves)
			})
			return read, err
		}
		if lvl == 1 {
			break
		}
		held = map[uint32]Page{}
		sorted := make([]uint32, 0, len(below))
		for _, nd := range below {
			sorted = append(sorted, nd.page)
		}
		sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
		err := src.ReadPages(sorted, func(n uint32, p Page) error {
			read++
			held[n] = append(Page(nil), p...)
			return nil
		})
		if err != nil {
			return read, err
		}
		level = below
	}
	return read, nil
}

// rangeWalk is Ranges' state.
type rangeWalk struct {
	l                 *Layout
	o                 RangeOptions
	each              func(page uint32, r TextRange)
	indexID           uint64
	pages             uint32
	fields            int
	lowText, highText []byte
	cur, nxt          keys.Key
	locA, locB        located
	scratchA, scratch [][]byte
	origins           []int
}

func (w *rangeWalk) emit(page uint32, low, high keys.Key, highUnknown bool, next uint32, highFromNext bool) {
	r := TextRange{LowOpen: low == nil, HighOpen: high == nil && !highUnknown && !highFromNext, HighUnknown: highUnknown, Next: next}
	if low != nil {
		w.lowText, _ = keys.AppendKey(w.lowText[:0], w.l.Columns, low[:min(w.fields, len(low))])
		r.Low = w.lowText
	}
	if high != nil && !highFromNext {
		w.highText, _ = keys.AppendKey(w.highText[:0], w.l.Columns, high[:min(w.fields, len(high))])
		r.High = w.highText
	}
	w.each(page, r)
}

// children goes through the node pointers of p (of level lvl, whose range nd is): it
// emits the wanted children's ranges and, above level 1, adds every child to below with
// its range (keys copied).
func (w *rangeWalk) children(p Page, nd node, lvl int, below *[]node) error {
	l := w.l
	own := lvl > 1
	w.origins = w.origins[:0]
	if err := p.walk(func(o int) (bool, error) { w.origins = append(w.origins, o); return true, nil }); err != nil {
		return err
	}
	origins := w.origins
	childOf := func(o int) (uint32, error) {
		if at := l.fixedNodePtr(); at >= 0 && p.Compact() {
			if o+at+nodePtrSize > len(p) {
				return 0, corrupt(p, "node pointer at %d runs out of the page", o)
			}
			return p.u32(o + at), nil
		}
		_, err := l.locate(p, o, &w.locA, w.scratchA)
		w.scratchA = w.locA.fields
		return w.locA.child, err
	}
	key := func(o int, buf *keys.Key) (keys.Key, error) {
		if _, err := l.locate(p, o, &w.locB, w.scratch); err != nil {
			return nil, err
		}
		w.scratch = w.locB.fields
		if own {
			return l.values(p, o, w.locB.fields, nil, true)
		}
		k, err := l.values(p, o, w.locB.fields, *buf, false)
		*buf = k
		return k, err
	}
	var carried keys.Key
	for i, o := range origins {
		child, err := childOf(o)
		if err != nil {
			return err
		}
		if child >= w.pages {
			return corrupt(p, "node pointer to page %d, past the file's end", child)
		}
		wanted := w.o.Want(child)
		if !wanted && !own {
			continue
		}
		if !own {
			// A leaf's range goes straight from the stored bytes to text.
			if err := w.leafRange(p, origins, i, child, nd, childOf); err != nil {
				return err
			}
			continue
		}
		var low, high keys.Key
		switch {
		case own && i > 0 && carried != nil:
			low = carried // the previous child's end, decoded and copied already
		case i > 0 || !(recMinRec(p, o) || nd.low == nil):
			if low, err = key(o, &w.cur); err != nil {
				return err
			}
		}
		carried = nil
		next, highUnknown, highFromNext := uint32(NoPage), nd.highUnk, false
		if i+1 < len(origins) {
			if next, err = childOf(origins[i+1]); err != nil {
				return err
			}
			highUnknown = false
			highFromNext = w.o.HighFromNext && w.o.Want(next)
			if own || !highFromNext { // a page above level 1 needs its end to descend
				if high, err = key(origins[i+1], &w.nxt); err != nil {
					return err
				}
				if own {
					carried = high // owned and never changed: the next child's low
				}
			}
		} else {
			high = nd.high
		}
		if own {
			*below = append(*below, node{page: child, low: low, high: high, highUnk: highUnknown})
		}
		if wanted {
			w.emit(child, low, high, highUnknown, next, highFromNext)
		}
	}
	return nil
}

// leafRange emits the range of child, the i-th child of level-1 page p, formatting its
// keys from the stored bytes.
func (w *rangeWalk) leafRange(p Page, origins []int, i int, child uint32, nd node, childOf func(int) (uint32, error)) error {
	l := w.l
	r := TextRange{Next: NoPage, HighUnknown: nd.highUnk}
	if i == 0 && (recMinRec(p, origins[0]) || nd.low == nil) {
		r.LowOpen = true
	} else {
		if _, err := l.locate(p, origins[i], &w.locB, w.scratch); err != nil {
			return err
		}
		w.scratch = w.locB.fields
		var err error
		if w.lowText, err = l.appendText(w.lowText[:0], p, origins[i], w.locB.fields, w.fields); err != nil {
			return err
		}
		r.Low = w.lowText
	}
	if i+1 < len(origins) {
		next, err := childOf(origins[i+1])
		if err != nil {
			return err
		}
		r.Next, r.HighUnknown = next, false
		if !(w.o.HighFromNext && w.o.Want(next)) {
			if _, err := l.locate(p, origins[i+1], &w.locB, w.scratch); err != nil {
				return err
			}
			w.scratch = w.locB.fields
			if w.highText, err = l.appendText(w.highText[:0], p, origins[i+1], w.locB.fields, w.fields); err != nil {
				return err
			}
			r.High = w.highText
		}
	} else if nd.high != nil {
		var err error
		if w.highText, err = keys.AppendKey(w.highText[:0], l.Columns, nd.high[:min(w.fields, len(nd.high))]); err != nil {
			return err
		}
		r.High = w.highText
	} else {
		r.HighOpen = !nd.highUnk
	}
	w.each(child, r)
	return nil
}

// recMinRec: the record has the min-rec flag (the first of the leftmost page of its level).
func recMinRec(p Page, o int) bool {
	if p.Compact() {
		return p[o-5]&infoMinRec != 0
	}
	return p[o-6]&infoMinRec != 0
}

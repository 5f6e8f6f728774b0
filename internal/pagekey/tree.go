package pagekey

import (
	"fmt"
	"sort"

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

// runGap: pages at most this far apart are read in one request.
const runGap = 8

// Pages reads the given pages (sorted, no repeats) and calls each with each, reading pages
// close to one another in one request.
func (s *Source) ReadPages(sorted []uint32, each func(n uint32, p Page) error) error {
	const maxRun = 64
	buf := make([]byte, maxRun*s.PageSize)
	for i := 0; i < len(sorted); {
		first := sorted[i]
		j := i + 1
		for j < len(sorted) && sorted[j]-sorted[j-1] <= runGap && int(sorted[j]-first) < maxRun {
			j++
		}
		last := sorted[j-1]
		if last >= s.Pages {
			return fmt.Errorf("page %d is past the end of the file (%d pages)", last, s.Pages)
		}
		length := int(last-first+1) * s.PageSize
		if _, err := s.r.ReadAt(buf[:length], int64(first)*int64(s.PageSize)); err != nil {
			return fmt.Errorf("read pages %d-%d: %w", first, last, err)
		}
		for _, n := range sorted[i:j] {
			off := int(n-first) * s.PageSize
			if err := each(n, Page(buf[off:off+s.PageSize])); err != nil {
				return err
			}
		}
		i = j
	}
	return nil
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
	var origins []int
	if err := p.walk(func(o int) (bool, error) { origins = append(origins, o); return true, nil }); err != nil {
		return err
	}
	if len(origins) == 0 {
		return nil
	}
	cur, nxt := &w.locA, &w.locB
	if _, err := l.locate(p, origins[0], cur, w.scratchA); err != nil {
		return err
	}
	w.scratchA = cur.fields
	for i := range origins {
		child := cur.child
		if child >= w.pages {
			return corrupt(p, "node pointer to page %d, past the file's end", child)
		}
		hasNext := i+1 < len(origins)
		if hasNext {
			if _, err := l.locate(p, origins[i+1], nxt, w.scratch); err != nil {
				return err
			}
			w.scratch = nxt.fields
		}
		wanted := w.o.Want(child)
		if wanted || own {
			var low, high keys.Key
			if i > 0 || !(cur.minRec || nd.low == nil) {
				k, err := l.values(p, origins[i], cur.fields, w.keyBuf(own, &w.cur), own)
				if err != nil {
					return err
				}
				low = k
				if !own {
					w.cur = k
				}
			}
			next, highUnknown, highFromNext := uint32(NoPage), nd.highUnk, false
			if hasNext {
				next, highUnknown = nxt.child, false
				highFromNext = w.o.HighFromNext && w.o.Want(next)
				if own || !highFromNext { // a page above level 1 needs its end to descend
					k, err := l.values(p, origins[i+1], nxt.fields, w.keyBuf(own, &w.nxt), own)
					if err != nil {
						return err
					}
					high = k
					if !own {
						w.nxt = k
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
		cur, nxt = nxt, cur
		w.scratchA, w.scratch = w.scratch, w.scratchA
	}
	return nil
}

// keyBuf is nil (a new key) for keys that must outlive the page, else a reused buffer.
func (w *rangeWalk) keyBuf(own bool, buf *keys.Key) keys.Key {
	if own {
		return nil
	}
	return *buf
}

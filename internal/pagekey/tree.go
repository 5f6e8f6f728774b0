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
}

// ReadTree reads an index's non-leaf pages from its root down, a level at a time, each
// level's pages in page order (pages close together are read together).
func ReadTree(src *Source, l *Layout, root uint32) (*Tree, error) {
	t := &Tree{Layout: l, Root: root, Spans: map[uint32]Span{}}
	rp, err := src.Page(root)
	if err != nil {
		return nil, err
	}
	t.Read++
	if !rp.IsIndex() {
		return nil, corrupt(rp, "the root page has type %d", rp.Type())
	}
	t.Height = rp.Level() + 1
	t.Spans[root] = Span{Level: rp.Level()}
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
				t.Spans[np.Child] = s
				children = append(children, np.Child)
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
		if !p.IsIndex() || p.Level() != lvl || p.Number() != n {
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
func (t *Tree) ReadPage(src *Source, indexID uint64, n uint32) (Span, bool, error) {
	p, err := src.Page(n)
	if err != nil {
		return Span{}, false, err
	}
	t.Read++
	if !p.IsIndex() || p.IndexID() != indexID || p.Number() != n {
		return Span{}, false, nil
	}
	low, ok, err := t.Layout.FirstKey(p)
	if err != nil || !ok {
		return Span{}, false, err
	}
	s := Span{Low: low, Level: p.Level(), HighUnknown: true}
	if p.Prev() == NoPage {
		s.Low = nil
	}
	if p.Next() == NoPage {
		s.HighUnknown = false
	} else if next, ok := t.Spans[p.Next()]; ok && next.Level == s.Level && next.Low != nil {
		s.High, s.HighUnknown = next.Low, false
	}
	return s, true, nil
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

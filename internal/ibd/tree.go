package ibd

import (
	"errors"
	"fmt"
)

// root is an index's root page and its level (PAGE_LEVEL: the tree's height less one), as
// the file says.
type root struct {
	page  uint32
	level uint16
}

// Tree is what the file says of one index's size. Persistent statistics cannot say it for a
// clustered index with off-page columns: their n_leaf_pages counts the leaf segment's pages,
// and the off-page BLOB/TEXT pages are allocated from that segment too. The file tells them
// apart cheaply: every page above the leaves is in the other segment, and the records of
// the level just above the leaves are one node pointer per leaf.
type Tree struct {
	// Pages are the B-tree's pages: its leaves and the levels above.
	Pages  int64
	Leaves int64
	// LOBPages are the leaf segment's pages in use that are not leaves: a clustered index's
	// off-page column pages (0 when Tree was not asked to tell them apart).
	LOBPages int64
	// Levels is the tree's height: 1 when the root is its only leaf.
	Levels int
}

// ErrTreeTooBig: counting the leaves would read more page headers than the caller allows.
var ErrTreeTooBig = errors.New("too many pages above the leaves to read")

// Tree counts the B-tree of index (one of the map's Indexes) in the file at path, as it is
// on disk: what the server allocated since it last wrote the descriptors is not counted
// yet. Without lobs the segments' pages in use are the answer, read with the map. With lobs
// (a clustered index whose leaf segment may hold off-page column pages) it reads the
// headers of the pages above the leaves, at most maxRead of them (else ErrTreeTooBig), and
// counts the node pointers of the level above the leaves.
func (m *Map) Tree(path string, index uint64, lobs bool, maxRead int) (Tree, error) {
	rt, ok := m.roots[index]
	if !ok {
		return Tree{}, fmt.Errorf("index %d: no segments found in the file", index)
	}
	var leafSeg, topSeg []uint32
	for seg, ix := range m.segIndex {
		if ix != index {
			continue
		}
		if m.segLeaf[seg] {
			leafSeg = append(leafSeg, m.segmentPages(seg)...)
		} else {
			topSeg = append(topSeg, m.segmentPages(seg)...)
		}
	}
	t := Tree{Levels: int(rt.level) + 1}
	switch {
	case rt.level == 0:
		// The root is the only leaf (it lives in the other segment); the leaf segment holds
		// only off-page columns.
		t.Pages, t.Leaves = 1, 1
		if lobs {
			t.LOBPages = int64(len(leafSeg))
		}
		return t, nil
	case !lobs:
		t.Leaves = int64(len(leafSeg))
		t.Pages = t.Leaves + int64(len(topSeg))
		return t, nil
	case len(topSeg) > maxRead:
		return Tree{}, fmt.Errorf("%w: %d pages", ErrTreeTooBig, len(topSeg))
	}
	var upper int64
	err := ReadHeaders(path, m.PageSize, topSeg, func(_ uint32, h Header) {
		if !h.IsIndex() || h.IndexID != index || h.Level == 0 {
			return
		}
		upper++
		if h.Level == 1 {
			t.Leaves += int64(h.Records)
		}
	})
	if err != nil {
		return Tree{}, err
	}
	t.Pages = upper + t.Leaves
	t.LOBPages = max(int64(len(leafSeg))-t.Leaves, 0)
	return t, nil
}

// segmentPages lists the pages segment seg has in use on disk: its fragment pages, and the
// pages of its extents that their bitmaps do not call free.
func (m *Map) segmentPages(seg uint64) []uint32 {
	var out []uint32
	seen := map[uint32]bool{}
	for p, s := range m.fragOwner {
		if s == seg {
			out = append(out, p)
			seen[p] = true
		}
	}
	for ext, s := range m.extentSeg {
		if s != seg {
			continue
		}
		first := uint32(ext) * m.extentPages
		for p := first; p < first+m.extentPages && p < m.Pages; p++ {
			if !seen[p] && !m.FreeOnDisk(p) && !m.isMetadata(p) {
				out = append(out, p)
			}
		}
	}
	return out
}

package ibd

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// fakeSpace builds a tablespace file in memory the way InnoDB lays one out: space header
// with the first extent descriptors on page 0, inodes on page 2, index roots, and a second
// descriptor page at page PageSize when the file is that long.
type fakeSpace struct {
	ps    int
	pages [][]byte
}

func newFakeSpace(ps, npages int, space uint32, flags uint32) *fakeSpace {
	f := &fakeSpace{ps: ps}
	for i := 0; i < npages; i++ {
		p := make([]byte, ps)
		binary.BigEndian.PutUint32(p[filPageOffset:], uint32(i))
		binary.BigEndian.PutUint32(p[filPageSpaceID:], space)
		f.pages = append(f.pages, p)
	}
	p0 := f.pages[0]
	binary.BigEndian.PutUint16(p0[filPageType:], typeFSPHdr)
	binary.BigEndian.PutUint32(p0[fspHeader+fspSpaceID:], space)
	binary.BigEndian.PutUint32(p0[fspHeader+fspSize:], uint32(npages))
	binary.BigEndian.PutUint32(p0[fspHeader+fspFlags:], flags)
	binary.BigEndian.PutUint32(p0[fspHeader+fspFreeLimit:], uint32(npages))
	binary.BigEndian.PutUint64(p0[fspHeader+fspSegID:], 100)
	for x := ps; x < npages; x += ps {
		binary.BigEndian.PutUint16(f.pages[x][filPageType:], typeXDES)
	}
	binary.BigEndian.PutUint16(f.pages[2][filPageType:], typeInode)
	return f
}

func (f *fakeSpace) extent(ext int, state uint32, seg uint64) {
	per := f.ps / 64
	page := f.pages[(ext/per)*f.ps]
	off := xdesArrOffset + (ext%per)*40
	binary.BigEndian.PutUint64(page[off+xdesID:], seg)
	binary.BigEndian.PutUint32(page[off+xdesState:], state)
}

// free marks page n free in its extent's bitmap (XDES_FREE_BIT).
func (f *fakeSpace) free(n int) {
	per := f.ps / 64
	ext := n / 64
	page := f.pages[(ext/per)*f.ps]
	bit := 2 * (n % 64)
	page[xdesArrOffset+(ext%per)*40+xdesBitmap+bit/8] |= 1 << (bit % 8)
}

// index makes root a B-tree root of index id whose leaf and top segments have inodes at
// the given offsets of page 2.
func (f *fakeSpace) index(id uint64, root uint32, space uint32, leafSeg, topSeg uint64, leafOff, topOff int, frags ...uint32) {
	p := f.pages[root]
	binary.BigEndian.PutUint16(p[filPageType:], typeIndex)
	binary.BigEndian.PutUint64(p[pageHeader+pageIndexID:], id)
	for _, h := range []struct {
		at, off int
		seg     uint64
		frags   []uint32
	}{{pageBtrSegLeaf, leafOff, leafSeg, frags}, {pageBtrSegTop, topOff, topSeg, []uint32{root}}} {
		binary.BigEndian.PutUint32(p[pageHeader+h.at:], space)
		binary.BigEndian.PutUint32(p[pageHeader+h.at+4:], 2)
		binary.BigEndian.PutUint16(p[pageHeader+h.at+8:], uint16(h.off))
		in := f.pages[2][h.off:]
		binary.BigEndian.PutUint64(in[fsegID:], h.seg)
		binary.BigEndian.PutUint32(in[fsegMagic:], fsegMagicN)
		for k := 0; k < fsegFragSlots; k++ {
			v := uint32(filNull)
			if k < len(h.frags) {
				v = h.frags[k]
			}
			binary.BigEndian.PutUint32(in[fsegFragArr+4*k:], v)
		}
	}
}

func (f *fakeSpace) reader() (*bytes.Reader, int64) {
	b := bytes.Join(f.pages, nil)
	return bytes.NewReader(b), int64(len(b))
}

// A 16 KiB-page file of 20,000 pages: pages 0-2 metadata, the primary key (index 10) owns
// extents 1-200 and the fragment pages 3-5, a secondary index (11) owns extents 201-250
// and page 6, extent 300 belongs to no listed index (MySQL's SDI, say), and a second
// descriptor page at 16384 describes the extents past it.
func TestOwnerOfEveryKindOfPage(t *testing.T) {
	const ps, space = 16384, 7
	f := newFakeSpace(ps, 20000, space, 0x15) // MariaDB full_crc32, 16 KiB
	f.extent(0, 2, 0)                         // FREE_FRAG: holds the fragment pages
	for e := 1; e <= 200; e++ {
		f.extent(e, xdesFSeg, 2)
	}
	for e := 201; e <= 250; e++ {
		f.extent(e, xdesFSegFrag, 4)
	}
	f.extent(300, xdesFSeg, 9)
	f.extent(16384/64+1, xdesFSeg, 2) // described by the descriptor page at 16384
	f.index(10, 3, space, 2, 1, 50, 242, 4, 5)
	f.index(11, 6, space, 4, 3, 434, 626)
	f.free(200*64 + 10) // an unused page of the primary's last extent
	r, size := f.reader()
	m, err := Read(r, size, ps, []Index{{ID: 10, Root: 3}, {ID: 11, Root: 6}, {ID: 12, Root: 7}})
	if err != nil {
		t.Fatal(err)
	}
	if m.SpaceID != space || m.PageSize != ps || m.Pages != 20000 {
		t.Fatalf("map of space %d, %d-byte pages, %d pages", m.SpaceID, m.PageSize, m.Pages)
	}
	if len(m.Indexes) != 2 || len(m.Missing) != 1 || m.Missing[0] != 12 {
		t.Errorf("indexes %v, missing %v: index 12's root page is not a root of index 12", m.Indexes, m.Missing)
	}
	for _, c := range []struct {
		name  string
		page  uint32
		kind  Kind
		index uint64
	}{
		{"space header", 0, FileMetadata, 0},
		{"change buffer bitmap", 1, FileMetadata, 0},
		{"inode page", 2, FileMetadata, 0},
		{"primary root, a fragment page of its top segment", 3, IndexPage, 10},
		{"primary leaf fragment page", 5, IndexPage, 10},
		{"secondary root", 6, IndexPage, 11},
		{"fragment page of no segment", 40, Unattributed, 0},
		{"primary extent", 64, IndexPage, 10},
		{"last page of the primary's last extent", 201*64 - 1, IndexPage, 10},
		{"free page of the primary's last extent (read-ahead reads it)", 200*64 + 10, Unattributed, 0},
		{"the page before it", 200*64 + 9, IndexPage, 10},
		{"secondary fragment-only extent (MySQL 8 state 5)", 201 * 64, IndexPage, 11},
		{"extent of a segment no listed index has", 300*64 + 5, Unattributed, 0},
		{"free extent", 400 * 64, Unattributed, 0},
		{"second descriptor page", 16384, FileMetadata, 0},
		{"bitmap page after it", 16385, FileMetadata, 0},
		{"extent the second descriptor page describes", 16384 + 64 + 3, IndexPage, 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			kind, ix := m.Owner(c.page)
			if kind != c.kind || ix != c.index {
				t.Errorf("page %d: kind %d index %d, want kind %d index %d", c.page, kind, ix, c.kind, c.index)
			}
		})
	}
	for _, c := range []struct {
		page uint32
		free bool
	}{{200*64 + 10, true}, {200*64 + 9, false}, {400 * 64, true}, {0, false}, {3, false}, {19999, true}} {
		if got := m.FreeOnDisk(c.page); got != c.free {
			t.Errorf("FreeOnDisk(%d) = %v, want %v", c.page, got, c.free)
		}
		// A load reads only pages in use: not the free pages of a segment's extent.
		if got := m.InUse(c.page); got != !c.free {
			t.Errorf("InUse(%d) = %v, want %v", c.page, got, !c.free)
		}
	}
}

func TestUnreadableFiles(t *testing.T) {
	const ps = 16384
	for _, c := range []struct {
		name  string
		build func() *fakeSpace
	}{
		{"not a space header", func() *fakeSpace {
			f := newFakeSpace(ps, 128, 3, 0x15)
			binary.BigEndian.PutUint16(f.pages[0][filPageType:], typeIndex)
			return f
		}},
		{"page_compressed (MariaDB full_crc32 with an algorithm)", func() *fakeSpace { return newFakeSpace(ps, 128, 3, 0x15|1<<5) }},
		{"descriptor garbage, as encrypted pages read", func() *fakeSpace {
			f := newFakeSpace(ps, 128, 3, 0x15)
			f.extent(1, 0xdeadbeef, 7)
			return f
		}},
		{"segment id past the space's next id", func() *fakeSpace {
			f := newFakeSpace(ps, 128, 3, 0x15)
			f.extent(1, xdesFSeg, 5000)
			return f
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, size := c.build().reader()
			if _, err := Read(r, size, ps, nil); !errors.Is(err, ErrUnreadable) {
				t.Errorf("got %v, want ErrUnreadable", err)
			}
		})
	}
}

// A file whose header page is not written yet (MariaDB's zeros, MySQL's stub: both write a
// new tablespace's header page through the buffer pool) is unreadable in a way of its own:
// its other pages may already name themselves. An empty file is the same; a header of
// another type is not.
func TestHeaderPageNotWritten(t *testing.T) {
	const ps = 16384
	f := newFakeSpace(ps, 128, 3, 0x15)
	f.pages[0] = make([]byte, ps)
	r, size := f.reader()
	if _, err := Read(r, size, ps, nil); !errors.Is(err, ErrHeaderNotWritten) || !errors.Is(err, ErrUnreadable) {
		t.Errorf("zero page 0: got %v, want ErrHeaderNotWritten, an ErrUnreadable", err)
	}
	if _, err := Read(bytes.NewReader(nil), 0, ps, nil); !errors.Is(err, ErrHeaderNotWritten) {
		t.Errorf("empty file: got %v, want ErrHeaderNotWritten", err)
	}
	// MySQL's stub: the space id and the flags, no page type.
	stub := newFakeSpace(ps, 128, 3, 0x21)
	binary.BigEndian.PutUint16(stub.pages[0][filPageType:], 0)
	r, size = stub.reader()
	if _, err := Read(r, size, ps, nil); !errors.Is(err, ErrHeaderNotWritten) {
		t.Errorf("MySQL's stub of page 0: got %v, want ErrHeaderNotWritten", err)
	}
	g := newFakeSpace(ps, 128, 3, 0x15)
	binary.BigEndian.PutUint16(g.pages[0][filPageType:], typeIndex)
	r, size = g.reader()
	if _, err := Read(r, size, ps, nil); errors.Is(err, ErrHeaderNotWritten) || !errors.Is(err, ErrUnreadable) {
		t.Errorf("page 0 of another type: got %v, want ErrUnreadable only", err)
	}
	// Read at half its page size, a page's header is found at another page's number.
	path := filepath.Join(t.TempDir(), "t.ibd")
	if err := os.WriteFile(path, bytes.Join(f.pages, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	err := ReadHeaders(path, ps/2, []uint32{20}, func(p uint32, h Header) {
		if !h.Written || h.Offset != 10 {
			t.Errorf("page 20 at 8 KiB: %+v, want the header of page 10", h)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestFixedMetadataPage(t *testing.T) {
	for _, c := range []struct {
		page uint32
		ps   int
		want bool
	}{{0, 16384, true}, {1, 16384, true}, {2, 16384, true}, {3, 16384, false}, {16383, 16384, false},
		{16384, 16384, true}, {16385, 16384, true}, {16386, 16384, false}, {8192, 8192, true}, {8192, 16384, false}} {
		if got := FixedMetadataPage(c.page, c.ps); got != c.want {
			t.Errorf("page %d at %d bytes: %v, want %v", c.page, c.ps, got, c.want)
		}
	}
}

func TestPhysicalPageSize(t *testing.T) {
	for _, c := range []struct {
		name  string
		flags uint32
		want  int
	}{
		{"MySQL 8 dynamic with SDI", 16417, 16384},
		{"MariaDB full_crc32 16k", 21, 16384},
		{"MariaDB full_crc32 4k", 0x10 | 3, 4096},
		{"ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8", 0x21 | 4<<1, 8192},
		{"ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=4", 0x21 | 3<<1, 4096},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := physicalPageSize(c.flags, 16384)
			if err != nil || got != c.want {
				t.Errorf("flags %#x: %d, %v; want %d", c.flags, got, err, c.want)
			}
		})
	}
}

// Segment tells a leaf segment's pages (where a clustered index's LOB pages are too) from
// the non-leaf segment's.
func TestSegmentLeaf(t *testing.T) {
	const ps, space = 16384, 7
	f := newFakeSpace(ps, 1000, space, 0x15)
	f.extent(0, 2, 0)
	f.extent(1, xdesFSeg, 2) // leaf segment of index 10
	f.extent(2, xdesFSeg, 1) // its non-leaf segment
	f.index(10, 3, space, 2, 1, 50, 242, 4)
	r, size := f.reader()
	m, err := Read(r, size, ps, []Index{{ID: 10, Root: 3}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		page uint32
		leaf bool
	}{{3, false}, {4, true}, {64, true}, {130, false}} {
		kind, ix, leaf := m.Segment(c.page)
		if kind != IndexPage || ix != 10 || leaf != c.leaf {
			t.Errorf("page %d: kind %d index %d leaf %v, want leaf %v", c.page, kind, ix, leaf, c.leaf)
		}
	}
}

// ReadHeaders reads each page's type and index id, pages far apart alone and pages close
// together in one read, and says which pages were never written.
func TestReadHeaders(t *testing.T) {
	const ps = 16384
	f := newFakeSpace(ps, 300, 7, 0x15)
	set := func(page uint32, typ uint16, id uint64) {
		binary.BigEndian.PutUint16(f.pages[page][filPageType:], typ)
		binary.BigEndian.PutUint64(f.pages[page][pageHeader+pageIndexID:], id)
	}
	set(10, TypeIndex, 42)
	set(12, 10, 0) // BLOB
	set(13, 23, 0) // MySQL LOB_DATA
	set(200, TypeIndex, 43)
	f.pages[250] = make([]byte, ps) // allocated, never written
	path := filepath.Join(t.TempDir(), "t.ibd")
	if err := os.WriteFile(path, bytes.Join(f.pages, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	got := map[uint32]Header{}
	err := ReadHeaders(path, ps, []uint32{200, 13, 10, 12, 250, 5000}, func(p uint32, h Header) { got[p] = h })
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint32]Header{
		10:   {Type: TypeIndex, IndexID: 42, Written: true, Offset: 10},
		12:   {Type: 10, Written: true, Offset: 12},
		13:   {Type: 23, Written: true, Offset: 13},
		200:  {Type: TypeIndex, IndexID: 43, Written: true, Offset: 200},
		250:  {},
		5000: {}, // past the end of the file
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("page %d: %+v, want %+v", p, got[p], w)
		}
	}
	if !got[12].IsLOB() || !got[13].IsLOB() || got[10].IsLOB() || !got[10].IsIndex() {
		t.Errorf("kinds: %+v", got)
	}
}

// Tree counts a B-tree from its segments: the node pointers of the level above the leaves
// are the leaves, the rest of the leaf segment is off-page column pages.
func TestTree(t *testing.T) {
	const ps, space = 16384, 7
	f := newFakeSpace(ps, 1000, space, 0x15)
	f.extent(0, 2, 0)
	f.extent(1, xdesFSeg, 2) // leaf segment of index 10: pages 64-127, and fragment page 4
	f.extent(2, xdesFSeg, 1) // its non-leaf segment: pages 128-131 in use
	for p := 132; p < 192; p++ {
		f.free(p)
	}
	f.index(10, 3, space, 2, 1, 50, 242, 4)
	node := func(page uint32, id uint64, level, recs uint16) {
		b := f.pages[page]
		binary.BigEndian.PutUint16(b[filPageType:], typeIndex)
		binary.BigEndian.PutUint64(b[pageHeader+pageIndexID:], id)
		binary.BigEndian.PutUint16(b[pageHeader+pageLevel:], level)
		binary.BigEndian.PutUint16(b[pageHeader+pageNRecs:], recs)
	}
	node(3, 10, 2, 3) // the root, two levels above the leaves
	node(128, 10, 1, 30)
	node(129, 10, 1, 20)
	node(130, 10, 1, 5)
	node(131, 99, 1, 400) // a stale page of another index: not counted
	path := filepath.Join(t.TempDir(), "t.ibd")
	open := func() *Map {
		t.Helper()
		if err := os.WriteFile(path, bytes.Join(f.pages, nil), 0o600); err != nil {
			t.Fatal(err)
		}
		m, err := Open(path, ps, []Index{{ID: 10, Root: 3}})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := open()
	// A secondary index's segments are its B-tree: 65 leaf pages, 5 above them.
	if got, err := m.Tree(path, 10, false, 0); err != nil || got != (Tree{Pages: 70, Leaves: 65, Levels: 3}) {
		t.Errorf("without LOB pages: %+v, %v", got, err)
	}
	got, err := m.Tree(path, 10, true, 100)
	if err != nil {
		t.Fatal(err)
	}
	// Leaves: 30 + 20 + 5; above them the root and three level-1 pages; the leaf segment's
	// 65 pages less the 55 leaves are LOB pages.
	if want := (Tree{Pages: 59, Leaves: 55, LOBPages: 10, Levels: 3}); got != want {
		t.Errorf("Tree = %+v, want %+v", got, want)
	}
	if _, err := m.Tree(path, 10, true, 2); !errors.Is(err, ErrTreeTooBig) {
		t.Errorf("with 2 pages allowed: %v, want ErrTreeTooBig", err)
	}
	// A root that is its only leaf: the leaf segment is all LOB pages.
	node(3, 10, 0, 7)
	if got, err := open().Tree(path, 10, true, 100); err != nil || got != (Tree{Pages: 1, Leaves: 1, LOBPages: 65, Levels: 1}) {
		t.Errorf("one-page tree: %+v, %v", got, err)
	}
}

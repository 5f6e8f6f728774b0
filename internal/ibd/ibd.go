// Package ibd reads the allocation metadata InnoDB keeps in a tablespace file (the space
// header, the extent descriptors, the segment inodes and each index's root page) to say
// which index owns each page, without asking the server. A resident-page list the server
// writes cheaply (its buffer-pool dump: space and page numbers only) can then be named
// per index, where naming it through INFORMATION_SCHEMA.INNODB_BUFFER_PAGE would make the
// server build a row for every page of its pool.
//
// Every index is a B-tree with two file segments (leaf pages, and the pages above), and
// off-page BLOB/TEXT pages are allocated from the leaf segment of the clustered index. A
// segment owns whole extents (64 pages of 16 KiB), whose descriptors name the segment, and
// up to 32 single "fragment" pages listed in its inode. So the owner of page p is: the
// segment of p's extent, else the segment whose fragment array lists p.
//
// The file is read as it is on disk. What the server allocated since it last wrote the
// descriptor pages is not there yet: such pages are Unattributed, not guessed.
package ibd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// File page layout (storage/innobase/include/fil0fil.h, fsp0fsp.h, page0page.h).
const (
	filPageOffset  = 4  // FIL_PAGE_OFFSET: the page's own number
	filPageType    = 24 // FIL_PAGE_TYPE
	filPageSpaceID = 34 // FIL_PAGE_ARCH_LOG_NO_OR_SPACE_ID
	filPageData    = 38 // FIL_PAGE_DATA: the page body starts here

	typeAllocated = 0     // FIL_PAGE_TYPE_ALLOCATED: allocated, not yet initialised
	typeIndex     = 17855 // FIL_PAGE_INDEX
	typeRTree     = 17854 // FIL_PAGE_RTREE
	typeInode     = 3     // FIL_PAGE_INODE
	typeFSPHdr    = 8     // FIL_PAGE_TYPE_FSP_HDR
	typeXDES      = 9     // FIL_PAGE_TYPE_XDES

	fspHeader     = filPageData // FSP_HEADER_OFFSET
	fspSpaceID    = 0
	fspSize       = 8
	fspFreeLimit  = 12
	fspFlags      = 16
	fspSegID      = 72  // FSP_SEG_ID: the first unused segment id
	xdesArrOffset = 150 // XDES_ARR_OFFSET = FSP_HEADER_OFFSET + FSP_HEADER_SIZE (112)

	xdesID       = 0  // XDES_ID: the owning segment
	xdesState    = 20 // XDES_STATE
	xdesBitmap   = 24 // XDES_BITMAP: two bits per page, the first set when the page is free
	xdesFreeFrag = 2  // XDES_FREE_FRAG: single pages handed out to segments, some free
	xdesFullFrag = 3  // XDES_FULL_FRAG: every page handed out
	xdesFSeg     = 4  // XDES_FSEG: the extent belongs to a segment
	// xdesFSegFrag (MySQL 8.0+): an extent a segment uses for fragment pages only.
	xdesFSegFrag = 5

	fsegID        = 0
	fsegMagic     = 60 // FSEG_MAGIC_N
	fsegFragArr   = 64 // FSEG_FRAG_ARR
	fsegFragSlots = 32
	fsegMagicN    = 97937874
	filNull       = 0xFFFFFFFF

	pageHeader     = filPageData // PAGE_HEADER
	pageNRecs      = 16          // PAGE_N_RECS: user records on the page
	pageLevel      = 26          // PAGE_LEVEL: 0 for a leaf
	pageIndexID    = 28          // PAGE_INDEX_ID
	pageBtrSegLeaf = 36          // PAGE_BTR_SEG_LEAF: FSEG header of the leaf segment
	pageBtrSegTop  = 46          // PAGE_BTR_SEG_TOP: FSEG header of the non-leaf segment
)

// Index is one B-tree of the tablespace: its id and root page, as the server's dictionary
// says (INNODB_SYS_INDEXES / INNODB_INDEXES: INDEX_ID, PAGE_NO).
type Index struct {
	ID   uint64
	Root uint32
}

// Kind says what a page is to the map.
type Kind uint8

const (
	// Unattributed: no index owns the page on disk (allocated since the descriptors were
	// last written, or a page of a segment no listed index has, such as MySQL's SDI).
	Unattributed Kind = iota
	// IndexPage: a page of Owner's index (B-tree pages and, for a clustered index, its
	// off-page BLOB/TEXT pages).
	IndexPage
	// FileMetadata: the space header, extent descriptor, change-buffer bitmap and
	// segment inode pages.
	FileMetadata
)

// Map says which index owns each page of one tablespace file.
type Map struct {
	SpaceID uint32
	// PageSize is the physical page size (smaller than the server's page size for
	// ROW_FORMAT=COMPRESSED); Pages the file's size in such pages.
	PageSize int
	Pages    uint32
	// Indexes are the listed indexes whose segments were found; Missing those whose root
	// page did not name them (not yet written, or the dictionary changed).
	Indexes []uint64
	Missing []uint64

	// FreeLimit is the first page never initialized (FSP_FREE_LIMIT): the pages from there
	// to the end of the file were only reserved.
	FreeLimit uint32

	extentPages uint32
	extentSeg   []uint64          // per extent: the owning segment, 0 for none
	extentUsed  []bool            // per extent: its descriptor says some page may be in use
	pageFree    []uint64          // per page, one bit: its extent's bitmap says free (XDES_FREE_BIT)
	fragOwner   map[uint32]uint64 // fragment page -> segment
	segIndex    map[uint64]uint64 // segment -> index
	segLeaf     map[uint64]bool   // segment -> it is its index's leaf segment
	roots       map[uint64]root   // index -> its root page, for the indexes found
	inodePages  map[uint32]bool
}

// ErrUnreadable means the file's metadata cannot be read without the server: encrypted,
// page-compressed, or not an InnoDB tablespace at all.
var ErrUnreadable = errors.New("tablespace metadata unreadable")

// ErrHeaderNotWritten (an ErrUnreadable) means page 0 of the file is not a space header
// yet: its type is FIL_PAGE_TYPE_ALLOCATED (0). Both servers create a tablespace's file
// without its header page and write that page through the buffer pool like any other:
// MariaDB (10.5 and later) leaves page 0 zero-filled, MySQL writes a stub of it (space id
// and flags). So a table created since the page cleaner last flushed that page has no
// allocation metadata on disk: for seconds on MySQL, for minutes or hours on a MariaDB
// with few writes. The pages the server has written since carry their own headers
// (ReadHeaders).
var ErrHeaderNotWritten = fmt.Errorf("%w: page 0 not written yet (a tablespace created since the server last flushed its header page)", ErrUnreadable)

// Open reads path's allocation metadata. logicalPageSize is the server's innodb_page_size.
func Open(path string, logicalPageSize int, indexes []Index) (*Map, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return Read(f, st.Size(), logicalPageSize, indexes)
}

// Read is Open on an open file of size bytes.
func Read(r io.ReaderAt, size int64, logicalPageSize int, indexes []Index) (*Map, error) {
	head := make([]byte, 1024)
	if _, err := r.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read the space header: %w", err)
	}
	if be16(head, filPageType) == typeAllocated {
		return nil, ErrHeaderNotWritten
	}
	if t := be16(head, filPageType); t != typeFSPHdr {
		return nil, fmt.Errorf("%w: page 0 has type %d, not a space header", ErrUnreadable, t)
	}
	m := &Map{SpaceID: be32(head, fspHeader+fspSpaceID), fragOwner: map[uint32]uint64{}, segIndex: map[uint64]uint64{}, segLeaf: map[uint64]bool{}, inodePages: map[uint32]bool{}, roots: map[uint64]root{}}
	if id := be32(head, filPageSpaceID); id != m.SpaceID {
		return nil, fmt.Errorf("%w: page 0 names space %d and %d", ErrUnreadable, id, m.SpaceID)
	}
	phys, err := physicalPageSize(be32(head, fspHeader+fspFlags), logicalPageSize)
	if err != nil {
		return nil, err
	}
	m.PageSize = phys
	m.Pages = uint32(size / int64(phys))
	// An extent is FSP_EXTENT_SIZE pages whatever their physical size; a descriptor page
	// describes the extents of the next phys pages.
	m.extentPages = extentPages(logicalPageSize)
	if m.extentPages == 0 || uint32(phys) < m.extentPages {
		return nil, fmt.Errorf("%w: page size %d", ErrUnreadable, phys)
	}
	nextSeg := be64(head, fspHeader+fspSegID)
	page := make([]byte, phys)
	read := func(n uint32) ([]byte, error) {
		if _, err := r.ReadAt(page, int64(n)*int64(phys)); err != nil {
			return nil, fmt.Errorf("read page %d: %w", n, err)
		}
		if got := be32(page, filPageOffset); got != n && !allZero(page[:64]) {
			return nil, fmt.Errorf("%w: page %d says it is page %d", ErrUnreadable, n, got)
		}
		return page, nil
	}

	// Extent descriptors: one descriptor page every phys pages, describing the extents of
	// those pages (page 0 is the space header, which also holds the first descriptors).
	m.extentSeg = make([]uint64, (m.Pages+m.extentPages-1)/m.extentPages)
	m.extentUsed = make([]bool, len(m.extentSeg))
	m.pageFree = make([]uint64, (m.Pages+63)/64)
	m.FreeLimit = min(be32(head, fspHeader+fspFreeLimit), m.Pages)
	perPage := uint32(phys) / m.extentPages
	xdesSize := 24 + int(m.extentPages*2+7)/8
	var sdi *Index
	for xp := uint32(0); xp < m.Pages; xp += uint32(phys) {
		p, err := read(xp)
		if err != nil {
			return nil, err
		}
		if xp == 0 {
			sdi = sdiIndex(p, xdesArrOffset+xdesSize*int(perPage), m.Pages)
		}
		if t := be16(p, filPageType); t != typeFSPHdr && t != typeXDES {
			if allZero(p[:64]) {
				continue // written by the server later: its extents stay unattributed
			}
			return nil, fmt.Errorf("%w: page %d has type %d where an extent descriptor page belongs", ErrUnreadable, xp, t)
		}
		for e := uint32(0); e < perPage; e++ {
			ext := (xp + e*m.extentPages) / m.extentPages
			if int(ext) >= len(m.extentSeg) {
				break
			}
			off := xdesArrOffset + int(e)*xdesSize
			state := be32(p, off+xdesState)
			if state > xdesFSegFrag {
				return nil, fmt.Errorf("%w: extent %d has state %d (encrypted?)", ErrUnreadable, ext, state)
			}
			// XDES_FREE (1) extents, and 0 for descriptors never initialized, hold nothing.
			m.extentUsed[ext] = state == xdesFreeFrag || state == xdesFullFrag || state == xdesFSeg || state == xdesFSegFrag
			if m.extentUsed[ext] {
				for i := uint32(0); i < m.extentPages; i++ {
					bit := 2 * i
					if p[off+xdesBitmap+int(bit/8)]&(1<<(bit%8)) != 0 {
						if n := ext*m.extentPages + i; n < m.Pages {
							m.pageFree[n/64] |= 1 << (n % 64)
						}
					}
				}
			}
			if state == xdesFSeg || state == xdesFSegFrag {
				seg := be64(p, off+xdesID)
				if seg == 0 || (nextSeg != 0 && seg >= nextSeg) {
					return nil, fmt.Errorf("%w: extent %d names segment %d (encrypted?)", ErrUnreadable, ext, seg)
				}
				m.extentSeg[ext] = seg
			}
		}
	}

	// Each index's root page points at the inodes of its two segments; so does the SDI's
	// (MySQL), whose pages are file metadata.
	if sdi != nil {
		indexes = append(indexes[:len(indexes):len(indexes)], *sdi)
	}
	for _, ix := range indexes {
		isSDI := sdi != nil && ix == *sdi
		if ix.Root >= m.Pages {
			if !isSDI {
				m.Missing = append(m.Missing, ix.ID)
			}
			continue
		}
		p, err := read(ix.Root)
		if err != nil {
			return nil, err
		}
		t := be16(p, filPageType)
		switch {
		case isSDI && t != TypeSDI:
			continue // not written yet: its pages stay unattributed
		case isSDI:
		case (t != typeIndex && t != typeRTree) || be64(p, pageHeader+pageIndexID) != ix.ID:
			m.Missing = append(m.Missing, ix.ID)
			continue
		}
		var segHeaders [2][3]uint32
		for i, at := range []int{pageBtrSegLeaf, pageBtrSegTop} {
			o := pageHeader + at
			segHeaders[i] = [3]uint32{be32(p, o), be32(p, o+4), uint32(be16(p, o+8))}
		}
		// The page buffer is reused for the inode pages below.
		rootLevel := be16(p, pageHeader+pageLevel)
		found := false
		for i, h := range segHeaders {
			space, inodePage, inodeOff := h[0], h[1], h[2]
			if space != m.SpaceID || inodePage >= m.Pages || int(inodeOff)+fsegFragArr+4*fsegFragSlots > phys {
				continue
			}
			ip, err := read(inodePage)
			if err != nil {
				return nil, err
			}
			if be16(ip, filPageType) != typeInode {
				continue
			}
			in := ip[inodeOff:]
			if be32(in, fsegMagic) != fsegMagicN {
				continue
			}
			seg := be64(in, fsegID)
			m.inodePages[inodePage] = true
			m.segIndex[seg] = ix.ID
			m.segLeaf[seg] = i == 0
			for k := 0; k < fsegFragSlots; k++ {
				if pg := be32(in, fsegFragArr+4*k); pg != filNull && pg < m.Pages {
					m.fragOwner[pg] = seg
				}
			}
			found = true
		}
		switch {
		case isSDI:
		case found:
			m.Indexes = append(m.Indexes, ix.ID)
			m.roots[ix.ID] = root{page: ix.Root, level: rootLevel}
		default:
			m.Missing = append(m.Missing, ix.ID)
		}
	}
	return m, nil
}

// Owner says who owns page n: IndexPage and the index id, or FileMetadata, or
// Unattributed.
func (m *Map) Owner(n uint32) (Kind, uint64) {
	k, ix, _ := m.Segment(n)
	return k, ix
}

// Segment is Owner, and for an IndexPage whether it is in its index's leaf segment: the
// leaf pages, and for a clustered index its off-page BLOB/TEXT pages, which InnoDB
// allocates from the leaf segment too (level 0). Pages of the other segment are the
// B-tree's non-leaf pages. A page of a segment's extent that the bitmap calls free
// (FreeOnDisk) is Unattributed: it is nobody's, or allocated since the descriptors were
// written, and only the page itself can say which.
func (m *Map) Segment(n uint32) (kind Kind, index uint64, leaf bool) {
	if seg, ok := m.fragOwner[n]; ok {
		if ix, ok := m.segIndex[seg]; ok {
			return m.owned(ix, seg)
		}
		return Unattributed, 0, false
	}
	if m.isMetadata(n) {
		return FileMetadata, 0, false
	}
	if ext := n / m.extentPages; int(ext) < len(m.extentSeg) && !m.FreeOnDisk(n) {
		seg := m.extentSeg[ext]
		if ix, ok := m.segIndex[seg]; ok {
			return m.owned(ix, seg)
		}
	}
	return Unattributed, 0, false
}

// owned is Segment's answer for a page of index ix's segment seg.
func (m *Map) owned(ix, seg uint64) (Kind, uint64, bool) {
	if ix == sdiIndexID {
		return FileMetadata, 0, false
	}
	return IndexPage, ix, m.segLeaf[seg]
}

// sdiIndexID stands for the SDI index in a Map: no index of a table has it (InnoDB's index
// ids count up from 1).
const sdiIndexID = ^uint64(0)

// sdiIndex is the SDI index (MySQL 8.0+: each table's serialized dictionary, kept in its
// own tablespace) from the space header page p: FSP_SDI_OFFSET, after the extent
// descriptors (xdesEnd) and the encryption information, holds its version (1) and root
// page. nil where there is none (MariaDB, MySQL 5.7).
func sdiIndex(p []byte, xdesEnd int, pages uint32) *Index {
	const encryptionInfo = 115 // Encryption::INFO_MAX_SIZE
	off := xdesEnd + encryptionInfo
	if off+8 > len(p) || be32(p, off) != 1 {
		return nil
	}
	root := be32(p, off+4)
	if root == 0 || root >= pages {
		return nil
	}
	return &Index{ID: sdiIndexID, Root: root}
}

// FreeOnDisk says whether the descriptors on disk call page n free: past the free limit, in
// an extent nobody uses, or marked free in its extent's bitmap. A segment's extent keeps
// its unused pages there, and MySQL's linear read-ahead reads whole extents, so such pages
// can be resident (the server lists them as ALLOCATED, of no index). Once the descriptors
// are written, a free page is nobody's; before, it may be freshly allocated (and dirty).
func (m *Map) FreeOnDisk(n uint32) bool {
	if n >= m.FreeLimit {
		return true
	}
	if m.isMetadata(n) {
		return false
	}
	ext := n / m.extentPages
	if int(ext) >= len(m.extentUsed) || !m.extentUsed[ext] {
		return true
	}
	return m.pageFree[n/64]&(1<<(n%64)) != 0
}

// InUse says whether page n may hold data as the file's metadata on disk says: a metadata
// page, or a page its extent's bitmap marks used in an extent a segment owns or hands out
// single pages from (a segment's extent keeps its unused pages free: about 0.8% of a
// bulk-loaded table's file). A page allocated since the server last wrote the descriptors
// reads as not in use: such a page is in the buffer pool until it is flushed, so a load
// needs it not.
func (m *Map) InUse(n uint32) bool {
	if n >= m.FreeLimit {
		return false
	}
	return m.isMetadata(n) || !m.FreeOnDisk(n)
}

// InUsePages counts the pages InUse says may hold data.
func (m *Map) InUsePages() int64 {
	var n int64
	for p := uint32(0); p < m.FreeLimit; p++ {
		if m.InUse(p) {
			n++
		}
	}
	return n
}

// isMetadata: the space header or a descriptor page (every PageSize pages), the
// change-buffer bitmap page after each, and the inode pages.
func (m *Map) isMetadata(n uint32) bool {
	return FixedMetadataPage(n, m.PageSize) || m.inodePages[n]
}

// physicalPageSize decodes the space flags: MariaDB's full_crc32 format (bit 4 set, the page
// size in bits 0-3, never ROW_FORMAT=COMPRESSED) or the format MySQL and older MariaDB files
// use (the compressed page size in bits 1-4).
func physicalPageSize(flags uint32, logical int) (int, error) {
	const fcrc32Marker = 1 << 4
	if flags&fcrc32Marker != 0 {
		if algo := (flags >> 5) & 7; algo != 0 {
			return 0, fmt.Errorf("%w: page_compressed tablespace", ErrUnreadable)
		}
		if ssize := flags & 15; ssize != 0 {
			return 512 << ssize, nil
		}
		return logical, nil
	}
	if zip := (flags >> 1) & 15; zip != 0 {
		return 512 << zip, nil
	}
	return logical, nil
}

// extentPages is FSP_EXTENT_SIZE: 1 MiB of pages up to 16 KiB pages, 64 pages above.
func extentPages(logical int) uint32 {
	if logical <= 16384 {
		return uint32(1 << 20 / logical)
	}
	return 64
}

func be16(b []byte, o int) uint16 { return binary.BigEndian.Uint16(b[o:]) }
func be32(b []byte, o int) uint32 { return binary.BigEndian.Uint32(b[o:]) }
func be64(b []byte, o int) uint64 { return binary.BigEndian.Uint64(b[o:]) }

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

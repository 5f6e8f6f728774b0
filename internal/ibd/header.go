package ibd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
)

// Page types (FIL_PAGE_TYPE) that Header distinguishes: B-tree nodes, and pages of
// off-page column data. MariaDB uses 18 for a clustered index root after an instant
// ALTER (FIL_PAGE_TYPE_INSTANT), MySQL for SDI_BLOB: callers never ask for root pages'
// types, and 18 is not read as a LOB type here.
const (
	TypeAllocated = 0     // FIL_PAGE_TYPE_ALLOCATED: never written, or freshly allocated
	TypeIndex     = 17855 // FIL_PAGE_INDEX
	TypeRTree     = 17854 // FIL_PAGE_RTREE
	TypeSDI       = 17853 // FIL_PAGE_SDI (MySQL 8.0+)
)

// lobTypes: BLOB (10), ZBLOB (11), ZBLOB2 (12) on both; MySQL 8.0's LOB format adds
// LOB_INDEX (22), LOB_DATA (23), LOB_FIRST (24), ZLOB_FIRST (25), ZLOB_DATA (26),
// ZLOB_INDEX (27), ZLOB_FRAG (28), ZLOB_FRAG_ENTRY (29).
var lobTypes = map[uint16]bool{10: true, 11: true, 12: true, 22: true, 23: true, 24: true, 25: true, 26: true, 27: true, 28: true, 29: true}

// Header is what a page's header on disk says about it.
type Header struct {
	Type uint16
	// IndexID is PAGE_INDEX_ID, for B-tree pages (IsIndex).
	IndexID uint64
	// Level (PAGE_LEVEL: 0 for a leaf) and Records (PAGE_N_RECS, the user records), for
	// B-tree pages.
	Level, Records uint16
	// Written is false for a page that reads as zeros, or lies past the end of the file:
	// the server allocated it but has not written it yet.
	Written bool
	// Offset is FIL_PAGE_OFFSET, the number the page gives itself: where the page size is
	// not known from the file (its header page not written yet), a header read at the
	// wrong size names another page.
	Offset uint32
}

// IsIndex says whether the page is a B-tree node.
func (h Header) IsIndex() bool { return h.Type == TypeIndex || h.Type == TypeRTree }

// IsLOB says whether the page holds off-page column data (BLOB/TEXT/JSON parts).
func (h Header) IsLOB() bool { return lobTypes[h.Type] }

// FixedMetadataPage says whether a tablespace's layout alone makes page file metadata,
// whatever is written on it: the space header (0), the change buffer bitmap (1) and the
// first inode page (2), and in each later group of physPageSize pages the extent
// descriptor page and the bitmap page after it.
func FixedMetadataPage(page uint32, physPageSize int) bool {
	if page <= 2 {
		return true
	}
	r := page % uint32(physPageSize)
	return r == 0 || r == 1
}

// headerBytes covers FIL_PAGE_TYPE and the B-tree page header up to PAGE_INDEX_ID.
const headerBytes = pageHeader + pageIndexID + 8

// runGap: pages at most this far apart are read in one request (the bytes between are
// read and dropped), so that a dense set of pages costs sequential reads, not one random
// read each. maxRun bounds a request.
const (
	runGap = 8
	maxRun = 1 << 20
)

// ReadHeaders reads the header of each of pages (page numbers of the file at path, whose
// physical page size is pageSize) and calls each with it, in page order. Pages close to one
// another are read together. It reads what is on disk: a page the server changed since it
// last wrote it reads as it was then.
func ReadHeaders(path string, pageSize int, pages []uint32, each func(page uint32, h Header)) error {
	if len(pages) == 0 {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sorted := append([]uint32(nil), pages...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	ps := int64(pageSize)
	perRun := max(maxRun/pageSize, 1)
	buf := make([]byte, perRun*pageSize)
	for i := 0; i < len(sorted); {
		first := sorted[i]
		j := i + 1
		for j < len(sorted) && sorted[j]-sorted[j-1] <= runGap && int(sorted[j]-first) < perRun {
			j++
		}
		last := sorted[j-1]
		// One page alone needs only its header; a run needs the pages in between.
		length := int64(last-first)*ps + headerBytes
		n, err := f.ReadAt(buf[:length], int64(first)*ps)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read %s at page %d: %w", path, first, err)
		}
		got := buf[:n]
		for k, p := range sorted[i:j] {
			if k > 0 && p == sorted[i+k-1] {
				continue // listed twice
			}
			off := int64(p-first) * ps
			var h Header
			if off+headerBytes <= int64(len(got)) {
				b := got[off : off+headerBytes]
				if !allZero(b) {
					h = Header{Type: be16(b, filPageType), Written: true, Offset: be32(b, filPageOffset)}
					if h.IsIndex() {
						h.IndexID = be64(b, pageHeader+pageIndexID)
						h.Level = be16(b, pageHeader+pageLevel)
						h.Records = be16(b, pageHeader+pageNRecs)
					}
				}
			}
			each(p, h)
		}
		i = j
	}
	return nil
}

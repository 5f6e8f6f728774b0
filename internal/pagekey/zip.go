package pagekey

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
)

// ROW_FORMAT=COMPRESSED index pages (page0zip.cc, page0zip.ic). On disk such a page is
// KEY_BLOCK_SIZE bytes: the FIL header and the page header as they are (PAGE_DATA bytes), a
// zlib stream, the modification log after it, and at the end, growing down, the dense page
// directory (a slot per record: the user records in key order, then the free list), before
// it what the stream leaves out (node pointers' child pages, or the clustered index's
// DB_TRX_ID and DB_ROLL_PTR) and BLOB pointers. The stream holds the index's field
// descriptions (page_zip_fields_encode), then every record, in heap (address) order,
// without the 5-byte header whose fields the dense directory gives back.
//
// inflatePage rebuilds the page InnoDB's page_zip_decompress would have in the buffer
// pool, as far as the key decoding of this package reads it: the records at their
// offsets with their null bitmaps and lengths, their headers (heap number, status, info
// bits, next record), the node pointers' child pages, infimum and supremum. The records
// are then read as COMPACT ones. Both servers write the same format (MySQL's
// zipdecompress.cc and MariaDB's page0zip.cc decode it alike), and neither writes instant
// ALTER's record headers on compressed pages: the format has no room for their info bits.

const (
	pageData      = pageHeader + 56 // PAGE_DATA: what precedes the stream, uncompressed
	pageZipStart  = 120             // PAGE_ZIP_START (PAGE_NEW_SUPREMUM_END): the first record's extra bytes
	pageHeapTop   = 2               // PAGE_HEAP_TOP in the page header
	pageDirBytes  = 8               // PAGE_DIR: the FIL trailer below the sparse directory
	recExtra      = 5               // REC_N_NEW_EXTRA_BYTES, left out of the stream
	zipSlotMask   = 0x3FFF          // PAGE_ZIP_DIR_SLOT_MASK
	zipSlotOwned  = 0x4000          // the record owns a slot of the sparse directory
	zipSlotDel    = 0x8000          // the record is delete-marked
	trxRollLen    = 6 + 7           // DB_TRX_ID, DB_ROLL_PTR: kept out of the stream
	externRefSize = 20              // BTR_EXTERN_FIELD_REF_SIZE: kept out of the stream
)

// zipSizeOf is the physical page size of a tablespace whose FSP flags (page 0) are
// flags when its pages are ROW_FORMAT=COMPRESSED (KEY_BLOCK_SIZE), else 0. MariaDB's
// full_crc32 format (bit 4, never compressed) and the older format both servers use
// (the compressed size in bits 1-4, whose bit 4 no size up to 16 KiB sets) do not clash.
func zipSizeOf(flags uint32) int {
	const fcrc32Marker = 1 << 4
	if flags&fcrc32Marker != 0 {
		return 0
	}
	if ssize := (flags >> 1) & 15; ssize != 0 {
		return 512 << ssize
	}
	return 0
}

// compressible: the page types whose pages a compressed tablespace stores as zlib streams.
func compressible(t uint16) bool {
	return t == typeIndex || t == typeSDI || t == typeRTree
}

const typeRTree = 17854 // FIL_PAGE_RTREE

// zipField is a field as page_zip_fields_encode describes it: consecutive NOT NULL
// fixed-size fields are merged into one.
type zipField struct {
	fixed    int // bytes; 0 for a variable-length field
	nullable bool
	big      bool // DATA_BIG_COL: a length of 128 or more takes two bytes
}

// zipIndex is the record layout a compressed page describes for itself.
type zipIndex struct {
	fields   []zipField
	nullable int  // bits in the null bitmap
	trxCol   int  // the merged field DB_TRX_ID starts, on clustered leaf pages; -1 otherwise
	nodePtr  bool // a child page number follows the fields
}

// parseZipFields decodes page_zip_fields_encode's output (page_zip_fields_decode): one or
// two bytes a field, then DB_TRX_ID's field (leaf pages; 0 in a secondary index) or the
// index's count of nullable fields (non-leaf pages, whose node pointers reserve a null
// bit for every nullable field of the index, not only for those they hold).
func parseZipFields(b []byte, leaf bool, dst []zipField) (zipIndex, error) {
	z := zipIndex{fields: dst[:0], trxCol: -1, nodePtr: !leaf}
	n := 0
	for i := 0; i < len(b); n++ {
		if b[i]&0x80 != 0 {
			i++
		}
		i++
		if i > len(b) {
			return z, fmt.Errorf("field descriptions end inside an entry")
		}
	}
	if n < 2 {
		return z, fmt.Errorf("%d field descriptions", n)
	}
	read := func(i int) (int, int) {
		v := int(b[i])
		if v&0x80 != 0 {
			return (v&0x7f)<<8 | int(b[i+1]), i + 2
		}
		return v, i + 1
	}
	i, nulls := 0, 0
	for range n - 1 {
		var v int
		two := b[i]&0x80 != 0
		v, i = read(i)
		f := zipField{nullable: v&1 == 0}
		switch {
		case two, v >= 2 && v < 126:
			f.fixed = v >> 1
			if f.fixed == 0 {
				return z, fmt.Errorf("a fixed-size field of 0 bytes")
			}
		case v >= 126:
			f.big = true
		}
		if f.nullable {
			nulls++
		}
		z.fields = append(z.fields, f)
	}
	last, _ := read(i)
	switch {
	case !leaf:
		if last < nulls {
			return z, fmt.Errorf("%d nullable fields, the node pointers hold %d", last, nulls)
		}
		z.nullable = last
	case last >= len(z.fields):
		return z, fmt.Errorf("DB_TRX_ID at field %d of %d", last, len(z.fields))
	case last > 0:
		z.trxCol, z.nullable = last, nulls
	default:
		z.nullable = nulls
	}
	return z, nil
}

// recShape is where a record's fields end, from its origin.
type recShape struct {
	ends   []int
	ext    []bool // stored off the page: the field ends in a 20-byte BLOB pointer
	anyExt bool
	extra  int // bytes before the origin, the 5-byte header included
}

func (s *recShape) size() int { return s.ends[len(s.ends)-1] }

func (s *recShape) start(i int) int {
	if i == 0 {
		return 0
	}
	return s.ends[i-1]
}

// shape reads a record's null bitmap and lengths (rec_get_offsets); at(k) is the k-th byte
// before the 5-byte header, going away from the origin: on the page they lie below it,
// in the modification log (rec_get_offsets_reverse) they follow the heap number.
func (z *zipIndex) shape(at func(k int) (byte, bool), s *recShape) error {
	s.ends, s.ext, s.anyExt = s.ends[:0], s.ext[:0], false
	lens := (z.nullable + 7) / 8
	bit, off := 0, 0
	for i, f := range z.fields {
		ext := false
		if f.nullable {
			if bit >= z.nullable {
				return fmt.Errorf("field %d is nullable beyond the null bitmap", i)
			}
			b, ok := at(bit / 8)
			if !ok {
				return errors.New("the null bitmap runs out")
			}
			isNull := b&(1<<(bit%8)) != 0
			bit++
			if isNull {
				s.ends, s.ext = append(s.ends, off), append(s.ext, false)
				continue
			}
		}
		if f.fixed > 0 {
			off += f.fixed
		} else {
			b, ok := at(lens)
			lens++
			n := int(b)
			if ok && f.big && n&0x80 != 0 {
				b, ok = at(lens)
				lens++
				n = n<<8 | int(b)
				ext = n&0x4000 != 0
				n &= 0x3fff
			}
			if !ok {
				return errors.New("the field lengths run out")
			}
			off += n
		}
		s.ends, s.ext = append(s.ends, off), append(s.ext, ext)
		s.anyExt = s.anyExt || ext
	}
	if z.nodePtr {
		off += nodePtrSize
		s.ends, s.ext = append(s.ends, off), append(s.ext, false)
	}
	s.extra = lens + recExtra
	return nil
}

// zipState is what inflating a page needs, kept for the next page.
type zipState struct {
	zr     io.ReadCloser
	in     bytes.Reader
	out    []byte
	recs   []int
	fields []zipField
	shape  recShape
	// logEntries counts the modification log's records applied to the last page (tests).
	logEntries int
}

var zipStates = sync.Pool{New: func() any { return new(zipState) }}

// inflatePage rebuilds the compressed page zip into page (the logical page size).
func inflatePage(zip []byte, page Page) (logEntries int, err error) {
	st := zipStates.Get().(*zipState)
	defer zipStates.Put(st)
	if err := st.inflate(zip, page); err != nil {
		return 0, corrupt(page, "compressed page: %v", err)
	}
	return st.logEntries, nil
}

func (st *zipState) inflate(zip []byte, page Page) error {
	size, logical := len(zip), len(page)
	st.logEntries = 0
	clear(page)
	if size < pageData+16 || size > logical {
		return fmt.Errorf("%d bytes, for %d-byte pages", size, logical)
	}
	copy(page, zip[:pageData])
	leaf := page.Level() == 0
	nDense := page.u16(pageHeader+pageNHeap)&0x7fff - 2
	nRecs := page.Records()
	if nDense < 0 || 2*nDense >= size-pageData || nRecs > nDense {
		return fmt.Errorf("%d records in a heap of %d", nRecs, nDense)
	}
	slot := func(i int) int { return int(binary.BigEndian.Uint16(zip[size-2*(i+1):])) }
	recs := st.recs[:0]
	for i := range nDense {
		o := slot(i)
		if i >= nRecs && o&^zipSlotMask != 0 {
			return fmt.Errorf("free record slot %d has flags %#x", i, o)
		}
		o &= zipSlotMask
		if o < pageZipStart+recExtra || o >= logical-pageDirBytes {
			return fmt.Errorf("directory slot %d points to %d", i, o)
		}
		recs = append(recs, o)
	}
	st.recs = recs
	// The stream holds the records in heap order, which is the order of their addresses:
	// a compressed page allocates a record's heap number and place together.
	slices.Sort(recs)
	for i := 1; i < len(recs); i++ {
		if recs[i] == recs[i-1] {
			return fmt.Errorf("two directory slots point to %d", recs[i])
		}
	}
	copy(page[infimumCompact-recExtra:], []byte{0x01, 0x00, statusInfimum})
	copy(page[infimumCompact:], "infimum\x00")
	copy(page[supremumCompact-recExtra+1:], []byte{0x00, 1<<3 | statusSupremum, 0, 0})
	copy(page[supremumCompact:], "supremum")

	// Inflate the whole stream. It starts with the field descriptions, flushed apart
	// (Z_FULL_FLUSH): the inflater's first read ends at that flush point.
	streamEnd := size - 2*nDense
	st.in.Reset(zip[pageData:streamEnd])
	if st.zr == nil {
		zr, err := zlib.NewReader(&st.in)
		if err != nil {
			return fmt.Errorf("zlib stream: %w", err)
		}
		st.zr = zr
	} else if err := st.zr.(zlib.Resetter).Reset(&st.in, nil); err != nil {
		return fmt.Errorf("zlib stream: %w", err)
	}
	if cap(st.out) < logical+4096 {
		st.out = make([]byte, logical+4096)
	}
	buf := st.out[:cap(st.out)]
	nFields, err := st.zr.Read(buf)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("inflate the field descriptions: %w", err)
	}
	total := nFields
	for err == nil {
		if total == len(buf) {
			return errors.New("the stream inflates past the page")
		}
		var k int
		k, err = st.zr.Read(buf[total:])
		total += k
	}
	if !errors.Is(err, io.EOF) {
		return fmt.Errorf("inflate: %w", err)
	}
	logStart := streamEnd - st.in.Len()
	z, err := parseZipFields(buf[:nFields], leaf, st.fields)
	st.fields = z.fields
	if err != nil {
		return err
	}
	status, slotSize := statusOrdinary, 2
	switch {
	case !leaf:
		status, slotSize = statusNodePtr, 2+nodePtrSize
	case z.trxCol >= 0:
		slotSize = 2 + trxRollLen
	}
	logEnd := size - nDense*slotSize
	if logStart > logEnd {
		return fmt.Errorf("the stream (to %d) runs into the uncompressed columns (from %d)", logStart, logEnd)
	}
	for i, r := range recs {
		binary.BigEndian.PutUint16(page[r-4:], uint16((i+2)<<3|status))
	}

	// Put the stream's bytes where they were on the page, leaving out each record's
	// header and what is stored apart. The stream may end before the last records: those
	// written since the page was last compressed are in the modification log only.
	data := buf[nFields:total]
	cur, pos := pageZipStart, 0
	ended := false
	fill := func(end int) error {
		if end < cur || end > logical-pageDirBytes {
			return fmt.Errorf("a record's bytes from %d to %d", cur, end)
		}
		n := min(end-cur, len(data)-pos)
		copy(page[cur:], data[pos:pos+n])
		cur, pos = cur+n, pos+n
		ended = cur < end || pos == len(data)
		return nil
	}
	onPage := func(r int) func(k int) (byte, bool) {
		return func(k int) (byte, bool) {
			if at := r - recExtra - 1 - k; at >= pageZipStart {
				return page[at], true
			}
			return 0, false
		}
	}
	sh := &st.shape
	for _, r := range recs {
		if err := fill(r - recExtra); err != nil {
			return err
		}
		if ended {
			break
		}
		cur = r
		switch {
		case !leaf:
			if err := z.shape(onPage(r), sh); err != nil {
				return fmt.Errorf("record at %d: %w", r, err)
			}
			if err := fill(r + sh.size() - nodePtrSize); err != nil {
				return err
			}
			cur += nodePtrSize
		case z.trxCol >= 0:
			if err := z.shape(onPage(r), sh); err != nil {
				return fmt.Errorf("record at %d: %w", r, err)
			}
			for i := range sh.ends {
				switch {
				case i == z.trxCol:
					if sh.ends[i]-sh.start(i) < trxRollLen {
						return fmt.Errorf("record at %d: DB_TRX_ID in %d bytes", r, sh.ends[i]-sh.start(i))
					}
					if err := fill(r + sh.start(i)); err != nil {
						return err
					}
					cur += trxRollLen
				case sh.ext[i]:
					if err := fill(r + sh.ends[i] - externRefSize); err != nil {
						return err
					}
					cur += externRefSize
				}
				if ended {
					break
				}
			}
			if !ended {
				if err := fill(r + sh.size()); err != nil {
					return err
				}
			}
		}
		if ended {
			break
		}
	}
	if !ended {
		// The last record's data (on secondary leaf pages), and what is left of a longer
		// record the last one took the place of.
		if err := fill(page.u16(pageHeader + pageHeapTop)); err != nil {
			return err
		}
	}
	if pos < len(data) {
		return fmt.Errorf("the stream holds %d bytes past the page's heap", len(data)-pos)
	}

	if err := st.applyLog(zip[logStart:logEnd], page, &z, recs, leaf); err != nil {
		return fmt.Errorf("modification log: %w", err)
	}

	// Headers from the dense directory: the user records in key order, their flags, and
	// the first node pointer of a level's leftmost page marked as the smallest key.
	prev, owned := infimumCompact, 1
	for i := range nRecs {
		o := slot(i)
		info := 0
		if i == 0 && !leaf && page.Prev() == NoPage {
			info = infoMinRec
		}
		if o&zipSlotDel != 0 {
			info |= infoDeleted
		}
		if o&zipSlotOwned != 0 {
			info |= owned
			owned = 1
		} else {
			owned++
		}
		o &= zipSlotMask
		binary.BigEndian.PutUint16(page[prev-2:], uint16(o-prev))
		page[o-recExtra] = byte(info)
		prev = o
		if !leaf {
			if err := z.shape(onPage(o), sh); err != nil {
				return fmt.Errorf("node pointer at %d: %w", o, err)
			}
			heap, _ := slices.BinarySearch(recs, o)
			at := size - 2*nDense - nodePtrSize*(heap+1)
			end := o + sh.size()
			if end > logical-pageDirBytes {
				return fmt.Errorf("node pointer at %d ends at %d", o, end)
			}
			copy(page[end-nodePtrSize:end], zip[at:at+nodePtrSize])
		}
	}
	binary.BigEndian.PutUint16(page[prev-2:], uint16(supremumCompact-prev))
	page[supremumCompact-recExtra] = byte(owned)
	return nil
}

// applyLog applies the modification log (page_zip_apply_log): records written or
// changed since the page was last compressed, each as its heap number, its extra bytes
// reversed and its data without what is stored apart; a heap number with bit 0 set
// clears a record's data (it went to the free list). A zero byte ends the log.
func (st *zipState) applyLog(log []byte, page Page, z *zipIndex, recs []int, leaf bool) error {
	sh := &st.shape
	p := 0
	next := func() (int, error) {
		if p >= len(log) {
			return 0, errors.New("runs out")
		}
		p++
		return int(log[p-1]), nil
	}
	copyData := func(dst, n int) error {
		if n < 0 || p+n >= len(log) || dst+n > len(page)-pageDirBytes {
			return fmt.Errorf("%d bytes at %d run out of the log or page", n, dst)
		}
		copy(page[dst:dst+n], log[p:p+n])
		p += n
		return nil
	}
	for {
		val, err := next()
		if err != nil {
			return err
		}
		if val == 0 {
			return nil
		}
		if val&0x80 != 0 {
			lo, err := next()
			if err != nil {
				return err
			}
			if val = (val&0x7f)<<8 | lo; val == 0 {
				return errors.New("heap number 0")
			}
		}
		if p >= len(log) {
			return errors.New("ends after a heap number")
		}
		h := val >> 1
		if h == 0 || h > len(recs) {
			return fmt.Errorf("heap number %d of %d", h+1, len(recs)+1)
		}
		r := recs[h-1]
		st.logEntries++
		if val&1 != 0 {
			err := z.shape(func(k int) (byte, bool) {
				if at := r - recExtra - 1 - k; at >= pageZipStart {
					return page[at], true
				}
				return 0, false
			}, sh)
			if err != nil {
				return fmt.Errorf("cleared record at %d: %w", r, err)
			}
			if r+sh.size() > len(page)-pageDirBytes {
				return fmt.Errorf("cleared record at %d runs out of the page", r)
			}
			clear(page[r : r+sh.size()])
			continue
		}
		start := p
		err = z.shape(func(k int) (byte, bool) {
			if at := start + k; at < len(log) {
				return log[at], true
			}
			return 0, false
		}, sh)
		if err != nil {
			return fmt.Errorf("record at %d: %w", r, err)
		}
		b := r - recExtra
		if r-sh.extra < pageZipStart {
			return fmt.Errorf("record at %d: %d extra bytes run out of the page", r, sh.extra)
		}
		for b > r-sh.extra {
			b--
			page[b] = log[p]
			p++
		}
		switch {
		case sh.anyExt:
			if !leaf {
				return fmt.Errorf("node pointer at %d stores a field off the page", r)
			}
			out := r
			for i := range sh.ends {
				switch {
				case i == z.trxCol:
					if err := copyData(out, r+sh.start(i)-out); err != nil {
						return err
					}
					out = r + sh.start(i) + trxRollLen
				case sh.ext[i]:
					if err := copyData(out, r+sh.ends[i]-externRefSize-out); err != nil {
						return err
					}
					out = r + sh.ends[i]
				}
			}
			if err := copyData(out, r+sh.size()-out); err != nil {
				return err
			}
		case !leaf:
			if err := copyData(r, sh.size()-nodePtrSize); err != nil {
				return err
			}
		case z.trxCol < 0:
			if err := copyData(r, sh.size()); err != nil {
				return err
			}
		default:
			l := sh.start(z.trxCol)
			if sh.ends[z.trxCol]-l < trxRollLen {
				return fmt.Errorf("record at %d: DB_TRX_ID in %d bytes", r, sh.ends[z.trxCol]-l)
			}
			if err := copyData(r, l); err != nil {
				return err
			}
			if err := copyData(r+l+trxRollLen, sh.size()-l-trxRollLen); err != nil {
				return err
			}
		}
	}
}

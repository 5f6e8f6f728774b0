package pagekey

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/innowarm/innowarm/internal/keys"
)

// Page layout (fil0fil.h, page0page.h, rem0rec.h).
const (
	filPageOffset = 4
	filPagePrev   = 8
	filPageNext   = 12
	filPageType   = 24
	filNull       = 0xFFFFFFFF

	pageHeader  = 38
	pageNHeap   = 4  // bit 15: the page's records are COMPACT
	pageInstant = 12 // MariaDB: n_core_fields << 3 in a clustered index root after an instant ALTER
	pageNRecs   = 16
	pageLevel   = 26
	pageIndexID = 28

	typeIndex = 17855 // FIL_PAGE_INDEX
	typeSDI   = 17853 // FIL_PAGE_SDI: MySQL's serialized dictionary, a B-tree too
	// typeInstant is MariaDB's FIL_PAGE_TYPE_INSTANT: a clustered index root page after an
	// instant ALTER (MySQL uses 18 for SDI BLOB pages, never for an index page).
	typeInstant = 18

	infimumCompact    = 99  // PAGE_NEW_INFIMUM: origin of the infimum record
	supremumCompact   = 112 // PAGE_NEW_SUPREMUM
	infimumRedundant  = 101 // PAGE_OLD_INFIMUM
	supremumRedundant = 116 // PAGE_OLD_SUPREMUM

	infoMinRec  = 0x10 // REC_INFO_MIN_REC_FLAG
	infoDeleted = 0x20 // REC_INFO_DELETED_FLAG
	infoVersion = 0x40 // MySQL 8.0.29+: a row version byte precedes the null bitmap
	infoInstant = 0x80 // MySQL 8.0.12+: a field count precedes the null bitmap

	statusOrdinary = 0
	statusNodePtr  = 1
	statusInfimum  = 2
	statusSupremum = 3
	statusInstant  = 4 // MariaDB REC_STATUS_INSTANT

	nodePtrSize = 4
)

// Page is an index page as read from a tablespace file (logical page size).
type Page []byte

func (p Page) u16(o int) int    { return int(binary.BigEndian.Uint16(p[o:])) }
func (p Page) u32(o int) uint32 { return binary.BigEndian.Uint32(p[o:]) }

// Number is the page's own number (FIL_PAGE_OFFSET).
func (p Page) Number() uint32 { return p.u32(filPageOffset) }

// Type is FIL_PAGE_TYPE.
func (p Page) Type() uint16 { return uint16(p.u16(filPageType)) }

// IsIndex says whether the page is a B-tree node. MariaDB marks the clustered index's root
// after an instant ALTER with a type of its own, which MySQL gives its SDI BLOB pages: that
// one is an index page when its infimum and supremum records' headers are where an index
// page has them (their "infimum" and "supremum" are zeroed after an instant DROP COLUMN).
func (p Page) IsIndex() bool {
	if len(p) < 1024 {
		return false
	}
	switch p.Type() {
	case typeIndex:
		return true
	case typeInstant:
		if p.Compact() {
			return p[infimumCompact-3]&7 == statusInfimum && p[supremumCompact-3]&7 == statusSupremum
		}
		heap := func(o int) int { return p.u16(o-5) >> 3 }
		fields := func(o int) int { return p.u16(o-4) >> 1 & 0x3FF }
		return heap(infimumRedundant) == 0 && heap(supremumRedundant) == 1 && fields(infimumRedundant) == 1 && fields(supremumRedundant) == 1
	}
	return false
}

// Level is the page's height above the leaves (0 for a leaf page).
func (p Page) Level() int { return p.u16(pageHeader + pageLevel) }

// IndexID is the id of the index the page belongs to.
func (p Page) IndexID() uint64 { return binary.BigEndian.Uint64(p[pageHeader+pageIndexID:]) }

// Prev and Next are the page's siblings on its level (NoPage at either end).
func (p Page) Prev() uint32 { return p.u32(filPagePrev) }
func (p Page) Next() uint32 { return p.u32(filPageNext) }

// NoPage is the page number that means none (FIL_NULL).
const NoPage = filNull

// Compact says whether the page's records are COMPACT (also DYNAMIC and COMPRESSED), not
// REDUNDANT.
func (p Page) Compact() bool { return p.u16(pageHeader+pageNHeap)&0x8000 != 0 }

// Records is how many user records the page holds (PAGE_N_RECS).
func (p Page) Records() int { return p.u16(pageHeader + pageNRecs) }

// InstantCoreFields is MariaDB's PAGE_INSTANT of a clustered index root: the number of
// fields its records had before the first instant ALTER (0: none).
func (p Page) InstantCoreFields() int {
	if p.Type() != typeInstant || !p.IsIndex() {
		return 0
	}
	return p.u16(pageHeader+pageInstant) >> 3
}

// ErrCorrupt means the page does not read as a B-tree page: a torn or half-written page,
// or one the layout does not describe.
var ErrCorrupt = errors.New("page does not decode")

func corrupt(p Page, format string, args ...any) error {
	return fmt.Errorf("%w: page %d: %s", ErrCorrupt, p.Number(), fmt.Sprintf(format, args...))
}

// walk calls each with the origin of every user record, in key order, until each returns
// false.
func (p Page) walk(each func(origin int) (bool, error)) error {
	if !p.IsIndex() && p.Type() != typeSDI {
		return corrupt(p, "type %d is not an index page", p.Type())
	}
	compact := p.Compact()
	o, sup := infimumRedundant, supremumRedundant
	if compact {
		o, sup = infimumCompact, supremumCompact
	}
	// A page holds fewer records than it has bytes / 5: a longer walk is a loop.
	for steps := 0; steps < len(p)/5; steps++ {
		next := p.u16(o - 2)
		if compact {
			if next == 0 {
				return corrupt(p, "record at %d has no successor", o)
			}
			next = (o + int(int16(next))) & (len(p) - 1)
		}
		if next == sup {
			return nil
		}
		if next < supremumRedundant+1 || next >= len(p)-8 {
			return corrupt(p, "record at %d points out of the page (%d)", o, next)
		}
		o = next
		more, err := each(o)
		if err != nil || !more {
			return err
		}
	}
	return corrupt(p, "record list does not end")
}

// Record is a user record's key, and a node pointer's child page.
type Record struct {
	Key keys.Key
	// Child is the page a node pointer points to.
	Child uint32
	// MinRec marks the first node pointer of the leftmost page of a level: it stands for
	// every key below the next one, whatever key it holds.
	MinRec bool
	// Deleted: the record is delete-marked (not yet purged); it still bounds its page.
	Deleted bool
}

// FirstKey returns the key of the first user record of a leaf or non-leaf page; ok is
// false for a page without user records. MariaDB's hidden metadata record (at the head
// of the leftmost leaf page after an instant ALTER) is no user record.
func (l *Layout) FirstKey(p Page) (key keys.Key, ok bool, err error) {
	err = p.walk(func(o int) (bool, error) {
		r, skip, err := l.decode(p, o)
		if err != nil || skip {
			return err == nil, err
		}
		key, ok = r.Key, true
		return false, nil
	})
	return key, ok, err
}

// NodePointers returns the node pointers of a non-leaf page in key order.
func (l *Layout) NodePointers(p Page) ([]Record, error) {
	if p.Level() == 0 {
		return nil, corrupt(p, "a leaf page has no node pointers")
	}
	out := make([]Record, 0, p.Records())
	err := p.walk(func(o int) (bool, error) {
		r, _, err := l.decode(p, o)
		if err == nil {
			out = append(out, r)
		}
		return err == nil, err
	})
	return out, err
}

// Records returns every user record of a page (leaf or not) in key order.
func (l *Layout) Records(p Page) ([]Record, error) {
	var out []Record
	err := p.walk(func(o int) (bool, error) {
		r, skip, err := l.decode(p, o)
		if err == nil && !skip {
			out = append(out, r)
		}
		return err == nil, err
	})
	return out, err
}

// decode reads the record at origin o; skip is set for MariaDB's metadata record.
func (l *Layout) decode(p Page, o int) (r Record, skip bool, err error) {
	var loc located
	if skip, err = l.locate(p, o, &loc, nil); err != nil || skip {
		return Record{MinRec: loc.minRec, Deleted: loc.deleted}, skip, err
	}
	r = Record{MinRec: loc.minRec, Deleted: loc.deleted, Child: loc.child}
	r.Key, err = l.values(p, o, loc.fields, nil, true)
	return r, false, err
}

// located is where a record's key fields are (nil entries are NULL) and, for a node
// pointer, its child page.
type located struct {
	fields          [][]byte
	child           uint32
	minRec, deleted bool
}

// locate finds the record's key fields without decoding them, into scratch when it has
// room.
func (l *Layout) locate(p Page, o int, loc *located, scratch [][]byte) (skip bool, err error) {
	nodePtr := p.Level() > 0
	if cap(scratch) < len(l.Fields) {
		scratch = make([][]byte, len(l.Fields))
	}
	scratch = scratch[:len(l.Fields)]
	var child int // offset of a node pointer's child page number
	if p.Compact() {
		info, status := int(p[o-5])&0xF0, int(p[o-3])&7
		switch {
		case status == statusNodePtr && nodePtr, status == statusOrdinary && !nodePtr:
		case status == statusInstant && !nodePtr && l.Format == MariaDBRecords:
		default:
			return false, corrupt(p, "record at %d has status %d on a level %d page", o, status, p.Level())
		}
		loc.minRec, loc.deleted = info&infoMinRec != 0, info&infoDeleted != 0
		if loc.minRec && !nodePtr {
			return true, nil // MariaDB's instant ALTER metadata record
		}
		if at := l.fixedNodePtr(); nodePtr && at >= 0 {
			// Every key field has a fixed size and none is NULL: no lengths to read.
			if o+at+nodePtrSize > len(p)-8 {
				return false, corrupt(p, "node pointer at %d runs out of the page", o)
			}
			off := o
			for i := range l.Fields {
				scratch[i] = p[off : off+l.Fields[i].FixedLen]
				off += l.Fields[i].FixedLen
			}
			loc.fields, loc.child = scratch, p.u32(o+at)
			return false, nil
		}
		child, err = l.compactFields(p, o, info, status, scratch)
	} else {
		loc.minRec, loc.deleted = p[o-6]&infoMinRec != 0, p[o-6]&infoDeleted != 0
		if loc.minRec && !nodePtr {
			return true, nil
		}
		child, err = l.redundantFields(p, o, nodePtr, scratch)
	}
	if err != nil {
		return false, err
	}
	loc.fields = scratch
	if nodePtr {
		if child+nodePtrSize > len(p) {
			return false, corrupt(p, "node pointer at %d runs out of the page", o)
		}
		loc.child = p.u32(child)
	}
	return false, nil
}

// values decodes located fields into dst (reused when it has room); with copyBytes unset,
// string values point into the page.
func (l *Layout) values(p Page, o int, fields [][]byte, dst keys.Key, copyBytes bool) (keys.Key, error) {
	if cap(dst) < len(fields) {
		dst = make(keys.Key, len(fields))
	}
	dst = dst[:len(fields)]
	for i, b := range fields {
		if b == nil {
			dst[i] = keys.Null
			continue
		}
		v, err := decodeValue(&l.Fields[i], b, copyBytes)
		if err != nil {
			return nil, fmt.Errorf("%w: page %d record at %d: %w", ErrCorrupt, p.Number(), o, err)
		}
		dst[i] = v
	}
	return dst, nil
}

// compactFields finds the key fields of a COMPACT record: the null bitmap and the lengths
// of variable-length fields lie before the 5-byte header, in reverse field order.
func (l *Layout) compactFields(p Page, o, info, status int, fields [][]byte) (int, error) {
	nulls := o - 6 // the byte just before the header
	nullable := l.Nulls.Plain
	switch {
	case status == statusNodePtr:
	case l.Format == MariaDBRecords && status == statusInstant:
		nAdd := int(p[nulls])
		nulls--
		if nAdd >= 0x80 {
			nAdd = nAdd&0x7f | int(p[nulls])<<7
			nulls--
		}
		n := l.Nulls.CoreFields + 1 + nAdd
		if l.Nulls.CoreFields == 0 || n >= len(l.Nulls.ByFieldCount) {
			return 0, corrupt(p, "record at %d has %d fields, the index's instant history knows %d", o, n, len(l.Nulls.ByFieldCount)-1)
		}
		nullable = l.Nulls.ByFieldCount[n]
	case l.Format == MySQLRecords && info&infoVersion != 0:
		v := int(p[nulls])
		nulls--
		if v >= len(l.Nulls.ByVersion) {
			return 0, corrupt(p, "record at %d has row version %d, the table has %d", o, v, len(l.Nulls.ByVersion)-1)
		}
		nullable = l.Nulls.ByVersion[v]
	case l.Format == MySQLRecords && info&infoInstant != 0:
		n := int(p[nulls])
		nulls--
		if n&0x80 != 0 {
			n = (n&0x7f)<<8 | int(p[nulls])
			nulls--
		}
		if n >= len(l.Nulls.ByFieldCount) {
			return 0, corrupt(p, "record at %d has %d fields after MySQL 8.0.12's instant ADD, which this layout does not describe", o, n)
		}
		nullable = l.Nulls.ByFieldCount[n]
	}
	lens := nulls - (nullable+7)/8
	bit := 0
	off := o
	for i := range l.Fields {
		f := &l.Fields[i]
		if f.Nullable {
			if bit >= nullable {
				return 0, corrupt(p, "record at %d: field %s is nullable beyond the record's null bitmap", o, f.Name)
			}
			isNull := p[nulls-bit/8]&(1<<(bit%8)) != 0
			bit++
			if isNull {
				fields[i] = nil
				continue
			}
		}
		n := f.FixedLen
		if n == 0 {
			if lens < pageHeader {
				return 0, corrupt(p, "record at %d: lengths run out of the page", o)
			}
			n = int(p[lens])
			lens--
			if f.Big && n&0x80 != 0 {
				n = n<<8 | int(p[lens])
				lens--
				if n&0x4000 != 0 {
					return 0, corrupt(p, "record at %d: key field %s is stored off the page", o, f.Name)
				}
				n &= 0x3fff
			}
		}
		if off+n > len(p)-8 {
			return 0, corrupt(p, "record at %d: field %s runs out of the page", o, f.Name)
		}
		fields[i] = p[off : off+n]
		off += n
	}
	return off, nil
}

// redundantFields finds the key fields of a REDUNDANT record: before its 6-byte header it
// stores every field's end offset (one or two bytes each, high bit for NULL), and MySQL's
// row-versioned records a version byte between the two.
func (l *Layout) redundantFields(p Page, o int, nodePtr bool, fields [][]byte) (int, error) {
	nFields := (p.u16(o-4) >> 1) & 0x3FF
	short := p[o-3]&1 != 0
	base := o - 6
	if l.Format == MySQLRecords && p[o-6]&infoVersion != 0 {
		base--
	}
	need := len(l.Fields)
	if nodePtr {
		need++
	}
	if nFields < need {
		return 0, corrupt(p, "record at %d has %d fields, the key needs %d", o, nFields, need)
	}
	end := func(i int) (int, bool, error) {
		if short {
			at := base - i - 1
			if at < pageHeader {
				return 0, false, corrupt(p, "record at %d: offsets run out of the page", o)
			}
			v := int(p[at])
			return v & 0x7f, v&0x80 != 0, nil
		}
		at := base - 2*i - 2
		if at < pageHeader {
			return 0, false, corrupt(p, "record at %d: offsets run out of the page", o)
		}
		v := p.u16(at)
		if v&0x4000 != 0 && i < len(l.Fields) {
			return 0, false, corrupt(p, "record at %d: key field %d is stored off the page", o, i)
		}
		return v & 0x3fff, v&0x8000 != 0, nil
	}
	start := 0
	for i := range l.Fields {
		e, isNull, err := end(i)
		if err != nil {
			return 0, err
		}
		if e < start || o+e > len(p)-8 {
			return 0, corrupt(p, "record at %d: field %d ends at %d", o, i, e)
		}
		fields[i] = nil
		if !isNull {
			fields[i] = p[o+start : o+e]
		}
		start = e
	}
	return o + start, nil
}

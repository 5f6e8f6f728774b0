package ibd

import (
	"bytes"
	"compress/zlib"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// MySQL's serialized dictionary (SDI, MySQL 8.0+): a B-tree in each tablespace, its root
// page named on page 0 (sdiIndex), whose records are (type 4 bytes, id 8, DB_TRX_ID 6,
// DB_ROLL_PTR 7, uncompressed length 4, compressed length 4, the zlib-compressed JSON of
// one dictionary object). A JSON too long for the page is stored off it in a chain of
// FIL_PAGE_SDI_BLOB pages.
const (
	sdiTypeTable  = 1 // the record holds a table (2: a tablespace)
	sdiRecordData = 4 + 8 + 6 + 7 + 4 + 4
	typeSDIBlob   = 18 // FIL_PAGE_SDI_BLOB

	recInfimum  = 99  // PAGE_NEW_INFIMUM: the origin of a COMPACT page's infimum
	recSupremum = 112 // PAGE_NEW_SUPREMUM
	recDeleted  = 0x20
	externRef   = 20 // BTR_EXTERN_FIELD_REF_SIZE
)

// SDITables reads the JSON of every table object in the SDI of the tablespace file at path
// (logicalPageSize: the server's innodb_page_size). A file without an SDI (MariaDB, MySQL
// 5.7), of compressed pages, or whose SDI pages are not on disk yet is ErrUnreadable.
func SDITables(path string, logicalPageSize int) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return readSDITables(f, st.Size(), logicalPageSize)
}

// SDITablesAt is SDITables of a tablespace read from r, a file of size bytes: for readers
// that hold the file open already (pagekey.Source), so there is one SDI reader, not two.
func SDITablesAt(r io.ReaderAt, size int64, logicalPageSize int) ([][]byte, error) {
	return readSDITables(r, size, logicalPageSize)
}

func readSDITables(r io.ReaderAt, size int64, logical int) ([][]byte, error) {
	pages := uint32(size / int64(logical))
	read := func(n uint32) ([]byte, error) {
		if n >= pages {
			return nil, fmt.Errorf("%w: SDI page %d past the end of the file (%d pages)", ErrUnreadable, n, pages)
		}
		p := make([]byte, logical)
		if _, err := r.ReadAt(p, int64(n)*int64(logical)); err != nil {
			return nil, fmt.Errorf("read page %d: %w", n, err)
		}
		if be32(p, filPageOffset) != n {
			return nil, fmt.Errorf("%w: page %d says it is page %d (not written yet?)", ErrUnreadable, n, be32(p, filPageOffset))
		}
		return p, nil
	}
	if pages == 0 {
		return nil, fmt.Errorf("%w: an empty file", ErrUnreadable)
	}
	head, err := read(0)
	if err != nil {
		return nil, err
	}
	if be16(head, filPageType) != typeFSPHdr {
		return nil, ErrHeaderNotWritten
	}
	// The SDI of a ROW_FORMAT=COMPRESSED tablespace is on compressed pages, which this
	// reader does not inflate.
	if phys, err := physicalPageSize(be32(head, fspHeader+fspFlags), logical); err != nil {
		return nil, err
	} else if phys != logical {
		return nil, fmt.Errorf("%w: the SDI of a compressed tablespace", ErrUnreadable)
	}
	ext := extentPages(logical)
	xdesSize := 24 + int(ext*2+7)/8
	sdi := sdiIndex(head, xdesArrOffset+xdesSize*int(uint32(logical)/ext), pages)
	if sdi == nil {
		return nil, fmt.Errorf("%w: no SDI in the file", ErrUnreadable)
	}
	p, err := read(sdi.Root)
	if err != nil {
		return nil, err
	}
	// Down the leftmost node pointers to the first leaf; its records and its right
	// siblings' are every object in key order.
	for depth := 0; be16(p, pageHeader+pageLevel) > 0; depth++ {
		if depth > 64 {
			return nil, fmt.Errorf("%w: the SDI tree does not end", ErrUnreadable)
		}
		var child uint32
		if err := sdiRecords(p, func(o int) (bool, error) {
			child = be32(p, o+12) // after the key: type (4) and id (8)
			return false, nil
		}); err != nil {
			return nil, err
		}
		if p, err = read(child); err != nil {
			return nil, err
		}
	}
	var out [][]byte
	for steps := uint32(0); ; steps++ {
		if steps > pages {
			return nil, fmt.Errorf("%w: the SDI leaf list does not end", ErrUnreadable)
		}
		err := sdiRecords(p, func(o int) (bool, error) {
			if p[o-5]&recDeleted != 0 || be32(p, o) != sdiTypeTable {
				return true, nil
			}
			raw, err := sdiRecordJSON(p, o, read)
			if err != nil {
				return false, err
			}
			out = append(out, raw)
			return true, nil
		})
		if err != nil {
			return nil, err
		}
		next := be32(p, 12) // FIL_PAGE_NEXT
		if next == filNull {
			return out, nil
		}
		if p, err = read(next); err != nil {
			return nil, err
		}
	}
}

// sdiRecords calls each with the origin of every user record of the SDI page p (COMPACT
// records), in key order, until each returns false.
func sdiRecords(p []byte, each func(origin int) (bool, error)) error {
	if be16(p, filPageType) != TypeSDI || be16(p, pageHeader+4)&0x8000 == 0 {
		return fmt.Errorf("%w: page %d is not an SDI page (type %d)", ErrUnreadable, be32(p, filPageOffset), be16(p, filPageType))
	}
	o := recInfimum
	// A page holds fewer records than it has bytes / 5: a longer walk is a loop.
	for steps := 0; steps < len(p)/5; steps++ {
		next := (o + int(int16(be16(p, o-2)))) & (len(p) - 1)
		if next == recSupremum {
			return nil
		}
		if next <= recSupremum || next+sdiRecordData >= len(p) {
			return fmt.Errorf("%w: SDI page %d: record at %d points out of the page (%d)", ErrUnreadable, be32(p, filPageOffset), o, next)
		}
		o = next
		if more, err := each(o); err != nil || !more {
			return err
		}
	}
	return fmt.Errorf("%w: SDI page %d: the record list does not end", ErrUnreadable, be32(p, filPageOffset))
}

// sdiRecordJSON inflates the JSON of the SDI leaf record at o, following it off the page
// when it is stored there.
func sdiRecordJSON(p []byte, o int, read func(uint32) ([]byte, error)) ([]byte, error) {
	uncompressed, compressed := be32(p, o+25), be32(p, o+29)
	// The JSON is the record's only variable-length field (no column is nullable): its
	// length is the byte before the 5-byte header, two bytes when it is 128 or more or
	// stored off the page (rec_init_offsets: 0x4000 marks a field stored off the page,
	// whose length here counts the 20-byte reference at its end).
	n := int(p[o-6])
	external := false
	if n&0x80 != 0 {
		n = (n<<8 | int(p[o-7])) & 0x7fff
		external = n&0x4000 != 0
		n &= 0x3fff
	}
	at := o + sdiRecordData
	if at+n > len(p) {
		return nil, fmt.Errorf("%w: SDI page %d: the record at %d runs out of the page", ErrUnreadable, be32(p, filPageOffset), o)
	}
	data := p[at : at+n]
	if external {
		if n < externRef {
			return nil, fmt.Errorf("%w: SDI page %d: the record at %d has a short off-page reference", ErrUnreadable, be32(p, filPageOffset), o)
		}
		blob, err := readSDIBlob(p[at+n-externRef:at+n], read)
		if err != nil {
			return nil, err
		}
		data = append(append([]byte{}, p[at:at+n-externRef]...), blob...)
	}
	if uint32(len(data)) != compressed {
		return nil, fmt.Errorf("%w: SDI page %d: the record at %d holds %d bytes, says %d", ErrUnreadable, be32(p, filPageOffset), o, len(data), compressed)
	}
	zr, err := zlib.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: SDI page %d: %w", ErrUnreadable, be32(p, filPageOffset), err)
	}
	defer zr.Close()
	out, err := io.ReadAll(io.LimitReader(zr, int64(uncompressed)+1))
	if err != nil || uint32(len(out)) != uncompressed {
		return nil, fmt.Errorf("%w: SDI page %d: the record at %d inflates to %d bytes, says %d (%w)", ErrUnreadable, be32(p, filPageOffset), o, len(out), uncompressed, err)
	}
	return out, nil
}

// readSDIBlob follows an off-page reference (space 4, page 4, offset 4, length 8) through
// its chain of SDI BLOB pages: each holds, at the offset (FIL_PAGE_DATA after the first),
// the part's length, the next page's number, then the part.
func readSDIBlob(ref []byte, read func(uint32) ([]byte, error)) ([]byte, error) {
	page := be32(ref, 4)
	off := int(be32(ref, 8))
	total := be64(ref, 12) & (1<<32 - 1)
	var out []byte
	for steps := 0; page != filNull && uint64(len(out)) < total; steps++ {
		if steps > 1<<16 {
			return nil, fmt.Errorf("%w: the SDI BLOB chain does not end", ErrUnreadable)
		}
		p, err := read(page)
		if err != nil {
			return nil, err
		}
		if t := be16(p, filPageType); t != typeSDIBlob {
			return nil, fmt.Errorf("%w: SDI BLOB page %d has type %d", ErrUnreadable, page, t)
		}
		part := int(be32(p, off))
		if off+8+part > len(p) {
			return nil, fmt.Errorf("%w: SDI BLOB page %d holds a part of %d bytes", ErrUnreadable, page, part)
		}
		out = append(out, p[off+8:off+8+part]...)
		page = be32(p, off+4)
		off = filPageData
	}
	if uint64(len(out)) != total {
		return nil, fmt.Errorf("%w: an SDI BLOB of %d bytes, its reference says %d", ErrUnreadable, len(out), total)
	}
	return out, nil
}

// PartitionRoots reads, from the SDI of the file at path, the id and root page of every
// index of every partition and subpartition of the partitioned table named table, by
// tablespace id and index name. MySQL 8.0+ lists no index of a partitioned table in
// INFORMATION_SCHEMA.INNODB_INDEXES; the table's SDI is kept in one of its partitions'
// files (the first one's), and found says whether this file holds it.
func PartitionRoots(path string, logicalPageSize int, table string) (roots map[uint32]map[string]Index, found bool, err error) {
	objs, err := SDITables(path, logicalPageSize)
	if err != nil {
		return nil, false, err
	}
	for _, raw := range objs {
		var t sdiPartitioned
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, false, fmt.Errorf("%w: %s: an SDI object: %w", ErrUnreadable, path, err)
		}
		if t.DDObjectType != "Table" || t.DDObject.Name != table || len(t.DDObject.Partitions) == 0 {
			continue
		}
		roots = map[uint32]map[string]Index{}
		var add func(ps []sdiPartition)
		add = func(ps []sdiPartition) {
			for _, p := range ps {
				for _, ix := range p.Indexes {
					if ix.IndexOpx < 0 || ix.IndexOpx >= len(t.DDObject.Indexes) {
						continue
					}
					priv := privateData(ix.SEPrivate)
					id, okID := priv["id"]
					root, okRoot := priv["root"]
					space, okSpace := priv["space_id"]
					if !okID || !okRoot || !okSpace || root == 0 || root >= filNull || space >= filNull {
						continue
					}
					if roots[uint32(space)] == nil {
						roots[uint32(space)] = map[string]Index{}
					}
					roots[uint32(space)][t.DDObject.Indexes[ix.IndexOpx].Name] = Index{ID: id, Root: uint32(root)}
				}
				add(p.Subpartitions)
			}
		}
		add(t.DDObject.Partitions)
		return roots, true, nil
	}
	return nil, false, nil
}

// sdiPartitioned is what a partitioned table's SDI says of its partitions' indexes: each
// partition's index names its table index by position (index_opx), and keeps its id, root
// page and tablespace in se_private_data ("id=168;root=4;space_id=2;table_id=1064;...").
type sdiPartitioned struct {
	DDObjectType string `json:"dd_object_type"`
	DDObject     struct {
		Name    string `json:"name"`
		Indexes []struct {
			Name string `json:"name"`
		} `json:"indexes"`
		Partitions []sdiPartition `json:"partitions"`
	} `json:"dd_object"`
}

type sdiPartition struct {
	Name    string `json:"name"`
	Indexes []struct {
		IndexOpx  int    `json:"index_opx"`
		SEPrivate string `json:"se_private_data"`
	} `json:"indexes"`
	Subpartitions []sdiPartition `json:"subpartitions"`
}

// privateData reads se_private_data's "key=value;" pairs with unsigned numeric values.
func privateData(s string) map[string]uint64 {
	out := map[string]uint64{}
	for _, kv := range strings.Split(s, ";") {
		k, v, ok := strings.Cut(kv, "=")
		if n, err := strconv.ParseUint(v, 10, 64); ok && err == nil {
			out[k] = n
		}
	}
	return out
}

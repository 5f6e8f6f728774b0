package bufferpool

import (
	"encoding/binary"
	"maps"
	"os"
	"path/filepath"
	"testing"
)

// headerNames names a fresh tablespace's pages (header page not written yet) from their own
// headers: B-tree pages of the space's own indexes, off-page column pages by the clustered
// index; never the layout's metadata pages, a page not written, a page whose header gives
// another number (read at the wrong page size) or an index of another tablespace.
func TestHeaderNamesOfAFreshTablespace(t *testing.T) {
	const ps, space = 16384, 5
	pages := make([][]byte, 10)
	for i := range pages {
		pages[i] = make([]byte, ps)
	}
	page := func(n uint32, offset uint32, typ uint16, index uint64) {
		b := pages[n]
		binary.BigEndian.PutUint32(b[4:], offset)
		binary.BigEndian.PutUint16(b[24:], typ)
		binary.BigEndian.PutUint64(b[38+28:], index)
	}
	page(2, 2, 3, 0)      // the inode page
	page(3, 3, 17855, 42) // PRIMARY's root
	page(4, 4, 17855, 43) // a secondary index's page
	page(5, 5, 10, 0)     // an off-page BLOB page
	page(6, 6, 17855, 77) // an index of another tablespace (a stale page)
	page(7, 8, 17855, 42) // says it is page 8
	page(1, 1, 17855, 42) // the bitmap page's place: metadata whatever it reads
	path := filepath.Join(t.TempDir(), "fresh.ibd")
	var all []byte
	for _, p := range pages {
		all = append(all, p...)
	}
	if err := os.WriteFile(path, all, 0o600); err != nil {
		t.Fatal(err)
	}
	fn := &fileNamer{
		paths:    map[uint32]string{space: path},
		names:    map[uint64]string{42: "PRIMARY", 43: "k", 77: "other"},
		spaceOf:  map[uint64]uint32{42: space, 43: space, 77: space + 1},
		fresh:    map[uint32]bool{space: true},
		pageSize: ps,
	}
	got, err := fn.headerNames(space, []uint32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 40}, "PRIMARY")
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint32]string{3: "PRIMARY", 4: "k", 5: "PRIMARY"}
	if !maps.Equal(got, want) {
		t.Errorf("named %v, want %v", got, want)
	}
	if got, _ := fn.headerNames(space, []uint32{5}, ""); len(got) != 0 {
		t.Errorf("a table without a clustered index: %v, want no LOB page named", got)
	}
	// On MySQL page 3 roots the SDI, wherever its header page says it is.
	fn.sdiRoot = 3
	if got, _ := fn.headerNames(space, []uint32{3, 4}, "PRIMARY"); !maps.Equal(got, map[uint32]string{4: "k"}) {
		t.Errorf("with the SDI at page 3: %v, want only page 4 named", got)
	}
}

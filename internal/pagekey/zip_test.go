package pagekey

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
)

// zipIntPage builds a 1 KiB compressed page of an index on one INT NOT NULL column, as
// page_zip_compress writes one: keys[i] is the record with heap number i+2 (records lie in
// heap order, 9 bytes apart from PAGE_ZIP_START); the first inStream of them are in the
// zlib stream, the others only in the modification log. order lists the heap indexes in
// key order for the dense directory, deleted the delete-marked ones; children, for a
// non-leaf page, are the node pointers' child pages by heap index.
func zipIntPage(t *testing.T, keys []int32, inStream int, order []int, deleted map[int]bool, children []uint32) []byte {
	t.Helper()
	const size = 1024
	level := 0
	if children != nil {
		level = 1
	}
	z := make([]byte, size)
	binary.BigEndian.PutUint32(z[filPageOffset:], 7)
	binary.BigEndian.PutUint32(z[filPagePrev:], filNull)
	binary.BigEndian.PutUint32(z[filPageNext:], filNull)
	binary.BigEndian.PutUint16(z[filPageType:], typeIndex)
	h := z[pageHeader:]
	recSize := 5 + 4
	if level > 0 {
		recSize += nodePtrSize
	}
	origin := func(i int) int { return pageZipStart + 5 + i*recSize }
	binary.BigEndian.PutUint16(h[pageHeapTop:], uint16(origin(len(keys))-5))
	binary.BigEndian.PutUint16(h[pageNHeap:], uint16(0x8000|(len(keys)+2)))
	binary.BigEndian.PutUint16(h[pageNRecs:], uint16(len(order)))
	binary.BigEndian.PutUint16(h[pageLevel:], uint16(level))
	binary.BigEndian.PutUint64(h[pageIndexID:], 42)
	stored := func(k int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(k)^0x80000000) }

	var stream bytes.Buffer
	w, err := zlib.NewWriterLevel(&stream, 6)
	if err != nil {
		t.Fatal(err)
	}
	// One merged NOT NULL field of 4 bytes; then DB_TRX_ID's place (0: none) on a leaf
	// page, the count of nullable fields on a non-leaf one.
	w.Write([]byte{4<<1 | 1, 0})
	w.Flush()
	for i := range inStream {
		w.Write(stored(keys[i]))
	}
	w.Close()
	at := copy(z[pageData:], stream.Bytes()) + pageData
	for i := inStream; i < len(keys); i++ {
		z[at] = byte((i + 1) << 1) // heap number i+2, less one, shifted
		at += 1 + copy(z[at+1:], stored(keys[i]))
	}
	// The directory: user records in key order, then the free list (none here).
	for s, i := range order {
		v := origin(i)
		if deleted[i] {
			v |= zipSlotDel
		}
		if s == len(order)-1 {
			v |= zipSlotOwned
		}
		binary.BigEndian.PutUint16(z[size-2*(s+1):], uint16(v))
	}
	for i, c := range children {
		binary.BigEndian.PutUint32(z[size-2*len(keys)-nodePtrSize*(i+1):], c)
	}
	return z
}

func TestZipPages(t *testing.T) {
	// Heap order is not key order; the last two records came after the compression.
	keys := []int32{30, -10, 20, 5, 40}
	order := []int{1, 3, 2, 0, 4} // -10, 5, 20, 30, 40
	for _, inStream := range []int{5, 3, 0} {
		zip := zipIntPage(t, keys, inStream, order, map[int]bool{2: true}, nil)
		p := make(Page, 4096)
		logged, err := inflatePage(zip, p)
		if err != nil {
			t.Fatalf("%d records in the stream: %v", inStream, err)
		}
		if logged != len(keys)-inStream {
			t.Errorf("%d records in the stream: the log gave back %d, want %d", inStream, logged, len(keys)-inStream)
		}
		recs, err := intLayout.Records(p)
		if err != nil {
			t.Fatalf("%d records in the stream: %v", inStream, err)
		}
		var got []int64
		for i, r := range recs {
			got = append(got, r.Key[0].I)
			if r.Deleted != (i == 2) {
				t.Errorf("record %d deleted %v", i, r.Deleted)
			}
		}
		if want := []int64{-10, 5, 20, 30, 40}; len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] || got[4] != want[4] {
			t.Errorf("%d records in the stream: keys %v, want %v", inStream, got, want)
		}
	}

	// Node pointers: the child pages come from the trailer, the first record of a level's
	// leftmost page is the smallest key.
	zip := zipIntPage(t, []int32{100, -3, 50}, 2, []int{1, 2, 0}, nil, []uint32{11, 12, 13})
	p := make(Page, 4096)
	if _, err := inflatePage(zip, p); err != nil {
		t.Fatal(err)
	}
	ptrs, err := intLayout.NodePointers(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(ptrs) != 3 || ptrs[0].Key[0].I != -3 || ptrs[0].Child != 12 || !ptrs[0].MinRec || ptrs[1].Key[0].I != 50 || ptrs[1].Child != 13 || ptrs[1].MinRec || ptrs[2].Key[0].I != 100 || ptrs[2].Child != 11 {
		t.Errorf("node pointers %+v", ptrs)
	}

	// A page the stream or the log does not describe is corruption, and no damage makes
	// the inflater panic.
	bad := append([]byte(nil), zip...)
	bad[pageData+3] ^= 0xff
	if _, err := inflatePage(bad, make(Page, 4096)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("damaged stream: %v", err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		d := append([]byte(nil), zip...)
		for range 1 + rng.IntN(4) {
			d[rng.IntN(len(d))] = byte(rng.Uint32())
		}
		p := make(Page, 4096)
		if _, err := inflatePage(d, p); err == nil {
			intLayout.Records(p)
		}
	}
}

func TestZipFields(t *testing.T) {
	// A clustered leaf page of (id INT NOT NULL, v VARCHAR(300) NULL, c CHAR(3) NULL):
	// id, then DB_TRX_ID and DB_ROLL_PTR merged (field 1), then v, then c, and DB_TRX_ID at 1.
	z, err := parseZipFields([]byte{4<<1 | 1, 13<<1 | 1, 126, 3 << 1, 1}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(z.fields) != 4 || z.trxCol != 1 || z.nullable != 2 || z.fields[1].fixed != 13 || !z.fields[2].big || !z.fields[2].nullable || z.fields[3].fixed != 3 {
		t.Errorf("fields %+v", z)
	}
	// A non-leaf page's count of nullable fields is the index's.
	z, err = parseZipFields([]byte{0, 9}, false, nil)
	if err != nil || z.nullable != 9 || !z.nodePtr || z.trxCol != -1 {
		t.Errorf("non-leaf fields %+v, %v", z, err)
	}
	// A fixed field longer than 62 bytes takes two bytes.
	z, err = parseZipFields([]byte{0x80 | (200<<1|1)>>8, (200<<1 | 1) & 0xff, 0}, true, nil)
	if err != nil || len(z.fields) != 1 || z.fields[0].fixed != 200 {
		t.Errorf("long fixed field %+v, %v", z, err)
	}
	if _, err := parseZipFields([]byte{9, 5}, true, nil); err == nil {
		t.Error("DB_TRX_ID past the fields")
	}

	for flags, want := range map[uint32]int{
		0:                0,     // 16 KiB pages, not compressed
		1 | 4<<1 | 1<<5:  8192,  // KEY_BLOCK_SIZE=8
		1 | 1<<1 | 1<<5:  1024,  // KEY_BLOCK_SIZE=1
		1 | 5<<1 | 1<<5:  16384, // KEY_BLOCK_SIZE=16
		1<<4 | 5:         0,     // MariaDB full_crc32, 16 KiB
		1<<4 | 3 | 1<<16: 0,     // full_crc32 with page_compressed (not ROW_FORMAT=COMPRESSED)
	} {
		if got := zipSizeOf(flags); got != want {
			t.Errorf("FSP flags %#x: compressed pages of %d bytes, want %d", flags, got, want)
		}
	}
}

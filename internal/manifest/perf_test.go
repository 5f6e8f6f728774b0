package manifest

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
	"unsafe"
)

// poolProducer writes n pages the way a snapshot would: in LRU order, the last 3/8 old
// (innodb_old_blocks_pct=37), spread over objects of very different sizes.
func poolProducer(n int) func(*Writer) error {
	return func(w *Writer) error {
		rng := rand.New(rand.NewPCG(1, 2))
		objects := make([]Object, 300)
		for i := range objects {
			objects[i] = Object{SpaceID: uint32(i + 10), PageType: "INDEX", Schema: fmt.Sprintf("app_%d", i%7),
				Table: fmt.Sprintf("table_%d", i/3), Index: []string{"PRIMARY", "idx_created_at", "idx_user_id"}[i%3]}
			if i%25 == 0 {
				objects[i].PageType, objects[i].Index = "BLOB", ""
			}
		}
		oldFrom := n - n*3/8
		for i := range n {
			// Zipf-like: a few big objects hold most pages.
			o := objects[int(float64(len(objects))*rng.Float64()*rng.Float64())]
			if err := w.Page(o, rng.Uint32N(4_000_000), uint32(i), i >= oldFrom); err != nil {
				return err
			}
		}
		return nil
	}
}

// heapAllocated is the bytes allocated so far (cumulative).
func heapAllocated() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// TestMillionEntries measures writing and reading a 1M-page manifest (a 16 GiB pool of
// 16 KiB pages), plain and gzip, and holds reading to a bounded allocation per entry and
// streaming verification to memory that does not grow with the file.
func TestMillionEntries(t *testing.T) {
	n := 1_000_000
	if raceEnabled || testing.Short() {
		n = 100_000
	}
	dir := t.TempDir()
	for _, name := range []string{"pool.manifest", "pool.manifest.gz"} {
		path := filepath.Join(dir, name)
		start := time.Now()
		// The header says a pool of n pages, as a real capture's does: the reader sizes its
		// entry list from it.
		hdr := testHeader()
		hdr.PoolPages, hdr.PoolBytes = int64(n), int64(n)*int64(hdr.PageSize)
		h, err := WriteFileAtomic(path, hdr, WriteOptions{}, poolProducer(n))
		if err != nil {
			t.Fatal(err)
		}
		writeTime := time.Since(start)
		st, _ := os.Stat(path)

		runtime.GC()
		allocBefore := heapAllocated()
		start = time.Now()
		s, err := Verify(path)
		if err != nil {
			t.Fatal(err)
		}
		verifyTime := time.Since(start)
		verifyAlloc := heapAllocated() - allocBefore

		runtime.GC()
		allocBefore = heapAllocated()
		start = time.Now()
		m, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		loadTime := time.Since(start)
		loadAlloc := heapAllocated() - allocBefore

		if len(m.Entries) != n || s.Header.Entries != int64(n) || s.Stats().Pages != int64(n) || m.Header.SHA256 != h.SHA256 {
			t.Fatalf("%s: read %d entries (summary %d), wrote %d", name, len(m.Entries), s.Header.Entries, n)
		}
		if last := m.Entries[n-1]; last.LRU != uint32(n-1) || !last.Old {
			t.Errorf("%s: last entry %+v", name, last)
		}
		t.Logf("%s: %d entries, %.1f MB (%.1f bytes/entry); write %v, verify %v (%.1f MB allocated), load %v",
			name, n, float64(st.Size())/1e6, float64(st.Size())/float64(n), writeTime.Round(time.Millisecond),
			verifyTime.Round(time.Millisecond), float64(verifyAlloc)/1e6, loadTime.Round(time.Millisecond))

		// Streaming verification allocates per object and per buffer, never per page.
		if verifyAlloc > 2<<20 {
			t.Errorf("%s: Verify allocated %.1f MB for %d entries; it must not grow with the entry count", name, float64(verifyAlloc)/1e6, n)
		}
		// Reading must cost a bounded number of bytes per entry: the entries themselves (a
		// slice sized from the header's pool) and nothing per line beyond them. A bound on bytes holds
		// on a busy machine, where a bound on seconds (it read 1M entries in 0.15 s idle) did not.
		perEntry := float64(loadAlloc) / float64(n)
		if limit := 2*float64(unsafe.Sizeof(Entry{})) + 8; perEntry > limit {
			t.Errorf("%s: Load allocated %.0f bytes per entry (an Entry is %d bytes), want at most %.0f: something is allocated or copied per line", name, perEntry, unsafe.Sizeof(Entry{}), limit)
		}
		if n < 1_000_000 {
			continue
		}
		if st.Size() > 25<<20 {
			t.Errorf("%s: %d bytes for 1M entries", name, st.Size())
		}
	}
}

func TestNextDoesNotAllocate(t *testing.T) {
	var b bytes.Buffer
	w, err := NewWriter(&b, testHeader())
	if err != nil {
		t.Fatal(err)
	}
	if err := poolProducer(200_000)(w); err != nil {
		t.Fatal(err)
	}
	w.Finish()
	r, err := NewReader(bytes.NewReader(b.Bytes()), "alloc")
	if err != nil {
		t.Fatal(err)
	}
	// Take in every object definition first: those allocate, once per object.
	for range 10_000 {
		r.Next()
	}
	if allocs := testing.AllocsPerRun(50_000, func() {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("Next allocates %.2f times per entry, want 0", allocs)
	}
}

func BenchmarkWrite(b *testing.B) {
	const n = 100_000
	for b.Loop() {
		w, _ := NewWriter(io.Discard, testHeader())
		if err := poolProducer(n)(w); err != nil {
			b.Fatal(err)
		}
		w.Finish()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
}

func BenchmarkRead(b *testing.B) {
	const n = 100_000
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, testHeader())
	poolProducer(n)(w)
	w.Finish()
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(data), "bench")
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := r.Next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
}

package warm

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/snapshot"
	"github.com/innowarm/innowarm/internal/sqltext"
	"golang.org/x/sys/unix"
)

// TestSampleEntriesSpread: the pages sampled to tell a page-for-page copy are spread over
// the whole index in page order, the last page and the index's rightmost in key order
// included; an index of few keyed pages has each one read; hot pages close together in a
// large file still give a full sample. Before, the sample was the 8 hottest pages, which
// said nothing of an index's other parts.
func TestSampleEntriesSpread(t *testing.T) {
	m := &manifest.Manifest{}
	r := &Resolved{m: m}
	rng := rand.New(rand.NewSource(1))
	add := func(target uint32, pages []uint32, rightmost uint32) {
		for _, p := range pages {
			rg := manifest.Range{Low: strconv.Itoa(int(p)), High: manifest.PageBound(p + 1)}
			if p == rightmost {
				rg.High = manifest.OpenBound
			}
			m.Ranges = append(m.Ranges, rg)
			r.keyed = append(r.keyed, keyedEntry{target: target, page: p, rng: uint32(len(m.Ranges))})
		}
	}
	// 0: 10,000 pages 1,000-10,999, its rightmost in key order page 5,000 (an index grown in
	// random order); 1: 20 pages; 2: 3,000 pages in two clusters far apart (a hot set in two
	// extents of a large file), and its leftmost page (an open low bound).
	var big, clustered []uint32
	for p := uint32(1000); p < 11000; p++ {
		big = append(big, p)
	}
	for p := uint32(0); p < 1500; p++ {
		clustered = append(clustered, 50+p, 1_000_000+p)
	}
	add(0, big, 5000)
	add(1, []uint32{7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31, 33, 35, 37, 39, 41, 43, 45}, 45)
	add(2, clustered, 0)
	m.Ranges[len(big)+20].Low = manifest.OpenBound // target 2's first page: the leftmost
	rng.Shuffle(len(r.keyed), func(i, j int) { r.keyed[i], r.keyed[j] = r.keyed[j], r.keyed[i] })
	got := r.sampleEntries([]uint32{0, 1, 2})
	check := func(id uint32, want int, last uint32, maxGap uint32, must ...uint32) {
		t.Helper()
		s := got[id]
		if len(s) < want || len(s) > want+4 {
			t.Errorf("target %d: %d samples, want %d", id, len(s), want)
		}
		has := map[uint32]bool{}
		for i, e := range s {
			has[e.page] = true
			if i > 0 && s[i-1].page >= e.page {
				t.Errorf("target %d: samples not in page order: %d then %d", id, s[i-1].page, e.page)
			}
			if i > 0 && maxGap > 0 && e.page-s[i-1].page > maxGap {
				t.Errorf("target %d: pages %d to %d unsampled (at most %d apart wanted)", id, s[i-1].page, e.page, maxGap)
			}
		}
		for _, p := range append(must, last) {
			if !has[p] {
				t.Errorf("target %d: page %d not sampled", id, p)
			}
		}
	}
	check(0, physicalSampleMax, 10999, 2*10000/physicalSampleMax, 5000)
	check(1, 20, 45, 0, 7)
	check(2, physicalSampleMax, 1_001_499, 0)
	for keyed, want := range map[int]int{1: 1, 20: 20, 32: 32, 33: 32, 1000: 62, 3000: 128, 33_000_000: 128} {
		if n := physicalSampleSize(keyed); n != want {
			t.Errorf("physicalSampleSize(%d) = %d, want %d", keyed, n, want)
		}
	}

	// The cost of choosing the samples: two passes over the keyed entries (three where hot
	// pages cluster), nothing per entry kept.
	r = &Resolved{m: m}
	var ids []uint32
	for id := range uint32(1000) {
		ids = append(ids, id)
	}
	const n = 2_000_000
	r.keyed = make([]keyedEntry, n)
	for i := range r.keyed {
		r.keyed[i] = keyedEntry{target: uint32(rng.Intn(1000)), page: uint32(rng.Intn(1 << 20)), rng: uint32(1 + rng.Intn(len(m.Ranges)))}
	}
	t0 := time.Now()
	out := r.sampleEntries(ids)
	d := time.Since(t0)
	total := 0
	for _, s := range out {
		total += len(s)
	}
	// The 8 hottest of each, as the sample was chosen before: one pass, a map look-up an entry.
	t0 = time.Now()
	hottest := map[uint32][]keyedEntry{}
	for _, e := range r.keyed {
		if len(hottest[e.target]) < 8 {
			hottest[e.target] = append(hottest[e.target], e)
		}
	}
	t.Logf("before: the 8 hottest of each in %v", time.Since(t0))
	t.Logf("sampleEntries: %d keyed entries of %d indexes: %d samples in %v (%.1f ns an entry)", n, len(ids), total, d, float64(d.Nanoseconds())/n)
}

// TestMeasurePhysicalSample measures what reading the sample costs: a table of
// INNOWARM_MEASURE_SAMPLE rows (PRIMARY KEY and a secondary index) read whole, snapshot,
// and the sampling of its two indexes on the same server (every sampled page matches, the
// most a sample reads), timed. Not part of the suite.
func TestMeasurePhysicalSample(t *testing.T) {
	rows, _ := strconv.Atoi(os.Getenv("INNOWARM_MEASURE_SAMPLE"))
	if rows <= 0 {
		t.Skip("INNOWARM_MEASURE_SAMPLE=ROWS measures the page-for-page sample's cost")
	}
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	db := sandboxtest.Schema(t)
	tbl := sqltext.Table(db, "s")
	sandboxtest.Exec(t,
		"CREATE TABLE "+tbl+" (id INT NOT NULL PRIMARY KEY, k INT NOT NULL, pad CHAR(200) CHARACTER SET latin1 NOT NULL DEFAULT '', KEY kk (k))",
		fmt.Sprintf("INSERT INTO %s (id, k) SELECT seq, (seq * 7919) %% %d FROM %s ORDER BY seq", tbl, rows, conn.Server.Series(db, 1, int64(rows))),
		"ANALYZE TABLE "+tbl, "FLUSH TABLES "+tbl+" FOR EXPORT", "UNLOCK TABLES",
		"SELECT COUNT(*) FROM "+tbl+" FORCE INDEX (PRIMARY) WHERE pad = 'x'",
		"SELECT COUNT(*) FROM "+tbl+" FORCE INDEX (kk) WHERE k >= 0")
	path := filepath.Join(sandboxtest.Dir(t), "sample.manifest")
	if _, err := snapshot.Capture(ctx, conn, snapshot.Options{Path: path, ToolVersion: "test", Filter: catalog.Filter{Schemas: []string{db}}}); err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Resolve(ctx, conn, m)
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint32
	for id, k := range r.targets {
		if k.Kind == KindIndex {
			ids = append(ids, uint32(id))
		}
	}
	file := filepath.Join(sandboxtest.Server(t).Datadir, db, "s.ibd")
	for round := range 4 {
		cache := "in the page cache"
		if round >= 2 {
			// Out of the OS page cache (the file's pages only): reads from the disk, as on a
			// server with O_DIRECT after a restart.
			cache = "dropped from the page cache"
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			err = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
		}
		t0 := time.Now()
		v := r.samplePhysical(ctx, conn, ids)
		d := time.Since(t0)
		for _, id := range ids {
			t.Logf("round %d: %s: %d of %d sampled pages match", round, r.targets[id].Index, v[id].same, v[id].sampled)
		}
		t.Logf("round %d: %s, %d keyed entries: samplePhysical %v (key dictionary included), the file %s", round, conn.Server, len(r.keyed), d, cache)
	}
}

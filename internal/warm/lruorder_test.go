package warm_test

import (
	"context"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// A manifest loaded into a pool it nearly fills, with no traffic (what follow does to a
// standby), leaves its coldest pages to be evicted first: the load goes coldest tier first
// with the old sublist raised, so the server's own list ends in the manifest's order. A
// load by page number, or tiers with the old sublist at its default 37%, would put pages
// of every tier at the list's tail (docs/experiments.md, "What a load leaves in the LRU
// list"). The manifest's hotness is shuffled so that it says nothing of page numbers.
func TestTightLoadEvictsColdestFirst(t *testing.T) {
	ctx := context.Background()
	// A page cleaner that keeps few pages free: the load fills the pool (tight).
	sb := sandboxtest.SecondServer(t, 128<<20, "--innodb-lru-scan-depth=128") // 8,192 pages
	conn, err := sb.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { conn.Close() }()
	srv := conn.Server
	execAll(t, conn,
		"CREATE DATABASE lo",
		// latin1: the same rows per page on every flavor; about 8,500 pages, more than the pool.
		"CREATE TABLE lo.t (id INT PRIMARY KEY, pad CHAR(200) CHARACTER SET latin1)",
		"INSERT INTO lo.t SELECT seq, REPEAT('o', 200) FROM "+srv.Series("lo", 1, 600000)+" ORDER BY seq",
	)
	cold := coldRestartOf(t, sb, &conn)
	sock := []string{"--no-defaults", "-S", sb.Socket, "-u", "root"}
	cold()
	if _, err := conn.DB.ExecContext(ctx, "SELECT SUM(LENGTH(pad)) FROM lo.t"); err != nil {
		t.Fatal(err)
	}
	dir := sandboxtest.Dir(t)
	captured := filepath.Join(dir, "scan.manifest")
	if r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"snapshot", "-D", "lo", "-o", captured, "--observe", "0"}, sock...)...); r.Code != 0 {
		t.Fatalf("snapshot: %s", r.Stderr)
	}
	m, err := manifest.Load(captured)
	if err != nil {
		t.Fatal(err)
	}
	// Hotness unrelated to page numbers: a fixed shuffle, hottest first.
	rand.New(rand.NewSource(7)).Shuffle(len(m.Entries), func(i, j int) { m.Entries[i], m.Entries[j] = m.Entries[j], m.Entries[i] })
	rank := map[uint32]int{}
	for i := range m.Entries {
		e := &m.Entries[i]
		e.LRU, e.Old, e.Score, e.Seen, e.Last = uint32(i), false, 0, 1, 0
		rank[e.Page] = i
	}
	shuffled := filepath.Join(dir, "shuffled.manifest")
	f, err := os.Create(shuffled)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := manifest.Write(f, m); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	cold()
	r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"warm", "--from", shuffled, "--method", "native"}, sock...)...)
	if r.Code != 0 {
		t.Fatalf("warm --from: exit %d: %s", r.Code, r.Stderr)
	}
	if !strings.Contains(r.Stdout+r.Stderr, "coldest first") {
		t.Fatalf("the load did not go coldest first (%d manifest pages):\n%s%s", len(m.Entries), r.Stdout, r.Stderr)
	}
	// The table's pages in eviction order: LRU_POSITION 0 is the list's tail.
	rows, err := conn.DB.QueryContext(ctx, "SELECT PAGE_NUMBER FROM information_schema.INNODB_BUFFER_PAGE_LRU WHERE TABLE_NAME = '`lo`.`t`' AND INDEX_NAME = 'PRIMARY' ORDER BY LRU_POSITION")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var evicted []int // the manifest ranks of the resident pages, first evicted first
	for rows.Next() {
		var page uint32
		if err := rows.Scan(&page); err != nil {
			t.Fatal(err)
		}
		if r, ok := rank[page]; ok {
			evicted = append(evicted, r)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	n := len(m.Entries)
	if len(evicted) < n*3/4 {
		t.Fatalf("%d of %d manifest pages resident after the warm", len(evicted), n)
	}
	// Of the pages the first quarter of evictions takes, and of each hotness quarter's
	// resident pages, how many are among them.
	quarter := func(r int) int { return r * 4 / n }
	inQuarter := make([]int, 4)
	for _, r := range evicted {
		inQuarter[quarter(r)]++
	}
	first := make([]int, 4)
	for _, r := range evicted[:len(evicted)/4] {
		first[quarter(r)]++
	}
	share := func(q int) float64 { return float64(first[q]) / float64(max(inQuarter[q], 1)) }
	t.Logf("%d manifest pages, %d resident; the first quarter of evictions takes %.0f%%, %.0f%%, %.0f%%, %.0f%% of the hotness quarters (hottest first)",
		n, len(evicted), 100*share(0), 100*share(1), 100*share(2), 100*share(3))
	// InnoDB keeps 5% of every tier in the young sublist's head (the raised old sublist's
	// complement), so the coldest quarter is not all first; the hottest must be nearly absent.
	if share(3) < 0.8 || share(0) > 0.05 {
		t.Errorf("the first quarter of evictions takes %.0f%% of the coldest quarter (want 80%%+) and %.0f%% of the hottest (want 5%% or less)", 100*share(3), 100*share(0))
	}
}

package warm_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/warm"
)

// TestWarmByKeyServerGrownSinceItsSnapshot: the manifest's own server, restarted after its
// tables grew by inserts between the snapshot's keys. Every leaf then split: each keeps its
// first key, so a sample of first keys alone said page-for-page, and the page numbers
// warmed only the lower half of each hot range (a user's run: 109 pages missed, against
// 22 by the tree). Each sampled page's right neighbour now has to be where the manifest's
// high bound says, so auto takes the tree, and the warmed pass misses at most the hot
// pass's misses plus a tenth of the cold pass's; by page number it misses more (the test
// tells the paths apart).
func TestWarmByKeyServerGrownSinceItsSnapshot(t *testing.T) {
	const rows, step = 20000, 601 // keys 4, 8, ...; step odd: hot keys at every remainder
	conn := sandboxtest.Conn(t)
	ctx := context.Background()
	db := sandboxtest.Schema(t)
	tbl := sqltext.Table(db, "t")
	exec := func(stmts ...string) {
		t.Helper()
		for _, q := range stmts {
			if _, err := conn.DB.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	// Every fourth key first; two of the three between arrive after the snapshot, each
	// after a key of the page it lands in: no page's first key changes.
	exec("CREATE TABLE "+tbl+" (id INT NOT NULL, k INT NOT NULL, pad CHAR(200) CHARACTER SET latin1 NOT NULL DEFAULT '', PRIMARY KEY (id), KEY kk (k)) STATS_AUTO_RECALC=0",
		fmt.Sprintf("INSERT INTO %s (id, k) SELECT 4 * seq, 4 * seq FROM %s ORDER BY seq", tbl, conn.Server.Series(db, 1, rows)),
		"ANALYZE TABLE "+tbl,
		"FLUSH TABLES "+tbl+" FOR EXPORT", "UNLOCK TABLES")
	hotKeys := inList(step, 4*rows, step) // one every few pages
	hot := func() {
		t.Helper()
		exec(fmt.Sprintf("SELECT SUM(LENGTH(pad)) FROM %s FORCE INDEX (PRIMARY) WHERE id IN (%s)", tbl, hotKeys),
			fmt.Sprintf("SELECT COUNT(*) FROM %s FORCE INDEX (kk) WHERE k IN (%s)", tbl, hotKeys))
	}
	measure := func() int64 {
		t.Helper()
		before := poolReads(t, conn)
		hot()
		return poolReads(t, conn) - before
	}
	cold := coldRestarter(t)
	conn = cold()
	hot()
	m, _ := mostlyKeyedSnapshot(t, conn, db, "grown.manifest")

	// In key order: every leaf of both indexes splits, twice. A key just below a page's
	// first key can land on that page, which a check of first keys alone sees; the rows
	// grown here keep clear of the manifest's pages' first keys, so only the splits tell.
	var below []string
	for _, rg := range m.Ranges {
		first, _, _ := strings.Cut(rg.Low, ",")
		if low, err := strconv.Atoi(first); err == nil {
			below = append(below, strconv.Itoa(low/4-1))
		}
	}
	if len(below) < 32 {
		t.Fatalf("the manifest has %d pages with a low key, too few to sample", len(below))
	}
	for _, plus := range []int{1, 2} {
		exec(fmt.Sprintf("INSERT INTO %s (id, k) SELECT 4 * seq + %d, 4 * seq + %d FROM %s WHERE seq NOT IN (%s) ORDER BY seq",
			tbl, plus, plus, conn.Server.Series(db, 1, rows), strings.Join(below, ",")))
	}
	conn = cold()
	coldMisses := measure()
	hotMisses := measure()

	out := warmByKey(t, conn, m, warm.ByKeyAuto, true)
	for _, ix := range []string{"PRIMARY", "kk"} {
		ip, ok := indexPaths(out)[ix]
		t.Logf("%s: path %s, %d keyed pages: %s", ix, ip.Path, ip.KeyedPages, ip.Reason)
		if !ok || ip.Path != warm.PathTree || !strings.Contains(ip.Reason, "not a page-for-page copy: only ") {
			t.Errorf("%s on its own server grown since the snapshot: path %s (%s), want tree", ix, ip.Path, ip.Reason)
		}
	}
	bound := hotMisses + coldMisses/10
	conn = cold()
	warmByKey(t, conn, m, warm.ByKeyAuto, false)
	auto := measure()
	conn = cold()
	warmByKey(t, conn, m, warm.ByKeyPages, false)
	byNumber := measure()
	conn = cold()
	warmByKey(t, conn, m, warm.ByKeySQL, false)
	bySQL := measure()
	t.Logf("%s: manifest %d pages; misses: cold %d, hot %d, after warm auto %d, sql %d, by page number %d (bound %d)",
		conn.Server, m.Header.Entries, coldMisses, hotMisses, auto, bySQL, byNumber, bound)
	if auto > bound {
		t.Errorf("after warm --by-key auto the pass missed %d pages, more than %d (hot %d + a tenth of cold %d)", auto, bound, hotMisses, coldMisses)
	}
	if bySQL > bound {
		t.Errorf("after warm --by-key sql the pass missed %d pages, more than %d (hot %d + a tenth of cold %d)", bySQL, bound, hotMisses, coldMisses)
	}
	if byNumber <= bound {
		t.Errorf("by page number the pass missed %d pages, within the bound %d: the inserts did not move enough hot rows to tell the paths apart", byNumber, bound)
	}
}

package warm_test

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/warm"
)

// TestWarmOwnTablespaceChangedSinceItsSnapshot: the manifest's own server, restarted, its
// tables' tablespaces the same (not rebuilt), but some of the sampled pages no longer hold
// the manifest's key range: a busy server's snapshot reads the key ranges of its dirty
// pages from the files' older images, and pages change after it. A snapshot taken right
// after a bulk load had 14 of 32 sampled pages of an index off, and the same server was
// told "not a page-for-page copy": an index of string keys (whose keys do not compare in
// Go) was read again by range scans. Here the last fifth of each index's pages (in page
// order) lose their first row after the snapshot (a page's left neighbour's range then
// ends elsewhere too): the integer primary key still takes the tree (it finds ranges that
// moved), and says this is the manifest's own tablespace; the index of strings takes its
// page numbers, loaded natively.
//
// The pages changed are the last fifth, not a share chosen at random: the sample is spread
// evenly over the index in page order, the last page included, so its last fifth holds
// about 6 of its 32 pages, every time (at least 2 and at most half are asked for). A tenth chosen by a hash of the page number
// put 1 to 6 of them in the sample, by the layout of the run; with 1, the page numbers are
// (rightly) taken as they are, as one page changed since the snapshot (a CI run on MySQL
// 9.7 did so: 31 of 32).
func TestWarmOwnTablespaceChangedSinceItsSnapshot(t *testing.T) {
	const rows = 20000
	conn := sandboxtest.Conn(t)
	db := sandboxtest.Schema(t)
	tbl := sqltext.Table(db, "own")
	sandboxtest.Exec(t,
		"CREATE TABLE "+tbl+" (id INT NOT NULL PRIMARY KEY, s VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL, "+
			"pad CHAR(200) CHARACTER SET latin1 NOT NULL DEFAULT '', KEY ks (s)) STATS_AUTO_RECALC=0",
		fmt.Sprintf("INSERT INTO %s (id, s) SELECT seq, CONCAT('s', LPAD((seq * 7919) %% 20011, 36, '0')) FROM %s ORDER BY seq", tbl, conn.Server.Series(db, 1, rows)),
		"ANALYZE TABLE "+tbl,
		"FLUSH TABLES "+tbl+" FOR EXPORT", "UNLOCK TABLES",
		"SELECT SUM(LENGTH(pad)) FROM "+tbl+" FORCE INDEX (PRIMARY) WHERE id > 0",
		"SELECT COUNT(*) FROM "+tbl+" FORCE INDEX (ks) WHERE s > ''")
	m, _ := mostlyKeyedSnapshot(t, conn, db, "own.manifest")

	// The row each keyed page starts with (its primary key: the last field of a low key
	// of either index), for the last fifth of each index's keyed pages in page order.
	keyedOwn := map[string][]manifest.Entry{}
	for _, e := range m.Entries {
		o := m.Objects[e.Object]
		if rg := m.RangeOf(e); o.Table == "own" && o.Index != "" && rg.Low != "" && rg.Low != manifest.OpenBound {
			keyedOwn[o.Index] = append(keyedOwn[o.Index], e)
		}
	}
	var firstRows []string
	pages, changed := map[string]int{}, map[string]int{}
	for ix, es := range keyedOwn {
		slices.SortFunc(es, func(a, b manifest.Entry) int { return cmp.Compare(a.Page, b.Page) })
		pages[ix] = len(es)
		for _, e := range es[len(es)*4/5:] {
			fields := strings.Split(m.RangeOf(e).Low, ",")
			if id, err := strconv.Atoi(fields[len(fields)-1]); err == nil {
				firstRows = append(firstRows, strconv.Itoa(id))
				changed[ix]++
			}
		}
	}
	t.Logf("keyed pages %v, of which changed (their first row deleted) %v", pages, changed)
	if pages["PRIMARY"] < 100 || pages["ks"] < 60 || len(firstRows) < 8 {
		t.Fatalf("the manifest has %v keyed pages, %d first rows chosen: too few", pages, len(firstRows))
	}
	sandboxtest.Exec(t, fmt.Sprintf("DELETE FROM %s WHERE id IN (%s)", tbl, strings.Join(firstRows, ",")))
	sandboxtest.WaitForPurge(t, conn)
	conn = coldRestarter(t)()

	out := warmByKey(t, conn, m, warm.ByKeyAuto, true)
	paths := indexPaths(out)
	for ix, want := range map[string]string{"PRIMARY": warm.PathTree, "ks": warm.PathPages} {
		ip := paths[ix]
		t.Logf("%s: %s: %s", ix, ip.Path, ip.Reason)
		if ip.Path != want || !strings.Contains(ip.Reason, "this is its tablespace") {
			t.Errorf("%s: path %s (%s), want %s, as the manifest's own tablespace", ix, ip.Path, ip.Reason, want)
		}
	}
}

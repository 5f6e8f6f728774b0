package warm_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/snapshot"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/warm"
)

// TestTreePathBudgetKeepsARunsHotEnd: a scanned table's manifest is one run of key ranges,
// hotter toward the end the scan read last. On a logical copy whose pages hold fewer rows,
// a budget that holds part of that run's leaves must take its hot end, and fill the budget
// without passing it, by either key path:
// with every leaf ranked as the run's hottest page, in key order, the tree path's budget
// went to the low end, the coldest, and the copy read the hot end from disk; the sql path
// read its part of the run from the run's low key.
func TestTreePathBudgetKeepsARunsHotEnd(t *testing.T) {
	budgetKeepsARunsHotEnd(t, []string{warm.PathTree, warm.PathSQL}, false)
}

// TestSQLPathBudgetWithoutStatistics: a copy whose statistics the server has not
// recalculated since it was filled (STATS_AUTO_RECALC=0 here; a table loaded and restarted
// before the server's background recalculation, elsewhere) gives the sql path no rows a
// page to cut the budget's statements by. The budget's watch alone then held the run,
// its margin short: a 174-page budget stopped at 159 pages on MariaDB 10.11 beside a busy
// machine. The ledger's steps measure the rows a page themselves.
func TestSQLPathBudgetWithoutStatistics(t *testing.T) {
	budgetKeepsARunsHotEnd(t, []string{warm.PathSQL}, true)
}

// budgetKeepsARunsHotEnd warms a logical copy of a scanned table within half its
// manifest's pages by each of paths; staleStats copies it with statistics that count no
// rows.
func budgetKeepsARunsHotEnd(t *testing.T, paths []string, staleStats bool) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	srv := conn.Server
	db := sandboxtest.Schema(t)
	tbl := sqltext.Table(db, "scanned")
	// About 370 pages; the hot end is the last eighth of the keys.
	const rows, hotFrom = 25000, 22000
	sandboxtest.Exec(t,
		"CREATE TABLE "+tbl+" (id INT PRIMARY KEY, pad CHAR(200) CHARACTER SET latin1 NOT NULL DEFAULT '')",
		"INSERT INTO "+tbl+" (id) SELECT seq FROM "+srv.Series(db, 1, rows)+" ORDER BY seq",
		"FLUSH TABLES "+tbl+" FOR EXPORT", "UNLOCK TABLES")
	if _, err := sandboxtest.Server(t).ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	conn = sandboxtest.Reconnect(t)
	sandboxtest.Exec(t, "SELECT SUM(LENGTH(pad)) FROM "+tbl)
	path := filepath.Join(sandboxtest.Dir(t), "scanned.manifest")
	if _, err := snapshot.Capture(ctx, conn, snapshot.Options{Path: path, ToolVersion: "test", Filter: catalog.Filter{Schemas: []string{db}}}); err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	// The scan's order made plain, whatever the flavor's LRU list did with it (an old
	// sublist formed part way, a dump's order): the later a page's keys, the hotter.
	var pages int
	for i, e := range m.Entries {
		o := m.Objects[e.Object]
		if o.Table != "scanned" || o.Index != "PRIMARY" || e.Range == 0 {
			continue
		}
		pages++
		low := 0
		if tok := m.Ranges[e.Range-1].Low; tok != manifest.OpenBound {
			if low, err = strconv.Atoi(tok); err != nil {
				t.Fatalf("page %d's low key %q", e.Page, tok)
			}
		}
		m.Entries[i].LRU, m.Entries[i].Old, m.Entries[i].Score = uint32(rows-low), false, 0
	}
	if staleStats {
		conn = copyWithoutStatistics(t, db, "scanned", 11)
	} else {
		conn = copyInRandomOrder(t, db, "scanned", 11)
	}
	// Room for half the manifest's pages: a quarter or so of the copy's leaves for them,
	// more than its hot end's.
	budgetPages := pages / 2
	if staleStats && !srv.IsMariaDB() {
		// MySQL's optimizer, told the table is empty, would read a range from the index's
		// start (EXPLAIN type index), not the range: the warm skips the index and says
		// why, rather than read the index's first rows.
		b, err := warm.ParseBudget(fmt.Sprintf("%d", int64(budgetPages)*int64(conn.Server.PageSize)))
		if err != nil {
			t.Fatal(err)
		}
		req := warm.Request{Manifest: m, Method: warm.MethodNative, Run: quiet(), Plan: warm.Options{Order: "small-first", Budget: b, ByKey: warm.ByKeySQL, SplitPages: warm.DefaultSplitPages}}
		if err := req.Validate(); err != nil {
			t.Fatal(err)
		}
		out, err := warm.Execute(ctx, conn, req, func(string, string) {})
		said := fmt.Sprint(err)
		if out != nil && out.Result != nil {
			said += fmt.Sprintf(" %+v", out.Result.Skipped)
			if out.Result.PagesLoaded > 2 {
				t.Errorf("%s: loaded %d pages by key with statistics that count no rows", srv, out.Result.PagesLoaded)
			}
		}
		if !strings.Contains(said, "stale: ANALYZE TABLE recalculates them") {
			t.Errorf("%s: want PRIMARY skipped for its stale statistics: %s", srv, said)
		}
		return
	}
	for i, path := range paths {
		if i > 0 {
			if _, err := sandboxtest.Server(t).ColdRestart(ctx); err != nil {
				t.Fatal(err)
			}
			conn = sandboxtest.Reconnect(t)
		}
		byKey := warm.ByKeyAuto // the tree path, on the database host
		if path == warm.PathSQL {
			byKey = warm.ByKeySQL
		}
		out := warmWithinBy(t, conn, m, budgetPages, byKey)
		for _, ip := range out.Manifest.Paths {
			if ip.Table == "scanned" && ip.Index == "PRIMARY" && ip.Path != path {
				t.Fatalf("the copy's PRIMARY took path %q (%s), want %s", ip.Path, ip.Reason, path)
			}
		}
		if out.Result.PagesLoaded < int64(budgetPages)/2 {
			t.Logf("%s path: notes %q; left out %+v; errors %q; units %d done %d; paths %+v", path, out.Result.Notes, out.Result.LeftOut, out.Result.Errors, out.Result.Units, out.Result.UnitsDone, out.Manifest.Paths)
		}
		// Pages read from disk by a range of rows: the scan's last eighth (the hottest),
		// then its first (the coldest).
		read := func(where string) int64 {
			before, err := bufferpool.ReadTotals(ctx, conn)
			if err != nil {
				t.Fatal(err)
			}
			sandboxtest.Exec(t, "SELECT SUM(LENGTH(pad)) FROM "+tbl+" WHERE "+where)
			after, err := bufferpool.ReadTotals(ctx, conn)
			if err != nil {
				t.Fatal(err)
			}
			return after.DiskReads + after.ReadAhead - before.DiskReads - before.ReadAhead
		}
		hotEnd, coldEnd := read(fmt.Sprintf("id > %d", hotFrom)), read(fmt.Sprintf("id <= %d", rows-hotFrom))
		t.Logf("%s, %s path: manifest %d pages of one scan; budget %d pages; loaded %d, the server read %d (%s); then the hot end read %d pages from disk, the cold end %d", srv, path, pages, budgetPages, out.Result.PagesLoaded, out.Result.PagesRead, out.Result.Stopped, hotEnd, coldEnd)
		if hotEnd*4 > coldEnd {
			t.Errorf("%s path: the scan's hot end read %d pages from disk after the warm, its cold end %d: the budget went to the cold end", path, hotEnd, coldEnd)
		}
		// The budget filled: the watch killed the sql path's statement a margin short, 142-171
		// pages of 185 on MariaDB, 167 on MySQL 9.7 beside a CI run. Not far past it either:
		// the ledger's steps hold it, but one run of four with two busy loops beside it
		// loaded 209 on MariaDB 10.11 (its cause not found yet), so the bound above is a
		// fifth (the statistics' row limits read 197-213 on MySQL before).
		if under, over := int64(budgetPages/20), int64(budgetPages/5); out.Result.PagesLoaded > int64(budgetPages)+over || out.Result.PagesLoaded < int64(budgetPages)-under {
			t.Errorf("%s path: loaded %d pages, the server read %d, in a budget of %d (%s), want %d-%d", path, out.Result.PagesLoaded, out.Result.PagesRead, budgetPages, out.Result.Stopped, int64(budgetPages)-under, int64(budgetPages)+over)
		}
	}
}

// copyWithoutStatistics is copyInRandomOrder with the copy's statistics as the server
// found it empty: not recalculated (STATS_AUTO_RECALC=0), not analyzed. It fails the test
// where the server still counts the copy's rows.
func copyWithoutStatistics(t *testing.T, db, table string, seed int) *connection.Conn {
	t.Helper()
	tbl, cp := sqltext.Table(db, table), sqltext.Table(db, table+"_copy")
	sandboxtest.Exec(t,
		"CREATE TABLE "+cp+" LIKE "+tbl,
		"ALTER TABLE "+cp+" STATS_PERSISTENT=1 STATS_AUTO_RECALC=0",
		fmt.Sprintf("INSERT INTO %s SELECT * FROM %s ORDER BY RAND(%d)", cp, tbl, seed),
		"DROP TABLE "+tbl,
		"RENAME TABLE "+cp+" TO "+tbl,
		"FLUSH TABLES "+tbl+" FOR EXPORT", "UNLOCK TABLES")
	if _, err := sandboxtest.Server(t).ColdRestart(context.Background()); err != nil {
		t.Fatal(err)
	}
	conn := sandboxtest.Reconnect(t)
	var rows int64
	if err := conn.DB.QueryRow("SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", db, table).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows > 100 {
		t.Fatalf("the copy's statistics count %d rows: the test needs a copy the server has not counted", rows)
	}
	return conn
}

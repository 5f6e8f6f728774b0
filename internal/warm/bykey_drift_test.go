package warm_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/warm"
)

// TestWarmByKeyCopyThatDriftsNearTheEnd: a logical copy that is page-for-page for most of
// its index and drifts near its end, as a dump restored on the same or the other flavor
// does. The table is built by the same statements on the source and the copy, but the
// copy lacks 300 rows at 70% of the keys: every page after them holds other rows under
// the same page numbers. The workload reads that last part first and the rest last, so the
// hottest pages (the old sample: 8 of them, half matching was enough) are all in the part
// that matches. auto must take the key path for both indexes (a sample spread over the
// index, the last pages included, every page matching), and the warmed pass miss at most
// the hot pass's misses plus a tenth of the cold pass's; by page number it misses more
// (the test tells the paths apart).
func TestWarmByKeyCopyThatDriftsNearTheEnd(t *testing.T) {
	const rows, step = 60000, 400
	drift := rows * 7 / 10
	conn := sandboxtest.Conn(t)
	ctx := context.Background()
	db := sandboxtest.Schema(t)
	tbl := sqltext.Table(db, "t")
	exec := func(conn *connection.Conn, stmts ...string) {
		t.Helper()
		for _, q := range stmts {
			if _, err := conn.DB.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	// build creates name by the same statements each time, without the rows of where.
	build := func(conn *connection.Conn, name, where string) {
		t.Helper()
		q := sqltext.Table(db, name)
		exec(conn,
			"DROP TABLE IF EXISTS "+q,
			"CREATE TABLE "+q+" (id INT NOT NULL, k INT NOT NULL, pad CHAR(200) CHARACTER SET latin1 NOT NULL DEFAULT '', PRIMARY KEY (id), KEY kk (k)) STATS_AUTO_RECALC=0",
			fmt.Sprintf("INSERT INTO %s (id, k) SELECT seq, seq FROM %s WHERE %s ORDER BY seq", q, conn.Server.Series(db, 1, rows), where),
			"ANALYZE TABLE "+q,
			"FLUSH TABLES "+q+" FOR EXPORT", "UNLOCK TABLES")
	}
	build(conn, "t", "1 = 1")
	// The workload: every step-th row by primary key and as many others through kk, the
	// part past the drift first, the rest last (most recently used: the hottest).
	hot := func(conn *connection.Conn) {
		t.Helper()
		exec(conn,
			fmt.Sprintf("SELECT SUM(LENGTH(pad)) FROM %s FORCE INDEX (PRIMARY) WHERE id IN (%s)", tbl, inList(drift+step, rows, step)),
			fmt.Sprintf("SELECT SUM(LENGTH(pad)) FROM %s FORCE INDEX (kk) WHERE k IN (%s)", tbl, inList(drift+step/2, rows, step)),
			fmt.Sprintf("SELECT SUM(LENGTH(pad)) FROM %s FORCE INDEX (PRIMARY) WHERE id IN (%s)", tbl, inList(step, drift, step)),
			fmt.Sprintf("SELECT SUM(LENGTH(pad)) FROM %s FORCE INDEX (kk) WHERE k IN (%s)", tbl, inList(step/2, drift, step)))
	}
	measure := func(conn *connection.Conn) int64 {
		t.Helper()
		before := poolReads(t, conn)
		hot(conn)
		return poolReads(t, conn) - before
	}
	cold := coldRestarter(t)
	conn = cold()
	coldMisses := measure(conn)
	m, _ := mostlyKeyedSnapshot(t, conn, db, "drift.manifest")
	hotMisses := measure(conn)

	// The copy: the same statements, 300 rows fewer at the drift.
	build(conn, "t_copy", fmt.Sprintf("seq NOT BETWEEN %d AND %d", drift, drift+299))
	exec(conn, "RENAME TABLE "+tbl+" TO "+sqltext.Table(db, "t_orig")+", "+sqltext.Table(db, "t_copy")+" TO "+tbl,
		"DROP TABLE "+sqltext.Table(db, "t_orig"))

	out := warmByKey(t, conn, m, warm.ByKeyAuto, true)
	for _, ix := range []string{"PRIMARY", "kk"} {
		ip, ok := indexPaths(out)[ix]
		t.Logf("%s: path %s, %d keyed pages: %s", ix, ip.Path, ip.KeyedPages, ip.Reason)
		if !ok || ip.Path != warm.PathTree || !strings.Contains(ip.Reason, "not a page-for-page copy: only ") {
			t.Errorf("%s on a copy that drifts near its end: path %s (%s), want tree", ix, ip.Path, ip.Reason)
		}
	}
	bound := hotMisses + coldMisses/10
	conn = cold()
	warmByKey(t, conn, m, warm.ByKeyAuto, false)
	auto := measure(conn)
	conn = cold()
	warmByKey(t, conn, m, warm.ByKeyPages, false)
	byNumber := measure(conn)
	t.Logf("%s: manifest %d pages; misses: cold %d, hot %d, after warm auto %d, by page number %d (bound %d)",
		conn.Server, m.Header.Entries, coldMisses, hotMisses, auto, byNumber, bound)
	if auto > bound {
		t.Errorf("after warm --by-key auto the pass missed %d pages, more than %d (hot %d + a tenth of cold %d)", auto, bound, hotMisses, coldMisses)
	}
	if byNumber <= bound {
		t.Errorf("by page number the pass missed %d pages, within the bound %d: the copy does not drift enough to tell the paths apart", byNumber, bound)
	}
}

package warm_test

import (
	"fmt"
	"testing"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/warm"
)

// TestWarmByKeyEnumFirst: an index led by an ENUM of a few members (each member's entries
// many leaves long) is read on the sql path by range scans. Its runs' bounds compared the
// ENUM with < and >, which neither server makes a range of: EXPLAIN showed a scan of the
// whole index and the index was skipped, so a target warmed by SQL (innowarm not on its
// host) missed every page of it.
func TestWarmByKeyEnumFirst(t *testing.T) {
	conn := sandboxtest.Conn(t)
	db := sandboxtest.Schema(t)
	tbl := sqltext.Table(db, "t")
	sandboxtest.Exec(t,
		"CREATE TABLE "+tbl+" (id INT PRIMARY KEY, e ENUM('a','b','c','d') NOT NULL, d DATE NOT NULL, pad CHAR(100) NOT NULL DEFAULT 'p', KEY k_e (e), KEY k_ed (e, d))",
		"INSERT INTO "+tbl+" (id, e, d) SELECT seq, ELT(seq % 4 + 1, 'a', 'b', 'c', 'd'), '2020-01-01' + INTERVAL seq % 1000 DAY FROM "+
			conn.Server.Series(db, 1, 100_000)+" ORDER BY seq",
		"ANALYZE TABLE "+tbl)
	var reads []string
	for i := 0; i < 40; i++ {
		lo := 1 + i*2477
		reads = append(reads,
			fmt.Sprintf("SELECT COUNT(*) FROM %s FORCE INDEX (k_e) WHERE e = 'b' AND id BETWEEN %d AND %d", tbl, lo, lo+20),
			fmt.Sprintf("SELECT COUNT(*) FROM %s FORCE INDEX (k_ed) WHERE e = 'c' AND d = '2021-06-01' + INTERVAL %d DAY", tbl, i))
	}
	cold := coldRestarter(t)
	conn = cold()
	sandboxtest.Exec(t, reads...)
	m := keyedSnapshot(t, conn, db, "enum.manifest")
	conn = cold()
	out := warmByKey(t, conn, m, warm.ByKeySQL, false)
	paths := indexPaths(out)
	for _, ix := range []string{"k_e", "k_ed"} {
		ip, ok := paths[ix]
		if !ok || ip.Path != warm.PathSQL || ip.Statements == 0 {
			t.Errorf("%s: path %q, %d statements (%s): want range scans", ix, ip.Path, ip.Statements, ip.Reason)
		}
	}
	if res := out.Result; res.UnitsFailed > 0 || len(res.Skipped) > 0 {
		t.Errorf("%d units failed (%v), skipped %v", res.UnitsFailed, res.Errors, res.Skipped)
	}
	before := poolReads(t, conn)
	sandboxtest.Exec(t, reads...)
	if missed := poolReads(t, conn) - before; missed > 8 {
		t.Errorf("the reads missed %d pages after the warm", missed)
	}
}

package warm_test

import (
	"context"
	"testing"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/warm"
)

// A scan of a prefix index read the range from ” on: under a PAD SPACE collation (the
// default ones) a value that starts with a tab sorts before ”, and half of the index
// (every value starting with a tab) stayed cold while the warm exited 0 (a user test:
// 0% -> 62.2% on every flavor). The index's pages after a scan warm from a cold pool are
// now every one a native load of its tablespace brings in.
func TestScanOfPrefixIndexReadsValuesBeforeEmpty(t *testing.T) {
	conn := sandboxtest.Conn(t)
	db := sandboxtest.Schema(t)
	q := sqltext.Table(db, "tabs")
	sandboxtest.Exec(t,
		"CREATE TABLE "+q+" (id INT PRIMARY KEY, s VARCHAR(300) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci, KEY kpre (s(10)))",
		"INSERT INTO "+q+" SELECT seq, CONCAT(IF(seq MOD 2 = 1, CHAR(9), ''), seq, REPEAT('x', 100)) FROM "+conn.Server.Series(db, 1, 16000)+" ORDER BY seq",
		"INSERT INTO "+q+" VALUES (16001, NULL), (16002, ''), (16003, CONCAT(CHAR(10), 'newline'))",
		"ANALYZE TABLE "+q)
	filter := catalog.Filter{Schemas: []string{db}}
	// The index's pages a native load of the whole tablespace makes resident: the truth.
	native := warmAndCount(t, filter, warm.MethodNative)
	scanned := warmAndCount(t, filter, warm.MethodScan)
	t.Logf("%s: kpre pages resident after a native load %d, after a scan warm %d", sandboxtest.Flavor(t), native, scanned)
	if native < 20 {
		t.Fatalf("the native load made %d pages of kpre resident: too few to tell", native)
	}
	if scanned < native {
		t.Errorf("a scan warm made %d of kpre's %d pages resident", scanned, native)
	}
}

// warmAndCount warms filter with method from a cold pool and counts the resident pages of
// the table tabs's index kpre.
func warmAndCount(t *testing.T, filter catalog.Filter, method string) int64 {
	t.Helper()
	ctx := context.Background()
	if _, err := sandboxtest.Server(t).ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	conn := sandboxtest.Reconnect(t)
	req := warm.Request{Filter: filter, Method: method, Run: quiet(), Plan: warm.Options{Order: "small-first", SplitPages: warm.DefaultSplitPages}}
	if err := req.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := warm.Execute(ctx, conn, req, func(string, string) {}); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Load(ctx, conn, filter)
	if err != nil {
		t.Fatal(err)
	}
	return residency(t, conn, cat)[key{"tabs", "", "kpre"}].Resident
}

// By key, the sql path read a manifest's run with no bound (its root page) of an index
// whose first key part is a prefix as `WHERE 1 LIMIT n`: MariaDB reads the table for it
// (a prefix index is never read index-only), and a user's warm left the index at 0%. Its
// hot pages, the whole small index here, are now resident after the warm.
func TestWarmByKeySQLReadsAPrefixIndex(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	db := sandboxtest.Schema(t)
	q := sqltext.Table(db, "pfx")
	sandboxtest.Exec(t,
		"CREATE TABLE "+q+" (id INT PRIMARY KEY, s VARCHAR(300) CHARACTER SET utf8mb4, KEY kpre (s(10)))",
		"INSERT INTO "+q+" SELECT seq, CONCAT(seq * 7919 MOD 10007, REPEAT('y', 100)) FROM "+conn.Server.Series(db, 1, 8000)+" ORDER BY seq",
		"ANALYZE TABLE "+q)
	if _, err := sandboxtest.Server(t).ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	conn = sandboxtest.Reconnect(t)
	sandboxtest.Exec(t, "SELECT COUNT(*) FROM "+q+" FORCE INDEX (kpre) WHERE s >= ''")
	m, _ := mostlyKeyedSnapshot(t, conn, db, "pfx.manifest")
	var hot int64
	cat := schemaCatalog(t, conn, db)
	hot = residency(t, conn, cat)[key{"pfx", "", "kpre"}].Resident
	if _, err := sandboxtest.Server(t).ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	conn = sandboxtest.Reconnect(t)
	out := warmByKey(t, conn, m, warm.ByKeySQL, false)
	ip := indexPaths(out)["kpre"]
	after := residency(t, conn, cat)[key{"pfx", "", "kpre"}].Resident
	t.Logf("%s: kpre: %d pages hot, %d after warm --by-key sql (path %s, %d statements)", conn.Server, hot, after, ip.Path, ip.Statements)
	if hot < 10 {
		t.Fatalf("only %d pages of kpre were hot", hot)
	}
	if ip.Path != warm.PathSQL || 10*after < 9*hot {
		t.Errorf("after warm --by-key sql: %d of kpre's %d hot pages resident (path %s)", after, hot, ip.Path)
	}
}

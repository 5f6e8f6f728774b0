package warm_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/snapshot"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/warm"
)

// TestNativeWarmOpensTheTablesItLoaded: a native load puts a table's pages in the pool
// without opening the table, and its first query after a restart paid the open (3.5-4.2 ms
// on MySQL 9.7, 1.6 ms on MariaDB 10.11: the first pass's gap to its hot pass). After the
// load the warm opens the tables it warmed, which are then in the table cache (MySQL's
// were not open after a warm before; MariaDB's planning opens them); a second warm finds
// them open and opens none.
func TestNativeWarmOpensTheTablesItLoaded(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	db := sandboxtest.Schema(t)
	names := []string{"opened_a", "opened_b"}
	for _, name := range names {
		tbl := sqltext.Table(db, name)
		sandboxtest.Exec(t,
			"CREATE TABLE "+tbl+" (id INT PRIMARY KEY, v CHAR(100) NOT NULL DEFAULT '')",
			"INSERT INTO "+tbl+" (id) SELECT seq FROM "+conn.Server.Series(db, 1, 2000)+" ORDER BY seq",
			"SELECT COUNT(*) FROM "+tbl)
	}
	path := filepath.Join(sandboxtest.Dir(t), "opened.manifest")
	if _, err := snapshot.Capture(ctx, conn, snapshot.Options{Path: path, ToolVersion: "test", Filter: catalog.Filter{Schemas: []string{db}}}); err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	conn = coldRestarter(t)()
	if open := openTablesIn(t, conn, db); len(open) != 0 {
		t.Fatalf("after the restart, %v are open already", open)
	}
	out := warmByKey(t, conn, m, warm.ByKeyPages, false)
	open := openTablesIn(t, conn, db)
	for _, name := range names {
		if !open[name] {
			t.Errorf("%s: not open after the warm (open: %v; %+v)", name, open, out.Result.TablesOpened)
		}
	}
	// MariaDB's planning opens them (its information_schema reads): open already there.
	if o := out.Result.TablesOpened; o == nil || o.Opened+o.Already != len(names) || o.Failed+o.Left != 0 || (o.Opened > 0 && o.Seconds <= 0) {
		t.Errorf("the result says %+v, want %d tables opened or open", o, len(names))
	}
	again := warmByKey(t, conn, m, warm.ByKeyPages, false)
	if o := again.Result.TablesOpened; o != nil && o.Opened != 0 {
		t.Errorf("a second warm opened %d tables, which were open", o.Opened)
	}

	// A selection loaded natively (warm -D db --method native), not a manifest: the same.
	conn = coldRestarter(t)()
	req := warm.Request{Filter: catalog.Filter{Schemas: []string{db}}, Method: warm.MethodNative, Run: quiet(),
		Plan: warm.Options{Order: "small-first", SplitPages: warm.DefaultSplitPages}}
	if err := req.Validate(); err != nil {
		t.Fatal(err)
	}
	sel, err := warm.Execute(ctx, conn, req, func(string, string) {})
	if err != nil {
		t.Fatal(err)
	}
	open = openTablesIn(t, conn, db)
	for _, name := range names {
		if !open[name] {
			t.Errorf("warm -D %s --method native: %s not open after it (open: %v; %+v)", db, name, open, sel.Result.TablesOpened)
		}
	}
	if o := sel.Result.TablesOpened; o == nil || o.Opened+o.Already != len(names) {
		t.Errorf("warm -D --method native: the result says %+v, want %d tables opened or open", o, len(names))
	}
}

// openTablesIn is the tables of db in the table cache.
func openTablesIn(t *testing.T, conn *connection.Conn, db string) map[string]bool {
	t.Helper()
	rows, err := conn.DB.QueryContext(context.Background(), "SHOW OPEN TABLES FROM "+sqltext.Ident(db))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	open := map[string]bool{}
	for rows.Next() {
		var d, tbl string
		var inUse, locked sql.RawBytes
		if err := rows.Scan(&d, &tbl, &inUse, &locked); err != nil {
			t.Fatal(err)
		}
		open[tbl] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return open
}

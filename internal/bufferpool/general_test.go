package bufferpool_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// TestGeneralTablespaceByTable (MySQL): two tables in one general tablespace, one of them
// read. inspect's residency, of the schema and of either table alone, gives each table its
// own pages as the server's LRU table names them; snapshot's page list names each page's
// own table. Before, every page went to whichever table the catalog listed last for the
// tablespace (the other table's PRIMARY showed the read one's pages, and its kv index), and
// a selection of the read table alone came from the dump and the files, which cannot tell.
func TestGeneralTablespaceByTable(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	if conn.Server.IsMariaDB() {
		t.Skipf("%s has no general tablespaces", conn.Server)
	}
	db := sandboxtest.Schema(t)
	read, other := sqltext.Table(db, "ingts"), sqltext.Table(db, "ingts2")
	ts := sqltext.Ident("gts_" + db)
	sandboxtest.Exec(t, "CREATE TABLESPACE "+ts+" ADD DATAFILE '"+"gts_"+db+".ibd'")
	t.Cleanup(func() {
		sandboxtest.Exec(t, "DROP TABLE IF EXISTS "+read+", "+other, "DROP TABLESPACE "+ts)
	})
	series := conn.Server.Series(db, 1, 30000) + " ORDER BY seq"
	sandboxtest.Exec(t,
		"CREATE TABLE "+read+" (id INT PRIMARY KEY, v INT, KEY kv (v)) TABLESPACE "+ts,
		"INSERT INTO "+read+" SELECT seq, seq MOD 977 FROM "+series,
		"CREATE TABLE "+other+" (id INT PRIMARY KEY, v INT) TABLESPACE "+ts,
		"INSERT INTO "+other+" SELECT seq, seq FROM "+conn.Server.Series(db, 1, 10000)+" ORDER BY seq")
	if _, err := sandboxtest.Server(t).ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	conn = sandboxtest.Reconnect(t)
	sandboxtest.Exec(t, "SELECT COUNT(*) FROM "+read+" FORCE INDEX (PRIMARY) WHERE id > 0", "SELECT COUNT(*) FROM "+read+" FORCE INDEX (kv) WHERE v >= 0")

	// The server's own count of each table's index pages.
	want := map[[2]string]int64{}
	func() {
		rows, err := conn.DB.QueryContext(ctx, "SELECT TABLE_NAME, INDEX_NAME, COUNT(*) FROM information_schema.INNODB_BUFFER_PAGE_LRU WHERE TABLE_NAME LIKE ? AND PAGE_TYPE = 'INDEX' GROUP BY TABLE_NAME, INDEX_NAME", "`"+db+"`.%")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var table, index sql.NullString
			var n int64
			if err := rows.Scan(&table, &index, &n); err != nil {
				t.Fatal(err)
			}
			_, name, _ := bufferpool.ParseTableName(table.String)
			want[[2]string{name, index.String}] = n
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}()
	if want[[2]string{"ingts", "PRIMARY"}] < 20 || want[[2]string{"ingts", "kv"}] < 10 {
		t.Fatalf("the server counts %v", want)
	}
	for _, sel := range [][]string{{db + ".*"}, {db + ".ingts"}, {db + ".ingts2"}} {
		var pats []catalog.Pattern
		for _, s := range sel {
			p, err := catalog.ParsePattern(s)
			if err != nil {
				t.Fatal(err)
			}
			pats = append(pats, p)
		}
		cat, err := catalog.Load(ctx, conn, catalog.Filter{Tables: pats})
		if err != nil {
			t.Fatal(err)
		}
		res, err := bufferpool.ReadSelection(ctx, conn, cat, bufferpool.ReadOptions{IncludeZero: true, OnlyCatalog: true}, bufferpool.PageListAuto, logx.New(&strings.Builder{}, false))
		if err != nil {
			t.Fatal(err)
		}
		got := map[[2]string]int64{}
		for _, r := range res.Indexes {
			got[[2]string{r.Table, r.Index}] += r.Resident
		}
		for _, tb := range cat.Tables {
			for _, ix := range tb.Indexes {
				k := [2]string{tb.Name, ix.Name}
				if got[k] != want[k] {
					t.Errorf("selection %v (%s): %s.%s %d resident, the server counts %d", sel, res.PageList, tb.Name, ix.Name, got[k], want[k])
				}
			}
		}
		for k, n := range got {
			if k[0] == "ingts2" && k[1] != "PRIMARY" && n > 0 {
				t.Errorf("selection %v: an index %s of ingts2, which has only PRIMARY", sel, k[1])
			}
		}
	}
	// snapshot's page list, from the LRU table: each page named by its own table.
	cat, err := catalog.Load(ctx, conn, catalog.Filter{Schemas: []string{db}})
	if err != nil {
		t.Fatal(err)
	}
	named := map[[2]string]int64{}
	if _, err := bufferpool.StreamLRU(ctx, conn, cat, func(p bufferpool.LRUPage) error {
		if p.Schema == db && p.PageType == "INDEX" {
			named[[2]string{p.Table, p.Index}]++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for k, n := range want {
		if named[k] != n {
			t.Errorf("snapshot's page list: %v %d pages, the server counts %d", k, named[k], n)
		}
	}
}

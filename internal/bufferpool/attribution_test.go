package bufferpool_test

import (
	"context"
	"os"
	"testing"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// A FULLTEXT index keeps its words in auxiliary tables of its own (InnoDB's FTS_*
// tablespaces), which the server names by ids, not by the index. inspect lists them under
// the index, and the tables a table's FULLTEXT indexes share under
// bufferpool.FulltextCommon, from the LRU table and from the server's dump alike: before,
// their pages went uncounted, and a warmed FULLTEXT index looked absent.
func TestFulltextIndexResidency(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	srv := conn.Server
	sandboxtest.Exec(t,
		"DROP DATABASE IF EXISTS fti", "CREATE DATABASE fti",
		"CREATE TABLE fti.docs (id INT PRIMARY KEY, body TEXT, FULLTEXT KEY fbody (body))",
		"INSERT INTO fti.docs SELECT seq, CONCAT('word', seq MOD 3000, ' other', seq MOD 97, ' w', seq) FROM "+srv.Series("fti", 1, 30000),
		"OPTIMIZE TABLE fti.docs")
	t.Cleanup(func() { sandboxtest.Exec(t, "DROP DATABASE IF EXISTS fti") })
	cat, err := catalog.Load(ctx, conn, catalog.Filter{Schemas: []string{"fti"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sandboxtest.Server(t).ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	conn = sandboxtest.Reconnect(t)
	sandboxtest.Exec(t, "SELECT COUNT(*) FROM fti.docs WHERE MATCH(body) AGAINST('word7 word8 other5')")
	// What the pool holds of the auxiliary tables, by the server's own page types: their
	// B-tree pages and the off-page parts of their word lists.
	truth := func(common bool) int64 {
		t.Helper()
		like := "fti/fts\\_%\\_index\\_%"
		if common {
			like = "fti/fts\\_%"
		}
		q := "SELECT COUNT(*) FROM " + srv.BufferPageLRUTable() + " WHERE PAGE_TYPE IN ('INDEX', 'BLOB', 'LOB_FIRST', 'LOB_DATA', 'LOB_INDEX')" +
			" AND SPACE IN (SELECT SPACE FROM " + srv.TablesTable() + " WHERE LOWER(NAME) LIKE '" + like + "')"
		var n int64
		if err := conn.DB.QueryRowContext(ctx, q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	words, all := truth(false), truth(true)
	if words < 2 || all <= words {
		t.Fatalf("the search read %d pages of the index's tables, %d with the common ones: want more", words, all)
	}
	for _, read := range []struct {
		name string
		read func() (*bufferpool.Residency, error)
	}{
		{"LRU table", func() (*bufferpool.Residency, error) {
			return bufferpool.Read(ctx, conn, cat, bufferpool.ReadOptions{OnlyCatalog: true})
		}},
		{"dump", func() (*bufferpool.Residency, error) {
			return bufferpool.ReadDump(ctx, conn, cat, logx.New(os.Stderr, false), bufferpool.ReadOptions{OnlyCatalog: true})
		}},
	} {
		res, err := read.read()
		if err != nil {
			t.Fatalf("%s: %v", read.name, err)
		}
		ft, common := find(res, "docs", "", "fbody"), find(res, "docs", "", bufferpool.FulltextCommon)
		if ft == nil || common == nil {
			t.Fatalf("%s: no row for the FULLTEXT index or its common tables: %+v", read.name, res.Indexes)
		}
		if !ft.Fulltext || ft.Resident != words || ft.Pages < ft.Resident || ft.Known {
			t.Errorf("%s: FULLTEXT index %+v, want %d resident pages, sized by its files (a bound)", read.name, *ft, words)
		}
		if common.Resident != all-words {
			t.Errorf("%s: common tables %+v, want %d resident pages", read.name, *common, all-words)
		}
	}
}

// A server whose global sql_mode has ANSI_QUOTES gives innowarm's sessions the page list's
// table names in double quotes: the pages are still the tables'. Before, inspect counted
// none of them, and a snapshot captured a handful of pages of a warm table.
func TestANSIQuotesServerNamesPages(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	srv := conn.Server
	sandboxtest.Exec(t,
		"DROP DATABASE IF EXISTS aq", "CREATE DATABASE aq",
		"CREATE TABLE aq.t (id INT PRIMARY KEY, k INT, pad CHAR(200), KEY k (k)) PARTITION BY HASH (id) PARTITIONS 2",
		"INSERT INTO aq.t SELECT seq, seq MOD 100, 'x' FROM "+srv.Series("aq", 1, 20000))
	var mode string
	if err := conn.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.sql_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sandboxtest.Exec(t, "SET GLOBAL sql_mode = '"+mode+"'", "DROP DATABASE IF EXISTS aq")
	})
	sandboxtest.Exec(t, "SET GLOBAL sql_mode = CONCAT(@@GLOBAL.sql_mode, ',ANSI_QUOTES')")
	conn = sandboxtest.Reconnect(t)
	sandboxtest.Exec(t, "SELECT COUNT(*) FROM aq.t FORCE INDEX (k)")
	cat, err := catalog.Load(ctx, conn, catalog.Filter{Schemas: []string{"aq"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := bufferpool.Read(ctx, conn, cat, bufferpool.ReadOptions{OnlyCatalog: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{"p0", "p1"} {
		if k := find(res, "t", part, "k"); k == nil || k.Resident < 5 {
			t.Errorf("index k of partition %s after a scan of it: %+v", part, k)
		}
	}
	var captured int64
	if _, err := bufferpool.StreamLRU(ctx, conn, cat, func(p bufferpool.LRUPage) error {
		if p.Schema == "aq" && p.Table == "t" && p.Index == "k" {
			captured++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if captured < 10 {
		t.Errorf("the page list named %d pages of index k, want them all", captured)
	}
}

package catalog_test

import (
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// A table with a FULLTEXT index and no FTS_DOC_ID column of its own gets InnoDB's hidden
// FTS_DOC_ID_INDEX, which information_schema.STATISTICS does not list: the catalog left it
// out, so inspect showed its resident pages with no size ("-") and a warm's result had no
// row for the pages it loaded. It is now listed, internal (no statement names it), sized by
// the persistent statistics like any index; a table that declares its own FTS_DOC_ID and
// FTS_DOC_ID_INDEX keeps exactly that one, and a table without FULLTEXT gets none.
func TestFulltextDocIDIndexListed(t *testing.T) {
	db := sandboxtest.Schema(t)
	srv := sandboxtest.Flavor(t)
	hidden, own, plain := sqltext.Table(db, "hidden"), sqltext.Table(db, "own"), sqltext.Table(db, "plain")
	sandboxtest.Exec(t,
		"CREATE TABLE "+hidden+" (id INT PRIMARY KEY, body VARCHAR(100), FULLTEXT KEY ft (body))",
		"INSERT INTO "+hidden+" SELECT seq, CONCAT('word', seq) FROM "+srv.Series(db, 1, 3000)+" ORDER BY seq",
		"CREATE TABLE "+own+" (FTS_DOC_ID BIGINT UNSIGNED NOT NULL AUTO_INCREMENT, body VARCHAR(100), UNIQUE KEY FTS_DOC_ID_INDEX (FTS_DOC_ID), FULLTEXT KEY ft (body))",
		"CREATE TABLE "+plain+" (id INT PRIMARY KEY, k INT, KEY k (k))",
		"ANALYZE TABLE "+hidden)
	cat := load(t, catalog.Filter{Schemas: []string{db}})

	count := func(tb *catalog.Table) (n int, ix *catalog.Index) {
		for _, x := range tb.Indexes {
			if strings.EqualFold(x.Name, catalog.FTSDocIDIndex) {
				n, ix = n+1, x
			}
		}
		return n, ix
	}
	n, ix := count(table(t, cat, "hidden"))
	if n != 1 || ix == nil || !ix.Internal || !ix.Unique || ix.Clustered || ix.Type != "BTREE" {
		t.Fatalf("hidden: %d FTS_DOC_ID_INDEX, %+v; want one, internal, unique, a B-tree", n, ix)
	}
	if sz := ix.Sizes[""]; !sz.Known || sz.Pages < 1 || sz.LeafPages < 1 {
		t.Errorf("hidden: FTS_DOC_ID_INDEX size %+v, want the persistent statistics' (known)", sz)
	}
	if n, ix := count(table(t, cat, "own")); n != 1 || ix.Internal || !ix.Usable {
		t.Errorf("own: %d FTS_DOC_ID_INDEX (%+v), want the table's own, usable", n, ix)
	}
	if n, _ := count(table(t, cat, "plain")); n != 0 {
		t.Errorf("plain: %d FTS_DOC_ID_INDEX, want none", n)
	}
	if c := table(t, cat, "hidden").Clustered(); c == nil || c.Name != "PRIMARY" {
		t.Errorf("hidden: clustered index %+v, want PRIMARY", c)
	}
}

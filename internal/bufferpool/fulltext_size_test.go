package bufferpool_test

import (
	"testing"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// inspect sized a FULLTEXT row by its auxiliary tables' file lengths, several times the
// pages they use: a fully loaded index showed 907 resident pages of "907-4014" (≥22.6%). Where
// the files' allocation maps read, the row's size is now their pages in use: an index whose
// every page is resident (just built, its files written) shows 100%, from the LRU table and
// from the server's dump alike.
func TestFulltextRowSizedByPagesInUse(t *testing.T) {
	conn := sandboxtest.Conn(t)
	db := sandboxtest.Schema(t)
	q := sqltext.Table(db, "docs")
	sandboxtest.Exec(t,
		"CREATE TABLE "+q+" (id INT PRIMARY KEY, body VARCHAR(200)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci",
		"INSERT INTO "+q+" SELECT seq, CONCAT(CHAR(97 + seq MOD 26 USING utf8mb4), 'word', seq, ' ', seq MOD 1000, 'n ', CHAR(97 + seq * 7 MOD 26 USING utf8mb4), 'x', seq MOD 977) FROM "+conn.Server.Series(db, 1, 8000),
		"ALTER TABLE "+q+" ADD FULLTEXT KEY fbody (body)")
	// Every page of the index in the pool: MySQL builds it around the pool, and a read of
	// INNODB_FT_INDEX_TABLE reads its tables whole (these trees are a root and its leaves).
	// The files' maps say what is in use once the server has written them.
	sandboxtest.Exec(t, "SET GLOBAL innodb_ft_aux_table = '"+db+"/docs'")
	t.Cleanup(func() { sandboxtest.Exec(t, "SET GLOBAL innodb_ft_aux_table = DEFAULT") })
	sandboxtest.Exec(t, "SELECT COUNT(*) FROM information_schema.INNODB_FT_INDEX_TABLE")
	waitClean(t, conn)
	fromDump, fromTable := readBoth(t, db)
	for _, read := range []struct {
		name string
		res  *bufferpool.Residency
	}{{"dump", fromDump}, {"LRU table", fromTable}} {
		// InnoDB's hidden FTS_DOC_ID_INDEX had resident pages and no size ("-").
		if r := find(read.res, "docs", "", catalog.FTSDocIDIndex); r == nil || r.Resident == 0 || r.Pages <= 0 || r.MinPages <= 0 {
			t.Errorf("%s: FTS_DOC_ID_INDEX's row %+v: want its resident pages and a size", read.name, r)
		}
		for _, index := range []string{"fbody", bufferpool.FulltextCommon} {
			r := find(read.res, "docs", "", index)
			if r == nil {
				t.Errorf("%s: no row for %s: %+v", read.name, index, read.res.Indexes)
				continue
			}
			t.Logf("%s: %s: %d resident of %d-%d pages (%s), coverage %.3f", read.name, index, r.Resident, r.MinPages, r.Pages, r.SizeSource, r.Coverage)
			if !r.Fulltext || r.Resident == 0 || r.Coverage < 0.99 || r.MinPages != r.Pages {
				t.Errorf("%s: %s: %d resident of %d-%d pages (%s): want every page its files have in use, and them as its size", read.name, index, r.Resident, r.MinPages, r.Pages, r.SizeSource)
			}
		}
	}
}

package bufferpool_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// TestReadTotalsCountsOldPages: after a scan of a table of more pages than InnoDB needs to
// keep an old sublist (BUF_LRU_OLD_MIN_LEN, 512), the pool's old pages are more than 0 on
// every flavor, and at most its data pages. MySQL has no Innodb_buffer_pool_pages_old:
// ReadTotals read 0 there (inspect's "old" and pages_old) while the server's
// INNODB_BUFFER_POOL_STATS counted thousands.
func TestReadTotalsCountsOldPages(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	db := sandboxtest.Schema(t)
	tbl := sqltext.Table(db, "old_scan")
	sandboxtest.Exec(t,
		"CREATE TABLE "+tbl+" (id INT NOT NULL PRIMARY KEY, pad CHAR(200) CHARACTER SET latin1 NOT NULL DEFAULT '')",
		fmt.Sprintf("INSERT INTO %s (id) SELECT seq FROM %s", tbl, conn.Server.Series(db, 1, 100000)),
		"SELECT COUNT(*) FROM "+tbl+" FORCE INDEX (PRIMARY) WHERE pad = 'x'")
	var statsOld int64
	if err := conn.DB.QueryRowContext(ctx, "SELECT COALESCE(SUM(OLD_DATABASE_PAGES), 0) FROM information_schema.INNODB_BUFFER_POOL_STATS").Scan(&statsOld); err != nil {
		t.Fatal(err)
	}
	tot, err := bufferpool.ReadTotals(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: pages_old %d (INNODB_BUFFER_POOL_STATS %d), data %d, total %d", conn.Server, tot.PagesOld, statsOld, tot.PagesData, tot.PagesTotal)
	if tot.PagesOld <= 0 || statsOld <= 0 {
		t.Errorf("%s: after a scan of about 1,400 pages the pool has %d old pages (INNODB_BUFFER_POOL_STATS: %d), want more than 0", conn.Server, tot.PagesOld, statsOld)
	}
	if tot.PagesOld > tot.PagesData {
		t.Errorf("%s: %d old pages of %d data pages", conn.Server, tot.PagesOld, tot.PagesData)
	}
}

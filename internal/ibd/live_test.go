package ibd_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/ibd"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

func TestMain(m *testing.M) { sandboxtest.Main(m, sandboxtest.Options{PoolSize: 64 << 20}) }

// The map read from the file names the same index for every resident page as the server's
// own INNODB_BUFFER_PAGE does, on a table with a clustered index, two secondary indexes
// (one built after the load, one maintained through random-order inserts) and off-page
// BLOBs, whose pages belong to the clustered index.
//
// Right after the load, before the server has written its descriptor pages, part of the
// pages cannot be attributed yet; none may be attributed to the wrong index.
func TestMapAgreesWithTheServer(t *testing.T) {
	for _, flushed := range []bool{true, false} {
		name := "flushed to disk"
		if !flushed {
			name = "right after the load"
		}
		t.Run(name, func(t *testing.T) { checkAgainstServer(t, flushed) })
	}
}

func checkAgainstServer(t *testing.T, flushed bool) {
	ctx := context.Background()
	srv := sandboxtest.Flavor(t)
	db := sandboxtest.Schema(t)
	tbl := sqltext.Table(db, "t")
	sandboxtest.Exec(t,
		"CREATE TABLE "+tbl+" (id INT PRIMARY KEY, k INT, s VARCHAR(64), body LONGBLOB, KEY ks (s)) ROW_FORMAT=DYNAMIC",
		// Random-order keys: pages split and the tree's extents interleave.
		"INSERT INTO "+tbl+" SELECT (seq * 7919) MOD 60013, seq MOD 1000, LEFT(SHA2(seq, 256), 40), IF(seq MOD 500 = 0, REPEAT('b', 40000), NULL) FROM "+srv.Series(db, 1, 60000)+" ORDER BY seq",
		"ALTER TABLE "+tbl+" ADD KEY kk (k)",
		"INSERT INTO "+tbl+" SELECT 100000 + seq, seq, LEFT(SHA2(seq, 256), 40), NULL FROM "+srv.Series(db, 1, 20000)+" ORDER BY seq",
	)
	reads := []string{
		"SELECT COUNT(*) FROM " + tbl + " FORCE INDEX (kk) WHERE k >= 0",
		"SELECT COUNT(*) FROM " + tbl + " FORCE INDEX (ks) WHERE s >= ''",
		"SELECT SUM(LENGTH(body)) FROM " + tbl,
	}
	sandboxtest.Exec(t, reads...)
	// A DDL of the table after the reads: MySQL writes its SDI again, which brings the
	// SDI's pages into the pool (the reads before it may have pushed them out: a
	// fresh-clone CI run saw none resident).
	sandboxtest.Exec(t, "ALTER TABLE "+tbl+" COMMENT = 'the SDI written last'")
	if flushed {
		// Puts every page on disk, descriptors included, as a checkpoint eventually would;
		// then the reads again: a fresh-clone CI run on a loaded MySQL 9.7 found 1 page of
		// the table resident after the flush (and none, reads moved after the ALTER).
		sandboxtest.Exec(t, "FLUSH TABLES "+tbl+" FOR EXPORT", "UNLOCK TABLES")
		sandboxtest.Exec(t, reads...)
	}
	conn := sandboxtest.Conn(t)
	file, space := tablespaceFile(t, db+"/t")
	indexes, names := indexesOf(t, space)
	if len(indexes) != 3 {
		t.Fatalf("indexes of %s: %v", tbl, names)
	}
	m, err := ibd.Open(file, sandboxtest.Flavor(t).PageSize, indexes)
	if !flushed && errors.Is(err, ibd.ErrUnreadable) {
		// MariaDB 11 writes a new file's header page at its first flush: until then the
		// file names nothing, which is never a wrong name.
		t.Logf("%s: %v before the first flush", srv, err)
		return
	}
	if err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	if flushed && len(m.Missing) != 0 {
		t.Errorf("indexes whose segments were not found: %v", m.Missing)
	}

	rows, err := conn.DB.QueryContext(ctx, "SELECT PAGE_NUMBER, COALESCE(INDEX_NAME, ''), PAGE_TYPE FROM information_schema.INNODB_BUFFER_PAGE WHERE SPACE = ? AND PAGE_STATE = 'FILE_PAGE'", space)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var total, agree, blobs, unattributed, notInUse, sdi int
	disagree := map[string]int{}
	for rows.Next() {
		var page uint32
		var index, ptype string
		if err := rows.Scan(&page, &index, &ptype); err != nil {
			t.Fatal(err)
		}
		kind, id := m.Owner(page)
		total++
		// MySQL's serialized dictionary (SDI_INDEX, SDI_BLOB) is the file's, no index's:
		// before, its pages were unattributed, "allocated since the descriptors were
		// written" to every snapshot and inspect.
		if strings.HasPrefix(ptype, "SDI") {
			sdi++
			switch {
			case kind == ibd.FileMetadata:
				agree++
			case !flushed && kind == ibd.Unattributed:
				unattributed++
			default:
				disagree[ptype+" page not as file metadata"]++
			}
			continue
		}
		// A free page of a segment's extent is resident when read-ahead read the whole
		// extent (MySQL): the server says ALLOCATED, no data. A page with data must be in use.
		if !m.InUse(page) && ptype != "ALLOCATED" {
			notInUse++
		}
		isBlob := ptype == "BLOB" || ptype == "LOB_FIRST" || ptype == "LOB_DATA" || ptype == "LOB_INDEX"
		if kind == ibd.Unattributed && (index != "" || isBlob) {
			unattributed++
			continue
		}
		got := ""
		switch kind {
		case ibd.IndexPage:
			got = names[id]
		case ibd.FileMetadata:
			got = "(metadata)"
		}
		switch {
		case isBlob:
			// The server names no index for LOB pages; they are the clustered index's.
			blobs++
			if got == "PRIMARY" {
				agree++
			} else {
				disagree[ptype+" page as "+got]++
			}
		case index == "":
			if kind != ibd.IndexPage {
				agree++
			} else {
				disagree[ptype+" page (no index) as "+got]++
			}
		case strings.EqualFold(index, got):
			agree++
		default:
			disagree[index+" as "+got]++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if total < 500 {
		t.Fatalf("only %d resident pages, %d of them BLOB: the test table did not get big enough", total, blobs)
	}
	if flushed && blobs == 0 {
		t.Errorf("no BLOB page attributed: the test table has none resident?")
	}
	// The SDI's root is usually resident from the ALTER that wrote it last; where it is,
	// every SDI page must read as file metadata (checked above). Two fresh-clone CI runs on a
	// loaded machine found none resident on MySQL 9.7: its presence is not the test's to
	// demand, only logged.
	if flushed && srv.NewTablespaceSDIRoot() != 0 && sdi == 0 {
		t.Logf("no SDI page resident on %s: this run does not check the SDI's attribution", srv)
	}
	// Before a flush the descriptors on disk can be older than a page's reuse: a page one
	// index freed and another took since the last write still reads as the first's (MySQL
	// 9.7 in a clean-clone CI run: 1 of 1,447). Flushed, none may be.
	wrong := 0
	for _, n := range disagree {
		wrong += n
	}
	if (flushed && wrong > 0) || float64(wrong) > 0.01*float64(total) {
		t.Errorf("pages attributed to another index than the server's: %v (%d of %d agree)", disagree, agree, total)
	} else if wrong > 0 {
		t.Logf("before the flush, %d of %d pages read as a former owner's: %v", wrong, total, disagree)
	}
	if flushed && notInUse > 0 {
		t.Errorf("%d resident pages with data of a flushed file are outside the pages in use (%d of %d)", notInUse, m.InUsePages(), m.Pages)
	}
	if flushed && float64(agree) < 0.99*float64(total) {
		t.Errorf("%d of %d resident pages attributed as the server does, %d unattributed", agree, total, unattributed)
	}
	t.Logf("%s: %d of %d resident pages agree, %d not attributable yet (%d BLOB pages), file of %d pages, %d in use", srv, agree, total, unattributed, blobs, m.Pages, m.InUsePages())
}

// Tree counts what the server's own page list holds once every page of the table has been
// read: the clustered index's B-tree pages and its off-page BLOB pages, which its
// n_leaf_pages statistic counts together on both servers, and a secondary index's pages.
func TestTreeAgreesWithTheServer(t *testing.T) {
	ctx := context.Background()
	srv := sandboxtest.Flavor(t)
	db := sandboxtest.Schema(t)
	tbl := sqltext.Table(db, "t")
	sandboxtest.Exec(t,
		"CREATE TABLE "+tbl+" (id INT PRIMARY KEY, k INT, note TEXT, KEY kk (k)) ROW_FORMAT=DYNAMIC",
		// A tree of several levels, and one row in eight with a 20-60 KB off-page value (about
		// 1,900 pages: the whole table fits in the pool).
		"INSERT INTO "+tbl+" SELECT seq, seq MOD 977, IF(seq MOD 8 = 0, REPEAT(CHAR(65 + seq MOD 26), 20000 + seq * 37 MOD 40000), 'short') FROM "+srv.Series(db, 1, 6000)+" ORDER BY seq",
		"ANALYZE TABLE "+tbl,
		"FLUSH TABLES "+tbl+" FOR EXPORT", "UNLOCK TABLES",
	)
	conn := sandboxtest.Conn(t)
	file, space := tablespaceFile(t, db+"/t")
	readEverything(t, conn.DB, tbl, space)
	indexes, names := indexesOf(t, space)
	m, err := ibd.Open(file, srv.PageSize, indexes)
	if err != nil {
		t.Fatal(err)
	}
	resident := func(cond string) int64 {
		t.Helper()
		var n int64
		if err := conn.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.INNODB_BUFFER_PAGE WHERE SPACE = ? AND PAGE_STATE = 'FILE_PAGE' AND "+cond, space).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var stat int64
	if err := conn.DB.QueryRowContext(ctx, "SELECT stat_value FROM mysql.innodb_index_stats WHERE database_name = ? AND table_name = 't' AND index_name = 'PRIMARY' AND stat_name = 'n_leaf_pages'", db).Scan(&stat); err != nil {
		t.Fatal(err)
	}
	for _, ix := range indexes {
		tree, err := m.Tree(file, ix.ID, names[ix.ID] == "PRIMARY", 1000)
		if err != nil {
			t.Fatalf("%s: %v", names[ix.ID], err)
		}
		btree := resident(fmt.Sprintf("PAGE_TYPE = 'INDEX' AND INDEX_NAME = '%s'", names[ix.ID]))
		lobs := int64(0)
		if names[ix.ID] == "PRIMARY" {
			lobs = resident("PAGE_TYPE IN ('BLOB', 'LOB_FIRST', 'LOB_DATA', 'LOB_INDEX')")
			t.Logf("%s: PRIMARY n_leaf_pages %d; the file: %+v", srv, stat, tree)
			if tree.Levels < 2 || lobs < 1000 {
				t.Fatalf("the test table has %d levels and %d LOB pages: too small to tell", tree.Levels, lobs)
			}
			if stat < lobs {
				t.Errorf("n_leaf_pages %d no longer counts the %d LOB pages: the statistic may be believed again", stat, lobs)
			}
		}
		if tree.Pages != btree || tree.LOBPages != lobs {
			t.Errorf("%s: the file counts %d B-tree and %d LOB pages; the server holds %d and %d", names[ix.ID], tree.Pages, tree.LOBPages, btree, lobs)
		}
	}
}

// readEverything reads every page of the table (both trees and the off-page values) until
// a whole pass needs no read from disk: only then is each of them resident, whatever the
// pages other tests left in the small pool and however the scans' pages aged in the LRU's
// old sublist (MySQL 9.7 in a CI run kept 1,854 of 2,206 LOB pages after one pass). The
// server's background work (purge, statistics) reads pages of its own meanwhile, so a pass
// that read nothing is told by the table's own resident pages too: a pass after which
// they are as many as before it (MariaDB 11.8 in a CI run read from disk in each of six
// passes of a table that fitted).
func readEverything(t *testing.T, db *sql.DB, tbl string, space uint32) {
	t.Helper()
	ctx := context.Background()
	var oldBlocksTime int64
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_old_blocks_time").Scan(&oldBlocksTime); err != nil {
		t.Fatal(err)
	}
	// A page read again at once goes to the young end instead of ageing out of the old one.
	sandboxtest.Exec(t, "SET GLOBAL innodb_old_blocks_time = 0")
	t.Cleanup(func() {
		_, _ = db.ExecContext(context.Background(), fmt.Sprintf("SET GLOBAL innodb_old_blocks_time = %d", oldBlocksTime))
	})
	diskReads := func() int64 {
		t.Helper()
		var name string
		var n int64
		if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_reads'").Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	resident := func() int64 {
		t.Helper()
		var n int64
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.INNODB_BUFFER_PAGE WHERE SPACE = ? AND PAGE_STATE = 'FILE_PAGE'", space).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	last := int64(-1)
	for pass := 1; pass <= 6; pass++ {
		before := diskReads()
		sandboxtest.Exec(t,
			"SELECT COUNT(*) FROM "+tbl+" FORCE INDEX (PRIMARY)",
			"SELECT COUNT(*) FROM "+tbl+" FORCE INDEX (kk)",
			"SELECT SUM(LENGTH(note)) FROM "+tbl,
		)
		if diskReads() == before {
			return
		}
		n := resident()
		if n == last {
			return
		}
		last = n
	}
	t.Fatalf("six passes over %s still read from disk: the table does not stay in the pool", tbl)
}

func tablespaceFile(t *testing.T, innodbName string) (string, uint32) {
	t.Helper()
	ctx := context.Background()
	srv := sandboxtest.Flavor(t)
	conn := sandboxtest.Conn(t)
	var space uint32
	var file string
	if srv.IsMariaDB() {
		if err := conn.DB.QueryRowContext(ctx, "SELECT SPACE, FILENAME FROM information_schema.INNODB_SYS_TABLESPACES WHERE NAME = ?", innodbName).Scan(&space, &file); err != nil {
			t.Fatal(err)
		}
	} else if err := conn.DB.QueryRowContext(ctx, "SELECT d.SPACE, d.PATH FROM information_schema.INNODB_DATAFILES d JOIN information_schema.INNODB_TABLESPACES s USING (SPACE) WHERE s.NAME = ?", innodbName).Scan(&space, &file); err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(file) {
		file = filepath.Join(sandboxtest.Server(t).Datadir, file)
	}
	return file, space
}

func indexesOf(t *testing.T, space uint32) ([]ibd.Index, map[uint64]string) {
	t.Helper()
	rows, err := sandboxtest.Conn(t).DB.QueryContext(context.Background(), fmt.Sprintf("SELECT INDEX_ID, NAME, PAGE_NO FROM %s WHERE SPACE = ?", sandboxtest.Flavor(t).IndexesTable()), space)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var indexes []ibd.Index
	names := map[uint64]string{}
	for rows.Next() {
		var ix ibd.Index
		var name string
		if err := rows.Scan(&ix.ID, &name, &ix.Root); err != nil {
			t.Fatal(err)
		}
		indexes = append(indexes, ix)
		names[ix.ID] = name
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return indexes, names
}

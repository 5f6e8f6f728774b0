package pagekey_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/pagekey"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// longComments gives n INT columns each with a comment of 1,024 random hex digits: their
// SDI (MySQL 8.0+) compresses to more than a page holds, so it goes off the page into
// FIL_PAGE_SDI_BLOB pages.
func longComments(n int) string {
	var cols []string
	for i := range n {
		b := make([]byte, 512)
		_, _ = rand.Read(b)
		cols = append(cols, fmt.Sprintf("c%d INT COMMENT '%s'", i, hex.EncodeToString(b)))
	}
	return strings.Join(cols, ", ")
}

// TestIndexRootsOfAnOverflowingSDI: MySQL lists no index of a partition in its views, and
// IndexRoots reads the partitions' roots from the table's SDI; a table whose SDI is too
// long for its page (long column comments, or many partitions) still gets every
// partition's roots, and they are the pages the server names with those indexes. MariaDB's
// view lists them.
func TestIndexRootsOfAnOverflowingSDI(t *testing.T) {
	ctx := context.Background()
	srv, conn := sandboxtest.Flavor(t), sandboxtest.Conn(t)
	db := sandboxtest.Schema(t)
	tables := map[string]int{"wide": 3, "many": 200}
	sandboxtest.Exec(t,
		"CREATE TABLE "+sqltext.Table(db, "wide")+" (id INT NOT NULL PRIMARY KEY, k INT, KEY kk (k), "+longComments(24)+") ENGINE=InnoDB PARTITION BY HASH (id) PARTITIONS 3",
		"INSERT INTO "+sqltext.Table(db, "wide")+" (id, k) SELECT seq, seq MOD 7 FROM "+srv.Series(db, 1, 2000)+" ORDER BY seq",
		// An everyday table: four indexes and 200 partitions overflow its SDI's page.
		"CREATE TABLE "+sqltext.Table(db, "many")+" (id INT NOT NULL, day INT NOT NULL, user_id BIGINT, kind VARCHAR(32), amount DECIMAL(12,2),"+
			" note VARCHAR(200), created DATETIME, updated DATETIME, status TINYINT, src VARCHAR(64), PRIMARY KEY (id, day), KEY k_user (user_id),"+
			" KEY k_kind (kind, created), KEY k_status (status)) ENGINE=InnoDB PARTITION BY HASH (day) PARTITIONS 200",
		"INSERT INTO "+sqltext.Table(db, "many")+" (id, day, user_id, kind, status) SELECT seq, seq MOD 400, seq MOD 97, CONCAT('k', seq MOD 13), seq MOD 5 FROM "+srv.Series(db, 1, 4000)+" ORDER BY seq",
	)
	// The SDI on disk, for the test's check that it overflows.
	sandboxtest.Exec(t, "FLUSH TABLES "+sqltext.Table(db, "wide")+", "+sqltext.Table(db, "many")+" FOR EXPORT", "UNLOCK TABLES")
	cat, err := catalog.Load(ctx, conn, catalog.Filter{Schemas: []string{db}})
	if err != nil {
		t.Fatal(err)
	}
	spaces := cat.KnownSpaces()
	roots, err := pagekey.IndexRoots(ctx, conn, cat, spaces)
	if err != nil {
		t.Fatal(err)
	}
	files, err := catalog.TablespaceFiles(ctx, conn, spaces)
	if err != nil {
		t.Fatal(err)
	}
	// Every root in the pool, where the server names its index and partition.
	for _, tb := range cat.Tables {
		for _, ix := range tb.Indexes {
			sandboxtest.Exec(t, "SELECT COUNT(*) FROM "+sqltext.Table(db, tb.Name)+" FORCE INDEX ("+sqltext.Ident(ix.Name)+")")
		}
	}
	type named struct{ table, index string }
	server := map[[2]uint32]named{}
	rows, err := conn.DB.QueryContext(ctx, "SELECT SPACE, PAGE_NUMBER, COALESCE(TABLE_NAME, ''), COALESCE(INDEX_NAME, '') FROM information_schema.INNODB_BUFFER_PAGE WHERE PAGE_TYPE = 'INDEX' AND TABLE_NAME LIKE ?", "%"+db+"%")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var space, page uint32
		var n named
		if err := rows.Scan(&space, &page, &n.table, &n.index); err != nil {
			t.Fatal(err)
		}
		server[[2]uint32{space, page}] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, tb := range cat.Tables {
		parts, ok := tables[tb.Name]
		if !ok {
			continue
		}
		if len(tb.Parts) != parts {
			t.Fatalf("%s: %d parts in the catalog, want %d", tb.Name, len(tb.Parts), parts)
		}
		sorted := append([]*catalog.Part{}, tb.Parts...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i].Space < sorted[j].Space })
		if !srv.IsMariaDB() {
			// The SDI is kept in the first partition's file.
			if n := sdiBlobPages(t, files[sorted[0].Space], srv.PageSize); n == 0 {
				t.Errorf("%s: the SDI is on its page: the test reads no SDI BLOB page", tb.Name)
			} else {
				t.Logf("%s on %s: the SDI takes %d SDI BLOB pages", tb.Name, srv, n)
			}
		}
		with := 0
		for _, p := range tb.Parts {
			byName := roots[p.Space]
			if len(byName) != len(tb.Indexes) {
				t.Errorf("%s partition %s (space %d): roots %v, want one of each of the table's %d indexes", tb.Name, p.Name, p.Space, byName, len(tb.Indexes))
				continue
			}
			with++
			for name, ix := range byName {
				got, resident := server[[2]uint32{p.Space, ix.Root}]
				switch {
				case !resident:
					t.Errorf("%s partition %s: %s's root, page %d of space %d, is not in the pool after a scan of the index", tb.Name, p.Name, name, ix.Root, p.Space)
				case got.index != name || !strings.Contains(strings.ToLower(got.table), "`"+strings.ToLower(p.Name)+"`"):
					t.Errorf("%s partition %s space %d page %d: the server says %s of %s, IndexRoots %s", tb.Name, p.Name, p.Space, ix.Root, got.index, got.table, name)
				}
			}
		}
		t.Logf("%s on %s: roots of %d of %d partitions", tb.Name, srv, with, len(tb.Parts))
	}
}

// sdiBlobPages counts the pages of type FIL_PAGE_SDI_BLOB (18) in the file at path.
func sdiBlobPages(t *testing.T, path string, pageSize int) int {
	return sandboxtest.FilePagesOfType(t, path, pageSize, 18)
}

// TestInstantAlterWithAnOverflowingSDI: after an instant ADD COLUMN, MySQL's records of
// several row versions are read with the columns the table's SDI lists; a table whose SDI
// is too long for its page (long column comments) still gets its layouts, and its keys
// equal the server's. MariaDB keeps its instant history in the clustered index.
func TestInstantAlterWithAnOverflowingSDI(t *testing.T) {
	srv, c := sandboxtest.Flavor(t), sandboxtest.Conn(t)
	db := sandboxtest.Schema(t)
	tbl := sqltext.Table(db, "inst")
	execSession(t, c, "CREATE TABLE "+tbl+" (id INT NOT NULL PRIMARY KEY, n1 INT, n2 INT, v VARCHAR(20), KEY kv (v, n1), "+longComments(24)+") ENGINE=InnoDB ROW_FORMAT=DYNAMIC",
		"INSERT INTO "+tbl+" (id, n1, n2, v) SELECT seq, IF(seq % 3 = 0, NULL, seq), seq, CONCAT('v', seq % 101) FROM "+srv.Series(db, 1, 3000)+" ORDER BY seq",
		"ALTER TABLE "+tbl+" ADD COLUMN a1 INT, ADD COLUMN a2 VARCHAR(10), ALGORITHM=INSTANT",
		"INSERT INTO "+tbl+" (id, n1, a1, a2, v) SELECT seq, seq, IF(seq % 2 = 0, NULL, seq), 'x', CONCAT('w', seq % 103) FROM "+srv.Series(db, 3001, 6000)+" ORDER BY seq")
	reports := checkTable(t, c, db, "inst")
	if !srv.IsMariaDB() {
		func() {
			defer flush(t, c, db, "inst")()
			space := open(t, c, db, "inst").table.Parts[0].Space
			files, err := catalog.TablespaceFiles(context.Background(), c, map[uint32]bool{space: true})
			if err != nil {
				t.Fatal(err)
			}
			if n := sdiBlobPages(t, files[space], srv.PageSize); n == 0 {
				t.Errorf("the SDI is on its page: the test reads no SDI BLOB page")
			}
		}()
	}
	for _, name := range []string{"PRIMARY", "kv"} {
		if r := reports[name]; r.layout == nil || r.records != 6000 {
			t.Errorf("%s on %s: %d records decoded (layout %v), want 6000", name, srv, r.records, r.layout != nil)
		}
	}
}

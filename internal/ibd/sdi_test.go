package ibd_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/ibd"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// MySQL 8.0+ lists no index of a partitioned table in INNODB_INDEXES: the partitions'
// index ids and roots are read from the table's SDI, kept in its first partition's file,
// for a table of subpartitions and for one whose SDI is too long for its page (column
// comments that do not compress: the JSON is stored off the page, in SDI BLOB pages). Each
// root read is the root the file has for that index id (ibd.Open finds its segments), of the
// index the server names on that page. MariaDB's files have no SDI.
func TestPartitionRootsFromTheSDI(t *testing.T) {
	ctx := context.Background()
	srv := sandboxtest.Flavor(t)
	db := sandboxtest.Schema(t)
	var comments []string
	for i := range 24 {
		b := make([]byte, 512)
		_, _ = rand.Read(b)
		comments = append(comments, fmt.Sprintf("c%d INT COMMENT '%s'", i, hex.EncodeToString(b)))
	}
	sandboxtest.Exec(t,
		"CREATE TABLE "+sqltext.Table(db, "subparts")+` (id INT NOT NULL, k INT NOT NULL, PRIMARY KEY (id, k), KEY kk (k))
		PARTITION BY RANGE (id) SUBPARTITION BY HASH (k) (
		PARTITION Lo VALUES LESS THAN (500) (SUBPARTITION SubA, SUBPARTITION sb),
		PARTITION hi VALUES LESS THAN MAXVALUE (SUBPARTITION sc, SUBPARTITION sd))`,
		"INSERT INTO "+sqltext.Table(db, "subparts")+" SELECT seq, seq MOD 7 FROM "+srv.Series(db, 1, 1000)+" ORDER BY seq",
		"CREATE TABLE "+sqltext.Table(db, "wide")+" (id INT NOT NULL PRIMARY KEY, k INT, KEY kk (k), "+strings.Join(comments, ", ")+") PARTITION BY HASH (id) PARTITIONS 3",
		"INSERT INTO "+sqltext.Table(db, "wide")+" (id, k) SELECT seq, seq FROM "+srv.Series(db, 1, 1000)+" ORDER BY seq",
		"FLUSH TABLES "+sqltext.Table(db, "subparts")+", "+sqltext.Table(db, "wide")+" FOR EXPORT", "UNLOCK TABLES",
	)
	// Every index's root in the pool, where the server names its index.
	for _, table := range []string{"subparts", "wide"} {
		for _, ix := range []string{"PRIMARY", "kk"} {
			sandboxtest.Exec(t, "SELECT COUNT(*) FROM "+sqltext.Table(db, table)+" FORCE INDEX ("+sqltext.Ident(ix)+")")
		}
	}
	for table, parts := range map[string]int{"subparts": 4, "wide": 3} {
		files := partitionFiles(t, db, table)
		if len(files) != parts {
			t.Fatalf("%s: %d partition files, want %d", table, len(files), parts)
		}
		if srv.IsMariaDB() {
			if _, _, err := ibd.PartitionRoots(files[0].path, srv.PageSize, table); !errors.Is(err, ibd.ErrUnreadable) {
				t.Errorf("%s on %s: want ErrUnreadable (no SDI), got %v", table, srv, err)
			}
			continue
		}
		// The SDI is in one of the partitions' files, most often the first's by space id,
		// not always: a CI run found none in the first (1 run in 12 of this test on MySQL
		// 9.7.4, subparts). Each file is read as it is on disk, after the flush above.
		var roots map[uint32]map[string]ibd.Index
		var holder []string
		for _, f := range files {
			r, found, err := ibd.PartitionRoots(f.path, srv.PageSize, table)
			if err != nil {
				t.Fatalf("%s: %s: %v", table, f.path, err)
			}
			if found {
				roots = r
				holder = append(holder, f.path)
			}
		}
		if len(holder) != 1 {
			t.Fatalf("%s: %d of its %d partition files hold its SDI (%v), want one", table, len(holder), len(files), holder)
		}
		if table == "wide" && sdiBlobPages(t, holder[0], srv.PageSize) == 0 {
			t.Errorf("%s: the SDI is on its page: the test reads no SDI BLOB page", table)
		}
		named := 0
		for _, f := range files {
			byName := roots[f.space]
			if len(byName) != 2 || byName["PRIMARY"].Root == 0 || byName["kk"].Root == 0 {
				t.Errorf("%s space %d: roots %v, want PRIMARY and kk", table, f.space, byName)
				continue
			}
			m, err := ibd.Open(f.path, srv.PageSize, []ibd.Index{byName["PRIMARY"], byName["kk"]})
			if err != nil {
				t.Fatalf("%s: %v", f.path, err)
			}
			if len(m.Missing) != 0 || len(m.Indexes) != 2 {
				t.Errorf("%s: the file's roots do not name these ids: found %v, missing %v (%v)", f.path, m.Indexes, m.Missing, byName)
			}
			for name, ix := range byName {
				var server string
				err := sandboxtest.Conn(t).DB.QueryRowContext(ctx, "SELECT COALESCE(INDEX_NAME, '') FROM information_schema.INNODB_BUFFER_PAGE WHERE SPACE = ? AND PAGE_NUMBER = ?", f.space, ix.Root).Scan(&server)
				if err != nil {
					continue // not resident
				}
				named++
				if server != name {
					t.Errorf("%s space %d page %d: the server says index %q, the SDI %q", table, f.space, ix.Root, server, name)
				}
			}
		}
		if named == 0 {
			t.Errorf("%s: no root page resident to check its index's name", table)
		}
	}
}

// sdiBlobPages counts the pages of type FIL_PAGE_SDI_BLOB (18) in the file at path.
func sdiBlobPages(t *testing.T, path string, pageSize int) int {
	return sandboxtest.FilePagesOfType(t, path, pageSize, 18)
}

type partFile struct {
	space uint32
	path  string
}

// partitionFiles lists the files of a partitioned table's parts in the order they were
// created (by space id), on MySQL or MariaDB.
func partitionFiles(t *testing.T, db, table string) []partFile {
	t.Helper()
	srv := sandboxtest.Flavor(t)
	q := "SELECT d.SPACE, d.PATH FROM information_schema.INNODB_DATAFILES d JOIN information_schema.INNODB_TABLES s USING (SPACE) WHERE s.NAME LIKE ? ORDER BY d.SPACE"
	if srv.IsMariaDB() {
		q = "SELECT SPACE, FILENAME FROM information_schema.INNODB_SYS_TABLESPACES WHERE NAME LIKE ? ORDER BY SPACE"
	}
	rows, err := sandboxtest.Conn(t).DB.QueryContext(context.Background(), q, db+"/"+table+srv.PartitionSeparator()+"%")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []partFile
	for rows.Next() {
		var f partFile
		if err := rows.Scan(&f.space, &f.path); err != nil {
			t.Fatal(err)
		}
		if !filepath.IsAbs(f.path) {
			f.path = filepath.Join(sandboxtest.Server(t).Datadir, f.path)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

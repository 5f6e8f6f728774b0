package dumpfile_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/dumpfile"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

func TestMain(m *testing.M) { sandboxtest.Main(m, sandboxtest.Options{PoolSize: 64 << 20}) }

func TestWriteParseRoundTrip(t *testing.T) {
	pages := []dumpfile.PageID{dumpfile.MakePageID(0, 3), dumpfile.MakePageID(7, 4294967295), dumpfile.MakePageID(4294967294, 0)}
	path := filepath.Join(t.TempDir(), "ib_buffer_pool")
	if err := dumpfile.Write(path, pages); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if string(b) != "0,3\n7,4294967295\n4294967294,0\n" {
		t.Errorf("file %q", b)
	}
	got, err := dumpfile.Parse(strings.NewReader(string(b)))
	if err != nil || len(got) != 3 || got[1].Space() != 7 || got[1].Page() != 4294967295 {
		t.Errorf("parse: %v %v", got, err)
	}
	for _, bad := range []string{"1;2\n", "1,x\n", "-1,2\n", "1,2,3\n", "4294967296,1\n"} {
		t.Run(bad, func(t *testing.T) {
			if _, err := dumpfile.Parse(strings.NewReader(bad)); err == nil {
				t.Errorf("%q parsed", bad)
			}
		})
	}
}

// The server writes its whole LRU list, most recently used first; the variables and the
// server's own dump file are as they were afterwards.
func TestDumpIsTheLRUListAndPutsEverythingBack(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	srv := conn.Server
	db := sandboxtest.Schema(t)
	older, newer := sqltext.Table(db, "older"), sqltext.Table(db, "newer")
	sandboxtest.Exec(t,
		"CREATE TABLE "+older+" (id INT PRIMARY KEY, pad CHAR(200))",
		"INSERT INTO "+older+" SELECT seq, 'o' FROM "+srv.Series(db, 1, 20000)+" ORDER BY seq",
		"CREATE TABLE "+newer+" LIKE "+older,
		"INSERT INTO "+newer+" SELECT seq, 'n' FROM "+srv.Series(db, 1, 20000)+" ORDER BY seq",
		"SELECT COUNT(*) FROM "+older,
		"SELECT COUNT(*) FROM "+newer,
	)
	spaceOf := func(name string) uint32 {
		var id uint32
		if err := conn.DB.QueryRowContext(ctx, "SELECT SPACE FROM "+srv.TablesTable()+" WHERE NAME = ?", db+"/"+name).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	oldSpace, newSpace := spaceOf("older"), spaceOf("newer")

	// A dump file of the server's own that must survive (MariaDB's fixed file).
	var original []byte
	if !srv.DumpFileDynamic() {
		original = []byte("0,1\n")
		if err := os.WriteFile(srv.DumpFilePath(), original, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var filenameBefore string
	var pctBefore int
	conn.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_buffer_pool_filename, @@GLOBAL.innodb_buffer_pool_dump_pct").Scan(&filenameBefore, &pctBefore)

	log := logx.New(os.Stderr, false)
	b, err := dumpfile.Borrow(ctx, conn, log)
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.Dump(ctx, conn, log)
	restored := b.Return()
	if err != nil {
		t.Fatal(err)
	}
	// Every page of the test's tables the server's page view lists is in the dump (which
	// leaves out, on MariaDB, the temporary tablespace).
	inDump := map[dumpfile.PageID]bool{}
	for _, p := range c.Pages {
		inDump[p] = true
	}
	rows, err := conn.DB.QueryContext(ctx, "SELECT SPACE, PAGE_NUMBER FROM information_schema.INNODB_BUFFER_PAGE_LRU WHERE SPACE IN (?, ?)", oldSpace, newSpace)
	if err != nil {
		t.Fatal(err)
	}
	var listed, missing int
	for rows.Next() {
		var sp, pg uint32
		if err := rows.Scan(&sp, &pg); err != nil {
			t.Fatal(err)
		}
		listed++
		if !inDump[dumpfile.MakePageID(sp, pg)] {
			missing++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if listed < 100 || missing > listed/100 {
		t.Errorf("%d of the tables' %d resident pages are not in the dump", missing, listed)
	}
	var sumOld, nOld, sumNew, nNew float64
	for i, p := range c.Pages {
		switch p.Space() {
		case oldSpace:
			sumOld += float64(i)
			nOld++
		case newSpace:
			sumNew += float64(i)
			nNew++
		}
	}
	if nOld < 50 || nNew < 50 {
		t.Fatalf("the tables' pages are not in the dump: %v older, %v newer", nOld, nNew)
	}
	if sumNew/nNew >= sumOld/nOld {
		t.Errorf("the table read last is not nearer the head of the list: mean position %.0f (newer) vs %.0f (older)", sumNew/nNew, sumOld/nOld)
	}
	t.Logf("%s: %d pages in %.3f s; %s", srv, len(c.Pages), c.Seconds, restored)

	var filenameAfter string
	var pctAfter int
	conn.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_buffer_pool_filename, @@GLOBAL.innodb_buffer_pool_dump_pct").Scan(&filenameAfter, &pctAfter)
	if filenameAfter != filenameBefore || pctAfter != pctBefore {
		t.Errorf("variables after: filename %q pct %d, before %q %d", filenameAfter, pctAfter, filenameBefore, pctBefore)
	}
	if original != nil {
		if got, err := os.ReadFile(srv.DumpFilePath()); err != nil || string(got) != string(original) {
			t.Errorf("the server's own dump file is %q (%v), was %q", got, err, original)
		}
	}
	if left := sandboxtest.InnowarmFilesIn(srv.Datadir); len(left) > 0 {
		t.Errorf("files left in the datadir: %v", left)
	}
}

package dumpfile

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// serverDumpPath is the file the server's own dump lives in, and a marker written there
// before each case (a dump of the server's that must survive).
func serverDumpPath(t *testing.T, conn *connection.Conn) string {
	t.Helper()
	var name string
	if err := conn.DB.QueryRow("SELECT @@GLOBAL.innodb_buffer_pool_filename").Scan(&name); err != nil {
		t.Fatal(err)
	}
	return dumpPathOf(conn.Server.Datadir, name)
}

const marker = "0,1\n"

// dumpNow has the server write its dump (as a DBA's SET GLOBAL would) and waits until it
// is written.
func dumpNow(t *testing.T, conn *connection.Conn) {
	t.Helper()
	var before string
	conn.DB.QueryRow("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_dump_status'").Scan(new(string), &before)
	// The status names the second a dump completed: the next one must complete in another.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1100 * time.Millisecond)))
	if _, err := conn.DB.Exec("SET GLOBAL innodb_buffer_pool_dump_now = ON"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		var status string
		conn.DB.QueryRow("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_dump_status'").Scan(new(string), &status)
		if strings.Contains(strings.ToLower(status), "completed") && status != before {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the server's dump did not complete within a minute")
}

// settings are the dump's variables as text; a test that reads them first puts them back
// when it ends, whatever happened.
func settings(t *testing.T, conn *connection.Conn) string {
	t.Helper()
	var origName string
	var origPct int
	if err := conn.DB.QueryRow("SELECT @@GLOBAL.innodb_buffer_pool_filename, @@GLOBAL.innodb_buffer_pool_dump_pct").Scan(&origName, &origPct); err == nil && !strings.HasPrefix(origName, tempPrefix) && origPct != 100 {
		t.Cleanup(func() {
			if conn.Server.DumpFileDynamic() {
				conn.DB.Exec("SET GLOBAL innodb_buffer_pool_filename = ?", origName)
			}
			conn.DB.Exec("SET GLOBAL innodb_buffer_pool_dump_pct = ?", origPct)
			os.Remove(filepath.Join(conn.Server.Datadir, stateName))
		})
	}
	var name string
	var pct int
	if err := conn.DB.QueryRow("SELECT @@GLOBAL.innodb_buffer_pool_filename, @@GLOBAL.innodb_buffer_pool_dump_pct").Scan(&name, &pct); err != nil {
		t.Fatal(err)
	}
	return name + " " + string(rune('0'+pct/10)) + string(rune('0'+pct%10))
}

func leftovers(t *testing.T, conn *connection.Conn) []string {
	return sandboxtest.InnowarmFilesIn(conn.Server.Datadir)
}

// TestServerDumpDuringBorrowIsKept: a dump the server writes while innowarm holds its dump
// file (a DBA's dump_now; a shutdown's is the same write) is the server's newest and is
// kept where the server keeps its dump, not replaced by the older file innowarm set aside
// (MariaDB) nor deleted with innowarm's file (MySQL). The list innowarm wrote is reported
// replaced.
func TestServerDumpDuringBorrowIsKept(t *testing.T) {
	conn := sandboxtest.Conn(t)
	path := serverDumpPath(t, conn)
	if err := os.WriteFile(path, []byte(marker), 0o644); err != nil {
		t.Fatal(err)
	}
	before := settings(t, conn)
	b := borrowWithList(t, conn, MakePageID(0, 0), MakePageID(0, 1))
	if b.ListReplaced() {
		t.Fatal("innowarm's own list taken for a dump of the server's")
	}
	dumpNow(t, conn)
	if !b.ListReplaced() {
		t.Error("the server's dump over innowarm's list was not seen")
	}
	if err := b.WriteList([]PageID{MakePageID(0, 2)}); err != nil {
		t.Fatal(err)
	}
	said := b.Return()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) == marker || string(got) == "0,2\n" || !strings.Contains(string(got), ",") {
		t.Errorf("the server's dump file after the borrow: %q (%s): want the dump the server wrote during it", firstLines(got), said)
	}
	if after := settings(t, conn); after != before {
		t.Errorf("settings %s after, %s before", after, before)
	}
	if left := leftovers(t, conn); len(left) > 0 {
		t.Errorf("files left in the datadir: %v", left)
	}
	t.Logf("%s", said)
}

// TestKilledBorrowIsRepaired: an innowarm killed while it holds the dump file (its lock
// released by the server, nothing put back, innodb_buffer_pool_dump_pct left at 100) is
// repaired by the next borrow: the server's file (or the variable) and the dump percentage
// as they were, or, when the server wrote a dump since, that dump kept.
func TestKilledBorrowIsRepaired(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	path := serverDumpPath(t, conn)
	for _, dumpedSince := range []bool{false, true} {
		if err := os.WriteFile(path, []byte(marker), 0o644); err != nil {
			t.Fatal(err)
		}
		before := settings(t, conn)
		b := borrowWithList(t, conn, MakePageID(0, 3))
		// As DumpEach does before it asks for a dump, then killed.
		var pct int
		conn.DB.QueryRow("SELECT @@GLOBAL.innodb_buffer_pool_dump_pct").Scan(&pct)
		b.state.DumpPct = pct
		b.saveState()
		if _, err := conn.DB.Exec("SET GLOBAL innodb_buffer_pool_dump_pct = 100"); err != nil {
			t.Fatal(err)
		}
		b.lock.Close() // the server releases a dead client's lock
		if dumpedSince {
			dumpNow(t, conn)
		}

		var out strings.Builder
		b2, err := Borrow(ctx, conn, logx.New(&out, false))
		if err != nil {
			t.Fatal(err)
		}
		said := b2.Return()
		got, _ := os.ReadFile(path)
		switch {
		case !dumpedSince && string(got) != marker:
			t.Errorf("after a killed borrow: the server's dump file is %q, was %q (%s; log %s)", firstLines(got), marker, said, out.String())
		case dumpedSince && (string(got) == marker || string(got) == "0,3\n"):
			t.Errorf("after a killed borrow and a dump of the server's: the file is %q, want that dump (%s; log %s)", firstLines(got), said, out.String())
		}
		if after := settings(t, conn); after != before {
			t.Errorf("dumped since %v: settings %s after, %s before (log %s)", dumpedSince, after, before, out.String())
		}
		if left := leftovers(t, conn); len(left) > 0 {
			t.Errorf("dumped since %v: files left in the datadir: %v", dumpedSince, left)
		}
		if !strings.Contains(out.String(), "killed") {
			t.Errorf("dumped since %v: the repair was not logged: %s", dumpedSince, out.String())
		}
	}
}

// borrowWithList borrows the server's dump file and writes pages as innowarm's list.
func borrowWithList(t *testing.T, conn *connection.Conn, pages ...PageID) *Borrowed {
	t.Helper()
	b, err := Borrow(context.Background(), conn, logx.New(&strings.Builder{}, false))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.WriteList(pages); err != nil {
		t.Fatal(err)
	}
	return b
}

func firstLines(b []byte) string {
	s := string(b)
	if i := strings.IndexByte(s, '\n'); i >= 0 && len(s) > 40 {
		return s[:i] + " ..."
	}
	return s
}

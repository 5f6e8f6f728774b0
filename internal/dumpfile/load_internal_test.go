package dumpfile

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/flavor"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// While the server loads its buffer pool (its own load at startup, or one a killed innowarm
// left running) the dump file is not borrowed: MySQL writes no dump asked for during a load,
// so the wait for it ran for up to 10 minutes, and the request, left pending by an
// interrupt, later wrote an empty list over the server's dump file. Check says why, and the
// callers read INNODB_BUFFER_PAGE_LRU or warm by scans instead.
func TestNoBorrowDuringALoad(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	settings(t, conn) // put back when the test ends
	sandboxtest.Exec(t, "DROP DATABASE IF EXISTS dl", "CREATE DATABASE dl",
		"CREATE TABLE dl.t (id INT PRIMARY KEY, pad CHAR(200) CHARACTER SET latin1 NOT NULL DEFAULT '')",
		"INSERT INTO dl.t (id) SELECT seq FROM "+conn.Server.Series("dl", 1, 150000)+" ORDER BY seq",
		"SET GLOBAL innodb_buffer_pool_dump_pct = 100")
	t.Cleanup(func() { sandboxtest.Exec(t, "DROP DATABASE IF EXISTS dl") })
	sb := sandboxtest.Server(t)
	status := func(conn *connection.Conn) string {
		var s string
		if err := conn.DB.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_load_status'").Scan(new(string), &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	windows := 0
	for try := 0; try < 3 && windows == 0; try++ {
		conn := sandboxtest.Conn(t)
		sandboxtest.Exec(t, "SELECT COUNT(*) FROM dl.t FORCE INDEX (PRIMARY)")
		dumpNow(t, conn)
		if _, err := sb.ColdRestart(ctx); err != nil {
			t.Fatal(err)
		}
		conn = sandboxtest.Reconnect(t)
		sandboxtest.Exec(t, "SET GLOBAL innodb_buffer_pool_load_now = ON")
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
			s1 := status(conn)
			if flavor.LoadFinished(s1) {
				break
			}
			a := Check(ctx, conn)
			s2 := status(conn)
			if !flavor.LoadInProgress(s1) || !flavor.LoadInProgress(s2) {
				continue
			}
			windows++
			if a.OK {
				t.Fatalf("Check allowed a borrow during a load (status %q, then %q)", s1, s2)
			}
			if !strings.HasPrefix(a.Reason, "the server is loading its buffer pool") {
				t.Errorf("Check's reason during a load: %q", a.Reason)
			}
		}
	}
	if windows == 0 {
		t.Fatal("three loads of the table's pages ended before Check could run during one")
	}
	for deadline := time.Now().Add(time.Minute); !flavor.LoadFinished(status(sandboxtest.Conn(t))) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if a := Check(ctx, sandboxtest.Conn(t)); !a.OK {
		t.Errorf("after the load, Check still refuses: %s", a.Reason)
	}
}

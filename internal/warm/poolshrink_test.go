package warm_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/warm"
)

// shrinkWhenRead sets innodb_buffer_pool_size to bytes once the server has read pages more
// pages since it was called (the warm is under way), trying again while the server refuses
// (MariaDB gives up a shrink whose pages are all in use, MDEV-37263); it says when it did.
func shrinkWhenRead(ctx context.Context, db *sql.DB, pages, bytes int64) <-chan error {
	done := make(chan error, 1)
	read := func() (int64, error) {
		var name string
		var n int64
		err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_pages_read'").Scan(&name, &n)
		return n, err
	}
	go func() {
		r0, err := read()
		for err == nil {
			var n int64
			if n, err = read(); err == nil && n-r0 >= pages {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		for tries := 0; err == nil && tries < 100; tries++ {
			if _, err = db.ExecContext(ctx, fmt.Sprintf("SET GLOBAL innodb_buffer_pool_size = %d", bytes)); err == nil {
				break
			}
			err = nil
			time.Sleep(100 * time.Millisecond)
		}
		done <- err
	}()
	return done
}

// A warm planned on a 128 MiB pool keeps to the pool the server has once it is shrunk to
// 48 MiB while the warm runs (SET GLOBAL innodb_buffer_pool_size; MariaDB 10.11.12+ and
// 11.8 also shrink it by themselves under memory pressure): the budget is cut to what was
// read and the room the smaller pool has left, the units (or native pages) past it are left
// out, the pages read stay within it (give or take the units already running), and the
// result says what happened. Scans and the server's own loader, at a --max-rate that makes
// the warm last long enough for the shrink to land in it.
func TestWarmKeepsToAPoolShrunkUnderIt(t *testing.T) {
	ctx := context.Background()
	srv := sandboxtest.Flavor(t)
	sb := sandboxtest.SecondServer(t, 128<<20, srv.PoolResizeArgs(16<<20)...)
	conn, err := sb.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { conn.Close() }()
	if conn.Server.ElasticPool() != conn.Server.IsMariaDB() {
		t.Errorf("%s: ElasticPool() = %v; every MariaDB the tests run has MDEV-29445's pool", conn.Server, conn.Server.ElasticPool())
	}
	if _, err := conn.DB.ExecContext(ctx, "CREATE DATABASE rz"); err != nil {
		t.Fatal(err)
	}
	// 12 tables of about 400 pages (latin1 CHAR(200): 70 rows a page on every flavor):
	// 4,800 pages, which the 128 MiB pool's room holds and the 48 MiB one does not.
	const tables = 12
	for i := 0; i < tables; i++ {
		q := fmt.Sprintf("rz.t%02d", i)
		for _, stmt := range []string{
			"CREATE TABLE " + q + " (id INT PRIMARY KEY, pad CHAR(200) CHARACTER SET latin1)",
			"INSERT INTO " + q + " SELECT seq, REPEAT('p', 200) FROM " + conn.Server.Series("rz", 1, 28000) + " ORDER BY seq",
		} {
			if _, err := conn.DB.ExecContext(ctx, stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
	}
	sock := []string{"--no-defaults", "-S", sb.Socket, "-u", "root"}
	for _, method := range []string{warm.MethodScan, warm.MethodNative} {
		t.Run(method, func(t *testing.T) {
			conn.Close()
			if _, err := sb.ColdRestart(ctx); err != nil {
				t.Fatal(err)
			}
			if conn, err = sb.Connect(ctx); err != nil {
				t.Fatal(err)
			}
			before, err := bufferpool.ReadTotals(ctx, conn)
			if err != nil {
				t.Fatal(err)
			}
			shrunk := shrinkWhenRead(ctx, conn.DB, 800, 48<<20)
			r := sandboxtest.CLI(t, sandboxtest.Run{Timeout: 5 * time.Minute}, append([]string{"warm", "-D", "rz", "--method", method, "--max-rate", "8MB/s", "--parallel", "2", "--json"}, sock...)...)
			if err := <-shrunk; err != nil {
				t.Fatalf("shrink the pool: %v", err)
			}
			pages := sandboxtest.ResizePool(t, conn.DB, 48<<20)
			if r.Code != 0 {
				t.Fatalf("warm: exit %d: %s\n%s", r.Code, r.Stderr, r.Stdout)
			}
			var doc struct{ Result warm.Result }
			sandboxtest.JSON(t, []byte(r.Stdout), &doc)
			res := doc.Result
			pr := res.PoolResize
			if pr == nil {
				t.Fatalf("the pool shrank from %d to %d pages during the warm, and the result does not say so: %s", before.PagesTotal, pages, r.Stdout)
			}
			// The room a 48 MiB pool can have: all of it free, less what the page cleaner keeps.
			empty := before
			empty.PagesTotal, empty.PagesFree = pages, pages
			room, reserve := empty.Room()
			slack := int64(400 * 2) // the units running when the budget was cut: one table each
			if method == warm.MethodNative {
				slack = 8 << 20 / 16384 // a second at --max-rate: the load is stopped at its next poll
			}
			t.Logf("%s, %s: pool %d -> %d pages %.1f s in, %d read by then; budget %d -> %d pages (room at most %d, %d kept free); %d read in all; %d units (%d pages) left out, stopped %v; %s",
				conn.Server, method, pr.FromPages, pr.ToPages, pr.AtSeconds, pr.ReadBefore, pr.BudgetBefore, pr.BudgetAfter, room, reserve, res.PagesRead, pr.LeftOutUnits, pr.LeftOutPages, pr.Stopped, res.Stopped)
			switch {
			case pr.FromPages != before.PagesTotal || pr.ToPages != pages:
				t.Errorf("resize reported from %d to %d pages; the pool went from %d to %d", pr.FromPages, pr.ToPages, before.PagesTotal, pages)
			case pr.BudgetAfter >= pr.BudgetBefore || pr.BudgetAfter > pr.ReadBefore+room:
				t.Errorf("budget %d -> %d pages after %d read: want it cut to at most what was read and the smaller pool's room (%d)", pr.BudgetBefore, pr.BudgetAfter, pr.ReadBefore, room)
			case res.PagesRead > pr.BudgetAfter+slack:
				t.Errorf("%d pages read: over the cut budget %d and the %d pages running when it was cut", res.PagesRead, pr.BudgetAfter, slack)
			case pr.LeftOutUnits == 0 && pr.LeftOutPages == 0 && !pr.Stopped:
				t.Errorf("nothing left out and the run not stopped: the planned 4,800 pages do not fit the cut budget of %d", pr.BudgetAfter)
			}
			said := res.Stopped + " " + strings.Join(res.Notes, " ")
			if !strings.Contains(said, fmt.Sprintf("the buffer pool shrank from %d to %d pages", before.PagesTotal, pages)) {
				t.Errorf("the result does not say the pool shrank: stopped %q, notes %q", res.Stopped, res.Notes)
			}
			if method == warm.MethodScan && pr.LeftOutUnits > 0 {
				var left int64
				for _, l := range res.LeftOut {
					if strings.Contains(l.Reason, "shrank") {
						left += l.Pages
					}
				}
				if left != pr.LeftOutPages {
					t.Errorf("left out for the pool: %d pages in the list, %d in the summary", left, pr.LeftOutPages)
				}
			}
		})
	}
}

package warm_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/pacing"
	"github.com/innowarm/innowarm/internal/progress"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/warm"
)

// A warm that starts with its traffic (--wait-for-server) leaves a tenth of the pool to
// the traffic's own reads once the traffic has arrived: a manifest that fills the pool
// loads its hottest pages only, where the same warm without traffic takes every free page.
// A load that fills the pool under traffic makes the traffic's misses evict the pages it
// loaded first: its hottest.
func TestWarmUnderTrafficLeavesRoom(t *testing.T) {
	ctx := context.Background()
	sb := sandboxtest.SecondServer(t, 64<<20) // 4,096 pages
	conn, err := sb.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { conn.Close() }()
	execAll(t, conn,
		"CREATE DATABASE tr",
		// about 6,000 pages: more than the pool, so reading it leaves the pool full.
		"CREATE TABLE tr.big (id INT PRIMARY KEY, pad CHAR(200) CHARACTER SET latin1)",
		"INSERT INTO tr.big SELECT seq, REPEAT('b', 200) FROM "+conn.Server.Series("tr", 1, 380000)+" ORDER BY seq",
	)
	cold := coldRestartOf(t, sb, &conn)
	// The page cleaner keeps innodb_lru_scan_depth pages free (1,536 here by default,
	// more than a tenth of this small pool): its least, so that a scan fills the pool
	// and the default budget is nearly every free page, as in a large pool.
	leastFree := func() {
		t.Helper()
		if _, err := conn.DB.ExecContext(ctx, "SET GLOBAL innodb_lru_scan_depth = 100"); err != nil {
			t.Fatal(err)
		}
	}
	cold()
	leastFree()
	if _, err := conn.DB.ExecContext(ctx, "SELECT SUM(LENGTH(pad)) FROM tr.big"); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(sandboxtest.Dir(t), "full.manifest")
	if r := sandboxtest.CLI(t, sandboxtest.Run{}, "snapshot", "--no-defaults", "-S", sb.Socket, "-u", "root", "-D", "tr", "-o", path); r.Code != 0 {
		t.Fatalf("snapshot: %s", r.Stderr)
	}
	cold()
	leastFree()
	m, err := manifest.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := warm.Resolve(ctx, conn, m)
	if err != nil {
		t.Fatal(err)
	}
	// queries runs point selects until the returned function is called: traffic. It returns
	// once 20 have run, so that the plan's sample of the traffic finds it running however
	// late a busy machine starts the goroutine.
	queries := func() (stop func()) {
		qctx, cancel := context.WithCancel(ctx)
		done, running := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; qctx.Err() == nil; i++ {
				var pad string
				_ = conn.DB.QueryRowContext(qctx, "SELECT pad FROM tr.big WHERE id = ?", 1+i%1000).Scan(&pad)
				if i == 20 {
					close(running)
				}
			}
		}()
		select {
		case <-running:
		case <-time.After(time.Minute):
			cancel()
			<-done
			t.Fatal("20 point selects did not run in a minute")
		}
		return func() { cancel(); <-done }
	}
	for _, c := range []struct {
		name           string
		expect, arrive bool // --wait-for-server; traffic running when the plan is made
		room           bool // a tenth of the pool left to the traffic
	}{
		{"no traffic expected", false, false, false},
		{"traffic expected, none yet (a readiness gate holds it back)", true, false, false},
		{"traffic expected and arrived", true, true, true},
	} {
		stop := func() {}
		if c.arrive {
			stop = queries()
		}
		mp, err := warm.PlanFromManifest(ctx, conn, r, warm.MethodNative, warm.Options{ExpectTraffic: c.expect}, false)
		stop()
		if err != nil {
			t.Fatalf("%s: plan: %v", c.name, err)
		}
		np := mp.Native
		if np == nil {
			t.Fatalf("%s: no native plan", c.name)
		}
		room := np.FreePages - np.PoolPages/10
		t.Logf("%s: %d manifest pages, pool %d, free %d, budget %d (%s), %d requested, %d left out", c.name, len(m.Entries), np.PoolPages, np.FreePages, np.BudgetPages, np.BudgetSource, np.Requested, np.Manifest.LeftOut)
		if int64(len(m.Entries)) < room {
			t.Fatalf("the manifest holds %d pages, fewer than %d: it does not fill the pool", len(m.Entries), room)
		}
		if c.room {
			if np.BudgetPages > room || np.Requested > room || !strings.Contains(np.BudgetSource, "traffic's own reads") || np.Manifest.LeftOut == 0 {
				t.Errorf("%s: budget %d (%s), %d requested, %d left out: want at most %d, a tenth of the pool left to the traffic", c.name, np.BudgetPages, np.BudgetSource, np.Requested, np.Manifest.LeftOut, room)
			}
		} else if np.BudgetPages <= room || strings.Contains(np.BudgetSource, "traffic") {
			t.Errorf("%s: budget %d (%s): want the free pages less the page cleaner's reserve, above %d", c.name, np.BudgetPages, np.BudgetSource, room)
		}
	}

	// Under traffic an unpaced load makes the pages the traffic touches young
	// (innodb_old_blocks_time=0), out of the way of the pages it loads after them; a load
	// paced by --nice does not: the traffic's misses, not the load, fill the pool then, and
	// making each of them young at its first touch lets the long tail into the young
	// sublist (5-6% of a disk-bound server's hot throughput, measured).
	for _, c := range []struct {
		name  string
		pace  pacing.Config
		young bool
	}{
		{"--nice", pacing.UnderTraffic(pacing.Config{}), false},
		{"unpaced", pacing.Config{}, true},
	} {
		cold()
		leastFree()
		// Planned before the traffic comes (a warm started with its server), the load fills
		// the pool: it is tight, hottest first.
		mp, err := warm.PlanFromManifest(ctx, conn, r, warm.MethodNative, warm.Options{ExpectTraffic: true}, false)
		if err != nil {
			t.Fatalf("%s: plan: %v", c.name, err)
		}
		stop := queries()
		var before string
		if err := conn.DB.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_load_status'").Scan(new(string), &before); err != nil {
			stop()
			t.Fatal(err)
		}
		// The load's variables are set before its first chunk: once the server loads, the
		// paced one has shown what it does, and need not go on at its floor.
		lctx, cancel := context.WithCancel(ctx)
		var out sandboxtest.SyncBuffer
		done := make(chan error, 1)
		go func() {
			_, err := mp.Run(lctx, conn, warm.RunOptions{Pacing: c.pace, Catalog: r.Catalog, Progress: progress.Config{Out: &out}})
			done <- err
		}()
		var err2 error
		select {
		case err2 = <-done:
		case <-waitLoadStarted(ctx, conn, before):
			cancel()
			err2 = <-done
		}
		cancel()
		stop()
		if err2 != nil && !errors.Is(err2, context.Canceled) {
			t.Fatalf("%s: load: %v\n%s", c.name, err2, out.String())
		}
		if got := strings.Contains(out.String(), "innodb_old_blocks_time set to 0"); got != c.young {
			t.Errorf("%s under traffic: innodb_old_blocks_time set to 0 %v, want %v; the plan: %d tiers, %s; the warm's log:\n%s", c.name, got, c.young, mp.Native.Tiers, strings.Join(mp.Native.Notes, "; "), out.String())
		}
		var now int
		if err := conn.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_old_blocks_time").Scan(&now); err != nil || now != 1000 {
			t.Errorf("%s: innodb_old_blocks_time %d after the load (%v), want 1000 put back", c.name, now, err)
		}
	}
}

// waitLoadStarted is closed once the server's load status is no longer before.
func waitLoadStarted(ctx context.Context, conn *connection.Conn, before string) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		for ctx.Err() == nil {
			var s string
			if conn.DB.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_load_status'").Scan(new(string), &s) == nil && s != before {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return ch
}

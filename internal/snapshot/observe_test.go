package snapshot_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/snapshot"
	"github.com/innowarm/innowarm/internal/sqltext"
)

func TestChurning(t *testing.T) {
	for _, c := range []struct {
		read      int64
		dt        time.Duration
		poolPages int64
		want      bool
	}{
		{0, time.Second, 8192, false},
		{63, 10 * time.Millisecond, 1024, false},   // a capture's own few reads say nothing
		{64, 100 * time.Millisecond, 8192, true},   // 640 reads/s: a quarter of 8,192 pages in 3.2 s
		{100, time.Second, 65536, false},           // a trickle: a quarter of the pool in 164 s
		{5000, time.Second, 65536, true},           // 5,000 reads/s: a quarter in 3.3 s
		{1000, 3 * time.Second, 1 << 20, false},    // 333 reads/s in a 16 GiB pool: 787 s
		{1 << 20, 10 * time.Second, 1 << 20, true}, // the whole pool in 10 s
		{64, 0, 8192, false},                       // no time measured
		{64, time.Second, 0, false},                // no pool size known
		{300, 2 * time.Second, 16384, true},        // 150 reads/s × 60 s ≥ 16,384 / 4
	} {
		if got := snapshot.Churning(c.read, c.dt, snapshot.ObserveAuto, c.poolPages); got != c.want {
			t.Errorf("Churning(%d reads in %s, pool %d pages) = %v, want %v", c.read, c.dt, c.poolPages, got, c.want)
		}
	}
}

// The unsettled source, live: a pool full of pages a report made young (as a bulk load
// leaves them), and a workload of point selects over a hot set larger than the old
// sublist, so that most of it is read and evicted again before it is touched twice. One
// look names what is resident at that moment; snapshot's default (--observe auto) sees the
// pool turning over, watches it, and its manifest must name the hot set within what a
// warm of this pool would load. The hot set is found afterwards on the same server, cold,
// with the same pages read once into a clean pool.
func TestObserveCapturesAnUnsettledHotSet(t *testing.T) {
	ctx := context.Background()
	srv := sandboxtest.Flavor(t)
	const pool = 32 << 20
	// A small free-page target, so that the clean pool the hot set is measured in holds all
	// of it (the default, 1,024 or more free pages, is half this pool).
	sb := sandboxtest.SecondServer(t, pool, "--innodb-lru-scan-depth=128")
	conn, err := sb.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	exec := func(c *connection.Conn, qs ...string) {
		t.Helper()
		for _, q := range qs {
			if _, err := c.DB.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	// latin1 CHAR(200): about 70 rows a page on every flavor. t: ~6,000 pages (3x the
	// 2,048-page pool), report: ~3,000.
	const rows, hotIDs = 420_000, 1_300
	exec(conn, "CREATE DATABASE un",
		"CREATE TABLE un.t (id INT PRIMARY KEY, pad CHAR(200) CHARACTER SET latin1)",
		"INSERT INTO un.t SELECT seq, REPEAT('t', 200) FROM "+srv.Series("un", 1, rows)+" ORDER BY seq",
		"CREATE TABLE un.report (id INT PRIMARY KEY, pad CHAR(200) CHARACTER SET latin1)",
		"INSERT INTO un.report SELECT seq, REPEAT('r', 200) FROM "+srv.Series("un", 1, 210_000)+" ORDER BY seq")
	// One id every 4.75 leaf pages of t or so. Every fourth id is the last record of its
	// leaf, and InnoDB's search for it reads the next leaf too: about 1,630 pages,
	// scattered.
	ids := make([]int64, hotIDs)
	for i := range ids {
		ids[i] = int64(i)*(rows/hotIDs) + 17
	}
	readPages := func(c *connection.Conn) int64 {
		st, err := c.GlobalStatus(ctx, "Innodb_pages_read")
		if err != nil {
			t.Fatal(err)
		}
		return st["innodb_pages_read"]
	}
	pointPass := func(c *connection.Conn, rng *rand.Rand) error {
		for _, i := range rng.Perm(len(ids)) {
			var n int
			if err := c.DB.QueryRowContext(ctx, "SELECT LENGTH(pad) FROM un.t WHERE id = ?", ids[i]).Scan(&n); err != nil {
				return fmt.Errorf("point select %d: %w", ids[i], err)
			}
		}
		return nil
	}

	if _, err := sb.ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if conn, err = sb.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	// The report's pages made young, as a bulk load's are, by a scan with no old-block
	// delay: they fill the young sublist and nobody reads them again.
	exec(conn, "SET GLOBAL innodb_old_blocks_time = 0", "SELECT SUM(LENGTH(pad)) FROM un.report", "SELECT SUM(LENGTH(pad)) FROM un.report",
		"SET GLOBAL innodb_old_blocks_time = 1000")

	// The workload runs until the captures are done, on two sessions: one alone, starved
	// of CPU on a busy host, read too slowly for the pool to turn over (a 32 MiB pool turns
	// a quarter over a minute at 9 pages a second).
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var workMu sync.Mutex
	var workErr error
	var passes atomic.Int64
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(21, uint64(w)))
			for runCtx.Err() == nil {
				if err := pointPass(conn, rng); err != nil && runCtx.Err() == nil {
					workMu.Lock()
					workErr = err
					workMu.Unlock()
					return
				}
				passes.Add(1)
			}
		}()
	}
	// Let it read a quarter of the pool first, as a server would have when a user
	// snapshots it.
	start := readPages(conn)
	for deadline := time.Now().Add(2 * time.Minute); readPages(conn)-start < pool>>14/4; {
		if time.Now().After(deadline) {
			stop()
			wg.Wait()
			t.Fatalf("the workload read %d pages in 2 minutes (%v)", readPages(conn)-start, workErr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	dir := sandboxtest.Dir(t)
	onePath, observedPath := filepath.Join(dir, "one.manifest"), filepath.Join(dir, "observed.manifest")
	opts := func(path string) snapshot.Options {
		return snapshot.Options{Path: path, Filter: catalog.Filter{Schemas: []string{"un"}}, ToolVersion: "test", Log: logx.New(io.Discard, true)}
	}
	r0 := readPages(conn)
	one, err := snapshot.CaptureObserving(ctx, conn, opts(onePath), 0, false)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	observed, err := snapshot.CaptureObserving(ctx, conn, opts(observedPath), snapshot.ObserveAuto, true)
	read := readPages(conn) - r0
	stop()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if workErr != nil {
		t.Fatal(workErr)
	}
	if one.Observed != nil {
		t.Errorf("--observe 0 watched the pool: %+v", one.Observed)
	}
	if observed.Observed == nil {
		t.Fatalf("auto took one look while the workload read %d pages of a %d-page pool", read, pool>>14)
	}
	ob := observed.Observed
	t.Logf("%s: watched %.1f s, %d captures (%s; %s); %d pages read meanwhile, %d workload passes", conn.Server, ob.Seconds, ob.Captures, ob.Why, ob.Ended, ob.PagesRead, passes.Load())
	if ob.Captures < 3 {
		t.Errorf("the watch took %d captures, want 3 or more", ob.Captures)
	}

	// The hot set: t's pages the same ids read into a clean pool four times the size, so
	// that none is evicted. The 32 MiB pool cannot hold them all beside the server's own
	// pages (MySQL 9.7's dictionary and system pages take about a third of it): it kept
	// 1,258 to 1,299, depending on what the server had read before.
	if _, err := sb.Restart(ctx, 4*pool); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if conn, err = sb.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pointPass(conn, rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Fatal(err)
	}
	truthPath := filepath.Join(dir, "truth.manifest")
	if _, err := snapshot.Capture(ctx, conn, snapshot.Options{Path: truthPath, Filter: catalog.Filter{Schemas: []string{"un"}}, ToolVersion: "test", NoKeys: true}); err != nil {
		t.Fatal(err)
	}
	hot := tablePages(t, truthPath, "t")
	if len(hot) < hotIDs {
		t.Fatalf("a clean %d MiB pool kept %d pages of un.t after reading %d ids, each on a leaf of its own", 4*pool>>20, len(hot), hotIDs)
	}
	// What a warm of this pool loads: the hottest entries up to about 80% of it.
	room := int(pool>>14) * 8 / 10
	oneShare, observedShare := hotShare(t, onePath, "t", hot, room), hotShare(t, observedPath, "t", hot, room)
	t.Logf("hot set %d pages of un.t; within the first %d entries one look names %.1f%%, the watched pool %.1f%%", len(hot), room, 100*oneShare, 100*observedShare)
	if observedShare < 0.9 {
		t.Errorf("the watched pool's manifest names %.1f%% of the hot set within %d entries; want 90%% or more (one look: %.1f%%)", 100*observedShare, room, 100*oneShare)
	}
}

// tablePages is the set of a table's pages a manifest names.
func tablePages(t *testing.T, path, table string) map[[2]string]bool {
	t.Helper()
	m, err := manifest.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[[2]string]bool{}
	for _, e := range m.Entries {
		if o := m.Objects[e.Object]; o.Table == table {
			out[[2]string{o.Index, fmt.Sprint(e.Page)}] = true
		}
	}
	return out
}

// hotShare is the share of hot that a manifest's first room entries name.
func hotShare(t *testing.T, path, table string, hot map[[2]string]bool, room int) float64 {
	t.Helper()
	m, err := manifest.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	named := 0
	for i, e := range m.Entries {
		if i >= room {
			break
		}
		if o := m.Objects[e.Object]; o.Table == table && hot[[2]string{o.Index, fmt.Sprint(e.Page)}] {
			named++
		}
	}
	return float64(named) / float64(max(len(hot), 1))
}

// --observe DURATION watches that long, as its help says, also when nothing is read: it
// ended after 3-5 s of a 20 s window (a user test), which only auto's watch may do.
func TestObserveDurationWatchesItsWindow(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	db := sandboxtest.Schema(t)
	sandboxtest.Exec(t, "CREATE TABLE "+sqltext.Table(db, "idle")+" (id INT PRIMARY KEY)", "INSERT INTO "+sqltext.Table(db, "idle")+" VALUES (1)")
	path := filepath.Join(sandboxtest.Dir(t), "idle.manifest")
	// Longer than the 5 s of no reads after which an auto watch ends.
	res, err := snapshot.CaptureObserving(ctx, conn, snapshot.Options{Path: path, Filter: catalog.Filter{Schemas: []string{db}}, ToolVersion: "test", Log: logx.New(io.Discard, true)}, 6500*time.Millisecond, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Observed == nil || res.Observed.Ended != "the window ended" {
		t.Errorf("--observe 6.5s on an idle pool: %+v, want the window watched whole", res.Observed)
	}
}

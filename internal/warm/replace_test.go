package warm_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/warm"
)

// A pool full of pages nobody reads any more (an idle standby's) takes a manifest's pages:
// the server loads into its old sublist, whose tail it evicts, so without raising
// innodb_old_blocks_pct for the load only about 3/8 of a pool's worth of the load stays
// and the stale young pages stay too.
func TestWarmFromReplacesAStalePool(t *testing.T) {
	ctx := context.Background()
	sb := sandboxtest.SecondServer(t, 64<<20) // 4,096 pages
	conn, err := sb.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { conn.Close() }()
	srv := conn.Server
	execAll(t, conn,
		"CREATE DATABASE rs",
		// hot: about 2,200 pages, more than the old sublist holds; stale: more than the pool.
		// latin1: the same rows per page on every flavor (utf8mb4 CHAR rows vary in size).
		"CREATE TABLE rs.hot (id INT PRIMARY KEY, pad CHAR(200) CHARACTER SET latin1)",
		"INSERT INTO rs.hot SELECT seq, REPEAT('h', 200) FROM "+srv.Series("rs", 1, 140000)+" ORDER BY seq",
		"CREATE TABLE rs.stale (id INT PRIMARY KEY, pad CHAR(200) CHARACTER SET latin1)",
		"INSERT INTO rs.stale SELECT seq, REPEAT('s', 200) FROM "+srv.Series("rs", 1, 300000)+" ORDER BY seq",
	)
	sock := []string{"--no-defaults", "-S", sb.Socket, "-u", "root"}
	cold := coldRestartOf(t, sb, &conn)
	// The manifest: the hot table alone, read after a cold restart.
	cold()
	if _, err := conn.DB.ExecContext(ctx, "SELECT SUM(LENGTH(pad)) FROM rs.hot"); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(sandboxtest.Dir(t), "hot.manifest")
	if r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"snapshot", "-D", "rs", "--tables", "rs.hot", "-o", path}, sock...)...); r.Code != 0 {
		t.Fatalf("snapshot: %s", r.Stderr)
	}
	// The standby: its pool full of the stale table, made young by reading it twice.
	cold()
	for _, q := range []string{"SET GLOBAL innodb_old_blocks_time = 0", "SELECT SUM(LENGTH(pad)) FROM rs.stale", "SELECT SUM(LENGTH(pad)) FROM rs.stale", "SET GLOBAL innodb_old_blocks_time = 1000"} {
		if _, err := conn.DB.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"warm", "--from", path, "--method", "native", "--budget", "90%", "--json"}, sock...)...)
	if r.Code != 0 {
		t.Fatalf("warm --from: exit %d: %s", r.Code, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "innodb_old_blocks_pct set to 95") || !strings.Contains(r.Stderr, "innodb_old_blocks_pct restored") {
		t.Errorf("the load did not raise and restore innodb_old_blocks_pct: %s", r.Stderr)
	}
	m, err := manifest.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	mc, err := warm.MeasureManifest(ctx, conn, m)
	if err != nil {
		t.Fatal(err)
	}
	var pct int
	if err := conn.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_old_blocks_pct").Scan(&pct); err != nil || pct != 37 {
		t.Errorf("innodb_old_blocks_pct = %d after the warm (%v), want 37 back", pct, err)
	}
	t.Logf("%d manifest pages, %.1f%% resident after the warm", len(m.Entries), 100*mc.Coverage)
	if len(m.Entries) < 1800 || mc.Coverage < 0.95 {
		t.Errorf("%d manifest pages, %.1f%% resident after the warm: want 95%%+", len(m.Entries), 100*mc.Coverage)
	}
}

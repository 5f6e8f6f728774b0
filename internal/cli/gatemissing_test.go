package cli_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// A readiness gate on a manifest whose tables this server partly lacks counted only the
// pages that resolved: a user's standby without half of the hot set's pages (a table never
// restored there) printed "ready: coverage 100.0%". The pages it lacks are hot pages not
// resident: the gate now waits, and says how many are not on this server and why.
func TestGateCountsTheHotSetThisServerLacks(t *testing.T) {
	db := sandboxtest.Schema(t)
	srv := sandboxtest.Flavor(t)
	kept, gone := sqltext.Table(db, "kept"), sqltext.Table(db, "gone")
	for _, q := range []string{kept, gone} {
		sandboxtest.Exec(t,
			"CREATE TABLE "+q+" (id INT PRIMARY KEY, pad CHAR(200) NOT NULL DEFAULT '')",
			"INSERT INTO "+q+" (id) SELECT seq FROM "+srv.Series(db, 1, 10000)+" ORDER BY seq")
	}
	if _, err := sandboxtest.Server(t).ColdRestart(context.Background()); err != nil {
		t.Fatal(err)
	}
	sandboxtest.Reconnect(t)
	sandboxtest.Exec(t, "SELECT COUNT(*), MAX(pad) FROM "+kept, "SELECT COUNT(*), MAX(pad) FROM "+gone)
	path := filepath.Join(sandboxtest.Dir(t), "hot.manifest")
	root := sandboxtest.Sock(t)
	if r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"snapshot", "-D", db, "-o", path}, root...)...); r.Code != 0 {
		t.Fatalf("snapshot: exit %d: %s", r.Code, r.Stderr)
	}
	sandboxtest.Exec(t, "DROP TABLE "+gone)
	r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"inspect", "--manifest", path, "--wait-coverage", "95%", "--timeout", "2s", "--interval", "200ms"}, root...)...)
	t.Logf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	if r.Code != 3 || !strings.Contains(r.Stdout+r.Stderr, "not on this server") {
		t.Errorf("a gate on a manifest half of whose pages this server lacks: exit %d, want 3 (not ready) naming the pages not on this server", r.Code)
	}
}

package warm_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/warm"
)

// TestWarmByKeyTreeNeedsTheSameBytes: a table whose latin1_bin key the snapshot read is
// restored with the column in utf8mb4_bin (as a copy to another flavor or charset is):
// the manifest's keys are other bytes than this B-tree's, so auto leaves the tree path
// for range scans, where the server converts each literal to the column's charset, and
// says why.
func TestWarmByKeyTreeNeedsTheSameBytes(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	db := sandboxtest.Schema(t)
	tbl := sqltext.Table(db, "t")
	sandboxtest.Exec(t,
		"CREATE TABLE "+tbl+" (s VARCHAR(40) CHARACTER SET latin1 COLLATE latin1_bin NOT NULL PRIMARY KEY, pad CHAR(200) CHARACTER SET latin1 NOT NULL DEFAULT '')",
		fmt.Sprintf("INSERT INTO %s (s) SELECT CONCAT('k', LPAD((seq * 7919) %% 20011, 6, '0')) FROM %s ORDER BY seq", tbl, conn.Server.Series(db, 1, 20000)),
		// Written to its file, where snapshot reads each page's keys.
		"FLUSH TABLES "+tbl+" FOR EXPORT", "UNLOCK TABLES",
		// and read, so that its pages are the pool's hot set on every flavor.
		"SELECT SUM(LENGTH(pad)) FROM "+tbl+" FORCE INDEX (PRIMARY)")
	path := filepath.Join(sandboxtest.Dir(t), "latin1.manifest")
	m := keyedSnapshotAt(t, conn, db, path)
	sandboxtest.Exec(t,
		"ALTER TABLE "+tbl+" MODIFY s VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL",
		"ANALYZE TABLE "+tbl, "FLUSH TABLES "+tbl+" FOR EXPORT", "UNLOCK TABLES")
	// The path must not depend on the pool's free pages: with the whole pool as budget the
	// ranges are read by range scans; with no room at all (a full pool, as after the
	// package's other tests) the path and its reason are the same, with nothing to run.
	for _, c := range []struct {
		name       string
		budget     warm.Budget
		statements bool
	}{
		{"the whole pool", warm.Budget{Percent: 100, Raw: "100%"}, true},
		{"no room", warm.Budget{Bytes: 1, Raw: "1"}, false},
	} {
		req := warm.Request{Manifest: m, Method: warm.MethodAuto, DryRun: true, Run: quiet(),
			Plan: warm.Options{Order: "small-first", SplitPages: warm.DefaultSplitPages, ByKey: warm.ByKeyAuto, Budget: c.budget}}
		if err := req.Validate(); err != nil {
			t.Fatal(err)
		}
		out, err := warm.Execute(ctx, conn, req, func(string, string) {})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var seen bool
		for _, ip := range out.Manifest.Paths {
			if ip.Kind != warm.KindIndex || ip.Index != "PRIMARY" {
				continue
			}
			seen = true
			if ip.Path != warm.PathSQL || !strings.Contains(ip.Reason, "its column s holds utf8mb4 here and latin1 in the manifest") || (ip.Statements > 0) != c.statements {
				t.Errorf("%s: PRIMARY takes path %s with %d statements (%s), want sql because the key's bytes differ, statements %v", c.name, ip.Path, ip.Statements, ip.Reason, c.statements)
			}
		}
		if !seen {
			t.Errorf("%s: no path for PRIMARY in %+v", c.name, out.Manifest.Paths)
		}
	}
	// Range scans name no pages: inspect --manifest says the PRIMARY's pages are not
	// counted, and its readiness gate refuses rather than count the table's file pages
	// alone (it said ready at 100% on a server whose hot index was cold).
	mc, err := warm.MeasureManifest(ctx, conn, m)
	if err != nil {
		t.Fatal(err)
	}
	if mc.Uncounted == 0 || mc.Note == "" {
		t.Errorf("inspect --manifest: %d pages uncounted, note %q; want the PRIMARY's pages named uncounted; paths %+v, %d measured", mc.Uncounted, mc.Note, mc.Paths, len(mc.Measured.Pages))
	}
	r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"inspect", "--manifest", path, "--wait-coverage", "95%", "--timeout", "5s"}, sandboxtest.Sock(t)...)...)
	if r.Code != 2 || !strings.Contains(r.Stderr, "cannot be counted here") {
		t.Errorf("the readiness gate on pages it cannot count: exit %d, want 2:\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

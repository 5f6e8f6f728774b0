package warm_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/warm"
)

// Counting a manifest's pages on a logical copy reads this server's own B-trees in the
// tablespace files: it needs innowarm on the database host, not the privilege to drive the
// server's loader. A user with SELECT and PROCESS only (follow's target after a REVOKE, the
// readiness gate's least-privileged account) was planned as a scan: every keyed index
// went uncounted and the coverage was unknown on a copy wholly resident.
func TestMeasureOnALogicalCopyWithoutLoadPrivilege(t *testing.T) {
	ctx := context.Background()
	db := sandboxtest.Schema(t)
	const rows = 30_000
	q := sqltext.Table(db, "t")
	// Grown in scattered key order, then copied in key order: other page numbers.
	sandboxtest.Exec(t,
		"CREATE TABLE "+q+" (id INT PRIMARY KEY, k INT, c VARCHAR(100), KEY kk (k))",
		"INSERT INTO "+q+" SELECT seq, seq MOD 97, REPEAT('p', 90) FROM "+sandboxtest.Flavor(t).Series(db, 1, rows)+" ORDER BY (seq * 7919) MOD 30011",
		// Written to its file, where snapshot reads the key ranges.
		"FLUSH TABLES "+q+" FOR EXPORT", "UNLOCK TABLES",
		// In the pool (MySQL's export may leave none of it there).
		"SELECT SUM(LENGTH(c)) FROM "+q+" FORCE INDEX (PRIMARY)", "SELECT SUM(k) FROM "+q+" FORCE INDEX (kk)")
	m := keyedSnapshot(t, sandboxtest.Conn(t), db, "measure.manifest")
	replaceByLogicalCopy(t, sandboxtest.Conn(t), db, q)
	sandboxtest.Exec(t, "SELECT SUM(LENGTH(c)) FROM "+q+" FORCE INDEX (PRIMARY)", "SELECT SUM(k) FROM "+q+" FORCE INDEX (kk)")
	_, limited := limitedUser(t, 4)
	if warm.CheckNative(ctx, limited).OK {
		t.Fatal("the limited account may drive the server's loader: the test proves nothing")
	}
	mc, err := warm.MeasureManifest(ctx, limited, m)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %.1f%% resident, %d uncounted: %s", limited.Server, 100*mc.Coverage, mc.Uncounted, mc.Note)
	if mc.Uncounted != 0 || mc.Coverage < 0.9 {
		t.Errorf("a logical copy read whole, measured by an account without the load privilege: %.1f%% resident, %d pages uncounted; want 90%%+ and none uncounted (%s)", 100*mc.Coverage, mc.Uncounted, mc.Note)
	}
}

// warm --from --until-coverage on a logical copy warmed by scans (innowarm elsewhere, or
// --method scan) measured the goal on the plan's pages by number: a table's few file pages
// ("33.3% (1 of 3 manifest pages)") where inspect counted 99.9%. The goal counts what
// inspect counts.
func TestUntilCoverageOnALogicalCopyCountsAsInspect(t *testing.T) {
	ctx := context.Background()
	db := sandboxtest.Schema(t)
	q := sqltext.Table(db, "t")
	sandboxtest.Exec(t,
		"CREATE TABLE "+q+" (id INT PRIMARY KEY, k INT, c VARCHAR(100), KEY kk (k))",
		"INSERT INTO "+q+" SELECT seq, seq MOD 97, REPEAT('p', 90) FROM "+sandboxtest.Flavor(t).Series(db, 1, 30_000)+" ORDER BY (seq * 7919) MOD 30011",
		"FLUSH TABLES "+q+" FOR EXPORT", "UNLOCK TABLES",
		"SELECT SUM(LENGTH(c)) FROM "+q+" FORCE INDEX (PRIMARY)", "SELECT SUM(k) FROM "+q+" FORCE INDEX (kk)")
	conn := sandboxtest.Conn(t)
	m := keyedSnapshot(t, conn, db, "until.manifest")
	replaceByLogicalCopy(t, conn, db, q)
	sandboxtest.Exec(t, "SELECT SUM(LENGTH(c)) FROM "+q+" FORCE INDEX (PRIMARY)", "SELECT SUM(k) FROM "+q+" FORCE INDEX (kk)")
	mc, err := warm.MeasureManifest(ctx, conn, m)
	if err != nil {
		t.Fatal(err)
	}
	req := warm.Request{Manifest: m, Method: warm.MethodScan, UntilCoverage: 0.9, Run: quiet(),
		Plan: warm.Options{Order: "small-first", SplitPages: warm.DefaultSplitPages, ByKey: warm.ByKeyAuto}}
	if err := req.Validate(); err != nil {
		t.Fatal(err)
	}
	out, err := warm.Execute(ctx, conn, req, func(string, string) {})
	if err != nil {
		t.Fatal(err)
	}
	u := out.Result.UntilCoverage
	if u == nil || u.Coverage == nil {
		t.Fatalf("no coverage measured for the goal: %+v", u)
	}
	t.Logf("%s: inspect %.1f%%; the goal %.1f%% (%s)", conn.Server, 100*mc.Coverage, 100**u.Coverage, u.Detail)
	if want := fmt.Sprintf("of %d manifest pages resident", len(mc.Measured.Pages)); *u.Coverage < mc.Coverage-0.05 || !u.Reached || !strings.Contains(u.Detail, want) {
		t.Errorf("the goal measured %.1f%% (%s), inspect %.1f%%, on a copy read whole", 100**u.Coverage, u.Detail, 100*mc.Coverage)
	}
}

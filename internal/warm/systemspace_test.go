package warm_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/warm"
)

// A table created while innodb_file_per_table was off lives in the system tablespace,
// beside every other such table and InnoDB's own pages. Before, its pages were counted as
// nobody's (inspect said 0%, a warm "0 pages now resident that were not", a readiness gate
// never passed), and a native warm loaded the system tablespace's pages once per table.
// Now they are named by the server's page list, auto warms them by scans, and a native
// warm leaves them out, saying why.
func TestSystemTablespaceTable(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	systemSpaceTable(t, conn, "sysw")
	if _, err := sandboxtest.Server(t).ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	conn = sandboxtest.Reconnect(t)
	filter := catalog.Filter{Schemas: []string{"sysw"}}
	cat, err := catalog.Load(ctx, conn, filter)
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Tables) != 1 || cat.Tables[0].Parts[0].Space != 0 {
		t.Fatalf("want sysw.t in the system tablespace: %+v", cat.Tables)
	}
	np, err := warm.PlanNative(ctx, conn, cat, warm.Options{Order: "small-first", SplitPages: warm.DefaultSplitPages})
	if err != nil {
		t.Fatal(err)
	}
	if len(np.Spaces) != 0 || len(np.Skipped) == 0 || !strings.Contains(np.Skipped[len(np.Skipped)-1].Reason, "system tablespace") {
		t.Errorf("a native plan loads no system tablespace pages for a table, and says why: %d units, skipped %+v", len(np.Spaces), np.Skipped)
	}

	req := warm.Request{Filter: filter, Method: warm.MethodAuto, Run: quiet(),
		Plan: warm.Options{Order: "small-first", SplitPages: warm.DefaultSplitPages}}
	if err := req.Validate(); err != nil {
		t.Fatal(err)
	}
	out, err := warm.Execute(ctx, conn, req, func(string, string) {})
	if err != nil {
		t.Fatal(err)
	}
	if out.Method != warm.MethodScan || !strings.Contains(out.Why, "system tablespace") {
		t.Errorf("auto warms a table of the system tablespace by scans, and says why: %s (%s)", out.Method, out.Why)
	}
	if out.Result == nil || out.Result.PagesLoaded < 100 {
		t.Errorf("the warm says it loaded %+v pages, want the table's", out.Result)
	}
	res, err := bufferpool.ReadSelection(ctx, conn, cat, bufferpool.ReadOptions{IncludeZero: true, OnlyCatalog: true}, bufferpool.PageListAuto, logx.New(io.Discard, true))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"PRIMARY", "k"} {
		// Statistics alone size an index here (no file of its own to count): the resident
		// pages are at least their lower bound.
		if r := indexRow(res, "t", name); r == nil || r.Resident < 20 || r.Resident < r.MinPages {
			t.Errorf("index %s after the warm: %+v", name, r)
		}
	}
	covered, total, err := bufferpool.SelectionCount(ctx, conn, cat)
	if err != nil || total == 0 || 2*covered < total {
		t.Errorf("the readiness count after the warm: %d of %d (%v)", covered, total, err)
	}
}

func indexRow(res *bufferpool.Residency, table, index string) *bufferpool.IndexResidency {
	for i := range res.Indexes {
		if r := &res.Indexes[i]; r.Table == table && r.Index == index {
			return r
		}
	}
	return nil
}

// A selection that holds a FULLTEXT table (which only the server's loader reads) and a table
// of the system tablespace (which the loader cannot tell apart): auto went native and left
// the latter cold, saying so. It now loads the rest natively and reads those tables by scans
// after the load: their rows are in the result, not among the skipped, and they are resident.
func TestAutoWithFulltextScansSystemTablespaceTables(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	systemSpaceTable(t, conn, "sysft")
	textsTable(t, "sysft", 3000)
	if _, err := sandboxtest.Server(t).ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	conn = sandboxtest.Reconnect(t)
	filter := catalog.Filter{Schemas: []string{"sysft"}}
	cat, err := catalog.Load(ctx, conn, filter)
	if err != nil {
		t.Fatal(err)
	}
	req := warm.Request{Filter: filter, Method: warm.MethodAuto, Run: quiet(),
		Plan: warm.Options{Order: "small-first", SplitPages: warm.DefaultSplitPages}}
	if err := req.Validate(); err != nil {
		t.Fatal(err)
	}
	dry := req
	dry.DryRun = true
	plan, err := warm.Execute(ctx, conn, dry, func(string, string) {})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Method != warm.MethodNative || plan.Native == nil || plan.Plan == nil || len(plan.Plan.Targets) == 0 {
		t.Fatalf("auto's plan: method %s, native %v, scans of the system tablespace's tables %+v", plan.Method, plan.Native != nil, plan.Plan)
	}
	out, err := warm.Execute(ctx, conn, req, func(string, string) {})
	if err != nil {
		t.Fatal(err)
	}
	res := out.Result
	for _, s := range res.Skipped {
		if s.Table == "t" {
			t.Errorf("the system tablespace's table skipped: %+v", s)
		}
	}
	rows := map[string]bool{}
	for _, tr := range res.Targets {
		rows[tr.Table+" "+tr.Index] = true
	}
	for _, want := range []string{"t PRIMARY", "t k", "texts PRIMARY", "texts fb"} {
		if !rows[want] {
			t.Errorf("no result row for %s: %v", want, rows)
		}
	}
	after, err := bufferpool.ReadSelection(ctx, conn, cat, bufferpool.ReadOptions{IncludeZero: true, OnlyCatalog: true}, bufferpool.PageListAuto, logx.New(io.Discard, true))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"PRIMARY", "k"} {
		if r := indexRow(after, "t", name); r == nil || r.Resident < 20 || r.Resident < r.MinPages {
			t.Errorf("t index %s after the warm: %+v", name, r)
		}
	}
}

// systemSpaceTable creates schema db (dropped when the test ends) holding a table t of
// 30,000 rows in the system tablespace (created with innodb_file_per_table off, which is
// put back at once).
func systemSpaceTable(t *testing.T, conn *connection.Conn, db string) {
	t.Helper()
	var perTable string
	if err := conn.DB.QueryRowContext(context.Background(), "SELECT @@GLOBAL.innodb_file_per_table").Scan(&perTable); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sandboxtest.Exec(t, "SET GLOBAL innodb_file_per_table = "+perTable, "DROP DATABASE IF EXISTS "+db)
	})
	sandboxtest.Exec(t, "DROP DATABASE IF EXISTS "+db, "CREATE DATABASE "+db, "SET GLOBAL innodb_file_per_table = OFF",
		"CREATE TABLE "+db+".t (id INT PRIMARY KEY, k INT, pad CHAR(150), KEY k (k))",
		"SET GLOBAL innodb_file_per_table = "+perTable,
		"INSERT INTO "+db+".t SELECT seq, seq MOD 97, 'x' FROM "+conn.Server.Series(db, 1, 30000)+" ORDER BY seq",
		"ANALYZE TABLE "+db+".t")
}

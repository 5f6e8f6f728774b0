package warm_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/snapshot"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/warm"
)

// TestTreePathBudgetGoesToTheHottest: on a copy whose pages hold fewer rows than the
// source's (a logical copy grown by inserts in random key order), each hot manifest page's
// key range takes more than one page of this server's tree. The budget must go to those
// pages before colder manifest pages read by number: the hot table's ranges are the
// manifest's hottest, a table scanned after them its coldest. (The budget once counted
// a range as one page while the walk handed out the rest to the cold pages, then cut the
// hot table's own pages to what was left.)
func TestTreePathBudgetGoesToTheHottest(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	srv := conn.Server
	db := sandboxtest.Schema(t)
	hot, cold := sqltext.Table(db, "hot"), sqltext.Table(db, "cold")
	sandboxtest.Exec(t,
		// latin1 CHAR(200): about 70 rows a page on every flavor, in key order (dense).
		"CREATE TABLE "+hot+" (id INT PRIMARY KEY, pad CHAR(200) CHARACTER SET latin1 NOT NULL DEFAULT '')",
		"INSERT INTO "+hot+" (id) SELECT seq FROM "+srv.Series(db, 1, 30000)+" ORDER BY seq",
		"CREATE TABLE "+cold+" (id INT PRIMARY KEY, pad CHAR(200) CHARACTER SET latin1 NOT NULL DEFAULT '')",
		"INSERT INTO "+cold+" (id) SELECT seq FROM "+srv.Series(db, 1, 20000)+" ORDER BY seq",
		"FLUSH TABLES "+hot+", "+cold+" FOR EXPORT", "UNLOCK TABLES")
	// From a cold pool, the hot table read first (young: the list is shorter than its old
	// sublist's minimum), then the cold one (into the old sublist): the manifest's order.
	if _, err := sandboxtest.Server(t).ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	conn = sandboxtest.Reconnect(t)
	sandboxtest.Exec(t, "SELECT SUM(LENGTH(pad)) FROM "+hot, "SELECT SUM(LENGTH(pad)) FROM "+cold)
	path := filepath.Join(sandboxtest.Dir(t), "hot.manifest")
	if _, err := snapshot.Capture(ctx, conn, snapshot.Options{Path: path, ToolVersion: "test", Filter: catalog.Filter{Schemas: []string{db}}}); err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var hotPages, coldPages, hotUnnamed int
	for i, e := range m.Entries {
		switch o := m.Objects[e.Object]; {
		case o.Table == "hot" && o.Index == "PRIMARY":
			hotPages++
		case o.Table == "hot" && o.PageType == bufferpool.PageTypeUnnamed:
			// MySQL's read-ahead brings in the unused pages of the table's last extent.
			hotUnnamed++
		case o.Table == "cold":
			coldPages++
			if hotPages == 0 && i == 0 {
				t.Fatalf("the manifest's hottest entry is the cold table's")
			}
		}
	}
	if hotPages < 300 || coldPages < 100 {
		t.Fatalf("the manifest holds %d hot and %d cold pages; the test needs 300+ and 100+", hotPages, coldPages)
	}
	// Pages of the hot table that its source's files did not name, among the hottest: a
	// MySQL source's read-ahead brings in an extent's unused pages, which a snapshot lists
	// so (hotUnnamed above, 0 on MariaDB). Their page numbers name pages of the source's
	// file only.
	injected := addUnnamedPages(t, m, "hot", 10, 40)
	fileEntries := 0 // the hot table's file pages that are named (its metadata)
	for _, e := range m.Entries {
		if o := m.Objects[e.Object]; o.Table == "hot" && o.Index == "" && o.PageType != bufferpool.PageTypeUnnamed {
			fileEntries++
		}
	}
	// On the source itself they stay: pages allocated since it wrote its files are its
	// newest rows.
	if plan := dryRunWithin(t, conn, m, hotPages*6/5); plan.Manifest.Report.UnnamedLeftOut != 0 {
		t.Errorf("the manifest's own server left %d unnamed pages out, want 0 (page-for-page)", plan.Manifest.Report.UnnamedLeftOut)
	}
	conn = copyInRandomOrder(t, db, "hot", 7)
	// Room for the hot table's manifest pages and a fifth more: less than its ranges take
	// in the sparser copy, more than the manifest's count of them.
	budgetPages := hotPages * 6 / 5
	out := warmWithin(t, conn, m, budgetPages)
	var path0 warm.IndexPath
	for _, ip := range out.Manifest.Paths {
		if ip.Table == "hot" && ip.Index == "PRIMARY" {
			path0 = ip
		}
	}
	if path0.Path != warm.PathTree {
		t.Fatalf("the copy's PRIMARY took path %q (%s), want tree", path0.Path, path0.Reason)
	}
	if path0.TreePages <= int64(budgetPages) {
		t.Fatalf("the copy's tree holds %d pages for the manifest's %d hot ranges: not sparser than the budget of %d pages", path0.TreePages, hotPages, budgetPages)
	}
	loaded := map[string]int64{}
	for _, tr := range out.Result.Targets {
		loaded[tr.Table] += tr.PagesLoaded
	}
	t.Logf("%s: manifest %d hot, %d cold pages (and %d of the hot table unnamed); copy's tree %d pages for them; budget %d: loaded %d hot, %d cold", srv, hotPages, coldPages, hotUnnamed, path0.TreePages, budgetPages, loaded["hot"], loaded["cold"])
	// A page counts once, and only what the load asked for: the report once said 560 of
	// the budget's 531 on MySQL 9.7, whose source's read-ahead had brought in unused pages
	// (the unnamed pages), which the copy loads by number: pages of its own tree, which
	// counted again for the tree.
	if loaded["hot"]+loaded["cold"] > int64(budgetPages) {
		t.Errorf("the warm reports %d pages loaded within a budget of %d", loaded["hot"]+loaded["cold"], budgetPages)
	}
	if loaded["cold"] > 0 {
		t.Errorf("the budget of %d pages loaded %d pages of the cold table while the hot table's ranges needed %d", budgetPages, loaded["cold"], path0.TreePages)
	}
	if loaded["hot"] < int64(budgetPages)*9/10 {
		t.Errorf("the hot table got %d of the budget's %d pages", loaded["hot"], budgetPages)
	}
	// The unnamed pages are left out on the copy, and said so: loaded by number, they
	// were random pages of it, the hottest of the budget.
	if got, want := out.Manifest.Report.UnnamedLeftOut, int64(injected+hotUnnamed); got != want {
		t.Errorf("the warm left %d unnamed pages of the hot table out on a logical copy, want %d", got, want)
	}
	for _, tr := range out.Result.Targets {
		if tr.Table == "hot" && tr.Kind == warm.KindFile && tr.PagesLoaded > int64(fileEntries) {
			t.Errorf("the hot table's file pages loaded %d pages by number; the manifest names %d of them (the rest are unnamed, other pages of this copy)", tr.PagesLoaded, fileEntries)
		}
	}
}

// addUnnamedPages adds n pages of table, from page first on, to manifest m as pages its
// source's files did not name (PageTypeUnnamed), as hot as its hottest entry; it returns n.
func addUnnamedPages(t *testing.T, m *manifest.Manifest, table string, first, n int) int {
	t.Helper()
	var space uint32
	var schema string
	for _, o := range m.Objects {
		if o.Table == table {
			space, schema = o.SpaceID, o.Schema
		}
	}
	if schema == "" {
		t.Fatalf("the manifest has no object of table %s", table)
	}
	m.Objects = append(m.Objects, manifest.Object{SpaceID: space, PageType: bufferpool.PageTypeUnnamed, Schema: schema, Table: table})
	obj := uint32(len(m.Objects) - 1)
	hottest := m.Entries[0]
	added := make([]manifest.Entry, 0, n)
	for p := first; p < first+n; p++ {
		added = append(added, manifest.Entry{Object: obj, Page: uint32(p), Score: hottest.Score, Seen: hottest.Seen})
	}
	m.Entries = append(added, m.Entries...)
	return n
}

// dryRunWithin is warmWithin's plan, not run.
func dryRunWithin(t *testing.T, conn *connection.Conn, m *manifest.Manifest, budgetPages int) *warm.Outcome {
	t.Helper()
	return executeWithin(t, conn, m, budgetPages, warm.ByKeyAuto, true)
}

// copyInRandomOrder replaces a table of the shared server with a logical copy of it: the
// same rows inserted in random key order (seed), under the same name, written out; then
// restarts the server cold and returns a new connection.
func copyInRandomOrder(t *testing.T, db, table string, seed int) *connection.Conn {
	t.Helper()
	tbl, cp := sqltext.Table(db, table), sqltext.Table(db, table+"_copy")
	sandboxtest.Exec(t,
		"CREATE TABLE "+cp+" LIKE "+tbl,
		fmt.Sprintf("INSERT INTO %s SELECT * FROM %s ORDER BY RAND(%d)", cp, tbl, seed),
		"DROP TABLE "+tbl,
		"RENAME TABLE "+cp+" TO "+tbl,
		"ANALYZE TABLE "+tbl,
		"FLUSH TABLES "+tbl+" FOR EXPORT", "UNLOCK TABLES")
	if _, err := sandboxtest.Server(t).ColdRestart(context.Background()); err != nil {
		t.Fatal(err)
	}
	return sandboxtest.Reconnect(t)
}

// warmWithin warms a manifest natively, by key where it must (auto), within a budget of
// pages.
func warmWithin(t *testing.T, conn *connection.Conn, m *manifest.Manifest, budgetPages int) *warm.Outcome {
	t.Helper()
	return warmWithinBy(t, conn, m, budgetPages, warm.ByKeyAuto)
}

// warmWithinBy is warmWithin with --by-key byKey.
func warmWithinBy(t *testing.T, conn *connection.Conn, m *manifest.Manifest, budgetPages int, byKey string) *warm.Outcome {
	t.Helper()
	return executeWithin(t, conn, m, budgetPages, byKey, false)
}

// executeWithin warms (or with dryRun plans) a manifest natively, --by-key byKey, within a
// budget of pages.
func executeWithin(t *testing.T, conn *connection.Conn, m *manifest.Manifest, budgetPages int, byKey string, dryRun bool) *warm.Outcome {
	t.Helper()
	b, err := warm.ParseBudget(fmt.Sprintf("%d", int64(budgetPages)*int64(conn.Server.PageSize)))
	if err != nil {
		t.Fatal(err)
	}
	req := warm.Request{Manifest: m, Method: warm.MethodNative, DryRun: dryRun, Run: quiet(), Plan: warm.Options{Order: "small-first", Budget: b, ByKey: byKey, SplitPages: warm.DefaultSplitPages}}
	if err := req.Validate(); err != nil {
		t.Fatal(err)
	}
	out, err := warm.Execute(context.Background(), conn, req, func(string, string) {})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

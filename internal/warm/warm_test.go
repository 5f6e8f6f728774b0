package warm_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/progress"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/warm"
)

func TestMain(m *testing.M) { sandboxtest.Main(m, sandboxtest.Options{PoolSize: 128 << 20}) }

// coldConn restarts the shared server cold and reconnects.
func coldConn(t *testing.T) *connection.Conn {
	t.Helper()
	sandboxtest.Zoo(t) // created before the restart, so that it is not all resident
	if _, err := sandboxtest.Server(t).ColdRestart(context.Background()); err != nil {
		t.Fatal(err)
	}
	return sandboxtest.Reconnect(t)
}

// plainTable creates db.name with an integer key, a secondary index kk and 90-byte rows
// inserted in key order, and returns its quoted name.
func plainTable(t *testing.T, db, name string, rows int64) string {
	t.Helper()
	q := sqltext.Table(db, name)
	sandboxtest.Exec(t,
		"CREATE TABLE "+q+" (id INT PRIMARY KEY, k INT, c VARCHAR(100), KEY kk (k))",
		"INSERT INTO "+q+" SELECT seq, seq MOD 97, REPEAT('p', 90) FROM "+sandboxtest.Flavor(t).Series(db, 1, rows)+" ORDER BY seq")
	return q
}

// textsTable creates db.texts with a FULLTEXT index (which no index scan reads) on rows of
// words, and returns its quoted name.
func textsTable(t *testing.T, db string, rows int64) string {
	t.Helper()
	q := sqltext.Table(db, "texts")
	sandboxtest.Exec(t,
		"CREATE TABLE "+q+" (id INT PRIMARY KEY, body VARCHAR(200), FULLTEXT KEY fb (body))",
		"INSERT INTO "+q+" SELECT seq, CONCAT('word', seq MOD 50, ' other', seq) FROM "+sandboxtest.Flavor(t).Series(db, 1, rows)+" ORDER BY seq")
	return q
}

// warmAfterColdRestart restarts the sandbox cold and runs innowarm warm with args against
// it; it fails the test unless warm exits 0, and returns what warm printed.
func warmAfterColdRestart(t *testing.T, args ...string) string {
	t.Helper()
	if _, err := sandboxtest.Server(t).ColdRestart(context.Background()); err != nil {
		t.Fatal(err)
	}
	sandboxtest.Reconnect(t)
	r := sandboxtest.CLI(t, sandboxtest.Run{}, append(append([]string{"warm"}, args...), sandboxtest.Sock(t)...)...)
	if r.Code != 0 {
		t.Fatalf("warm %v: exit %d: %s", args, r.Code, r.Stderr)
	}
	return r.Stdout
}

func zooCatalog(t *testing.T, conn *connection.Conn) *catalog.Catalog {
	return schemaCatalog(t, conn, sandboxtest.Zoo(t))
}

// schemaCatalog is the catalog of schema db.
func schemaCatalog(t *testing.T, conn *connection.Conn, db string) *catalog.Catalog {
	t.Helper()
	cat, err := catalog.Load(context.Background(), conn, catalog.Filter{Schemas: []string{db}})
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

func quiet() warm.RunOptions {
	return warm.RunOptions{StatementTimeout: time.Minute, LockWaitTimeout: 5 * time.Second, Progress: progress.Config{Out: &strings.Builder{}, Quiet: true}}
}

type key struct{ table, part, index string }

func residency(t *testing.T, conn *connection.Conn, cat *catalog.Catalog) map[key]bufferpool.IndexResidency {
	t.Helper()
	res, err := bufferpool.Read(context.Background(), conn, cat, bufferpool.ReadOptions{IncludeZero: true, OnlyCatalog: true})
	if err != nil {
		t.Fatal(err)
	}
	out := map[key]bufferpool.IndexResidency{}
	for _, r := range res.Indexes {
		out[key{r.Table, r.Partition, r.Index}] = r
	}
	return out
}

// truth loads every page of every zoo tablespace with InnoDB's own loader into a cold pool
// and counts, per index, the B-tree pages that exist: the yardstick for "every page".
func truth(t *testing.T) map[key]bufferpool.IndexResidency {
	t.Helper()
	conn := coldConn(t)
	sb := sandboxtest.Server(t)
	cat := zooCatalog(t, conn) // opening the tables makes their tablespaces' sizes known
	var lines []string
	for _, tb := range cat.Tables {
		for _, p := range tb.Parts {
			var size int64
			if err := conn.DB.QueryRow("SELECT FILE_SIZE FROM "+conn.Server.TablespacesTable()+" WHERE SPACE = ?", p.Space).Scan(&size); err != nil {
				t.Fatalf("size of space %d: %v", p.Space, err)
			}
			for page := int64(0); page < size/16384; page++ {
				lines = append(lines, fmt.Sprintf("%d,%d", p.Space, page))
			}
		}
	}
	if err := os.WriteFile(filepath.Join(sb.Datadir, "ib_buffer_pool"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sandboxtest.Exec(t, "SET GLOBAL innodb_buffer_pool_load_now = ON")
	for i := 0; ; i++ {
		var n, v string
		conn.DB.QueryRow("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_load_status'").Scan(&n, &v)
		if strings.Contains(v, "completed") {
			break
		}
		if i > 600 {
			t.Fatalf("native load did not complete: %s", v)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return residency(t, conn, cat)
}

// After a cold restart, a warm of the whole zoo makes every warmed index (and the LOB
// pages, with --lob) at least 99% resident, measured both against persistent statistics
// and against the pages InnoDB's own loader finds in the files.
func TestWarmMakesEveryIndexResident(t *testing.T) {
	ctx := context.Background()
	want := truth(t)

	conn := coldConn(t)
	cat := zooCatalog(t, conn)
	pl, err := warm.BuildPlan(ctx, conn, cat, warm.Options{LOB: true, SplitPages: 64})
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.LeftOut) != 0 {
		t.Fatalf("the zoo fits the pool, nothing should be left out: %+v", pl.LeftOut)
	}
	ranged := 0
	for _, u := range pl.Units {
		if u.Ranges > 1 {
			ranged++
		}
	}
	if ranged == 0 {
		t.Error("with --split-pages 64 some indexes should be cut into key ranges")
	}
	o := quiet()
	o.Catalog = cat
	res, err := warm.Run(ctx, conn, pl, o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete() || res.UnitsFailed != 0 {
		t.Fatalf("run incomplete: %d/%d, errors %v", res.UnitsDone, res.Units, res.Errors)
	}
	got := residency(t, conn, cat)
	warmed := 0
	for _, tg := range pl.Targets {
		k := key{tg.Table.Name, tg.Part.Name, tg.Index.Name}
		g, w := got[k], want[k]
		if tg.Kind == warm.KindLOB {
			if float64(g.LOBResident) < 0.99*float64(w.LOBResident) {
				t.Errorf("%s: %d LOB pages resident of %d in the file", tg.Name(), g.LOBResident, w.LOBResident)
			}
			continue
		}
		warmed++
		if g.Known && g.Coverage < 0.99 {
			t.Errorf("%s: coverage %.3f (%d resident, %d leaf pages)", tg.Name(), g.Coverage, g.Resident, g.LeafPages)
		}
		if float64(g.Resident) < 0.99*float64(w.Resident) {
			t.Errorf("%s: %d pages resident of %d in the file", tg.Name(), g.Resident, w.Resident)
		}
	}
	if warmed < 30 {
		t.Errorf("only %d indexes warmed; the zoo has more", warmed)
	}
	// What could not be warmed is said, with the reason.
	reasons := map[string]string{}
	for _, s := range res.Skipped {
		reasons[s.Table+"/"+s.Index] = s.Reason
	}
	for k, want := range map[string]string{
		sandboxtest.ZooFulltext + "/fdoc": "FULLTEXT",
		sandboxtest.ZooSpatial + "/sg":    "SPATIAL",
		sandboxtest.ZooIgnored + "/kq":    "ignored",
		sandboxtest.ZooView + "/":         "view",
		sandboxtest.ZooMyISAM + "/":       "MyISAM",
	} {
		t.Run(k, func(t *testing.T) {
			if !strings.Contains(reasons[k], want) {
				t.Errorf("skip reason for %s: %q, want it to mention %s", k, reasons[k], want)
			}
		})
	}
}

// Each statement reads the index it targets: run every unit alone and check, with the pool's
// own attribution, that only its index grew (the table's other indexes get at most their
// root page when the table is opened).
func TestEachStatementReadsItsIndex(t *testing.T) {
	ctx := context.Background()
	conn := coldConn(t)
	cat := zooCatalog(t, conn)
	pl, err := warm.BuildPlan(ctx, conn, cat, warm.Options{LOB: true})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := conn.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	for _, tg := range pl.Targets {
		before := residency(t, conn, cat)
		for _, u := range tg.Units {
			q, args := warm.Statement(pl.Server, u, time.Minute)
			var v any
			if err := sess.QueryRow(ctx, q, args, &v); err != nil {
				t.Fatalf("%s: %v", u.Label(), err)
			}
		}
		after := residency(t, conn, cat)
		self := key{tg.Table.Name, tg.Part.Name, tg.Index.Name}
		if tg.Kind == warm.KindLOB {
			if tg.Table.Name == sandboxtest.ZooLOBs && after[self].LOBResident <= before[self].LOBResident {
				t.Errorf("%s: no LOB page loaded", tg.Name())
			}
			continue
		}
		if after[self].Known && after[self].Coverage < 0.99 || !after[self].Known && after[self].Resident < after[self].MinPages {
			t.Errorf("%s: coverage %.3f (%d resident) after its own statement", tg.Name(), after[self].Coverage, after[self].Resident)
		}
		for k, a := range after {
			if k.table != tg.Table.Name || k == self {
				continue
			}
			grew := a.Resident - before[k].Resident
			// A prefix index needs every row's clustered record: only the clustered index may grow.
			if tg.Prefix && tg.Table.Clustered().Name == k.index {
				continue
			}
			// An index's first 32 pages are single pages in extents the table's segments
			// share: linear read-ahead of those extents reads them along (MariaDB 10.11: a
			// PRIMARY scan of zoo.prefixed read 22 and 16 pages of its prefix indexes,
			// whichever statement on the table comes first).
			if grew > 2+min(a.Pages, 32) {
				t.Errorf("%s's statement also read %d pages of %s/%s", tg.Name(), grew, k.part, k.index)
			}
		}
	}
}

// Splitting into key ranges covers every row exactly once: the counts of all ranges add up
// to the table's row count, for integer, text and date keys.
func TestKeyRangesPartitionTheRows(t *testing.T) {
	ctx := context.Background()
	conn := coldConn(t)
	cat := zooCatalog(t, conn)
	pl, err := warm.BuildPlan(ctx, conn, cat, warm.Options{SplitPages: 4})
	if err != nil {
		t.Fatal(err)
	}
	checked := map[string]bool{}
	for _, tg := range pl.Targets {
		if len(tg.Units) < 2 {
			continue
		}
		var sum int64
		for _, u := range tg.Units {
			q, args := warm.Statement(pl.Server, u, 0)
			var n int64
			if err := conn.DB.QueryRow(q, args...).Scan(&n); err != nil {
				t.Fatalf("%s: %v", u.Label(), err)
			}
			sum += n
		}
		from := tg.Table.Quoted()
		if tg.Table.SystemVersioned {
			from += " FOR SYSTEM_TIME ALL"
		}
		if tg.Part.Name != "" {
			from += " PARTITION (" + sqltext.Ident(tg.Part.Name) + ")"
		}
		var total int64
		if err := conn.DB.QueryRow("SELECT COUNT(*) FROM " + from).Scan(&total); err != nil {
			t.Fatal(err)
		}
		if sum != total {
			t.Errorf("%s: %d ranges count %d rows, the table has %d", tg.Name(), len(tg.Units), sum, total)
		}
		checked[tg.Index.Columns[0].Column.DataType] = true
	}
	for _, typ := range []string{"int", "varchar", "date"} {
		if !checked[typ] {
			t.Errorf("no split index with a %s first column was checked (%v)", typ, checked)
		}
	}
}

// A warm changes no data.
func TestWarmWritesNothing(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	cat := zooCatalog(t, conn)
	checksum := func() string {
		var tables []string
		for _, tb := range cat.Tables {
			tables = append(tables, tb.Quoted())
		}
		rows, err := conn.DB.Query("CHECKSUM TABLE " + strings.Join(tables, ", ") + " EXTENDED")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var name string
			var sum any
			if err := rows.Scan(&name, &sum); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s=%s", name, sum))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return strings.Join(out, " ")
	}
	before := checksum()
	conn = coldConn(t)
	cat = zooCatalog(t, conn)
	pl, err := warm.BuildPlan(ctx, conn, cat, warm.Options{LOB: true})
	if err != nil {
		t.Fatal(err)
	}
	o := quiet()
	o.Catalog = cat
	o.MakeYoung = true
	if _, err := warm.Run(ctx, conn, pl, o); err != nil {
		t.Fatal(err)
	}
	if after := checksum(); after != before {
		t.Errorf("CHECKSUM TABLE changed:\nbefore %s\nafter  %s", before, after)
	}
	var obt int
	conn.DB.QueryRow("SELECT @@GLOBAL.innodb_old_blocks_time").Scan(&obt)
	if obt != 1000 {
		t.Errorf("innodb_old_blocks_time = %d after --make-young, want it restored to 1000", obt)
	}
}

// A budget smaller than the plan leaves out what does not fit and says why; a big index
// that does not fit whole is warmed in part, by key ranges.
func TestBudget(t *testing.T) {
	ctx := context.Background()
	conn := coldConn(t)
	cat := zooCatalog(t, conn)
	pl, err := warm.BuildPlan(ctx, conn, cat, warm.Options{Budget: warm.Budget{Bytes: 2 << 20, Raw: "2M"}, SplitPages: 32})
	if err != nil {
		t.Fatal(err)
	}
	if pl.BudgetPages != 128 || pl.NewPages > pl.BudgetPages {
		t.Errorf("budget %d pages, planned %d new", pl.BudgetPages, pl.NewPages)
	}
	if len(pl.LeftOut) == 0 || !strings.Contains(pl.LeftOut[0].Reason, "over budget") {
		t.Fatalf("left out: %+v", pl.LeftOut)
	}
	// Smaller units first: every planned target is no larger than any left-out whole one.
	var maxPlanned int64
	for _, tg := range pl.Targets {
		if !tg.Partial {
			maxPlanned = max(maxPlanned, tg.EstPages)
		}
	}
	if maxPlanned > 128 {
		t.Errorf("a target of %d pages was planned within a 128-page budget", maxPlanned)
	}
	o := quiet()
	o.Catalog = cat
	res, err := warm.Run(ctx, conn, pl, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.PagesLoaded > 128+64 {
		t.Errorf("loaded %d pages with a 128-page budget", res.PagesLoaded)
		for _, tr := range res.Targets {
			t.Logf("%s %s %s: est %d, before %d, after %d, units %d", tr.Table, tr.Partition, tr.Index, tr.EstPages, tr.ResidentBefore, tr.ResidentAfter, tr.Units)
		}
	}
}

// A budget smaller than an index is filled by its key ranges, cut small enough that the
// last one that fits leaves little of the budget unused: an index under --split-pages
// (2,048) was left out whole, and ranges of that size were dropped whole (a budget of 10%
// of the pool loaded a fifth of it).
func TestPartialIndexFillsTheBudget(t *testing.T) {
	ctx := context.Background()
	db := sandboxtest.Schema(t)
	q := plainTable(t, db, "big", 120000)
	sandboxtest.Exec(t, "ANALYZE TABLE "+q)
	conn := coldConn(t)
	cat, err := catalog.Load(ctx, conn, catalog.Filter{Tables: []catalog.Pattern{{Schema: db, Table: "big", Raw: db + ".big"}}})
	if err != nil {
		t.Fatal(err)
	}
	budget := int64(600)
	pl, err := warm.BuildPlan(ctx, conn, cat, warm.Options{Budget: warm.Budget{Bytes: budget * int64(conn.Server.PageSize), Raw: "600 pages"}, SplitPages: warm.DefaultSplitPages, Order: "small-first"})
	if err != nil {
		t.Fatal(err)
	}
	var primary int64
	for _, tg := range pl.Targets {
		if tg.Index.Name == "PRIMARY" {
			primary = tg.EstPages
		}
	}
	if pl.BudgetPages != budget || primary <= budget {
		t.Fatalf("the scenario: budget %d pages, PRIMARY planned with %d pages (want it planned in part: more than the budget); left out %+v", pl.BudgetPages, primary, pl.LeftOut)
	}
	if pl.NewPages > budget || pl.NewPages < 3*budget/4 {
		t.Errorf("planned %d new pages of a %d-page budget, want at least three quarters of it; left out %+v", pl.NewPages, budget, pl.LeftOut)
	}
}

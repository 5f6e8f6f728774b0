package warm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/warm"
)

// A warm with --lob keeps to its budget: it must not evict what was resident before. The
// table is the one that broke it: off-page TEXT values of 20-60 KB on one row in sixteen
// (6,000 LOB pages, more than the pool has free), secondary indexes, rows averaging under
// 4 KB. Its statistics count the LOB pages as the primary key's leaves, and the LOB estimate
// from them said 1 page: the warm read the whole LOB set and evicted a hot table. On the
// database host the file gives the sizes; elsewhere the run is bounded while it reads and
// stops at its budget.
func TestLOBWarmKeepsToItsBudget(t *testing.T) {
	ctx := context.Background()
	db := sandboxtest.Schema(t)
	srv := sandboxtest.Flavor(t)
	hot, orders := sqltext.Table(db, "hot"), sqltext.Table(db, "orders")
	sandboxtest.Exec(t,
		"CREATE TABLE "+hot+" (id INT PRIMARY KEY, pad CHAR(200))",
		"INSERT INTO "+hot+" SELECT seq, REPEAT('h', 200) FROM "+srv.Series(db, 1, 150000)+" ORDER BY seq",
		"CREATE TABLE "+orders+" (id INT PRIMARY KEY, cust INT NOT NULL, created DATETIME NOT NULL, note TEXT, KEY cust (cust), KEY created (created)) ROW_FORMAT=DYNAMIC",
		"INSERT INTO "+orders+" SELECT seq, seq * 7919 MOD 10007, '2026-01-01' + INTERVAL (seq * 13 MOD 100000) MINUTE, "+
			"IF(seq MOD 16 = 0, REPEAT(CHAR(65 + seq MOD 26), 20000 + seq * 37 MOD 40000), 'short') FROM "+srv.Series(db, 1, 40000)+" ORDER BY seq",
		"ANALYZE TABLE "+hot+", "+orders,
		"FLUSH TABLES "+hot+", "+orders+" FOR EXPORT", "UNLOCK TABLES",
	)
	for _, side := range []string{"on the host", "elsewhere"} {
		t.Run(side, func(t *testing.T) {
			if side == "elsewhere" && !sandboxtest.CanRunElsewhere() {
				t.Skip("not root: innowarm cannot run as another OS user here")
			}
			conn := coldConn(t)
			if r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"warm", "--tables", db + ".hot", "--method", "scan", "-q"}, sandboxtest.Sock(t)...)...); r.Code != 0 {
				t.Fatal(r.Stderr)
			}
			cat, err := catalog.Load(ctx, conn, catalog.Filter{Schemas: []string{db}})
			if err != nil {
				t.Fatal(err)
			}
			var hotSpace uint32
			for _, tb := range cat.Tables {
				if tb.Name == "hot" {
					hotSpace = tb.Parts[0].Space
				}
			}
			residentHot := func() bufferpool.PageSet {
				t.Helper()
				set, err := bufferpool.ResidentFromLRUTable(ctx, conn, map[uint32]bool{hotSpace: true})
				if err != nil {
					t.Fatal(err)
				}
				return set
			}
			before := residentHot()
			hotPages := count(before, hotSpace)
			totals, err := bufferpool.ReadTotals(ctx, conn)
			if err != nil {
				t.Fatal(err)
			}
			room, reserve := totals.Room()
			if hotPages < 1500 || room > 6000 {
				t.Fatalf("%d hot pages resident, %d pages of room: the pool is not the tight one this test needs", hotPages, room)
			}
			readBefore := pagesRead(t)

			args := []string{"warm", "--tables", db + ".orders", "--lob", "--method", "scan", "--json"}
			var r sandboxtest.Result
			if side == "elsewhere" {
				r = sandboxtest.CLIElsewhere(t, sandboxtest.Run{}, args...)
			} else {
				r = sandboxtest.CLI(t, sandboxtest.Run{}, append(args, sandboxtest.Sock(t)...)...)
			}
			if r.Code != 0 {
				t.Fatalf("warm: exit %d: %s", r.Code, r.Stderr)
			}
			read := pagesRead(t) - readBefore
			var out struct {
				Plan struct {
					BudgetPages int64 `json:"budget_pages"`
				} `json:"plan"`
				Result warm.Result `json:"result"`
			}
			if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
				t.Fatalf("warm --json: %v: %s", err, r.Stdout)
			}
			res := out.Result
			if out.Plan.BudgetPages > room {
				t.Errorf("budget %d pages, with %d pages of room", out.Plan.BudgetPages, room)
			}
			var lob int64
			for _, tr := range res.Targets {
				if tr.Kind == warm.KindLOB {
					lob += tr.PagesLoaded
				}
				t.Logf("%s %s: estimated %d, %d → %d", tr.Index, tr.Kind, tr.EstPages, tr.ResidentBefore, tr.ResidentAfter)
			}
			stillHot := 0
			after := residentHot()
			for page := uint32(0); page < 1<<20; page++ {
				if before.Has(hotSpace, page) && after.Has(hotSpace, page) {
					stillHot++
				}
			}
			t.Logf("%s: room %d pages (reserve %d), read %d, %d LOB pages loaded; hot pages %d → %d kept; stopped: %q; left out: %+v",
				side, room, reserve, read, lob, hotPages, stillHot, res.Stopped, res.LeftOut)
			if read > room {
				t.Errorf("the warm read %d pages with %d pages of room", read, room)
			}
			if stillHot < hotPages {
				t.Errorf("%d of the %d pages resident before the warm were evicted", hotPages-stillHot, hotPages)
			}
			if lob < room/4 {
				t.Errorf("only %d LOB pages loaded with %d pages of room", lob, room)
			}
			if side == "elsewhere" && !strings.Contains(res.Stopped, "stopped at the budget") {
				t.Errorf("elsewhere the LOB pages cannot be counted: the run must stop at its budget and say so; stopped: %q", res.Stopped)
			}
			// Elsewhere the stop at the budget alone held the LOB read, a poll and a KILL
			// QUERY late on a busy machine (4,252 pages read with 4,051 of room, beside a
			// CI run): its statements now each read within what is left.
			// On the host the file counts the LOB pages, and the budget cuts the set: the
			// watch's margin stopped its one statement at 3,267 pages of a 3,773-page budget.
			if stepped := strings.Contains(strings.Join(res.Notes, " "), "read in steps of rows"); !stepped {
				t.Errorf("%s: LOB not read in steps; notes %q", side, res.Notes)
			}
			// The budget filled, not stopped a margin short (3,000-3,450 pages of 4,050
			// elsewhere before; on the host the plan's key ranges may leave out up to one).
			if want := map[bool]int64{true: room * 9 / 10, false: room * 8 / 10}[side == "elsewhere"]; read < want {
				t.Errorf("%s: the warm read %d pages with %d pages of room, want at least %d", side, read, room, want)
			}
		})
	}
}

func count(set bufferpool.PageSet, space uint32) int {
	n := 0
	for page := uint32(0); page < 1<<20; page++ {
		if set.Has(space, page) {
			n++
		}
	}
	return n
}

func pagesRead(t *testing.T) int64 {
	t.Helper()
	var name string
	var n int64
	if err := sandboxtest.Conn(t).DB.QueryRow("SHOW GLOBAL STATUS LIKE 'Innodb_pages_read'").Scan(&name, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestScanPlanWithinBudgetRunsWhole: a scan plan that fits its budget (a fifth of it to
// spare) is read to its end, not stopped short by the budget's margin: the margin for
// reads landing before a stop was up to a quarter of the budget, so a fast scan of a plan
// at 90% of its budget was killed with a fifth of the budget unused. The pages read stay
// within the budget and a read-ahead per session.
func TestScanPlanWithinBudgetRunsWhole(t *testing.T) {
	ctx := context.Background()
	db := sandboxtest.Schema(t)
	plainTable(t, db, "fits", 300_000)
	if _, err := sandboxtest.Server(t).ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	conn := sandboxtest.Reconnect(t)
	cat, err := catalog.Load(ctx, conn, catalog.Filter{Schemas: []string{db}})
	if err != nil {
		t.Fatal(err)
	}
	probe, err := warm.BuildPlan(ctx, conn, cat, warm.Options{SplitPages: 256, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	planned := probe.NewPages
	budget := planned * 125 / 100
	page := int64(conn.Server.PageSize)
	pl, err := warm.BuildPlan(ctx, conn, cat, warm.Options{SplitPages: 256, Parallel: 2,
		Budget: warm.Budget{Bytes: budget * page, Raw: fmt.Sprint(budget * page)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.LeftOut) > 0 || pl.NewPages < 2000 {
		t.Fatalf("plan of %d pages (%d without a budget) in a budget of %d, left out %+v", pl.NewPages, planned, pl.BudgetPages, pl.LeftOut)
	}
	res, err := warm.Run(ctx, conn, pl, quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("planned %d pages, budget %d: read %d, loaded %d; %q", pl.NewPages, pl.BudgetPages, res.PagesRead, res.PagesLoaded, res.Stopped)
	if res.Stopped != "" || len(res.LeftOut) > 0 {
		t.Errorf("a plan of %d pages in a budget of %d: %s, left out %+v", pl.NewPages, pl.BudgetPages, res.Stopped, res.LeftOut)
	}
	if res.PagesRead > pl.BudgetPages+2*64 {
		t.Errorf("read %d pages with a budget of %d", res.PagesRead, pl.BudgetPages)
	}
}

// TestLOBStepsByStringAndBinaryKeys: elsewhere a LOB set is read in steps of rows in key
// order, each from the last key read; a key that is a string in its collation (mixed case,
// multi-byte) or bytes comes back from the server and goes to it again as the same value.
// Each table's LOB set is read to its end, every row's values once: the pages loaded are
// the set's, within the budget, and the run is not stopped.
func TestLOBStepsByStringAndBinaryKeys(t *testing.T) {
	if !sandboxtest.CanRunElsewhere() {
		t.Skip("not root: innowarm cannot run as another OS user here")
	}
	db := sandboxtest.Schema(t)
	srv := sandboxtest.Flavor(t)
	for _, c := range []struct{ table, key string }{
		{"by_text", "VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"},
		{"by_bytes", "VARBINARY(40)"},
	} {
		tbl := sqltext.Table(db, c.table)
		// Keys whose collation order is not their bytes' order: 'a…' and 'B…' interleave,
		// and 'é' sorts with 'e'.
		sandboxtest.Exec(t,
			"CREATE TABLE "+tbl+" (k "+c.key+" NOT NULL PRIMARY KEY, note TEXT) ROW_FORMAT=DYNAMIC",
			"INSERT INTO "+tbl+" SELECT CONCAT(ELT(1 + seq MOD 4, 'a', 'B', 'é', 'E'), LPAD(seq, 6, '0')), REPEAT(CHAR(65 + seq MOD 26), 20000) FROM "+srv.Series(db, 1, 1200),
			"ANALYZE TABLE "+tbl)
	}
	coldConn(t)
	r := sandboxtest.CLIElsewhere(t, sandboxtest.Run{}, "warm", "--tables", db+".by_text,"+db+".by_bytes", "--lob", "--method", "scan", "--json")
	if r.Code != 0 {
		t.Fatalf("warm: exit %d: %s", r.Code, r.Stderr)
	}
	var out struct {
		Result warm.Result `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		t.Fatalf("warm --json: %v: %s", err, r.Stdout)
	}
	res := out.Result
	if !strings.Contains(strings.Join(res.Notes, " "), "read in steps of rows") || res.Stopped != "" || res.UnitsFailed > 0 {
		t.Fatalf("stopped %q, %d units failed, notes %q: want both LOB sets read in steps to their end", res.Stopped, res.UnitsFailed, res.Notes)
	}
	for _, tr := range res.Targets {
		if tr.Kind != warm.KindLOB {
			continue
		}
		// 1,200 values of 20,000 bytes: two 16 KiB pages each.
		t.Logf("%s LOB: %d pages loaded", tr.Table, tr.PagesLoaded)
		if tr.PagesLoaded < 2300 {
			t.Errorf("%s: %d LOB pages loaded, want its 2,400 or so: the steps did not read every row", tr.Table, tr.PagesLoaded)
		}
	}
}

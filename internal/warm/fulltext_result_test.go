package warm_test

import (
	"context"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/warm"
)

// A native warm of a table with a FULLTEXT index loads the index's auxiliary tables
// (TestNativeWarmLoadsFulltextTablesAfterRestart), but its result left them out: no row for
// the index or for the tables the table's FULLTEXT indexes share, and "N pages now resident
// that were not" without them (a user test: 916 pages read from disk, "0 pages now resident
// that were not"). The result now lists both rows, with what the pool held of them before
// and after, counted in PagesLoaded, whether the residency after is read from the pool
// (Verify) or proved from the page counters. Their pages after are the server's own count,
// and their size is their files' pages in use: a warmed index is wholly resident.
func TestNativeWarmResultListsFulltextRows(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	db := sandboxtest.Schema(t)
	// Two tables, so that one cold start serves both ways of measuring after: MySQL takes
	// seconds to restart.
	tables := []string{"fread", "fproof"}
	for _, name := range tables {
		q := sqltext.Table(db, name)
		// utf8mb4_general_ci spreads the words over INDEX_1..6 by their first letter; the
		// index built after the rows writes its tables at once.
		sandboxtest.Exec(t,
			"CREATE TABLE "+q+" (id INT PRIMARY KEY, body VARCHAR(200)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci",
			"INSERT INTO "+q+" SELECT seq, CONCAT(CHAR(97 + seq MOD 26 USING utf8mb4), 'word', seq, ' ', seq MOD 1000, 'n ', CHAR(97 + seq * 7 MOD 26 USING utf8mb4), 'x', seq MOD 977) FROM "+conn.Server.Series(db, 1, 8000)+" ORDER BY seq",
			"ALTER TABLE "+q+" ADD FULLTEXT KEY fb (body)")
	}
	all, err := catalog.Load(ctx, conn, catalog.Filter{Schemas: []string{db}})
	if err != nil || len(all.Tables) != 2 {
		t.Fatalf("catalog: %v %+v", err, all)
	}
	// The page counters prove a row's pages only where none of its tables' was resident
	// before. MariaDB's first start after an index was built reads its CONFIG table; the
	// next one does not: a second cold start then.
	for start := 1; ; start++ {
		if _, err := sandboxtest.Server(t).ColdRestart(ctx); err != nil {
			t.Fatal(err)
		}
		conn = sandboxtest.Reconnect(t)
		n := auxResident(t, conn, all.Tables[0])[""] + auxResident(t, conn, all.Tables[1])[""]
		if n == 0 {
			break
		}
		if start == 2 {
			t.Fatalf("%d pages of the full-text tables resident after a second cold start", n)
		}
		t.Logf("%d pages of the full-text tables resident after a cold start: once more", n)
	}

	for i, name := range tables {
		verify := i == 0
		pat, err := catalog.ParsePattern(db + "." + name)
		if err != nil {
			t.Fatal(err)
		}
		filter := catalog.Filter{Schemas: []string{db}, Tables: []catalog.Pattern{pat}}
		ro := quiet()
		ro.Verify = verify
		req := warm.Request{Filter: filter, Method: warm.MethodNative, Run: ro,
			Plan: warm.Options{Order: "small-first", SplitPages: warm.DefaultSplitPages}}
		if err := req.Validate(); err != nil {
			t.Fatal(err)
		}
		out, err := warm.Execute(ctx, conn, req, func(string, string) {})
		if err != nil {
			t.Fatal(err)
		}
		res := out.Result
		t.Logf("%s (verify %t): %d pages read, %d now resident that were not; residency after: %s", name, verify, res.PagesRead, res.PagesLoaded, res.Proof)
		if want := map[bool]string{true: "read the pool", false: "page counters"}[verify]; !strings.HasPrefix(res.Proof, want) {
			t.Errorf("%s: residency after %q, want %s", name, res.Proof, want)
		}

		var tb *catalog.Table
		for _, x := range all.Tables {
			if x.Name == name {
				tb = x
			}
		}
		truth := auxResident(t, conn, tb)
		var sum int64
		found := map[string]*warm.TargetResult{}
		for _, tr := range res.Targets {
			t.Logf("  %s: %d → %d pages (%d loaded) of %d, coverage %.3f → %.3f", tr.Index, tr.ResidentBefore, tr.ResidentAfter, tr.PagesLoaded, tr.IndexPages, tr.CoverageBefore, tr.CoverageAfter)
			sum += tr.PagesLoaded
			found[tr.Index] = tr
		}
		if sum != res.PagesLoaded {
			t.Errorf("%s: PagesLoaded %d, the rows' pages loaded add up to %d", name, res.PagesLoaded, sum)
		}
		// InnoDB's hidden FTS_DOC_ID_INDEX is loaded with the table: it has a row too.
		if tr := found[catalog.FTSDocIDIndex]; tr == nil || tr.ResidentAfter <= 0 || tr.IndexPages <= 0 {
			t.Errorf("%s: FTS_DOC_ID_INDEX's row %+v: want one, its pages resident after the warm, with a size", name, tr)
		}
		for _, row := range []string{"fb", bufferpool.FulltextCommon} {
			tr := found[row]
			if tr == nil {
				t.Errorf("%s: no row for %s in the warm's result", name, row)
				continue
			}
			if !tr.Fulltext || tr.PagesLoaded <= 0 || tr.ResidentAfter != truth[row] || tr.PagesLoaded != tr.ResidentAfter-tr.ResidentBefore {
				t.Errorf("%s: %s: %d → %d pages (%d loaded), the pool holds %d of its tables' B-tree pages", name, row, tr.ResidentBefore, tr.ResidentAfter, tr.PagesLoaded, truth[row])
			}
			// Sized by the pages its files have in use, not their length: loaded whole, it is
			// wholly resident.
			if tr.CoverageAfter < 0.99 {
				t.Errorf("%s: %s: coverage %.3f after a warm of every page its files have in use (%d of %d pages)", name, row, tr.CoverageAfter, tr.ResidentAfter, tr.IndexPages)
			}
		}
	}

	// Warm again: the full-text tables' pages are resident, which the plan knows (it has
	// only the files' bookkeeping pages left to load, not the rows' pages again), and
	// which pages of them were, the read before did not keep: the pool is read after.
	pat, err := catalog.ParsePattern(db + ".fproof")
	if err != nil {
		t.Fatal(err)
	}
	req := warm.Request{Filter: catalog.Filter{Schemas: []string{db}, Tables: []catalog.Pattern{pat}}, Method: warm.MethodNative, Run: quiet(),
		Plan: warm.Options{Order: "small-first", SplitPages: warm.DefaultSplitPages}}
	if err := req.Validate(); err != nil {
		t.Fatal(err)
	}
	out, err := warm.Execute(ctx, conn, req, func(string, string) {})
	if err != nil {
		t.Fatal(err)
	}
	tb := all.Tables[0]
	if tb.Name != "fproof" {
		tb = all.Tables[1]
	}
	// A file's bookkeeping: its space header, bitmap and inode pages, and MySQL's SDI root.
	if limit := int64(4 * (len(tb.Aux) + 1)); out.Native.NewPages > limit {
		t.Errorf("a second warm plans %d new pages, want at most its %d files' bookkeeping pages (%d): %+v", out.Native.NewPages, len(tb.Aux)+1, limit, out.Native.Spaces)
	}
	res, truth := out.Result, auxResident(t, conn, tb)
	if !strings.HasPrefix(res.Proof, "read the pool") {
		t.Errorf("a second warm: residency after %q, want a read of the pool", res.Proof)
	}
	for _, tr := range res.Targets {
		if tr.Fulltext && (tr.ResidentBefore != truth[tr.Index] || tr.ResidentAfter != truth[tr.Index] || tr.PagesLoaded != 0) {
			t.Errorf("a second warm: %s: %d → %d pages (%d loaded), the pool holds %d", tr.Index, tr.ResidentBefore, tr.ResidentAfter, tr.PagesLoaded, truth[tr.Index])
		}
	}
}

// auxResident counts, by the server's own page types, the B-tree and off-page pages the pool
// holds of t's FULLTEXT auxiliary tables: by row ("fb", bufferpool.FulltextCommon), and
// every page of them under "".
func auxResident(t *testing.T, conn *connection.Conn, tb *catalog.Table) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, a := range tb.Aux {
		var n, all int64
		if err := conn.DB.QueryRowContext(context.Background(), "SELECT COALESCE(SUM(PAGE_TYPE IN ('INDEX', 'BLOB', 'LOB_FIRST', 'LOB_DATA', 'LOB_INDEX')), 0), COUNT(*) FROM "+
			conn.Server.BufferPageLRUTable()+" WHERE SPACE = ?", a.Space).Scan(&n, &all); err != nil {
			t.Fatal(err)
		}
		row := bufferpool.FulltextCommon
		if strings.HasPrefix(a.Role, "fts:fb:") {
			row = "fb"
		}
		out[row] += n
		out[""] += all
	}
	return out
}

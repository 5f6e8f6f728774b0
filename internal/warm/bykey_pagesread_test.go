package warm_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/snapshot"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/warm"
)

// sqlPathSlack is what the server may read for a warm beside its plan: the data
// dictionary's pages and the table's own, opened by the catalog and to resolve the manifest
// (2 pages on MariaDB 10.11, 18 on MySQL 9.7).
const sqlPathSlack = 32

// TestSQLPathKeepsItsBudget: a warm by range scans (--by-key sql) of a hot set scattered
// over a table reads no more pages than its budget, the pages its planning reads included,
// and a dry run no more either. Each hot page is a key range of its own: the optimizer's
// estimate of it reads the leaves at both its ends, and the scan the next leaf, so a range
// counted as one page read three (a budget of 150 pages read 201-258; of 500, 705), and
// EXPLAIN, run on every statement where the statistics are stale (a table loaded and
// restarted before they were recalculated), read the plan's ends before the run's stop at
// the budget watched anything (for a budget of 150, 297 pages in planning: a dry run read
// 299, the warm 420).
func TestSQLPathKeepsItsBudget(t *testing.T) {
	ctx := context.Background()
	srv := sandboxtest.Flavor(t)
	for _, stats := range []string{"fresh", "stale"} {
		t.Run(stats+" statistics", func(t *testing.T) {
			db := sandboxtest.Schema(t)
			name := "scattered"
			tb := sqltext.Table(db, name)
			// latin1 CHAR(120): about 110 rows a page, some 1,100 leaves. Stale: the
			// statistics, never recalculated, count the first 500 rows.
			sandboxtest.Exec(t,
				"CREATE TABLE "+tb+" (id INT PRIMARY KEY, k INT NOT NULL, pad CHAR(120) CHARACTER SET latin1 NOT NULL DEFAULT '', KEY k (k)) STATS_PERSISTENT=1 STATS_AUTO_RECALC=0")
			from := int64(1)
			if stats == "stale" {
				// Counted at 500 rows, fewer than the index has pages.
				sandboxtest.Exec(t, "INSERT INTO "+tb+" (id, k) SELECT seq, seq * 7919 MOD 100003 FROM "+srv.Series(db, 1, 500)+" ORDER BY seq",
					"ANALYZE TABLE "+tb)
				from = 501
			}
			sandboxtest.Exec(t, "INSERT INTO "+tb+" (id, k) SELECT seq, seq * 7919 MOD 100003 FROM "+srv.Series(db, from, 120000)+" ORDER BY seq")
			if stats == "fresh" {
				sandboxtest.Exec(t, "ANALYZE TABLE "+tb)
			}
			sandboxtest.Exec(t, "FLUSH TABLES "+tb+" FOR EXPORT", "UNLOCK TABLES")
			// From a cold pool, 400 rows every 293 keys: a leaf in three hot, each a
			// key range of its own.
			if _, err := sandboxtest.Server(t).ColdRestart(ctx); err != nil {
				t.Fatal(err)
			}
			conn := sandboxtest.Reconnect(t)
			ids := make([]string, 400)
			for i := range ids {
				ids[i] = strconv.Itoa((i + 1) * 293)
			}
			sandboxtest.Exec(t, "SELECT SUM(LENGTH(pad)) FROM "+tb+" FORCE INDEX (PRIMARY) WHERE id IN ("+strings.Join(ids, ",")+")")
			path := filepath.Join(sandboxtest.Dir(t), name+".manifest")
			if _, err := snapshot.Capture(ctx, conn, snapshot.Options{Path: path, ToolVersion: "test", Filter: catalog.Filter{Schemas: []string{db}}}); err != nil {
				t.Fatal(err)
			}
			m, err := manifest.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Entries) < 300 {
				t.Fatalf("the manifest holds %d pages; the test needs 300+ scattered ones", len(m.Entries))
			}
			const budgetPages = 150
			b, err := warm.ParseBudget(fmt.Sprintf("%d", budgetPages*srv.PageSize))
			if err != nil {
				t.Fatal(err)
			}
			for _, dry := range []bool{true, false} {
				if _, err := sandboxtest.Server(t).ColdRestart(ctx); err != nil {
					t.Fatal(err)
				}
				conn = sandboxtest.Reconnect(t)
				req := warm.Request{Manifest: m, Method: warm.MethodNative, DryRun: dry, Run: quiet(),
					Plan: warm.Options{Order: "small-first", Budget: b, ByKey: warm.ByKeySQL, SplitPages: warm.DefaultSplitPages}}
				if err := req.Validate(); err != nil {
					t.Fatal(err)
				}
				before := pagesRead(t)
				out, err := warm.Execute(ctx, conn, req, func(string, string) {})
				read := pagesRead(t) - before
				if err != nil && (out.Manifest == nil || out.Manifest.Keyed == nil || len(out.Manifest.Keyed.Skipped) == 0) {
					t.Fatal(err)
				}
				var notes []string
				skipped := false
				if kp := out.Manifest.Keyed; kp != nil {
					notes = kp.Notes
					for _, sk := range kp.Skipped {
						// The optimizer can read a range as a scan where the
						// statistics are stale: nothing to warm ("every index was
						// skipped"), and still nothing read past the budget.
						notes, skipped = append(notes, "skipped: "+sk.Reason), true
					}
				}
				t.Logf("%s, %s statistics, dry run %v: budget %d pages, %d read; %s", srv, stats, dry, budgetPages, read, strings.Join(notes, "; "))
				// On the manifest's own tablespace the plan counts the pages at each run's
				// ends (runEnds): the plan fits the budget, and the run reads within it.
				bound := int64(budgetPages + sqlPathSlack)
				if read > bound {
					t.Errorf("dry run %v: the warm made the server read %d pages, budget %d (bound %d, the dictionary's pages included)", dry, read, budgetPages, bound)
				}
				if !dry && !skipped && read < budgetPages/3 {
					t.Errorf("the warm read %d pages of its budget of %d: it warmed next to nothing", read, budgetPages)
				}
				// The summary's "requested N key ranges" is what the plan kept: it said 500
				// of a plan cut to 160 by the pages at the ranges' ends.
				if mr := out.Manifest.Report; mr != nil && !skipped {
					var kept int64
					for _, ip := range out.Manifest.Paths {
						if ip.Path == warm.PathSQL {
							kept += ip.Ranges
						}
					}
					if mr.KeyRanges != kept || mr.LeftOut < int64(len(m.Entries))-kept-int64(budgetPages) {
						t.Errorf("dry run %v: the summary requests %d key ranges and leaves out %d; the plan keeps %d of %d", dry, mr.KeyRanges, mr.LeftOut, kept, len(m.Entries))
					}
				}
				if dry && read > sqlPathSlack && !strings.Contains(strings.Join(notes, " "), "planning read") {
					t.Errorf("the dry run read %d pages and did not say so: %q", read, notes)
				}
			}
		})
	}
}

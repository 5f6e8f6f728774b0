package warm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/flavor"
)

// ledgerRun is a run of n members with low keys base, base+10, ... (10 rows a source page)
// and high bound base+10n.
func ledgerRun(base, n int) keyRun {
	run := keyRun{low: fmt.Sprint(base), high: fmt.Sprint(base + 10*n), pages: int64(n)}
	for i := 0; i < n; i++ {
		run.members = append(run.members, runMember{low: fmt.Sprint(base + 10*i), rank: int32(i)})
	}
	return run
}

func ledgerRead(runs ...keyRun) *keyedRead {
	kr := &keyedRead{runs: runs, budgetRowsPerPage: 10,
		cond: func(low, high string) (string, error) { return "k >= " + low + " AND k < " + high, nil }}
	for _, run := range runs {
		kr.conds = append(kr.conds, "k >= "+run.low+" AND k < "+run.high)
		kr.limits = append(kr.limits, int64(maxGrowth*10*len(run.members)+16))
	}
	return kr
}

// TestLedgerStepsGiveOutTheRowsLeft: a step gives each run, hottest first, its own limit
// while the rows last; the run the rows run out in is read only up to the member past
// them (the optimizer's estimate of a whole run's range read leaves its limit never
// reached: 10 pages of a 10-page step on MySQL 9.7), and read on from there by the next
// step once that range was read to its end.
func TestLedgerStepsGiveOutTheRowsLeft(t *testing.T) {
	kr := ledgerRead(ledgerRun(1000, 16), ledgerRun(2000, 16))
	cur := make([]runCursor, 2)

	// Rows for the first run whole (its 160 rows fill its 16 pages) and 95 more.
	reads := nextStep(kr, cur, 0, kr.limits[0]+95, 10)
	if len(reads) != 2 || reads[0].limit != kr.limits[0] || reads[0].to != 16 || reads[1].limit != 95 || reads[1].to != 11 {
		t.Fatalf("step 1 reads %+v, want the first run whole and the second's 95 rows up to member 11", reads)
	}
	cond, err := condOf(kr, cur, reads[1])
	if err != nil || cond != "k >= 2000 AND k < 2110" {
		t.Fatalf("the cut read's condition %q (%v), want k >= 2000 AND k < 2110", cond, err)
	}
	// The first run had its 160 rows, the second's range ended at 90 (its pages held fewer
	// rows here): both ranges read to their end.
	newRows, rangeRows, rangeMembers := advance(kr, cur, reads, []int64{160, 90})
	if newRows != 250 || !cur[0].done || cur[1].done || cur[1].from != 11 || cur[1].before != 90 {
		t.Fatalf("after step 1: %d new rows, cursors %+v", newRows, cur)
	}
	if rangeRows != 250 || rangeMembers != 27 {
		t.Errorf("step 1 measured %d rows over %d members, want 250 over 27", rangeRows, rangeMembers)
	}

	// The next step starts at member 11; its 20 rows stop inside the range.
	reads = nextStep(kr, cur, 1, 20, 10)
	if len(reads) != 1 || reads[0].limit != 20 || reads[0].to != 14 {
		t.Fatalf("step 2 reads %+v, want 20 rows of the second run from member 11 to 14", reads)
	}
	if cond, _ := condOf(kr, cur, reads[0]); cond != "k >= 2110 AND k < 2140" {
		t.Fatalf("step 2's condition %q, want k >= 2110 AND k < 2140", cond)
	}
	if newRows, _, _ = advance(kr, cur, reads, []int64{20}); newRows != 20 || cur[1].partial != 20 || cur[1].done {
		t.Fatalf("after step 2: %d new rows, cursor %+v, want 20 rows read in part", newRows, cur[1])
	}
	// Step 3 reads the 20 again (in the pool) and 30 more: only the 30 are new.
	reads = nextStep(kr, cur, 1, 30, 10)
	if len(reads) != 1 || reads[0].limit != 50 || reads[0].to != 16 {
		t.Fatalf("step 3 reads %+v, want 50 rows from member 11 to the run's end", reads)
	}
	if cond, _ := condOf(kr, cur, reads[0]); cond != "k >= 2110 AND k < 2160" {
		t.Fatalf("step 3's condition %q, want k >= 2110 AND k < 2160", cond)
	}
	if newRows, _, _ = advance(kr, cur, reads, []int64{42}); newRows != 22 || !cur[1].done {
		t.Fatalf("after step 3: %d new rows, cursor %+v, want 22 and the run read to its end", newRows, cur[1])
	}

	// A run read whole keeps its own condition, and the step's statement counts each
	// read apart, each with its limit.
	kr = ledgerRead(ledgerRun(1000, 4))
	cur = make([]runCursor, 1)
	reads = nextStep(kr, cur, 0, 1<<40, 10)
	cond, _ = condOf(kr, cur, reads[0])
	q := buildRunCounts("`db`.`t`", []string{cond}, reads)
	want := fmt.Sprintf("SELECT %s (SELECT COUNT(*) FROM (SELECT 1 FROM `db`.`t` WHERE k >= 1000 AND k < 1040 LIMIT %d) AS innowarm_run1)", StatementTag, kr.limits[0])
	if q != want {
		t.Errorf("statement\n%s\nwant\n%s", q, want)
	}
	// A run that reaches its own limit is done, as in a statement of the whole unit.
	if advance(kr, cur, reads, []int64{kr.limits[0]}); !cur[0].done {
		t.Errorf("a run at its own limit is not done: %+v", cur[0])
	}
}

// TestLedgerRowsPerPage: the run's own rows a page count once it has read enough pages,
// never above the statistics' (rows counted from pages already in the pool read none).
func TestLedgerRowsPerPage(t *testing.T) {
	l := &budgetLedger{}
	if rpp, measured := l.rowsPerPage(40, 0); rpp != 40 || measured {
		t.Errorf("no pages read: %v rows a page (measured %v), want the statistics' 40", rpp, measured)
	}
	l.rows = 700
	if rpp, measured := l.rowsPerPage(40, 20); rpp != 35 || !measured {
		t.Errorf("700 rows in 20 pages: %v rows a page (measured %v), want 35", rpp, measured)
	}
	l.rows = 2000
	if rpp, _ := l.rowsPerPage(40, 20); rpp != 40 {
		t.Errorf("2,000 rows in 20 pages: %v rows a page, want at most the statistics' 40", rpp)
	}
	// No statistics: nothing until measured, then what was measured.
	l.rows = 0
	if rpp, measured := l.rowsPerPage(0, 0); rpp != 0 || measured {
		t.Errorf("no statistics, nothing read: %v rows a page (measured %v), want 0", rpp, measured)
	}
	l.rows = 2000
	if rpp, measured := l.rowsPerPage(0, 20); rpp != 100 || !measured {
		t.Errorf("no statistics, 2,000 rows in 20 pages: %v rows a page (measured %v), want 100", rpp, measured)
	}
}

// TestLedgerStepReservesItsPages: a step holds, of the budget, what its reads are expected
// to read, not the share of what is left it may read: eight sessions each holding half of
// what the others left saw 46 pages of a 6,281-page budget, and the run stopped at 66 pages
// read with a manifest of 344 (MariaDB 10.11, a logical copy).
func TestLedgerStepReservesItsPages(t *testing.T) {
	var runs []keyRun
	for i := 0; i < 16; i++ {
		runs = append(runs, ledgerRun(1000*i, 1))
	}
	kr := ledgerRead(runs...)
	cur := make([]runCursor, len(runs))
	reads := nextStep(kr, cur, 0, 1<<40, 10)
	// 16 one-page runs, a source page's 10 rows filling one page here: a page each and
	// a page for each end.
	if got := stepPages(kr, cur, reads, 10, 10); got != 32 {
		t.Errorf("16 one-page runs reserve %d pages, want 32", got)
	}
	// Where a page here holds half the rows, twice the pages.
	if got := stepPages(kr, cur, reads, 10, 5); got != 48 {
		t.Errorf("16 one-page runs at half the rows a page reserve %d pages, want 48", got)
	}
}

// TestDryRunShowsTheLedgersStatement: a budgeted plan of the sql path is the ledger's, and a dry run shows the statement it reads them
// with, each run counted apart at its own limit (it showed the union the run no longer
// runs); without a budget, the union.
func TestDryRunShowsTheLedgersStatement(t *testing.T) {
	srv := flavor.Server{Kind: flavor.MariaDB, Version: flavor.Version{Major: 10, Minor: 11, Patch: 19}}
	tbl := &catalog.Table{Schema: "db", Name: "t"}
	part := &catalog.Part{}
	idx := &catalog.Index{Name: "PRIMARY", Clustered: true}
	unit := func(rpp float64) *Unit {
		kr := ledgerRead(ledgerRun(1000, 2), ledgerRun(2000, 1))
		kr.budgetRowsPerPage = rpp
		return &Unit{Table: tbl, Part: part, Index: idx, Kind: KindIndex, keyed: kr}
	}
	for _, c := range []struct {
		budget  int64
		rpp     float64
		holds   bool
		stmtHas string
	}{
		{100, 10, true, "(SELECT COUNT(*) FROM (SELECT 1 FROM `db`.`t` FORCE INDEX (`PRIMARY`) WHERE k >= 1000 AND k < 1020 LIMIT 336) AS innowarm_run1), (SELECT COUNT(*)"},
		{0, 10, false, "UNION ALL"},
		// No rows a page by the statistics: the ledger's steps measure them.
		{100, 0, true, "(SELECT COUNT(*) FROM (SELECT 1 FROM `db`.`t` FORCE INDEX (`PRIMARY`) WHERE k >= 1000 AND k < 1020 LIMIT 336) AS innowarm_run1), (SELECT COUNT(*)"},
	} {
		pl := &Plan{Server: srv, BudgetPages: c.budget, Units: []*Unit{unit(c.rpp), unit(10)}}
		if got := pl.ledgerHoldsAll(); got != c.holds {
			t.Errorf("budget %d, %v rows a page: the ledger holds the run %v, want %v", c.budget, c.rpp, got, c.holds)
		}
		for _, u := range pl.Units {
			u.keyed.perRun = pl.ledgerHoldsAll()
		}
		if q := SQLText(srv, pl.Units[0], 0); !strings.Contains(q, c.stmtHas) {
			t.Errorf("budget %d, %v rows a page: the dry run shows\n%s\nwant it to hold %q", c.budget, c.rpp, q, c.stmtHas)
		}
	}
}

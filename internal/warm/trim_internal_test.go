package warm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/flavor"
)

// TestTrimToBudgetSaysWhatItCounted: runs past the budget are left out, the one that
// straddles it read in part from its low end, and the reason names the pages at the runs'
// ends only where the plan counted them (the manifest's own tablespace): elsewhere it said
// "with the pages at their ends" of a cost that had none.
func TestTrimToBudgetSaysWhatItCounted(t *testing.T) {
	for _, ends := range []int64{0, 2} {
		kr := &keyedRead{conds: []string{"a", "b", "c"}, limits: []int64{1000, 1000, 1000},
			pages: []int64{100, 100, 100}, ends: ends}
		for range kr.conds {
			kr.costs = append(kr.costs, 100+ends)
		}
		pl := trimmedToBudget(kr, 300, 150)

		if len(kr.conds) != 2 || kr.pages[0] != 100 {
			t.Fatalf("ends %d: kept runs %v of pages %v, want the first whole and the second in part", ends, kr.conds, kr.pages)
		}
		if got := kr.costs[0] + kr.costs[1]; got != 150 {
			t.Errorf("ends %d: the kept runs cost %d pages, want the budget's 150", ends, got)
		}
		if want := 150 - (100 + ends) - ends; kr.pages[1] != want {
			t.Errorf("ends %d: the straddling run keeps %d of its pages, want %d (the room less its ends)", ends, kr.pages[1], want)
		}
		if len(pl.LeftOut) != 1 {
			t.Fatalf("ends %d: left out %+v, want one entry for the index", ends, pl.LeftOut)
		}
		lo := pl.LeftOut[0]
		if wantPages := 300 - 100 - kr.pages[1]; lo.Pages != wantPages {
			t.Errorf("ends %d: left out %d pages, want %d", ends, lo.Pages, wantPages)
		}
		cut := 100 - kr.pages[1]
		if want := fmt.Sprintf("1 key run of 100 manifest pages, and %d manifest pages of a run read in part, left out", cut); !strings.Contains(lo.Reason, want) {
			t.Errorf("ends %d: reason %q, want it to say %q", ends, lo.Reason, want)
		}
		if said := strings.Contains(lo.Reason, "pages at their ends"); said != (ends > 0) {
			t.Errorf("ends %d: reason %q; want the pages at the runs' ends named only when counted", ends, lo.Reason)
		}
	}
}

// TestTrimToBudgetCutRunReadsThePagesLeft: the run the budget reads in part reads the rows
// of the pages left, by the index's rows per page here, not its share of a leaf run's row
// limit (16 times its pages' rows, for a range grown by inserts since the snapshot): its
// hot window's rows fill more pages than the window's manifest pages on a copy whose pages
// hold fewer rows. Where the statistics are not plausible (no rows per page), the share
// of its limit stays.
func TestTrimToBudgetCutRunReadsThePagesLeft(t *testing.T) {
	for _, rowsPerPage := range []float64{0, 40} {
		// Two leaf runs of 100 manifest pages, each limited to 16 times their rows.
		const grown = 16 * 40 * 100
		kr := &keyedRead{conds: []string{"a", "b"}, limits: []int64{grown, grown},
			pages: []int64{100, 100}, costs: []int64{100, 100}, budgetRowsPerPage: rowsPerPage}
		trimmedToBudget(kr, 200, 150)
		if len(kr.conds) != 2 || kr.pages[1] != 50 {
			t.Fatalf("rows per page %v: kept runs %v of pages %v, want the first whole and 50 pages of the second", rowsPerPage, kr.conds, kr.pages)
		}
		want := int64(grown / 2) // the share of its limit
		if rowsPerPage > 0 {
			want = 40 * 50 // the 50 pages left, 40 rows each here
		}
		if kr.limits[1] != want {
			t.Errorf("rows per page %v: the cut run's row limit is %d, want %d", rowsPerPage, kr.limits[1], want)
		}
		if kr.limits[0] != grown {
			t.Errorf("rows per page %v: the whole run's row limit changed to %d", rowsPerPage, kr.limits[0])
		}
	}
}

// trimmedToBudget is a plan of one unit reading kr of an index of estPages, held to budget
// pages by trimToBudget.
func trimmedToBudget(kr *keyedRead, estPages, budget int64) *Plan {
	tbl := &catalog.Table{Schema: "db", Name: "t"}
	part := &catalog.Part{}
	idx := &catalog.Index{Name: "PRIMARY"}
	tg := &Target{Table: tbl, Part: part, Index: idx, Kind: KindIndex, EstPages: estPages}
	u := &Unit{Target: tg, Table: tbl, Part: part, Index: idx, Kind: KindIndex, keyed: kr}
	tg.Units = []*Unit{u}
	pl := &Plan{Units: []*Unit{u}, Targets: []*Target{tg}, BudgetPages: budget, BudgetSource: "--budget"}
	pl.trimToBudget(budget, map[*Target]TargetKey{}, map[TargetKey]IndexPath{})
	return pl
}

// TestKeyedStatementsCapTheirRowsWhereTheServerStopsThere: on MySQL (8.0.22+), whose
// executor stops a union's reads at its limit, each statement of the sql path carries a
// limit on all its rows, its share of the budget in this server's pages (90% of it: the
// rows a page holds are the statistics' estimate): a 185-page budget on a copy whose pages
// hold fewer rows than the manifest's loaded 188-264 pages, stopped only by watchBudget.
// MariaDB fills the union's table before its limit applies: no limit there. Where the
// statistics are not plausible there is nothing to count rows by: no limit either.
func TestKeyedStatementsCapTheirRowsWhereTheServerStopsThere(t *testing.T) {
	mysql := flavor.Server{Kind: flavor.MySQL, Version: flavor.Version{Major: 9, Minor: 7, Patch: 4}}
	mariadb := flavor.Server{Kind: flavor.MariaDB, Version: flavor.Version{Major: 10, Minor: 11, Patch: 19}}
	oldMySQL := flavor.Server{Kind: flavor.MySQL, Version: flavor.Version{Major: 5, Minor: 7, Patch: 44}}
	for _, c := range []struct {
		srv         flavor.Server
		rowsPerPage float64
		budget      int64
		want        []int64
	}{
		{mysql, 40, 150, []int64{2700, 2700}}, // each unit 100 of 200 counted pages: 0.9 x 75 pages x 40 rows
		{mysql, 40, 400, []int64{7200, 7200}}, // a budget the plan does not fill: its share grows
		{mysql, 0, 150, []int64{0, 0}},
		{mariadb, 40, 150, []int64{0, 0}},
		{oldMySQL, 40, 150, []int64{0, 0}},
	} {
		var units []*Unit
		for i := 0; i < 2; i++ {
			kr := &keyedRead{conds: []string{"`id` >= 1"}, limits: []int64{10000}, pages: []int64{100}, costs: []int64{100}, budgetRowsPerPage: c.rowsPerPage}
			units = append(units, &Unit{EstPages: 100, keyed: kr})
		}
		pl := &Plan{Server: c.srv, Units: units, BudgetPages: c.budget}
		pl.capKeyedRows()
		for i, u := range units {
			q := buildKeyedSelect("`db`.`t`", u.keyed)
			limit := fmt.Sprintf(" LIMIT %d) AS innowarm_keys", c.want[i])
			if c.want[i] == 0 {
				limit = " LIMIT 10000)) AS innowarm_keys"
			}
			if u.keyed.rowCap != c.want[i] || !strings.HasSuffix(q, limit) {
				t.Errorf("%s, %v rows a page, budget %d: unit %d capped at %d rows (%s); want %d", c.srv, c.rowsPerPage, c.budget, i, u.keyed.rowCap, q, c.want[i])
			}
		}
	}
}

package warm

import (
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/bufferpool"
)

// A 128 MiB pool (8,112 pages, 1,536 kept free by the page cleaner) shrunk to 48 MiB
// (3,056 pages): each kind of budget is cut to what the smaller pool holds.
func TestCutBudget(t *testing.T) {
	start := bufferpool.Totals{PageSize: 16384, PagesTotal: 8112, PagesFree: 8000, FreeTarget: 1536}
	planned := int64(6400)
	cases := []struct {
		name   string
		budget Budget
		now    poolSample
		read   int64
		want   int64
	}{
		// Nothing evicted: what was read, and the room left in the smaller pool.
		{"default", Budget{}, poolSample{Total: 3056, Free: 2000}, 1000, 1000 + 2000 - 1536},
		{"default, no room left", Budget{}, poolSample{Total: 3056, Free: 900}, 2100, 2100},
		// MySQL withdraws the free pages first: none free while it resizes.
		{"default, mid-resize", Budget{}, poolSample{Total: 3056, Free: 0}, 500, 500},
		{"percent of the pool it has now", Budget{Percent: 50}, poolSample{Total: 3056, Free: 2000}, 1000, 1528},
		{"size over what the pool holds", Budget{Bytes: 100 << 20}, poolSample{Total: 3056, Free: 2000}, 1000, 3056 - 1536},
		{"size the smaller pool still holds", Budget{Bytes: 8 << 20}, poolSample{Total: 3056, Free: 2000}, 1000, 512},
		// Never more than the plan: a pool that grows brings nothing back.
		{"grown", Budget{}, poolSample{Total: 16224, Free: 15000}, 1000, planned},
	}
	for _, c := range cases {
		if got := cutBudget(c.budget, start, planned, c.now, c.read); got != c.want {
			t.Errorf("%s: cutBudget = %d; want %d", c.name, got, c.want)
		}
	}
}

// Units start while they fit the budget; after a shrink, those that would pass the cut one
// are left out (a smaller one later may still fit), and pages read past it stop the run.
func TestPoolGuardAdmitsWithinTheCutBudget(t *testing.T) {
	start := bufferpool.Totals{PageSize: 16384, PagesTotal: 8112, PagesFree: 8000, FreeTarget: 1536}
	g := &poolGuard{start: start, planned: 6400, allowed: 6400}
	for i := 0; i < 3; i++ {
		if !g.admit(600) {
			t.Fatalf("unit %d of 600 pages refused before any shrink", i)
		}
	}
	if g.observe(poolSample{Total: 8112, Free: 7000, Read: 1000}) {
		t.Fatal("over the budget without a shrink")
	}
	// 48 MiB: 2,000 free pages, so 464 more may be read (1,464 in all); the units started
	// planned 1,800.
	if g.observe(poolSample{Total: 3056, Free: 2000, Read: 1000}) {
		t.Fatal("over the cut budget with 1,000 pages read of 1,464")
	}
	if g.admit(600) {
		t.Error("a 600-page unit admitted past the cut budget")
	}
	if g.left() != 464 {
		t.Errorf("left = %d; want 464", g.left())
	}
	if !g.observe(poolSample{Total: 3056, Free: 1500, Read: 1500}) {
		t.Error("1,500 pages read of a 1,464-page budget: the run must stop")
	}
	r := g.resize
	if r == nil || r.FromPages != 8112 || r.ToPages != 3056 || r.BudgetBefore != 6400 || r.BudgetAfter != 1464 || r.ReadBefore != 1000 || r.LeftOutUnits != 1 || r.LeftOutPages != 600 {
		t.Fatalf("resize = %+v", r)
	}
	text := r.Text()
	for _, want := range []string{"shrank from 8112 to 3056 pages", "budget went from 6400 to 1464 pages", "1 units (600 pages) left out"} {
		if !strings.Contains(text, want) {
			t.Errorf("%q lacks %q", text, want)
		}
	}
}

// An explicit budget is held to what the pool can hold beside the page cleaner's free pages
// and the selection's pages already resident: past that the warm evicts its own pages.
func TestBudgetCappedAtWhatThePoolHolds(t *testing.T) {
	tot := bufferpool.Totals{PageSize: 16384, PagesTotal: 4056, PagesFree: 1300, FreeTarget: 1536}
	for _, c := range []struct {
		name     string
		b        Budget
		resident int64
		want     int64
		capped   bool
	}{
		{"the whole pool, nothing of the selection resident", Budget{Percent: 100, Raw: "100%"}, 0, 2520, true},
		{"the whole pool, part of the selection resident", Budget{Percent: 100, Raw: "100%"}, 1000, 1520, true},
		{"more resident than the pool holds", Budget{Percent: 100, Raw: "100%"}, 3000, 0, true},
		{"a size that fits", Budget{Bytes: 16 << 20, Raw: "16M"}, 1000, 1024, false},
		{"a size that does not", Budget{Bytes: 64 << 20, Raw: "64M"}, 0, 2520, true},
		{"the default: the free pages less the reserve", Budget{}, 1000, 0, false},
	} {
		got, source := budgetPages(c.b, tot, c.resident)
		if got != c.want || strings.Contains(source, "capped") != c.capped {
			t.Errorf("%s: %d pages (%s), want %d, capped %v", c.name, got, source, c.want, c.capped)
		}
	}
	// Totals the server did not give (a pool of 0 pages) leave the budget as asked.
	if got, _ := budgetPages(Budget{Percent: 50, Raw: "50%"}, bufferpool.Totals{PageSize: 16384}, 10); got != 0 {
		t.Errorf("no pool: %d", got)
	}
	if got, _ := budgetPages(Budget{Bytes: 1 << 20, Raw: "1M"}, bufferpool.Totals{PageSize: 16384}, 10); got != 64 {
		t.Errorf("no pool, a size: %d, want 64", got)
	}
}

package cli

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/follow"
	"github.com/innowarm/innowarm/internal/warm"
)

// A plan of thousands of tables lists the first of what it left out or found resident and
// sums up the rest in one line.
func TestLongListsAreSummedUp(t *testing.T) {
	var left []warm.LeftOut
	var resident []string
	for i := range 5000 {
		left = append(left, warm.LeftOut{Schema: "many", Table: fmt.Sprintf("t%d", i), Kind: warm.KindTablespace, Pages: 4, Reason: "over budget"})
		resident = append(resident, fmt.Sprintf("`many`.`r%d`", i))
	}
	var b bytes.Buffer
	printLeftOut(&b, left)
	printAlreadyResident(&b, resident)
	out := b.String()
	if n := strings.Count(out, "\n"); n != 2*listedInText+2 {
		t.Errorf("%d lines, want %d:\n%s", n, 2*listedInText+2, out)
	}
	for _, want := range []string{"left out: 4980 more (19920 pages; --json lists them all)", "already resident: 4980 more"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	b.Reset()
	printLeftOut(&b, left[:listedInText])
	if strings.Contains(b.String(), "more") || strings.Count(b.String(), "\n") != listedInText {
		t.Errorf("a list of %d: %s", listedInText, b.String())
	}
}

// A warm that failed after some of its units (a lost connection) has no measure of the
// pool after it: its summary says FAILED and prints the after figures as unknown, not as
// zeros ("0 pages now resident", "a pool of 0 pages") a script would take for a result.
func TestFailedWarmPrintsNoZeroAfter(t *testing.T) {
	res := &warm.Result{Method: warm.MethodScan, Units: 6, UnitsDone: 3, Parallel: 2, Seconds: 1.5,
		Targets: []*warm.TargetResult{{Schema: "s", Table: "t", Index: "PRIMARY", Units: 6, UnitsDone: 3, ResidentBefore: 10, EstPages: 100, CoverageBefore: 0.1}},
		Errors:  []string{"`s`.`t` PRIMARY: lost the connection"}}
	res.PoolBefore.PagesFree, res.PoolBefore.PagesTotal = 7000, 8000
	var b bytes.Buffer
	printWarmResult(&b, res)
	out := b.String()
	if !strings.Contains(out, "warm (scan) FAILED") || !strings.Contains(out, "3 of 6 units") || !strings.Contains(out, "10.0% → ?") {
		t.Errorf("want a failed summary with unknown after figures:\n%s", out)
	}
	for _, wrong := range []string{"pages now resident", "pool: ", "free pages of 0"} {
		if strings.Contains(out, wrong) {
			t.Errorf("a figure the failed warm never measured (%q):\n%s", wrong, out)
		}
	}

	res.PoolAfter = res.PoolBefore // measured: the usual summary
	b.Reset()
	printWarmResult(&b, res)
	if out := b.String(); strings.Contains(out, "FAILED") || !strings.Contains(out, "pool: 7000 free → 7000 free pages of 8000") {
		t.Errorf("a measured result prints its figures:\n%s", out)
	}
}

// A follow round's line says which path its indexes took, what of the hot set the target
// lacks (before, only --json said it: a target missing a quarter of the hot set read
// "100% resident, lag 0%"), and, where no page of the hot set can be counted (every index
// read by range scans on a copy whose trees innowarm cannot read), that its coverage is
// unknown: never a share of statements given as the coverage.
func TestFollowLineSaysPathsAndDropped(t *testing.T) {
	s := follow.Status{OK: true, Round: 2, HotSetPages: 742, Coverage: 1, Dropped: 170, Paths: map[string]int{"tree": 6, "pages": 3}, Method: "native"}
	var b bytes.Buffer
	printFollowStatus(&b, s)
	out := b.String()
	for _, want := range []string{"100.0% resident on the target", "indexes by path: pages 3, tree 6", "170 pages of the source's hot set are not on the target"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in:\n%s", want, out)
		}
	}
	s = follow.Status{OK: true, Round: 1, HotSetPages: 100, Coverage: math.NaN(), Lag: math.NaN(), CoverageOf: follow.CoverageUnknown, UncountedPages: 98,
		KeyRanges: 50, RangeStatements: 2, RangeStatementsRun: 2, Paths: map[string]int{"sql": 2}, Method: "scan"}
	b.Reset()
	printFollowStatus(&b, s)
	if out := b.String(); !strings.Contains(out, "coverage unknown") || !strings.Contains(out, "2 of its 2 range statements ran") || strings.Contains(out, "100.0%") || strings.Contains(out, "not on the target") {
		t.Errorf("a round of range scans:\n%s", out)
	}
}

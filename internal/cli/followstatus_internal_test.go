package cli

import (
	"math"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/follow"
)

// A round whose hot set has pages no number names on the target (a logical standby whose
// trees innowarm cannot read) measures only the rest: a user read "100.0% resident on the
// target (lag 0.0%)" on a logical standby where two hot indexes were cold, and a round of
// range scans said "100.0% of its range statements run", a share of statements beside the
// page shares. The line says what the figure is of, what is not in it, and never gives a
// share of statements as the coverage.
func TestFollowStatusSaysWhatItsCoverageLeavesOut(t *testing.T) {
	before := 0.2
	for _, c := range []struct {
		name string
		s    follow.Status
		want []string
		not  []string
	}{
		{"every page counted", follow.Status{OK: true, Coverage: 1, CoverageBefore: &before, KeyRanges: 40, CoverageOf: follow.CoverageOfHotSet, Paths: map[string]int{"pages": 2, "tree": 1}},
			[]string{"100.0% resident on the target"}, []string{"not counted", "range statements"}},
		{"pages not counted", follow.Status{OK: true, Coverage: 1, CoverageBefore: &before, KeyRanges: 40, CoverageOf: follow.CoverageOfCounted, UncountedPages: 70, Paths: map[string]int{"tree": 1, "sql": 1, "none": 1}},
			[]string{"100.0% of the pages counted resident on the target", "not counted: 70 pages"}, nil},
		{"nothing counted", follow.Status{OK: true, Coverage: math.NaN(), Lag: math.NaN(), KeyRanges: 40, CoverageOf: follow.CoverageUnknown, UncountedPages: 90, RangeStatements: 4, RangeStatementsRun: 4, Paths: map[string]int{"sql": 2}},
			[]string{"coverage unknown", "4 of its 4 range statements ran"}, []string{"NaN", "100.0%"}},
		{"statements left", follow.Status{OK: true, Coverage: 0.3, Lag: 0.7, KeyRanges: 40, CoverageOf: follow.CoverageOfHotSet, RangeStatements: 4, RangeStatementsRun: 2, Paths: map[string]int{"sql": 2}},
			[]string{"30.0% resident on the target", "2 of its 4 range statements ran"}, nil},
	} {
		var b strings.Builder
		printFollowStatus(&b, c.s)
		for _, w := range c.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: %q lacks %q", c.name, b.String(), w)
			}
		}
		for _, w := range c.not {
			if strings.Contains(b.String(), w) {
				t.Errorf("%s: %q has %q", c.name, b.String(), w)
			}
		}
	}
}

package cli

import (
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/follow"
)

// A round whose indexes went partly by key range (no page numbers on the target) or not at
// all (path none) measures only its pages loaded by number: a user read "100.0% resident
// on the target (lag 0.0%)" on a logical standby where two hot indexes were cold. The line
// now says what the figure is of, and what is not in it.
func TestFollowStatusSaysWhatItsCoverageLeavesOut(t *testing.T) {
	before := 0.2
	for _, c := range []struct {
		name string
		s    follow.Status
		want []string
		not  []string
	}{
		{"every index by number or the tree", follow.Status{OK: true, Coverage: 1, CoverageBefore: &before, KeyRanges: 40, Paths: map[string]int{"pages": 2, "tree": 1}},
			[]string{"100.0% resident on the target"}, []string{"not in that figure"}},
		{"key ranges and an index not warmed", follow.Status{OK: true, Coverage: 1, CoverageBefore: &before, KeyRanges: 40, Paths: map[string]int{"tree": 1, "sql": 1, "none": 1}},
			[]string{"100.0% of its pages loaded by number resident on the target", "not in that figure: 1 of its indexes read by range scans; 1 of its indexes not warmed (path none)"}, nil},
		{"every index by range scans", follow.Status{OK: true, Coverage: 1, KeyRanges: 40, Paths: map[string]int{"sql": 2}},
			[]string{"100.0% of its range statements run on the target"}, []string{"not in that figure"}},
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

package warm

import (
	"errors"
	"testing"

	"github.com/innowarm/innowarm/internal/catalog"
)

// A plan that loads nothing: it succeeds only where an index is resident already and the
// budget left nothing out. A table's file pages resident while every index was skipped (a
// manifest's "(file pages)", with statistics the scans could not use) exited 0 with
// "nothing to load".
func TestCheckWork(t *testing.T) {
	lost := []catalog.Skip{{Schema: "s", Table: "t", Index: "PRIMARY", Reason: "no usable statistics"}}
	over := []LeftOut{{Schema: "s", Table: "t", Index: "k", Pages: 10, Reason: "over budget"}}
	file, index := &Target{Kind: KindFile}, &Target{Kind: KindIndex}
	for _, c := range []struct {
		name string
		pl   Plan
		fail bool
	}{
		{"units to run", Plan{Units: []*Unit{{}}, Skipped: lost}, false},
		{"an index resident, one skipped", Plan{Resident: []*Target{index}, Skipped: lost}, false},
		{"only file pages resident, every index skipped", Plan{Resident: []*Target{file}, Skipped: lost}, true},
		{"an index resident, the rest over the budget", Plan{Resident: []*Target{index}, LeftOut: over}, true},
		{"nothing at all", Plan{}, false},
	} {
		err := c.pl.CheckWork()
		if (err != nil) != c.fail || (err != nil && !errors.Is(err, ErrNothingToWarm)) {
			t.Errorf("%s: %v, want failure %v", c.name, err, c.fail)
		}
	}
}

package warm

import (
	"fmt"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// nothingToWarm is the error of a plan that loads nothing and has nothing resident, naming
// what really stopped it: the budget (left out), or skips that leave pages cold (an index
// the optimizer will not read, a lock, a privilege; FULLTEXT on MySQL). nil when only what
// has no pages in the pool was skipped (views, other engines): there was nothing to load.
func nothingToWarm(leftOut []LeftOut, budget int64, budgetSource string, skipped []catalog.Skip) error {
	var lost []catalog.Skip
	for _, s := range skipped {
		if !s.NotInPool {
			lost = append(lost, s)
		}
	}
	also := ""
	if len(lost) > 0 {
		also = fmt.Sprintf("; %d skipped (%s: %s)", len(lost), skipName(lost[0]), lost[0].Reason)
		if len(lost) > 1 {
			also = fmt.Sprintf("; %d skipped (first %s: %s; --dry-run lists them)", len(lost), skipName(lost[0]), lost[0].Reason)
		}
	}
	if len(leftOut) > 0 {
		least := leftOut[0].Pages
		for _, l := range leftOut {
			least = min(least, l.Pages)
		}
		return fmt.Errorf("%w: the budget of %d %s (%s) has no room for any of the %d it would load (the smallest needs %d new %s); --budget (a size or a percent of the pool) lets the warm evict other pages%s",
			ErrNothingToWarm, budget, plural(budget, "page", "pages"), budgetSource, len(leftOut), least, plural(least, "page", "pages"), also)
	}
	if len(lost) == 0 {
		return nil
	}
	more := ""
	if len(lost) > 1 {
		more = fmt.Sprintf(" (and %d more; --dry-run lists them)", len(lost)-1)
	}
	return fmt.Errorf("%w: every index was skipped: %s: %s%s", ErrNothingToWarm, skipName(lost[0]), lost[0].Reason, more)
}

func skipName(s catalog.Skip) string {
	name := sqltext.Table(s.Schema, s.Table)
	if s.Index != "" {
		name += " index " + sqltext.Ident(s.Index)
	}
	return name
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// CheckWork is the plan's CheckWork (a manifest's, a native load's or the scans'): a dry
// run exits as the warm would when the plan loads nothing and leaves pages cold.
func (o *Outcome) CheckWork() error {
	switch {
	case o == nil:
		return nil
	case o.Manifest != nil:
		return o.Manifest.CheckWork()
	case o.Native != nil:
		return o.Native.CheckWork()
	case o.Plan != nil:
		return o.Plan.CheckWork()
	}
	return nil
}

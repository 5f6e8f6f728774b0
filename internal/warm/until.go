package warm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// UntilOutcome is what became of a coverage goal (--until-coverage): a warm that ends below
// its goal still exits 0 when it ended for its budget, and a script waiting for the goal
// (an orchestrator's hook) must be able to tell that from the goal met.
type UntilOutcome struct {
	Goal    float64 `json:"goal"`
	Reached bool    `json:"reached"`
	// Coverage is the target's coverage when the warm ended, as the goal measures it; nil
	// when it could not be measured (an interrupted warm is not held up to measure it).
	Coverage *float64 `json:"coverage"`
	Detail   string   `json:"detail,omitempty"` // e.g. "1622 of 3702 manifest pages resident"
	// Why the goal was not reached: UntilBudget, UntilOutOfPages, UntilStopped,
	// UntilInterrupted or UntilFailed; Reason says it in words.
	Why    string `json:"why,omitempty"`
	Reason string `json:"reason,omitempty"`

	// early: the goal was met during the run, which then stopped (Result.Stopped says so).
	early bool
}

// Why a coverage goal was not reached.
const (
	UntilBudget      = "budget"       // the budget left pages out, or stopped the run
	UntilOutOfPages  = "out_of_pages" // everything planned was loaded
	UntilStopped     = "stopped"      // --critical-load, the pool shrinking, traffic
	UntilInterrupted = "interrupted"  // Ctrl-C, SIGTERM
	UntilFailed      = "failed"       // units or the load failed
)

// Text is the one line the result prints about the goal: whether it was reached, at what
// coverage, and if not why. Empty when the run stopped early for the goal: Result.Stopped
// says that.
func (u *UntilOutcome) Text() string {
	if u == nil || u.early {
		return ""
	}
	cov := "coverage unknown"
	if u.Coverage != nil {
		cov = fmt.Sprintf("coverage %.1f%%", 100**u.Coverage)
	}
	if u.Detail != "" {
		cov += " (" + u.Detail + ")"
	}
	if u.Reached {
		return fmt.Sprintf("coverage goal %.1f%% reached: %s", 100*u.Goal, cov)
	}
	return fmt.Sprintf("coverage goal %.1f%% NOT reached: %s; %s", 100*u.Goal, cov, u.Reason)
}

// untilGoal is a request's coverage goal: the Until a run watches, and the last coverage
// measured, for the outcome.
type untilGoal struct {
	want    float64
	measure func(ctx context.Context) (float64, string, error)

	mu       sync.Mutex
	measured bool
	coverage float64
	detail   string
}

func newUntilGoal(want float64, measure func(ctx context.Context) (float64, string, error)) *untilGoal {
	return &untilGoal{want: want, measure: measure}
}

// until is what the run watches: the goal's measure, noting each coverage it finds.
func (g *untilGoal) until() Until {
	return Until{Want: g.want, Measure: g.take}
}

func (g *untilGoal) take(ctx context.Context) (float64, string, error) {
	c, detail, err := g.measure(ctx)
	if err == nil {
		g.mu.Lock()
		g.measured, g.coverage, g.detail = true, c, detail
		g.mu.Unlock()
	}
	return c, detail, err
}

// untilFinalTimeout bounds the measure after the run: a lost server must not hold up the
// result.
const untilFinalTimeout = 30 * time.Second

// settle records in res whether the goal was reached and, if not, why. It measures the
// coverage once more unless the run stopped for the goal (the coverage it met is the one
// to report) or was interrupted (the user asked to stop, not to wait for a read of the
// pool); a run too short for the watch's first check (a second) is only measured here.
func (g *untilGoal) settle(ctx context.Context, out *Outcome, res *Result, runErr error) {
	if g == nil || res == nil {
		return
	}
	interrupted := res.Interrupted || ctx.Err() != nil
	g.mu.Lock()
	early := g.measured && g.coverage >= g.want
	g.mu.Unlock()
	if !early && !interrupted {
		mctx, cancel := context.WithTimeout(ctx, untilFinalTimeout)
		_, _, _ = g.take(mctx) // on error the last check's coverage stands
		cancel()
	}
	g.mu.Lock()
	u := &UntilOutcome{Goal: g.want, Detail: g.detail, early: early && strings.HasPrefix(res.Stopped, "stopped early: coverage")}
	if g.measured {
		c := g.coverage
		u.Coverage, u.Reached = &c, c >= g.want
	}
	g.mu.Unlock()
	if !u.Reached {
		u.Why, u.Reason = notReached(out, res, runErr, interrupted)
	}
	res.UntilCoverage = u
}

// notReached says why a run ended below its coverage goal, the first that applies of: it
// was interrupted, the budget stopped it, something else stopped it, it failed, the plan
// left pages out for the budget, the pool shrank under it, or it loaded all it planned.
func notReached(out *Outcome, res *Result, runErr error, interrupted bool) (why, reason string) {
	budget := "the budget"
	if pages, source := out.budget(); source != "" {
		budget = fmt.Sprintf("the budget of %d pages (%s)", pages, source)
	}
	failed := res.UnitsFailed > 0 || (runErr != nil && !errors.Is(runErr, context.Canceled))
	switch {
	case interrupted:
		return UntilInterrupted, "the warm was interrupted"
	case strings.HasPrefix(res.Stopped, stoppedAtBudget):
		// The run's own budget, which the stop names: a manifest's key ranges are read
		// within what its load by page number left of the budget.
		read, _, _ := strings.Cut(strings.TrimPrefix(res.Stopped, stoppedAtBudget+": "), "; ")
		return UntilBudget, "the budget stopped the warm: " + read
	case res.Stopped != "":
		return UntilStopped, "the warm " + res.Stopped
	case failed && res.UnitsFailed > 0:
		return UntilFailed, fmt.Sprintf("%d of %d units failed (see the errors)", res.UnitsFailed, res.Units)
	case failed:
		return UntilFailed, "the warm failed: " + runErr.Error()
	case out.leftOutForBudget(res) > 0:
		return UntilBudget, fmt.Sprintf("%s left %d pages out", budget, out.leftOutForBudget(res))
	case res.PoolResize != nil:
		return UntilStopped, "pages were left out: " + res.PoolResize.Text()
	}
	return UntilOutOfPages, "the warm ran out of pages: it loaded all it planned, and the rest of the target is not in its plan (skipped, not found on this server, or evicted since)"
}

// budget is the budget the warm planned within, in pages and where it came from ("" when
// no plan says).
func (o *Outcome) budget() (int64, string) {
	switch {
	case o.Native != nil:
		return o.Native.BudgetPages, o.Native.BudgetSource
	case o.Plan != nil:
		return o.Plan.BudgetPages, o.Plan.BudgetSource
	case o.Manifest != nil && o.Manifest.Keyed != nil:
		return o.Manifest.Keyed.BudgetPages, o.Manifest.Keyed.BudgetSource
	}
	return 0, ""
}

// leftOutForBudget is how many pages the plans left out for the budget: a manifest's
// report counts them (by number and by key range alike); every left-out entry of a
// selection's plans is over its budget.
func (o *Outcome) leftOutForBudget(res *Result) int64 {
	switch {
	case res.Manifest != nil:
		return res.Manifest.LeftOut
	case o.Manifest != nil && o.Manifest.Report != nil:
		return o.Manifest.Report.LeftOut
	}
	var n int64
	if o.Plan != nil {
		for _, l := range o.Plan.LeftOut {
			n += l.Pages
		}
	}
	if o.Native != nil {
		for _, l := range o.Native.LeftOut {
			n += l.Pages
		}
	}
	return n
}

package warm

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// --until-coverage says how far along the warm is while it waits for its goal: the coverage
// against the goal, how fast it rises and the time still to go, then when it got there.
func TestUntilReportsProgressTowardsTheGoal(t *testing.T) {
	var out sandboxtest.SyncBuffer
	var mu sync.Mutex
	coverage := 0.0
	u := Until{Want: 0.75, Measure: func(context.Context) (float64, string, error) {
		mu.Lock()
		defer mu.Unlock()
		coverage += 0.125 // an eighth a check, a check a second
		return coverage, "test pages", nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reached := u.watch(ctx, cancel, logx.New(&out, false))
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute):
		t.Fatal("the goal was never reached")
	}
	got := reached()
	if !strings.HasPrefix(got, "stopped early: coverage 75.0% reached the 75.0% goal after") {
		t.Errorf("reached: %q", got)
	}
	log := out.String()
	if !strings.Contains(log, "coverage 62.5% of the 75.0% goal, rising ") || !strings.Contains(log, " to go (test pages)") {
		t.Errorf("no progress line at the fifth check:\n%s", log)
	}
}

// A goal not reached says why, the first that applies: an interrupt, the budget's stop,
// another stop, a failure, the plan's budget, or nothing left to load.
func TestUntilNotReachedSaysWhy(t *testing.T) {
	withBudget := &Outcome{Plan: &Plan{BudgetPages: 100, BudgetSource: "--budget 10% of the pool",
		LeftOut: []LeftOut{{Pages: 40, Reason: "over budget"}}}}
	plain := &Outcome{Plan: &Plan{BudgetPages: 100, BudgetSource: "free pages"}}
	for _, c := range []struct {
		name        string
		out         *Outcome
		res         *Result
		err         error
		interrupted bool
		why, reason string
	}{
		{"interrupt first", withBudget, &Result{Stopped: stoppedAtBudget + ": 90 pages read"}, context.Canceled, true, UntilInterrupted, "interrupted"},
		{"budget's stop", plain, &Result{Stopped: stoppedAtBudget + ": 90 pages read, budget 100 pages (x); 2 units stopped"}, nil, false,
			UntilBudget, "the budget stopped the warm: 90 pages read, budget 100 pages (x)"},
		{"critical load", withBudget, &Result{Stopped: "stopped: Threads_running 60 > 50"}, nil, false, UntilStopped, "the warm stopped: Threads_running 60 > 50"},
		{"failed units", withBudget, &Result{Units: 4, UnitsFailed: 1}, nil, false, UntilFailed, "1 of 4 units failed"},
		{"plan's budget", withBudget, &Result{}, nil, false, UntilBudget, "the budget of 100 pages (--budget 10% of the pool) left 40 pages out"},
		{"manifest's budget", plain, &Result{Manifest: &ManifestReport{LeftOut: 7}}, nil, false, UntilBudget, "left 7 pages out"},
		{"all loaded", plain, &Result{}, nil, false, UntilOutOfPages, "ran out of pages"},
	} {
		why, reason := notReached(c.out, c.res, c.err, c.interrupted)
		if why != c.why || !strings.Contains(reason, c.reason) {
			t.Errorf("%s: %q, %q; want %q, %q", c.name, why, reason, c.why, c.reason)
		}
	}
	cov := 0.115
	u := &UntilOutcome{Goal: 0.95, Coverage: &cov, Detail: "115 of 1000 pages resident", Why: UntilBudget, Reason: "the budget stopped the warm"}
	if got := u.Text(); got != "coverage goal 95.0% NOT reached: coverage 11.5% (115 of 1000 pages resident); the budget stopped the warm" {
		t.Errorf("text %q", got)
	}
	if u.early = true; u.Text() != "" {
		t.Errorf("a goal met during the run has its Stopped line, not another: %q", u.Text())
	}
}

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

package experiment

import (
	"strings"
	"testing"
)

// TestCurveChartDrawsEachRunsHotLevel: each run is scored against its own hot level, so the
// chart draws the level of each run it shows, named by its scenario, and not one line at
// the median of all runs' levels (a user test: the chart's single line disagreed with the
// lost seconds of a run whose level was 10% below it).
func TestCurveChartDrawsEachRunsHotLevel(t *testing.T) {
	run := func(round int, hot float64, qps ...float64) *RecoveryRun {
		return &RecoveryRun{Round: round, HotLevel: HotLevel{QPS: hot}, Curve: series(0, qps...)}
	}
	r := &RecoveryResult{HotQPS: 950, Scenarios: []*RecoveryScenario{
		{ID: RecoveryCold, Label: recoveryLabels[RecoveryCold], Typical: 1,
			Runs: []*RecoveryRun{run(1, 990, 100, 990), run(2, 1000, 100, 500, 1000)}},
		{ID: RecoverySnapshot, Label: recoveryLabels[RecoverySnapshot], Typical: 0,
			Runs: []*RecoveryRun{run(1, 900, 900, 900), run(2, 950, 950, 950)}},
		{ID: RecoveryIndexes, Label: recoveryLabels[RecoveryIndexes], Skipped: "not wanted"},
	}}
	c := r.curveChart()
	levels := map[string]float64{}
	for _, s := range c.Series {
		if !strings.Contains(s.Name, "hot level") {
			continue
		}
		if len(s.Y) != 2 || s.Y[0] != s.Y[1] || len(s.X) != 2 || s.X[0] != 0 || s.X[1] != 3 {
			t.Errorf("%s: not a level across the curves' 3 s: X %v, Y %v", s.Name, s.X, s.Y)
			continue
		}
		levels[s.Name] = s.Y[0]
	}
	want := map[string]float64{
		"cold: hot level 1,000 qps (round 2)":                        1000, // the typical run's, not round 1's
		"innowarm warm --from snapshot: hot level 900 qps (round 1)": 900,
	}
	if len(levels) != len(want) {
		t.Fatalf("hot levels drawn: %v, want %v", levels, want)
	}
	for name, v := range want {
		if levels[name] != v {
			t.Errorf("hot levels drawn: %v, want %s at %v", levels, name, v)
		}
	}
	// The curves themselves are still the typical runs'.
	if n := len(c.Series) - len(levels); n != 2 || c.Series[0].Y[2] != 1000 || c.Series[1].Y[0] != 900 {
		t.Errorf("curves: %d, %+v", n, c.Series)
	}
}

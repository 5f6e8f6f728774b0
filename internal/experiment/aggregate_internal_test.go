package experiment

import "testing"

func TestScenarioAggregateTakesMedianRuns(t *testing.T) {
	run := func(warm float64, passes ...float64) *ScenarioRun {
		r := &ScenarioRun{Restart: &Restart{Seconds: warm}, Warmup: &Warmup{Seconds: warm}}
		for _, p := range passes {
			r.Passes = append(r.Passes, &Pass{Seconds: p})
		}
		return r
	}
	s := &Scenario{runs: []*ScenarioRun{run(5, 3, 9), run(4, 1, 7), run(6, 2, 8)}}
	s.aggregate()
	if s.Warmup.Seconds != 5 || s.Passes[0].Seconds != 2 || s.Passes[1].Seconds != 8 || len(s.Repeats) != 3 || s.Restart != s.runs[0].Restart {
		t.Errorf("median of 3: warm-up %v, passes %v %v, %d repeats", s.Warmup.Seconds, s.Passes[0].Seconds, s.Passes[1].Seconds, len(s.Repeats))
	}
	s = &Scenario{runs: []*ScenarioRun{run(2, 2), run(1, 1)}}
	s.aggregate()
	if s.Warmup.Seconds != 1 || s.Passes[0].Seconds != 1 {
		t.Errorf("median of 2 is the lower: warm-up %v, pass %v", s.Warmup.Seconds, s.Passes[0].Seconds)
	}
	s = &Scenario{runs: []*ScenarioRun{run(2, 2)}}
	s.aggregate()
	if s.Repeats != nil || s.Passes[0].Seconds != 2 {
		t.Errorf("one run: %+v", s)
	}
}

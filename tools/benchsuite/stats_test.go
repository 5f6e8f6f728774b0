package benchsuite

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestQuantiles(t *testing.T) {
	cases := []struct {
		name               string
		xs                 []float64
		median, lower, p95 float64
	}{
		{"none", nil, 0, 0, 0},
		{"one", []float64{3}, 3, 3, 3},
		{"odd count", []float64{5, 1, 3}, 3, 3, 4.8},
		{"even count: the mean of the middle two; the lower one is a real run", []float64{4, 1, 3, 2}, 2.5, 2, 3.85},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := median(c.xs); math.Abs(got-c.median) > 1e-9 {
				t.Errorf("median %v = %v, want %v", c.xs, got, c.median)
			}
			if got := lowerMedian(c.xs); got != c.lower {
				t.Errorf("lowerMedian %v = %v, want %v", c.xs, got, c.lower)
			}
			if got := quantile(c.xs, 0.95); math.Abs(got-c.p95) > 1e-9 {
				t.Errorf("p95 %v = %v, want %v", c.xs, got, c.p95)
			}
		})
	}
	if xs := []float64{3, 1, 2}; median(xs) != 2 || xs[0] != 3 {
		t.Errorf("median sorted its argument: %v", xs)
	}
}

// The ratio of a paired run is the median of the rounds' own ratios: one noisy round (the
// machine is shared) moves it less than a ratio of medians would.
func TestPairedRatio(t *testing.T) {
	iw := []toolRun{{qps: 100}, {qps: 200}, {qps: 90}}
	peer := []toolRun{{qps: 100}, {qps: 100}, {qps: 100}}
	if got := pairedRatio(iw, peer); got != 1.0 {
		t.Errorf("pairedRatio = %v, want 1.0 (ratios 1.0, 2.0, 0.9)", got)
	}
	if got := medianRun(iw); got.qps != 100 {
		t.Errorf("medianRun = %+v, want the 100 QPS run", got)
	}
}

func TestRatioTargetsAndReport(t *testing.T) {
	var r Result
	r.Scenario, r.Issue = "load", 4
	r.AddRatio("QPS a/b", 1.17, ">= 1.0")
	r.AddRatio("QPS c/d", 0.75, ">= 1.0")
	r.AddRatio("cost", 1.9, "<= 2")
	r.AddRatio("info", 3, "")
	want := []*bool{ptr(true), ptr(false), ptr(true), nil}
	for i, ra := range r.Ratios {
		if (ra.Pass == nil) != (want[i] == nil) || (ra.Pass != nil && *ra.Pass != *want[i]) {
			t.Errorf("%s %v %s: pass %v, want %v", ra.Name, ra.Value, ra.Target, ra.Pass, want[i])
		}
	}
	rep := Report{StartedAt: time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC), Scale: "full", Machine: map[string]string{"cpus": "2"}, Results: []Result{r}}
	md := rep.Markdown()
	for _, line := range []string{"| load | QPS a/b | 1.17 | >= 1.0 | yes |", "| load | QPS c/d | 0.75 | >= 1.0 | **no** |", "| load | info | 3.00 |  |  |", "- cpus: 2"} {
		if !strings.Contains(md, line) {
			t.Errorf("the report lacks %q:\n%s", line, md)
		}
	}
}

func ptr(b bool) *bool { return &b }

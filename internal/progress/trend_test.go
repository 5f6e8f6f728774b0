package progress

import (
	"strings"
	"testing"
	"time"
)

func TestTrendRateAndETA(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	var tr Trend
	if _, ok := tr.ETA(0.9); ok {
		t.Error("an empty trend has no ETA")
	}
	tr.Add(t0, 0.10)
	if _, ok := tr.Rate(); ok {
		t.Error("one sample gives no rate")
	}
	if got := tr.Text(0.9); got != "10.0% of the 90.0% goal" {
		t.Errorf("one sample: %q", got)
	}
	tr.Add(t0.Add(2*time.Second), 0.30) // 10 points a second
	rate, ok := tr.Rate()
	if !ok || rate < 0.0999 || rate > 0.1001 {
		t.Fatalf("rate %v %v, want 0.1/s", rate, ok)
	}
	eta, ok := tr.ETA(0.9)
	if !ok || eta != 6*time.Second {
		t.Errorf("ETA %v %v, want 6s", eta, ok)
	}
	if got, want := tr.Text(0.9), "30.0% of the 90.0% goal, rising 10.0 points/s, about 6s to go"; got != want {
		t.Errorf("Text %q, want %q", got, want)
	}
	if eta, ok := tr.ETA(0.3); !ok || eta != 0 {
		t.Errorf("a reached goal: %v %v", eta, ok)
	}
	if !strings.HasSuffix(tr.Text(0.25), "reached") {
		t.Errorf("reached: %q", tr.Text(0.25))
	}
}

// The rate follows the last window, not the whole history: a warm that slowed down says so.
func TestTrendForgetsOldSamples(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	var tr Trend
	tr.Add(t0, 0)
	tr.Add(t0.Add(time.Second), 0.5) // a fast start
	for s := 2; s <= 30; s++ {
		tr.Add(t0.Add(time.Duration(s)*time.Second), 0.5+float64(s-1)*0.001)
	}
	rate, _ := tr.Rate()
	if rate > 0.0011 || rate < 0.0009 {
		t.Errorf("rate %v: want the last window's 0.001/s, not the average since the start", rate)
	}
	if eta, _ := tr.ETA(0.6); eta < 60*time.Second {
		t.Errorf("ETA %v: the slow pace leaves more than a minute", eta)
	}
	if got := tr.Text(0.6); !strings.Contains(got, "about 1m0s to go") {
		t.Errorf("minutes are rounded to minutes: %q", got)
	}
}

func TestTrendNotRising(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	var tr Trend
	for s := 0; s <= 12; s++ {
		tr.Add(t0.Add(time.Duration(s)*time.Second), 0.42)
	}
	if _, ok := tr.ETA(0.95); ok {
		t.Error("a flat share has no ETA")
	}
	if got := tr.Text(0.95); !strings.Contains(got, "not rising over the last 1") {
		t.Errorf("flat: %q", got)
	}
}

// A share that creeps up by less than one decimal of a point per second reads "not
// rising", not "rising 0.0 points/s, about 2m0s to go".
func TestTrendCreepingIsNotRising(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	var tr Trend
	for s := 0; s <= 12; s++ {
		tr.Add(t0.Add(time.Duration(s)*time.Second), 0.42+float64(s)*0.0002)
	}
	if got := tr.Text(0.95); !strings.Contains(got, "not rising") || strings.Contains(got, "0.0 points/s") {
		t.Errorf("creeping: %q", got)
	}
}

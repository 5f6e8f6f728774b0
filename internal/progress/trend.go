package progress

import (
	"fmt"
	"time"
)

// trendWindow is how far back a Trend's rate looks: long enough to smooth the jumps of a
// loader that reports in batches, short enough to follow a warm that slows down.
const trendWindow = 10 * time.Second

// Trend follows a share (0 to 1) that should rise towards a goal, such as the resident share
// of a hot set while a server warms, and says how fast it rises and how long the goal is
// still away at that pace: what an operator waiting on a readiness gate wants to know.
type Trend struct {
	samples []trendSample
}

type trendSample struct {
	at    time.Time
	value float64
}

// Add records the share measured at t.
func (tr *Trend) Add(t time.Time, value float64) {
	tr.samples = append(tr.samples, trendSample{t, value})
	// Keep one sample older than the window, so that the rate spans it all.
	cut := 0
	for i := range tr.samples {
		if t.Sub(tr.samples[i].at) > trendWindow {
			cut = i
		}
	}
	tr.samples = tr.samples[cut:]
}

// Rate is the rise per second over the last trendWindow, and whether two samples at
// different times give one.
func (tr *Trend) Rate() (float64, bool) {
	if len(tr.samples) < 2 {
		return 0, false
	}
	first, last := tr.samples[0], tr.samples[len(tr.samples)-1]
	secs := last.at.Sub(first.at).Seconds()
	if secs <= 0 {
		return 0, false
	}
	return (last.value - first.value) / secs, true
}

// ETA is the time the goal is still away at the current rate; false when the share does not
// rise (or there is no rate yet), and zero when the goal is reached.
func (tr *Trend) ETA(goal float64) (time.Duration, bool) {
	if len(tr.samples) == 0 {
		return 0, false
	}
	last := tr.samples[len(tr.samples)-1].value
	if last >= goal {
		return 0, true
	}
	rate, ok := tr.Rate()
	if !ok || rate <= 0 {
		return 0, false
	}
	return time.Duration((goal - last) / rate * float64(time.Second)), true
}

// Text says where the share stands against goal: "42.0% of the 95.0% goal, rising 3.1
// points/s, about 17 s to go", or "not rising" once the rate is known to be flat.
func (tr *Trend) Text(goal float64) string {
	if len(tr.samples) == 0 {
		return "not measured yet"
	}
	last := tr.samples[len(tr.samples)-1].value
	s := fmt.Sprintf("%.1f%% of the %.1f%% goal", 100*last, 100*goal)
	if last >= goal {
		return s + ", reached"
	}
	rate, ok := tr.Rate()
	switch {
	case !ok:
		return s
	case 100*rate < 0.05:
		// Under what one decimal shows: "rising 0.0 points/s" with an ETA of hours says
		// nothing a flat line does not.
		return s + fmt.Sprintf(", not rising over the last %s", tr.span().Round(time.Second))
	}
	eta, _ := tr.ETA(goal)
	return s + fmt.Sprintf(", rising %.1f points/s, about %s to go", 100*rate, roundETA(eta))
}

func (tr *Trend) span() time.Duration {
	if len(tr.samples) < 2 {
		return 0
	}
	return tr.samples[len(tr.samples)-1].at.Sub(tr.samples[0].at)
}

// roundETA keeps an estimate's precision honest: whole seconds under a minute, whole
// minutes above.
func roundETA(d time.Duration) time.Duration {
	if d < time.Minute {
		return max(d.Round(time.Second), time.Second)
	}
	return d.Round(time.Minute)
}

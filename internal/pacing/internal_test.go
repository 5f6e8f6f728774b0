package pacing

import (
	"testing"
	"time"
)

// TestRateLimiterSimulated drives the token bucket with simulated workers that read much
// faster than the cap and a server counter sampled once per second, as the governor does.
func TestRateLimiterSimulated(t *testing.T) {
	const (
		capRate   = 50e6  // bytes/s
		unit      = 4e6   // bytes per unit
		perWorker = 200e6 // bytes/s one worker reads
		workers   = 4
		step      = 5 * time.Millisecond
		seconds   = 20
	)
	start := time.Unix(0, 0)
	r := newRateLimiter(capRate, unit, 16384, start)
	left := make([]float64, workers) // bytes left in each worker's unit; 0: idle
	var sinceSample, total float64
	perSecond := make([]float64, seconds)
	for i := 1; i <= seconds*int(time.Second/step); i++ {
		now := start.Add(time.Duration(i) * step)
		for w := range left {
			if left[w] == 0 && r.reserve(now) == 0 {
				left[w] = unit
			}
			if left[w] > 0 {
				b := min(left[w], perWorker*step.Seconds())
				left[w] -= b
				sinceSample += b
				total += b
				perSecond[(i-1)*int(step)/int(time.Second)] += b
			}
		}
		if i%int(time.Second/step) == 0 {
			r.observe(now, sinceSample)
			sinceSample = 0
		}
	}
	if got := total / seconds; got < 0.85*capRate || got > 1.1*capRate {
		t.Errorf("average rate %.1f MB/s over %d s, want about %.0f", got/1e6, seconds, capRate/1e6)
	}
	for s := 0; s+3 <= seconds; s++ {
		w := (perSecond[s] + perSecond[s+1] + perSecond[s+2]) / 3
		if w > 1.35*capRate {
			t.Errorf("seconds %d-%d: %.1f MB/s, over the cap of %.0f by more than 35%%", s, s+3, w/1e6, capRate/1e6)
		}
	}
}

// TestRateLimiterRefundsUnpaidEstimates: units that read nothing (their pages were cached)
// must not starve the bucket.
func TestRateLimiterRefundsUnpaidEstimates(t *testing.T) {
	start := time.Unix(0, 0)
	r := newRateLimiter(10e6, 8e6, 16384, start)
	admitted := 0
	for s := 1; s <= 10; s++ {
		now := start.Add(time.Duration(s) * time.Second)
		for r.reserve(now) == 0 {
			admitted++
		}
		r.observe(now, 0)
	}
	if admitted < 10 {
		t.Errorf("only %d units admitted in 10 s of free units", admitted)
	}
}

func TestNiceController(t *testing.T) {
	base := 200 * time.Microsecond
	n := newNiceCtl(base, 1, 0)
	if n.rate != niceStartRate {
		t.Fatalf("start rate %v", n.rate)
	}
	n.update(base, 1, 100e6) // calm: slow start grows by half
	if n.rate != 1.5*niceStartRate {
		t.Errorf("calm in slow start: rate %v, want %v", n.rate, 1.5*niceStartRate)
	}
	r := n.rate
	n.update(5*base, 1, 100e6) // probe inflated: halve
	if n.rate != r/2 || n.slowStart {
		t.Errorf("inflated probe: rate %v (slow start %v), want %v", n.rate, n.slowStart, r/2)
	}
	n.update(5*base, 1, 100e6) // still inflated, but the cut has not shown yet: hold
	if n.rate != r/2 {
		t.Errorf("second inflated interval: rate %v, want %v held", n.rate, r/2)
	}
	n.update(5*base, 1, 100e6) // a third: cut again
	if n.rate != r/4 {
		t.Errorf("third inflated interval: rate %v, want %v", n.rate, r/4)
	}
	if n.step != max(r/16, niceFloorRate) {
		t.Errorf("step %v, want 1/16 of the rate where the episode began (%v)", n.step, r/16)
	}
	if s := n.status(); s == "" {
		t.Error("no status while distressed")
	}
	r = n.rate
	n.update(base, 1, 100e6) // calm after slow start: add a step
	if n.rate <= r || n.rate >= 2*r {
		t.Errorf("calm: rate %v after %v, want an additive step", n.rate, r)
	}
	r = n.rate
	hold := time.Duration(niceLow*float64(base)) + niceProbeSlack + 20*time.Microsecond // slower, not inflated
	n.update(hold, 1, 100e6)
	n.update(base, 3, 100e6) // Threads_running 3 vs 1: not calm, not inflated
	if n.rate != r {
		t.Errorf("hold zone: rate %v, want %v", n.rate, r)
	}
	for i := 0; i < 20; i++ {
		n.update(base, 9, 100e6) // Threads_running 9 vs 1: inflated
	}
	if n.rate != niceFloorRate {
		t.Errorf("after long distress: rate %v, want the floor %v", n.rate, float64(niceFloorRate))
	}
	// A rate far above what the server reads gives no control.
	slow := newNiceCtl(base, 1, 0)
	for i := 0; i < 50; i++ {
		slow.update(base, 1, 20e6)
	}
	if slow.rate > 40e6 {
		t.Errorf("rate %v grew beyond twice the observed read rate", slow.rate)
	}
	// --max-rate is the ceiling.
	c := newNiceCtl(base, 0, 4<<20)
	for i := 0; i < 10; i++ {
		c.update(base, 0, 100e6)
	}
	if c.rate != 4<<20 {
		t.Errorf("with --max-rate 4MiB/s: rate %v", c.rate)
	}
}

func TestSuggestedUnitBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Config
		want int64
	}{
		{"no pacing", Config{}, 0},
		{"max load only", Config{MaxLoad: []Bound{{Name: "Threads_running", Limit: 5}}}, 0},
		{"max rate over 4 workers", Config{MaxRate: 200 << 20, Workers: 4}, 25 << 20},
		{"low max rate", Config{MaxRate: 1 << 20, Workers: 4}, 1 << 20},
		{"max rate, workers unknown", Config{MaxRate: 200 << 20}, 25 << 20},
		{"high max rate", Config{MaxRate: 10 << 30, Workers: 1}, 64 << 20},
		{"nice", Config{Nice: true, Workers: 4}, niceUnitBytes},
		{"nice under a max rate", Config{Nice: true, MaxRate: 8 << 20, Workers: 4}, 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.SuggestedUnitBytes(); got != tc.want {
				t.Errorf("%+v: %d, want %d", tc.c, got, tc.want)
			}
		})
	}
}

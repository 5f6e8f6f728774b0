package pacing

import (
	"strings"
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
	n := newNiceCtl(base, 1, 0, false)
	if n.rate != niceStartRate {
		t.Fatalf("start rate %v", n.rate)
	}
	n.update(niceSignals{probe: base, threads: 1, serverRate: 100e6, pending: -1}) // calm: slow start grows by half
	if n.rate != 1.5*niceStartRate {
		t.Errorf("calm in slow start: rate %v, want %v", n.rate, 1.5*niceStartRate)
	}
	r := n.rate
	n.update(niceSignals{probe: 5 * base, threads: 1, serverRate: 100e6, pending: -1}) // probe inflated: halve
	if n.rate != r/2 || n.slowStart {
		t.Errorf("inflated probe: rate %v (slow start %v), want %v", n.rate, n.slowStart, r/2)
	}
	n.update(niceSignals{probe: 5 * base, threads: 1, serverRate: 100e6, pending: -1}) // still inflated, but the cut has not shown yet: hold
	if n.rate != r/2 {
		t.Errorf("second inflated interval: rate %v, want %v held", n.rate, r/2)
	}
	n.update(niceSignals{probe: 5 * base, threads: 1, serverRate: 100e6, pending: -1}) // a third: cut again
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
	n.update(niceSignals{probe: base, threads: 1, serverRate: 100e6, pending: -1}) // calm after slow start: add a step
	if n.rate <= r || n.rate >= 2*r {
		t.Errorf("calm: rate %v after %v, want an additive step", n.rate, r)
	}
	r = n.rate
	hold := time.Duration(niceLow*float64(base)) + niceProbeSlack + 20*time.Microsecond // slower, not inflated
	n.update(niceSignals{probe: hold, threads: 1, serverRate: 100e6, pending: -1})
	n.update(niceSignals{probe: base, threads: 3, serverRate: 100e6, pending: -1}) // Threads_running 3 vs 1: not calm, not inflated
	if n.rate != r {
		t.Errorf("hold zone: rate %v, want %v", n.rate, r)
	}
	for i := 0; i < 20; i++ {
		n.update(niceSignals{probe: base, threads: 9, serverRate: 100e6, pending: -1}) // Threads_running 9 vs 1: inflated
	}
	if n.rate != niceFloorRate {
		t.Errorf("after long distress: rate %v, want the floor %v", n.rate, float64(niceFloorRate))
	}
	// A rate far above what the server reads gives no control.
	slow := newNiceCtl(base, 1, 0, false)
	for i := 0; i < 50; i++ {
		slow.update(niceSignals{probe: base, threads: 1, serverRate: 20e6, pending: -1})
	}
	if slow.rate > 40e6 {
		t.Errorf("rate %v grew beyond twice the observed read rate", slow.rate)
	}
	// --max-rate is the ceiling.
	c := newNiceCtl(base, 0, 4<<20, false)
	for i := 0; i < 10; i++ {
		c.update(niceSignals{probe: base, threads: 0, serverRate: 100e6, pending: -1})
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

// On a disk at its limit, closed-loop clients keep Threads_running and the probe where
// they were while their reads wait behind the warm's: the reads' wait must cut the rate.
func TestNiceControllerYieldsToQueuedReads(t *testing.T) {
	base := 200 * time.Microsecond
	capped := func(pending, readsPerSecond float64) niceSignals {
		return niceSignals{probe: base, threads: 8, pending: pending, serverRate: readsPerSecond * 16384, pageSize: 16384}
	}
	n := newNiceCtl(base, 8, 0, false)
	n.update(capped(8, 1000)) // 8 clients' reads at 1,000 reads/s: 8 ms each
	if n.distressed || n.rate <= niceStartRate || n.baseRead != 8*time.Millisecond {
		t.Fatalf("the foreground's own reads: distressed %v, rate %v, base %v; want calm growth from an 8 ms base", n.distressed, n.rate, n.baseRead)
	}
	n.update(capped(8, 964)) // 8.3 ms: a little longer: hold
	if n.distressed {
		t.Errorf("8.3 ms against 8 ms at best counted as distress")
	}
	r := n.rate
	n.update(capped(8, 200)) // the warm's queued reads take most of the disk: 40 ms
	if !n.distressed || n.rate != r/2 {
		t.Errorf("reads waiting 40 ms: distressed %v, rate %v, want %v", n.distressed, n.rate, r/2)
	}
	if s := n.status(); !strings.Contains(s, "reads wait 40.00 ms, 8.00 ms at best") {
		t.Errorf("status %q does not name the reads' wait", s)
	}
	n.update(capped(8, 0)) // none completed in the interval
	if n.lastRead != time.Second || !n.distressed {
		t.Errorf("no read completed: wait %v, distressed %v", n.lastRead, n.distressed)
	}
	n.update(capped(4, 5000)) // the stalled reads counted at once: no base
	if n.baseRead != 8*time.Millisecond {
		t.Errorf("base %v after a catch-up burst, want 8 ms still", n.baseRead)
	}
	n.update(capped(8, 1000))
	// Fewer clients miss as the pool warms: their shorter queue becomes the base; an
	// interval in which nothing waited says nothing.
	n.update(capped(2, 1000))
	n.update(capped(0, 100))
	n.update(capped(0.5, 1000))
	if n.baseRead != 2*time.Millisecond {
		t.Errorf("base %v, want the 2 ms of the interval with two reads waiting", n.baseRead)
	}

	// Nobody waiting: the latency is the warm's own, no reason to yield.
	idle := newNiceCtl(base, 0, 0, false)
	idle.noteRead(time.Millisecond, 4, 1000)
	for i := 0; i < 5; i++ {
		idle.update(niceSignals{probe: base, threads: 0, pending: 64, serverRate: 1000 * 16384, pageSize: 16384})
	}
	if idle.distressed || idle.rate <= niceStartRate {
		t.Errorf("no foreground: distressed %v, rate %v; want growth", idle.distressed, idle.rate)
	}
	// A fast device: 0.27 ms at best, 0.5 ms with the warm's reads beside: the slack.
	fast := newNiceCtl(base, 8, 0, false)
	fast.update(niceSignals{probe: base, threads: 8, pending: 8, serverRate: 30000 * 16384, pageSize: 16384})
	fast.update(niceSignals{probe: base, threads: 8, pending: 8, serverRate: 16000 * 16384, pageSize: 16384})
	if fast.distressed {
		t.Errorf("0.5 ms against %v at best counted as distress", fast.baseRead)
	}
	// A server that does not report its reads in flight: the other signals only.
	blind := newNiceCtl(base, 8, 0, false)
	blind.update(niceSignals{probe: base, threads: 8, pending: -1, serverRate: 16384e3, pageSize: 16384})
	if blind.distressed || blind.lastRead >= 0 {
		t.Errorf("no pending reads reported: distressed %v, last read %v", blind.distressed, blind.lastRead)
	}
}

func TestReadLatency(t *testing.T) {
	for _, tc := range []struct {
		pending, rate float64
		want          time.Duration
	}{
		{8, 1000, 8 * time.Millisecond},
		{0, 1000, 0},
		{0, 0, 0},
		{3, 0, time.Second},
		{-1, 1000, -1},
		{2, -1, -1},
	} {
		if got := readLatency(tc.pending, tc.rate); got != tc.want {
			t.Errorf("readLatency(%v, %v) = %v, want %v", tc.pending, tc.rate, got, tc.want)
		}
	}
}

// A warm that takes a steady share of a disk at its limit changes neither the reads in
// flight (the clients' 8) nor the completions (the disk's 1,000 per second): only the
// completions without the warm's own show the clients' reads waiting twice as long.
func TestNiceControllerSeesASteadyShare(t *testing.T) {
	base := 200 * time.Microsecond
	share := func(ownReadsPerSecond float64) niceSignals {
		return niceSignals{probe: base, threads: 8, pending: 8, serverRate: 1000 * 16384, ownRate: ownReadsPerSecond * 16384, pageSize: 16384}
	}
	n := newNiceCtl(base, 8, 0, false)
	n.update(share(0))
	if n.distressed || n.baseRead != 8*time.Millisecond {
		t.Fatalf("the clients alone: distressed %v, base %v; want calm at 8 ms", n.distressed, n.baseRead)
	}
	n.update(share(50)) // 8.4 ms: the warm's twentieth of the disk is tolerated
	if n.distressed {
		t.Errorf("a 5%% share (%v) counted as distress", n.lastRead)
	}
	r := n.rate
	n.update(share(500)) // half the disk: the clients' reads wait 16 ms
	if !n.distressed || n.rate != r/2 || n.lastRead != 16*time.Millisecond {
		t.Errorf("a half share: distressed %v, wait %v, rate %v; want 16 ms and %v", n.distressed, n.lastRead, n.rate, r/2)
	}
	// The warm's count is an upper bound: more than the server read leaves the clients a
	// tenth, not nothing.
	over := newNiceCtl(base, 8, 0, false)
	over.update(share(0))
	over.update(share(3000))
	if over.lastRead != 80*time.Millisecond {
		t.Errorf("own reads above the server's: wait %v, want 80 ms (a tenth of the completions)", over.lastRead)
	}
}

// The governor takes the warm's reported reads out of the server's over the last few
// intervals, and under --nice alone charges its budget with them only.
func TestGovernorCountsOwnReads(t *testing.T) {
	now := time.Now()
	g := &Governor{cfg: Config{Nice: true, Interval: time.Second}, pageSize: 16384, pagesRead: 0, lastSample: now,
		changed: make(chan struct{}), nice: newNiceCtl(200*time.Microsecond, 8, 0, false)}
	g.rate = newRateLimiter(int64(g.nice.rate), 4<<20, 16384, now)
	probes := func(pending float64) []probeResult {
		return []probeResult{{latency: 200 * time.Microsecond, threads: 8, pending: pending}}
	}
	read := 0.0
	step := func(pages, own float64) {
		now = now.Add(time.Second)
		read += pages
		g.OwnReads(int64(own))
		g.apply(map[string]float64{"innodb_pages_read": read}, probes(8), now)
	}
	step(1000, 0) // the clients alone: 8 in flight, 1,000 reads/s
	if g.nice.lastRead != 8*time.Millisecond || !g.chargesOwnReads() {
		t.Fatalf("clients alone: wait %v, charges own %v", g.nice.lastRead, g.chargesOwnReads())
	}
	// The warm's 500 reads of the next second, reported a second late: over the window
	// the clients had 2,500 of 3,000.
	step(1000, 0)
	step(1000, 500)
	if want := time.Duration(8.0 / (2500.0 / 3) * float64(time.Second)); g.nice.lastRead != want {
		t.Errorf("wait %v over the window, want %v", g.nice.lastRead, want)
	}
	if got := g.Stats().OwnReadPages; got != 500 {
		t.Errorf("own read pages %d, want 500", got)
	}
	// --max-rate caps the server's reads: its budget is charged with all of them.
	g.cfg.MaxRate = 1 << 30
	if g.chargesOwnReads() {
		t.Errorf("with --max-rate the budget is charged with the warm's reads only")
	}
}

// A warm that starts with its traffic starts at 1 MiB/s, may go down to a quarter of
// that, and grows by half while calm.
func TestNiceControllerFromFloor(t *testing.T) {
	base := 200 * time.Microsecond
	n := newNiceCtl(base, 8, 0, true)
	if n.rate != niceFloorRate || n.floor != niceTrafficFloorRate {
		t.Fatalf("start %v, floor %v; want %v and %v", n.rate, n.floor, niceFloorRate, niceTrafficFloorRate)
	}
	n.update(niceSignals{probe: base, threads: 8, serverRate: 100e6, pending: -1})
	if n.rate != 1.5*niceFloorRate {
		t.Errorf("after a calm interval: %v, want %v", n.rate, 1.5*niceFloorRate)
	}
}

// A cut's reason stays in the status while the episode of distress lasts, though the
// last interval's inflated signal is another (a CI run's status named only the probe
// after the reads' wait had cut the rate); a calm interval ends the episode.
func TestNiceStatusKeepsTheEpisodesReasons(t *testing.T) {
	base := 200 * time.Microsecond
	n := newNiceCtl(base, 4, 0, false)
	sig := func(probe time.Duration, pending, readsPerSecond float64) niceSignals {
		return niceSignals{probe: probe, threads: 4, pending: pending, serverRate: readsPerSecond * 16384, pageSize: 16384}
	}
	n.update(sig(base, 4, 1000))                    // 4 ms: the base
	n.update(sig(base, 4, 100))                     // 40 ms: reads wait
	n.update(sig(3*time.Millisecond, 4, 1000*1.01)) // the probe alone, reads near their best
	s := n.status()
	for _, want := range []string{"probe 3.00 ms vs 0.20 ms before the warm", "reads waited up to 40.00 ms, 4.00 ms at best"} {
		if !strings.Contains(s, want) {
			t.Errorf("status %q does not say %q", s, want)
		}
	}
	n.update(sig(base, 4, 1000))
	if s := n.status(); strings.Contains(s, "(") {
		t.Errorf("status after a calm interval %q, want no reasons", s)
	}
}

package pacing

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/innowarm/innowarm/internal/units"
)

// niceCtl is --nice's controller. It decides the read rate the warm may use, by additive
// increase and multiplicative decrease (AIMD, as TCP does with its window), from two
// signals of foreground distress measured against a baseline taken before the warm:
//
//   - the latency of a probe statement (SHOW GLOBAL STATUS LIKE 'Threads_running', a few
//     times per interval): it grows when the server's CPUs are contended;
//   - Threads_running without the warm's own sessions: at a steady foreground arrival rate
//     the number of statements in flight is proportional to their latency (Little's law), so
//     it grows when foreground statements wait, for the CPU or for the disk, which a probe
//     that reads nothing cannot see.
//
// It controls a rate rather than a number of sessions because on the machines measured
// (docs/pacing.md) one warm session reading at full speed already made the foreground's
// p95 ten times worse, while a capped rate with several sessions left it unchanged: what
// hurts is how much the warm reads per second, and only a rate goes below one session.
type niceCtl struct {
	rate      float64 // bytes per second the warm may read now
	floor     float64 // never below: the warm always advances
	ceiling   float64 // --max-rate, or 0
	slowStart bool    // growing by half until the first sign of distress
	step      float64 // additive increase per calm interval
	cooldown  int     // intervals in which a distress does not cut again: the last cut has not shown yet
	peakSeen  float64 // the highest server read rate observed

	baseProbe   time.Duration
	baseThreads float64
	lastProbe   time.Duration
	lastThreads float64
	distressed  bool
	minRate     float64
}

// Controller constants; docs/pacing.md shows the measurements behind them.
const (
	niceStartRate = 8 << 20 // bytes/s before the first measurement
	niceFloorRate = 1 << 20
	// The probe is inflated above niceHigh × baseline + niceProbeSlack and calm at or below
	// niceLow × baseline + niceProbeSlack; the slack keeps the noise of a sub-millisecond
	// probe from counting. In between, the rate holds.
	niceHigh       = 2.0
	niceLow        = 1.5
	niceProbeSlack = 250 * time.Microsecond
	// Threads_running (without the warm) is inflated above max(2 × baseline, baseline + 2)
	// and calm at or below max(1.5 × baseline, baseline + 1).
	niceThreadsSlack = 2.0
)

func newNiceCtl(baseProbe time.Duration, baseThreads float64, ceiling int64) *niceCtl {
	n := &niceCtl{rate: niceStartRate, floor: niceFloorRate, ceiling: float64(ceiling), slowStart: true,
		baseProbe: baseProbe, baseThreads: baseThreads, lastProbe: baseProbe, lastThreads: baseThreads}
	if n.ceiling > 0 {
		n.rate = min(n.rate, n.ceiling)
		n.floor = min(n.floor, n.ceiling)
	}
	n.minRate = n.rate
	return n
}

func (n *niceCtl) probeInflated(p time.Duration) bool {
	return p > time.Duration(niceHigh*float64(n.baseProbe))+niceProbeSlack
}

func (n *niceCtl) threadsInflated(t float64) bool {
	return t > max(niceHigh*n.baseThreads, n.baseThreads+niceThreadsSlack)
}

// update takes one interval's signals and the server's read rate over it (bytes/s), and
// sets the allowed rate.
func (n *niceCtl) update(probe time.Duration, threads, serverRate float64) {
	n.lastProbe, n.lastThreads = probe, threads
	n.peakSeen = max(n.peakSeen, serverRate)
	calm := probe <= time.Duration(niceLow*float64(n.baseProbe))+niceProbeSlack &&
		threads <= max(niceLow*n.baseThreads, n.baseThreads+niceThreadsSlack/2)
	wasDistressed := n.distressed
	n.distressed = n.probeInflated(probe) || n.threadsInflated(threads)
	switch {
	case n.distressed && n.cooldown > 0:
		// Units in flight and the foreground's queue take a second to drain: cutting
		// again before the last cut shows would overshoot downwards.
		n.cooldown--
	case n.distressed:
		if !wasDistressed {
			// Climb back to the rate where this episode began in about 16 calm intervals:
			// the slower the climb, the fewer intervals spent finding the point where the
			// foreground suffers again.
			n.step = max(n.rate/16, n.floor)
		}
		n.rate = max(n.rate/2, n.floor)
		n.slowStart = false
		n.cooldown = 1
	case calm && n.slowStart:
		n.rate *= 1.5
	case calm:
		n.rate += max(n.step, n.floor)
	}
	if !n.distressed {
		n.cooldown = 0
	}
	// A rate far above what the warm manages to read gives no control: when distress
	// comes, halving it would change nothing.
	if n.peakSeen > 0 {
		n.rate = min(n.rate, max(2*n.peakSeen, niceStartRate))
	}
	if n.ceiling > 0 {
		n.rate = min(n.rate, n.ceiling)
	}
	n.minRate = min(n.minRate, n.rate)
}

func (n *niceCtl) status() string {
	var why []string
	if n.probeInflated(n.lastProbe) {
		why = append(why, fmt.Sprintf("probe %s vs %s", fmtDur(n.lastProbe), fmtDur(n.baseProbe)))
	}
	if n.threadsInflated(n.lastThreads) {
		why = append(why, fmt.Sprintf("Threads_running %.1f vs %.1f", n.lastThreads, n.baseThreads))
	}
	s := fmt.Sprintf("nice: up to %s/s", units.FormatBytes(int64(n.rate)))
	if len(why) > 0 {
		s += " (" + strings.Join(why, ", ") + " before the warm)"
	}
	return s
}

func fmtDur(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

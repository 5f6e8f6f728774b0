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
//     that reads nothing cannot see;
//   - the time the server's reads wait, by Little's law again: its synchronous reads in
//     flight (Innodb_data_pending_reads, sampled with the probe: the foreground's reads;
//     MariaDB's loader and read-ahead read asynchronously and are not counted) over the
//     pages read per second without those the warm says it read (Governor.OwnReads), over
//     the last few intervals, against the lowest seen while reads waited. Closed-loop
//     clients cannot raise Threads_running above their number, however long they wait: on
//     a disk whose reads are capped (a cloud volume), a warm that queues its reads ahead of
//     theirs leaves Threads_running and the probe unchanged while their reads take ten
//     times longer, or complete not at all for a second. This signal sees that. It counts
//     only while foreground statements run (with nobody waiting, the wait is the warm's
//     own), and against the lowest value rather than the first, since the foreground's own
//     queue shrinks as the pool warms, and the queue the warm adds is what it must not grow.
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
	// baseRead is the lowest read wait seen while foreground reads waited (0: none yet);
	// lastRead the last interval's (<0: not measured).
	baseRead time.Duration
	lastRead time.Duration
	// lastPagesPerSecond is the pages read per second in the last interval measured (<0:
	// none yet).
	lastPagesPerSecond float64
	distressed         bool
	minRate            float64
	// The highest of each signal while it was inflated since the last calm interval (0:
	// not inflated in this episode): a cut's reason still shows while the rate stays
	// down, though the last interval's signal may be a different one.
	episodeProbe   time.Duration
	episodeThreads float64
	episodeRead    time.Duration
}

// niceSignals are one interval's measurements.
type niceSignals struct {
	probe      time.Duration
	threads    float64 // Threads_running without the warm
	pending    float64 // mean Innodb_data_pending_reads; <0: not reported
	serverRate float64 // bytes/s the server read
	ownRate    float64 // bytes/s of it the warm said it had read (0: it does not say)
	pageSize   float64
}

// foregroundPagesPerSecond is the pages per second the server read for others than the
// warm. The warm's own reads complete too, and a warm that takes a steady share of a disk
// at its limit leaves the reads in flight and the completions unchanged while the
// foreground's share shrinks: only its own completions show its wait. A warm's count is
// an upper bound (pages already resident cost nothing), so the foreground keeps at least
// a tenth of what was read: a wait ten times the base is distress enough.
func (sig niceSignals) foregroundPagesPerSecond() float64 {
	if sig.pageSize <= 0 {
		return -1
	}
	fg := sig.serverRate
	if sig.ownRate > 0 {
		fg = max(sig.serverRate-sig.ownRate, sig.serverRate/10)
	}
	return fg / sig.pageSize
}

// Controller constants; docs/pacing.md shows the measurements behind them.
const (
	niceStartRate = 8 << 20 // bytes/s before the first measurement
	niceFloorRate = 1 << 20
	// niceTrafficFloorRate is the floor of a warm that starts with its traffic: on a disk the
	// traffic keeps at its limit, 1 MiB/s is 6% of 1,000 reads/s, taken from the queries'
	// misses for as long as the backlog lasts.
	niceTrafficFloorRate = 256 << 10
	// The probe is inflated above niceHigh × baseline + niceProbeSlack and calm at or below
	// niceLow × baseline + niceProbeSlack; the slack keeps the noise of a sub-millisecond
	// probe from counting. In between, the rate holds.
	niceHigh       = 2.0
	niceLow        = 1.5
	niceProbeSlack = 250 * time.Microsecond
	// Threads_running (without the warm) is inflated above max(2 × baseline, baseline + 2)
	// and calm at or below max(1.5 × baseline, baseline + 1).
	niceThreadsSlack = 2.0
	// The read wait is inflated above niceReadHigh × the lowest seen + niceReadSlack and
	// calm at or below niceReadLow × it + niceReadSlack: tighter than the others, since on a
	// disk at its limit every read the warm queues adds its share to every foreground
	// read. (Bounds of 2.5× and 2×, which let the foreground's own wait double as its
	// misses come and go, let the warm take more of the disk: 43 s of service lost where cold
	// loses 25 s, docs/pacing.md.) With the warm's own reads taken out of the completions,
	// a warm that takes a share s of a disk at its limit makes the foreground's reads wait
	// 1/(1-s) as long: 1.25× and 1.1× let it settle at 10-20% of the disk, which in open
	// loop made the worst second's p95 15% worse than cold's; 1.05× and 1× keep it to a few
	// percent. The slack lets a fast device, whose reads wait little whatever its queue,
	// be used.
	niceReadHigh  = 1.05
	niceReadLow   = 1.0
	niceReadSlack = 250 * time.Microsecond
	// niceForeground is the Threads_running (without the warm) at or above which the read
	// wait is the foreground's concern.
	niceForeground = 0.5
)

func newNiceCtl(baseProbe time.Duration, baseThreads float64, ceiling int64, fromFloor bool) *niceCtl {
	start, floor := float64(niceStartRate), float64(niceFloorRate)
	if fromFloor {
		start, floor = niceFloorRate, niceTrafficFloorRate
	}
	n := &niceCtl{rate: start, floor: floor, ceiling: float64(ceiling), slowStart: true,
		baseProbe: baseProbe, baseThreads: baseThreads, lastProbe: baseProbe, lastThreads: baseThreads, lastRead: -1, lastPagesPerSecond: -1}
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

// readWait is an interval's read wait and whether it counts: the server reported its reads
// in flight, and foreground statements ran.
func readWait(sig niceSignals) (time.Duration, bool) {
	if sig.pending < 0 || sig.threads < niceForeground || sig.pageSize <= 0 {
		return 0, false
	}
	return readLatency(sig.pending, sig.foregroundPagesPerSecond()), true
}

func (n *niceCtl) readInflated(wait time.Duration) bool {
	return n.baseRead > 0 && wait > time.Duration(niceReadHigh*float64(n.baseRead))+niceReadSlack
}

// noteRead takes an interval's read wait: the lowest of those in which at least one read
// waited becomes the base (an interval in which none did says nothing of the disk), unless
// the interval read more than twice as many pages as the one before: reads queued during a
// stall complete, and are counted, in a burst that makes the wait look short.
func (n *niceCtl) noteRead(wait time.Duration, pending, pagesPerSecond float64) {
	catchUp := n.lastPagesPerSecond >= 0 && pagesPerSecond > 2*max(n.lastPagesPerSecond, 1)
	n.lastPagesPerSecond = pagesPerSecond
	if pending >= 1 && wait > 0 && !catchUp && (n.baseRead == 0 || wait < n.baseRead) {
		n.baseRead = wait
	}
}

// update takes one interval's signals and sets the allowed rate.
func (n *niceCtl) update(sig niceSignals) {
	probe, threads, serverRate := sig.probe, sig.threads, sig.serverRate
	n.lastProbe, n.lastThreads, n.lastRead = probe, threads, -1
	n.peakSeen = max(n.peakSeen, serverRate)
	wait, readSignal := readWait(sig)
	if readSignal {
		n.lastRead = wait
		n.noteRead(wait, sig.pending, sig.foregroundPagesPerSecond())
	}
	calm := probe <= time.Duration(niceLow*float64(n.baseProbe))+niceProbeSlack &&
		threads <= max(niceLow*n.baseThreads, n.baseThreads+niceThreadsSlack/2) &&
		(!readSignal || wait <= time.Duration(niceReadLow*float64(n.baseRead))+niceReadSlack)
	wasDistressed := n.distressed
	n.distressed = n.probeInflated(probe) || n.threadsInflated(threads) || (readSignal && n.readInflated(wait))
	n.noteEpisode(calm, readSignal)
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

// noteEpisode keeps the worst of each inflated signal until a calm interval ends the
// episode of distress.
func (n *niceCtl) noteEpisode(calm, readSignal bool) {
	if calm {
		n.episodeProbe, n.episodeThreads, n.episodeRead = 0, 0, 0
		return
	}
	if n.probeInflated(n.lastProbe) {
		n.episodeProbe = max(n.episodeProbe, n.lastProbe)
	}
	if n.threadsInflated(n.lastThreads) {
		n.episodeThreads = max(n.episodeThreads, n.lastThreads)
	}
	if readSignal && n.readInflated(n.lastRead) {
		n.episodeRead = max(n.episodeRead, n.lastRead)
	}
}

// status names each signal inflated now, and each inflated earlier in this episode with
// its worst value ("reads waited up to ..."): a progress line that switched reasons with
// every interval would hide why the rate is still down.
func (n *niceCtl) status() string {
	var why []string
	switch {
	case n.probeInflated(n.lastProbe):
		why = append(why, fmt.Sprintf("probe %s vs %s before the warm", fmtDur(n.lastProbe), fmtDur(n.baseProbe)))
	case n.episodeProbe > 0:
		why = append(why, fmt.Sprintf("probe up to %s vs %s before the warm", fmtDur(n.episodeProbe), fmtDur(n.baseProbe)))
	}
	switch {
	case n.threadsInflated(n.lastThreads):
		why = append(why, fmt.Sprintf("Threads_running %.1f vs %.1f before the warm", n.lastThreads, n.baseThreads))
	case n.episodeThreads > 0:
		why = append(why, fmt.Sprintf("Threads_running up to %.1f vs %.1f before the warm", n.episodeThreads, n.baseThreads))
	}
	switch {
	case n.lastRead >= 0 && n.readInflated(n.lastRead):
		why = append(why, fmt.Sprintf("reads wait %s, %s at best", fmtDur(n.lastRead), fmtDur(n.baseRead)))
	case n.episodeRead > 0:
		why = append(why, fmt.Sprintf("reads waited up to %s, %s at best", fmtDur(n.episodeRead), fmtDur(n.baseRead)))
	}
	s := fmt.Sprintf("nice: up to %s/s", units.FormatBytes(int64(n.rate)))
	if len(why) > 0 {
		s += " (" + strings.Join(why, ", ") + ")"
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

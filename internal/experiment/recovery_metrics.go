package experiment

import (
	"math"
	"slices"
	"time"

	"github.com/innowarm/innowarm/internal/bench"
)

// RecoveryPoint is one interval of traffic after a restart.
type RecoveryPoint struct {
	T   float64 `json:"t_s"` // end of the interval, seconds since the server answered
	Len float64 `json:"len_s"`
	QPS float64 `json:"qps"`
	P95 float64 `json:"p95_ms"`
	// Slow counts the interval's queries slower than 10x the hot p95 (open loop only).
	Slow int64 `json:"slow,omitempty"`

	iv bench.Interval // the interval it was made of, with its latency histogram
}

// RecoveryMetrics say how fast a restarted server got its throughput back and what its
// users lost on the way. Times are seconds since the server first answered.
type RecoveryMetrics struct {
	// T50 and T95: from then on, throughput stayed at or above 50% / 95% of hot (each
	// second's throughput taken as the median of it and its neighbours, so that one noisy
	// second of a hot server does not reset the clock). -1: not within the window.
	T50 float64 `json:"t50_s"`
	T95 float64 `json:"t95_s"`
	// T95Floor is T95 against the level the hot server itself stays above (its Floor, when
	// below 95%): a recovered server cannot be asked to hold a level its own hot seconds do
	// not hold, so this is T95 with the hot level's noise taken out. -1: not within the window.
	T95Floor float64 `json:"t95_floor_s"`
	// Lost is the seconds of full service lost: the integral of (hot - qps) / hot over the
	// window, the time before the first query counting as no service. Seconds above hot
	// count against it, so that a hot server's noise sums to about zero.
	Lost float64 `json:"lost_s"`
	// LostAtColdsHot is Lost against the hot level of the same round's cold run rather than
	// the run's own: a scenario that leaves something running into its hot seconds (a
	// follow load, LRU settings not yet put back) lowers its own hot level, and with it
	// every figure measured by it. Not for cold itself.
	LostAtColdsHot float64 `json:"lost_at_colds_hot_s,omitempty"`
	// Served5 is the share of hot throughput served in the first 5 seconds (the window's,
	// when shorter).
	Served5 float64 `json:"served_first_5s"`
	// WorstP95 is the highest p95 of any second.
	WorstP95 float64 `json:"worst_p95_ms"`
	Window   float64 `json:"window_s"`
	// Open loop (a fixed arrival rate) only: P95Settled is when p95 came to stay within
	// 1.5x the hot p95 (each second's p95 taken as the median of it and its neighbours;
	// -1: not within the window), Slow the queries slower than 10x the hot p95
	// (SlowMs), the users' worst waits.
	P95Settled float64 `json:"p95_settled_s,omitempty"`
	// P95SettledCeiling is P95Settled against the higher of 1.5x hot and the hot seconds'
	// own ceiling (HotLevel.P95Ceiling): a recovered server cannot be asked to hold a p95
	// its own hot seconds do not hold, so this is P95Settled with the hot level's noise
	// taken out, as T95Floor is for throughput. -1: not within the window.
	P95SettledCeiling float64 `json:"p95_settled_ceiling_s,omitempty"`
	Slow              int64   `json:"slow_queries,omitempty"`
	SlowMs            float64 `json:"slow_ms,omitempty"`
}

// openLoopMetrics adds the open-loop figures to m: the curve's latency against the hot
// level's p95 (ms).
func openLoopMetrics(m *RecoveryMetrics, curve []RecoveryPoint, hot HotLevel, next ...RecoveryPoint) {
	hotP95 := hot.P95
	if hotP95 <= 0 || len(curve) == 0 {
		return
	}
	m.SlowMs = 10 * hotP95
	bound := time.Duration(m.SlowMs * float64(time.Millisecond))
	m.Slow = 0
	for i := range curve {
		curve[i].Slow = curve[i].iv.SlowerThan(bound)
		m.Slow += curve[i].Slow
	}
	negated := func(ps []RecoveryPoint) []RecoveryPoint {
		out := make([]RecoveryPoint, len(ps))
		for i, p := range ps {
			// timeToStay wants a level to stay above: the negated p95 stays above -1.5x hot.
			out[i] = RecoveryPoint{T: p.T, Len: p.Len, QPS: -p.P95}
		}
		return out
	}
	p95s, after := negated(curve), negated(next)
	m.P95Settled = timeToStay(p95s, -1.5*hotP95, after...)
	if m.P95Settled < 0 {
		m.P95Settled = -1
	}
	m.P95SettledCeiling = timeToStay(p95s, -hot.ceilingLevel()*hotP95, after...)
	if m.P95SettledCeiling < 0 {
		m.P95SettledCeiling = -1
	}
}

// ceilingLevel is the multiple of the hot p95 that P95SettledCeiling asks a curve to stay
// within: the higher of 1.5 and the hot seconds' own ceiling (1.5 when none was measured).
func (h HotLevel) ceilingLevel() float64 {
	return max(1.5, h.P95Ceiling)
}

// recoveryMetrics measures a curve against the hot throughput.
// next, when given, is the interval after the window: the last second's right neighbour.
func recoveryMetrics(curve []RecoveryPoint, hot float64, next ...RecoveryPoint) RecoveryMetrics {
	m := RecoveryMetrics{T50: -1, T95: -1, T95Floor: -1}
	if len(curve) == 0 || hot <= 0 {
		return m
	}
	m.Window = curve[len(curve)-1].T
	start := curve[0].T - curve[0].Len
	m.Lost = max(start, 0)
	served5 := 0.0
	for _, p := range curve {
		m.Lost += (hot - p.QPS) / hot * p.Len
		m.WorstP95 = max(m.WorstP95, p.P95)
		from := p.T - p.Len
		if overlap := min(p.T, 5) - max(from, 0); overlap > 0 {
			served5 += p.QPS * overlap
		}
	}
	// Over the seconds measured, when the window is shorter than 5 s: the seconds after
	// its end are not zero service (a user test: a 2 s window at 110-123% of hot said 47%).
	m.Served5 = served5 / (min(5, max(m.Window, curve[0].T)) * hot)
	m.T50 = timeToStay(curve, 0.50*hot, next...)
	m.T95 = timeToStay(curve, 0.95*hot, next...)
	m.T95Floor = m.T95
	return m
}

// noiseFloorMetrics sets m's T95Floor: the time from which the curve stays at or above the
// lower of 95% of hot and the hot seconds' own floor.
func noiseFloorMetrics(m *RecoveryMetrics, curve []RecoveryPoint, hot HotLevel, next ...RecoveryPoint) {
	if len(curve) == 0 || hot.QPS <= 0 {
		return
	}
	m.T95Floor = timeToStay(curve, hot.floorLevel()*hot.QPS, next...)
}

// floorLevel is the share of hot that T95Floor asks for: the lower of 95% and the floor
// (95% when no floor was measured).
func (h HotLevel) floorLevel() float64 {
	if h.Floor > 0 {
		return min(0.95, h.Floor)
	}
	return 0.95
}

// timeToStay is the start of the first interval from which on the smoothed throughput
// never falls below level, or -1. next (at most one interval: the traffic's first after the
// window) is the last interval's right neighbour in the smoothing only: without it a single
// slow last second of the window would stand alone, as no other second does.
func timeToStay(curve []RecoveryPoint, level float64, next ...RecoveryPoint) float64 {
	smooth := median3(append(slices.Clip(curve), next[:min(len(next), 1)]...))[:len(curve)]
	at := -1
	for i := len(smooth) - 1; i >= 0; i-- {
		if smooth[i] < level {
			break
		}
		at = i
	}
	if at < 0 {
		return -1
	}
	return curve[at].T - curve[at].Len
}

// median3 is each interval's throughput replaced by the median of it and its neighbours
// (the first and last by the median of the two they have).
func median3(curve []RecoveryPoint) []float64 {
	out := make([]float64, len(curve))
	for i := range curve {
		lo, hi := max(i-1, 0), min(i+1, len(curve)-1)
		var w []float64
		for j := lo; j <= hi; j++ {
			w = append(w, curve[j].QPS)
		}
		slices.Sort(w)
		if len(w) == 2 {
			out[i] = min(w[0], w[1]) // an edge: the lower, so a last good second alone is not "stayed"
		} else {
			out[i] = w[len(w)/2]
		}
	}
	return out
}

// HotLevel is the throughput of the hot server: the level every scenario is measured by.
type HotLevel struct {
	QPS float64 `json:"qps"` // mean over the window's seconds
	// Noise is the seconds' coefficient of variation: how much hot throughput itself moves.
	Noise float64 `json:"noise_cv"`
	// Floor is the level the hot seconds themselves stay at or above, as a share of QPS:
	// the lowest second, each taken as the median of it and its neighbours as T95 takes them.
	Floor float64 `json:"floor"`
	P95   float64 `json:"median_p95_ms"`
	// P95Ceiling is the p95 the hot seconds themselves stay at or below, as a multiple of
	// P95: the highest second, each taken as the median of it and its neighbours.
	P95Ceiling float64 `json:"p95_ceiling"`
	// PoolPages are the data pages in the pool while hot.
	PoolPages int64   `json:"pool_pages"`
	Seconds   float64 `json:"seconds"`
	// Stalled is the hot seconds' time under half their median throughput: a stall of
	// the server or its disk while hot lowers QPS, and every lost figure measured by it.
	Stalled float64 `json:"stalled_s,omitempty"`
}

// hotLevel summarizes the intervals of a hot window.
func hotLevel(curve []RecoveryPoint) HotLevel {
	var h HotLevel
	var sum, n float64
	var p95s []float64
	for _, p := range curve {
		sum += p.QPS * p.Len
		n += p.Len
		p95s = append(p95s, p.P95)
	}
	if n == 0 {
		return h
	}
	h.QPS, h.Seconds = sum/n, n
	var v float64
	for _, p := range curve {
		v += (p.QPS - h.QPS) * (p.QPS - h.QPS) * p.Len
	}
	if h.QPS > 0 {
		h.Noise = math.Sqrt(v/n) / h.QPS
	}
	h.P95 = medianOf(p95s)
	if h.P95 > 0 {
		smoothed := make([]RecoveryPoint, len(curve))
		for i, p := range curve {
			smoothed[i] = RecoveryPoint{T: p.T, Len: p.Len, QPS: p.P95}
		}
		h.P95Ceiling = slices.Max(median3(smoothed)) / h.P95
	}
	if h.QPS > 0 {
		h.Floor = slices.Min(median3(curve)) / h.QPS
	}
	qps := make([]float64, len(curve))
	for i, p := range curve {
		qps[i] = p.QPS
	}
	median := medianOf(qps)
	for _, p := range curve {
		if p.QPS < median/2 {
			h.Stalled += p.Len
		}
	}
	return h
}

// medianOf is the median (the lower of the middle two of an even count); +Inf counts as a
// value, so that a figure not reached in most runs is not reached in the median.
func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// medianTime is the median of times where -1 means "not reached", which sorts last.
func medianTime(v []float64) float64 {
	s := make([]float64, len(v))
	for i, x := range v {
		if x < 0 {
			x = math.Inf(1)
		}
		s[i] = x
	}
	m := medianOf(s)
	if math.IsInf(m, 1) {
		return -1
	}
	return m
}

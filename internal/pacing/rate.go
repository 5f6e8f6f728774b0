package pacing

import "time"

// rateLimiter caps the server's read rate with a token bucket in bytes, empty at the start. A statement cannot
// be slowed down once it runs, so the bucket decides only when the next unit may start, and
// what units really read is measured at the server (Innodb_pages_read × page size, once
// per interval), since the caller cannot know which of a unit's pages were already cached.
//
// Between two measurements each admitted unit is charged an estimate of its cost (the
// average measured bytes per unit so far), so that the workers do not all start units until
// the next measurement shows the debt. Measured bytes first pay off those estimates, oldest
// first; estimates that no read paid off within a few intervals are refunded, and reads
// beyond the estimates come out of the bucket. Tokens may go negative (debt): then no unit
// starts until the debt is repaid at the capped rate. So over a few seconds the server reads
// at most rate + (burst + the units in flight) / seconds.
type rateLimiter struct {
	rate    float64 // bytes per second
	burst   float64 // the most tokens saved up while idle
	tokens  float64
	last    time.Time
	est     float64    // expected bytes per unit
	minEst  float64    // floor of est: one page
	pending [3]float64 // estimates charged and not yet paid by measured reads; [0] is the newest interval
	charged int        // units admitted since the last observation
}

func newRateLimiter(rate, unitBytes, pageSize int64, now time.Time) *rateLimiter {
	r := &rateLimiter{rate: float64(rate), burst: float64(rate), last: now, est: float64(unitBytes), minEst: float64(pageSize)}
	if r.est < r.minEst {
		r.est = r.minEst
	}
	return r
}

func (r *rateLimiter) refill(now time.Time) {
	if dt := now.Sub(r.last).Seconds(); dt > 0 {
		r.tokens = min(r.tokens+dt*r.rate, r.burst)
		r.last = now
	}
}

// reserve admits a unit (returning 0) when there are tokens, charging its estimated cost;
// otherwise it returns how long until there will be.
func (r *rateLimiter) reserve(now time.Time) time.Duration {
	r.refill(now)
	if r.tokens > 0 {
		r.tokens -= r.est
		r.pending[0] += r.est
		r.charged++
		return 0
	}
	return time.Duration(-r.tokens/r.rate*float64(time.Second)) + time.Millisecond
}

// setRate changes the cap (for --nice); a second's worth of tokens may be saved up.
func (r *rateLimiter) setRate(rate float64, now time.Time) {
	r.refill(now)
	r.rate, r.burst = rate, rate
	r.tokens = min(r.tokens, r.burst)
}

// spent reports whether the budget is used up right now.
func (r *rateLimiter) spent(now time.Time) bool {
	r.refill(now)
	return r.tokens <= 0
}

// observe accounts for bytes the server read since the previous call.
func (r *rateLimiter) observe(now time.Time, bytes float64) {
	r.refill(now)
	if r.charged > 0 && bytes > 0 {
		// What a unit costs, smoothed: reads of one interval may belong to units started in
		// the previous one.
		r.est = max(0.5*r.est+0.5*bytes/float64(r.charged), r.minEst)
	}
	r.charged = 0
	left := bytes
	for i := len(r.pending) - 1; i >= 0 && left > 0; i-- {
		paid := min(r.pending[i], left)
		r.pending[i] -= paid
		left -= paid
	}
	r.tokens -= left
	// The oldest estimates were never paid off: the units read less than expected.
	r.tokens = min(r.tokens+r.pending[len(r.pending)-1], r.burst)
	copy(r.pending[1:], r.pending[:len(r.pending)-1])
	r.pending[0] = 0
}

// SuggestedUnitBytes is the largest unit the caller should plan so that pausing between
// units gives control within a few seconds, or 0 when any size will do. Under --max-rate it
// is about half a second of each worker's share of the rate (1 MiB to 64 MiB); under --nice
// at most niceUnitBytes, so that a unit read at full speed is a blip of tens of
// milliseconds for the foreground, not a stall. Workers 0 counts as 4, warm's default.
func (c Config) SuggestedUnitBytes() int64 {
	var b int64
	if c.MaxRate > 0 {
		w := int64(c.Workers)
		if w <= 0 {
			w = 4
		}
		b = min(max(c.MaxRate/2/w, 1<<20), 64<<20)
	}
	if c.Nice && (b == 0 || b > niceUnitBytes) {
		b = niceUnitBytes
	}
	return b
}

// niceUnitBytes is the unit size --nice asks for (4 MiB: 256 pages of 16 KiB).
const niceUnitBytes = 4 << 20

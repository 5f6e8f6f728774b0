package pacing

import (
	"context"
	"time"
)

// probesPerSample is how many probes --nice runs per interval, evenly spread over it.
const probesPerSample = 5

// probeStatement is --nice's probe: a statement every account may run, that reads no table
// and is answered at once when the server has a CPU for it, and whose answer is the
// number of statements in flight.
const probeStatement = "SHOW GLOBAL STATUS LIKE 'Threads_running'"

type probeResult struct {
	latency time.Duration
	threads float64 // Threads_running without the warm's busy sessions and the probe itself
}

// probe runs the probe statement once.
func (g *Governor) probe(ctx context.Context) (probeResult, error) {
	qctx, cancel := context.WithTimeout(ctx, statusReadTimeout)
	defer cancel()
	busyBefore := g.busyCount()
	var name string
	var v float64
	t0 := time.Now()
	if err := g.sess.QueryRow(qctx, probeStatement, nil, &name, &v); err != nil {
		return probeResult{}, err
	}
	lat := time.Since(t0)
	busy := min(busyBefore, g.busyCount())
	return probeResult{latency: lat, threads: max(v-float64(busy)-1, 0)}, nil
}

// summarize is the median latency and the mean thread count of one interval's probes.
func summarize(ps []probeResult) (time.Duration, float64) {
	lats := make([]time.Duration, len(ps))
	var sum float64
	for i, p := range ps {
		lats[i] = p.latency
		sum += p.threads
	}
	return median(lats), sum / float64(max(len(ps), 1))
}

// baseline probes for one interval before the warm starts (twice as often as later).
func (g *Governor) baseline(ctx context.Context) (time.Duration, float64, error) {
	n := 2 * probesPerSample
	var ps []probeResult
	for i := 0; i < n; i++ {
		p, err := g.probe(ctx)
		if err != nil {
			return 0, 0, err
		}
		ps = append(ps, p)
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-time.After(g.cfg.Interval / time.Duration(n)):
		}
	}
	lat, threads := summarize(ps)
	return lat, threads, nil
}

package pacing

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"
)

// probesPerSample is how many probes --nice runs per interval, evenly spread over it.
const probesPerSample = 5

// probeStatement is --nice's probe: a statement every account may run, that reads no table
// and is answered at once when the server has a CPU for it, and whose answer is the
// number of statements and of reads in flight (both flavors have both variables).
const probeStatement = "SHOW GLOBAL STATUS WHERE Variable_name IN ('Threads_running', 'Innodb_data_pending_reads')"

type probeResult struct {
	latency time.Duration
	threads float64 // Threads_running without the warm's busy sessions and the probe itself
	pending float64 // Innodb_data_pending_reads; <0: the server did not say
}

// probe runs the probe statement once.
func (g *Governor) probe(ctx context.Context) (probeResult, error) {
	qctx, cancel := context.WithTimeout(ctx, statusReadTimeout)
	defer cancel()
	busyBefore := g.busyCount()
	threads, pending := -1.0, -1.0
	t0 := time.Now()
	err := g.sess.Query(qctx, probeStatement, nil, func(rows *sql.Rows) error {
		var name string
		var v float64
		if err := rows.Scan(&name, &v); err != nil {
			return err
		}
		switch strings.ToLower(name) {
		case "threads_running":
			threads = v
		case "innodb_data_pending_reads":
			pending = v
		}
		return nil
	})
	if err != nil {
		return probeResult{}, err
	}
	if threads < 0 {
		return probeResult{}, errors.New("the server did not report Threads_running")
	}
	lat := time.Since(t0)
	busy := min(busyBefore, g.busyCount())
	return probeResult{latency: lat, threads: max(threads-float64(busy)-1, 0), pending: pending}, nil
}

// probeSummary is one interval's probes: the median latency, the mean Threads_running
// and the mean reads in flight (<0: not reported).
type probeSummary struct {
	latency time.Duration
	threads float64
	pending float64
}

func summarize(ps []probeResult) probeSummary {
	lats := make([]time.Duration, len(ps))
	var sum, pend float64
	for i, p := range ps {
		lats[i] = p.latency
		sum += p.threads
		if p.pending < 0 || pend < 0 {
			pend = -1
		} else {
			pend += p.pending
		}
	}
	n := float64(max(len(ps), 1))
	if pend > 0 {
		pend /= n
	}
	return probeSummary{latency: median(lats), threads: sum / n, pending: pend}
}

// readLatency is Little's law: the mean reads in flight over the pages read per second;
// -1 when either is unknown, 0 when nothing was read or waited.
func readLatency(pending, pagesPerSecond float64) time.Duration {
	switch {
	case pending < 0 || pagesPerSecond < 0:
		return -1
	case pending == 0:
		return 0
	case pagesPerSecond < 1:
		// Reads waited and next to none completed: a second at least.
		return time.Second
	}
	return time.Duration(pending / pagesPerSecond * float64(time.Second))
}

// baseline probes for one interval before the warm starts (twice as often as later).
func (g *Governor) baseline(ctx context.Context) (probeSummary, error) {
	n := 2 * probesPerSample
	var ps []probeResult
	for i := 0; i < n; i++ {
		p, err := g.probe(ctx)
		if err != nil {
			return probeSummary{}, err
		}
		ps = append(ps, p)
		select {
		case <-ctx.Done():
			return probeSummary{}, ctx.Err()
		case <-time.After(g.cfg.Interval / time.Duration(n)):
		}
	}
	return summarize(ps), nil
}

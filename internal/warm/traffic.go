package warm

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/periodic"
)

// trafficFloor is the client statements per second above which a server counts as
// serving traffic: far above what a monitoring agent's polls add, far below any workload
// a warm-up could compete with.
const trafficFloor = 20.0

// trafficWindow is how long sampleTraffic watches the counters.
const trafficWindow = 300 * time.Millisecond

// sampleTraffic is the rate of client data statements (SELECT, INSERT, UPDATE, DELETE,
// REPLACE) the server ran over window. Its own SHOW statements are not among them.
func sampleTraffic(ctx context.Context, conn *connection.Conn, window time.Duration) (float64, error) {
	reads, writes, err := sampleActivity(ctx, conn, window)
	return reads + writes, err
}

// SampleTraffic is the client data statements per second the server runs, watched for a
// moment, and whether that counts as serving traffic.
func SampleTraffic(ctx context.Context, conn *connection.Conn) (rate float64, serving bool, err error) {
	rate, err = sampleTraffic(ctx, conn, trafficWindow)
	return rate, rate >= trafficFloor, err
}

// dataStatements are the status counters of client data statements.
var dataStatements = []string{"Com_select", "Com_insert", "Com_update", "Com_delete", "Com_replace"}

// trafficWatchEvery is how often watchTraffic looks: traffic that arrives waits behind
// whatever the load does until it is seen.
const trafficWatchEvery = 250 * time.Millisecond

// watchTraffic calls stop once the server serves traffic: every trafficWatchEvery it reads the
// client data statements run since the last look, and at trafficFloor a second or more it
// stops. The returned func gives the rate that stopped it (0: none). own counts the
// SELECTs the load itself runs many of (the polls of its reads' queue), left out; its other
// statements are SHOW statements, status reads and --nice's probes, under 8 a second.
func watchTraffic(ctx context.Context, conn *connection.Conn, stop func(), own func() int64) func() float64 {
	var mu sync.Mutex
	var arrived float64
	count := func(ctx context.Context) (int64, error) {
		vals, err := conn.GlobalStatus(ctx, dataStatements...)
		n := -own()
		for _, v := range vals {
			n += v
		}
		return n, err
	}
	type sample struct {
		at time.Time
		n  int64
	}
	first, err := count(ctx)
	if err != nil {
		return func() float64 { return 0 }
	}
	// The rate is over the last second's looks: a quarter of a second holds a probe or
	// two of the warm's own, which would read as 8 a second; twenty statements in it are
	// traffic however short the window.
	seen := []sample{{time.Now(), first}}
	stopWatching := periodic.Every(ctx, trafficWatchEvery, func(ctx context.Context) bool {
		n, err := count(ctx)
		if err != nil {
			return ctx.Err() == nil // a failed read only skips a look
		}
		now := time.Now()
		seen = append(seen, sample{now, n})
		for len(seen) > 2 && now.Sub(seen[1].at) >= time.Second {
			seen = seen[1:]
		}
		from := seen[0]
		window := now.Sub(from.at).Seconds()
		ran := float64(max(n-from.n, 0))
		rate := ran / max(window, 1e-3)
		if rate < trafficFloor || (window < 0.75 && ran < trafficFloor) {
			return true
		}
		mu.Lock()
		arrived = rate
		mu.Unlock()
		stop()
		return false
	})
	return func() float64 {
		stopWatching()
		mu.Lock()
		defer mu.Unlock()
		return arrived
	}
}

// sampleActivity is the rate of client reads (SELECT) and writes (INSERT, UPDATE,
// DELETE, REPLACE) per second over window.
func sampleActivity(ctx context.Context, conn *connection.Conn, window time.Duration) (reads, writes float64, err error) {
	read := func() (r, w int64, err error) {
		vals, err := conn.GlobalStatus(ctx, dataStatements...)
		for k, v := range vals {
			if k == "com_select" {
				r += v
			} else {
				w += v
			}
		}
		return r, w, err
	}
	r0, w0, err := read()
	if err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	case <-time.After(window):
	}
	r1, w1, err := read()
	if err != nil {
		return 0, 0, err
	}
	secs := time.Since(t0).Seconds()
	return float64(max(r1-r0, 0)) / secs, float64(max(w1-w0, 0)) / secs, nil
}

// throttledLoad says why this server's native loader would crawl now ("" when it would
// not): MySQL's loader keeps to about innodb_io_capacity pages per second while the server
// has write activity (measured on MySQL 9.7 at 200: 21,650 pages in 105 s instead of 1.4 s
// beside two writing clients, docs/flavors.md). Range scans are not throttled. rate is the
// client statements per second it sampled (-1 when it sampled none), for the load's order.
func throttledLoad(ctx context.Context, conn *connection.Conn) (why string, rate float64, err error) {
	if !conn.Server.LoadThrottledWhenBusy() {
		return "", -1, nil
	}
	var capacity int64
	if err := conn.DB.QueryRowContext(ctx, "SELECT @@innodb_io_capacity").Scan(&capacity); err != nil {
		return "", -1, fmt.Errorf("read innodb_io_capacity: %w", err)
	}
	if capacity >= throttleCapacity {
		return "", -1, nil
	}
	reads, writes, err := sampleActivity(ctx, conn, trafficWindow)
	if err != nil {
		return "", -1, err
	}
	if writes < 1 {
		return "", reads + writes, nil
	}
	return fmt.Sprintf("the server writes (%.0f statements/s), and its native loader then keeps to innodb_io_capacity = %d pages/s: range scans of the manifest's key ranges are not held to it", writes, capacity), reads + writes, nil
}

// throttleCapacity: an innodb_io_capacity below this makes a throttled load too slow to
// wait for (MySQL 8.4+ defaults to 10,000).
const throttleCapacity = 2000

// hasKeys says whether the manifest holds key ranges for any of its pages.
func (r *Resolved) hasKeys() bool { return len(r.keyed) > 0 }

package snapshot

import (
	"context"
	"errors"
	"fmt"
	"github.com/innowarm/innowarm/internal/catalog"
	"os"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/manifest"
)

// One look at an LRU list names the pages resident at that moment. While a pool turns over
// (a workload starting among a bulk load's or a report's leftovers, a pool smaller than the
// hot set's passes) much of the hot set is read and evicted between any two moments: on the
// polluted-source bench one look named 79% of the standby's hot set, the --every history
// 99.8%. Observe gives a single snapshot command what --every gives a sidecar: it watches
// the pool for a while, taking a capture into a History whenever a quarter of the pool has
// been read from disk, and writes one manifest scored over them.

// ObserveAuto is the longest a snapshot watches a pool that turns over when --observe is
// auto: a workload touches its hot set within a minute on the servers we measured, and a
// settled pool costs nothing (it is never watched).
const ObserveAuto = 60 * time.Second

// observeTick is how often the pages-read counter is looked at while observing: a pool
// can turn a quarter over in well under Every's one second.
const observeTick = 250 * time.Millisecond

// ObserveStats says how a snapshot watched the pool.
type ObserveStats struct {
	// Seconds the pool was watched, Captures taken into the history (the written one
	// included), PagesRead from disk meanwhile.
	Seconds   float64 `json:"seconds"`
	Captures  int     `json:"captures"`
	PagesRead int64   `json:"pages_read"`
	// Why the pool was watched (auto: the rate it was read at during the first look), and
	// why the watch ended.
	Why   string `json:"why"`
	Ended string `json:"ended"`
}

// minChurnReads: fewer reads during a look say nothing of the pool's turnover; a look
// that saw some but fewer is extended, churnProbe at a time, up to churnProbeMax: a small
// pool turns over at a rate a quick look reads less than minChurnReads at (32 MiB: a
// quarter of it a minute is 9 pages a second), and so does a workload slowed by a busy
// host.
const (
	minChurnReads = 64
	churnProbe    = 250 * time.Millisecond
	churnProbeMax = 2 * time.Second
)

// Churning reports whether a pool is turning over: while one capture of dt took, read
// pages were read from disk, at a rate that reads a quarter of the pool (ChurnShare) within
// window. Fewer than minChurnReads reads say nothing either way (a capture's own
// dictionary reads, a trickle of misses).
func Churning(read int64, dt, window time.Duration, poolPages int64) bool {
	if read < minChurnReads || dt <= 0 || poolPages <= 0 {
		return false
	}
	return float64(read)/dt.Seconds()*window.Seconds() >= ChurnShare*float64(poolPages)
}

// CaptureObserving is Capture for a snapshot command. With window 0 it is one look. With
// auto it takes one look (written as Capture does, so that an interrupted watch leaves a
// manifest), and when the pool was turning over meanwhile (Churning within window) and the
// manifest goes to a file, it watches the pool for up to window and writes the history's
// manifest over it. Without auto it watches for window from the start, whatever the pool
// does (a manifest to stdout is written once, at the end).
//
// An auto watch ends early once it has learnt what there is to learn: when each of the last
// two looks added fewer pages new to the history than 1% of the pool (the hot set has been
// seen; what the workload reads now, the history holds), or when nothing was read from
// disk for five seconds (the traffic stopped: more looks see nothing new). A fixed count
// of reads would not do: pages read at random over a hot set of H pages have all been
// seen but e^(-n/H) of them after n reads, and H is what the watch is for. A window the
// user gave (--observe DURATION) is watched whole.
func CaptureObserving(ctx context.Context, conn *connection.Conn, o Options, window time.Duration, auto bool) (*Result, error) {
	log := o.Log
	if log == nil {
		log = logx.New(os.Stderr, true)
	}
	if window <= 0 {
		return Capture(ctx, conn, o)
	}
	if o.Catalogs == nil {
		o.Catalogs = &catalog.Cache{}
	}
	var why string
	if auto {
		read0, _, err0 := readAndPoolPages(ctx, conn)
		t0 := time.Now()
		res, err := Capture(ctx, conn, o)
		if err != nil {
			return res, err
		}
		read1, poolPages, err1 := readAndPoolPages(ctx, conn)
		// A look that saw too few reads to tell a trickle from a pool turning over looks on;
		// an idle server's (none at all) is not kept waiting.
		for err1 == nil && read1 > read0 && read1-read0 < minChurnReads {
			left := churnProbeMax - time.Since(t0)
			if left <= 0 {
				break
			}
			select {
			case <-ctx.Done():
				return res, ctx.Err()
			case <-time.After(min(churnProbe, left)):
			}
			read1, poolPages, err1 = readAndPoolPages(ctx, conn)
		}
		dt := time.Since(t0)
		// Counters that could not be read say nothing of the turnover: one look, as asked
		// of a settled pool.
		if churning := err0 == nil && err1 == nil && Churning(read1-read0, dt, window, poolPages); !churning {
			return res, nil
		}
		why = fmt.Sprintf("the pool was turning over during the capture: %d pages read from disk in %.2f s, a quarter of its %d pages every %.1f s",
			read1-read0, dt.Seconds(), poolPages, ChurnShare*float64(poolPages)/(float64(read1-read0)/dt.Seconds()))
		if o.Path == manifest.StdioName {
			log.Warnf("%s: one look misses hot pages evicted before it; write to a file to let snapshot watch the pool (or --observe DURATION)", why)
			return res, nil
		}
		o.Keep = 0 // the first look has moved the older manifests along already
		log.Infof("%s; watching it for up to %s so that the manifest holds the hot set, not one look (--observe 0: one look)", why, window)
		watched, err := observe(ctx, conn, o, window, true, why, log)
		if err != nil && ctx.Err() != nil {
			log.Infof("interrupted while watching the pool: %s keeps the manifest of the first look", o.Path)
		}
		return watched, err
	} else {
		why = fmt.Sprintf("--observe %s", window)
	}
	return observe(ctx, conn, o, window, false, why, log)
}

// observe watches the pool into a history and writes its manifest. early (auto) ends the
// watch once the hot set has been seen or nothing is read; an --observe DURATION the user
// gave watches that long, as its help says (it ended after 3-5 s of a 20 s window).
func observe(ctx context.Context, conn *connection.Conn, o Options, window time.Duration, early bool, why string, log *logx.Logger) (*Result, error) {
	start := time.Now()
	o.History = NewHistory(HalfLifeFor(window))
	obs := ObserveStats{Why: why}
	readStart, poolPages, err := readAndPoolPages(ctx, conn)
	if err != nil {
		return nil, err
	}
	quiet := 0 // looks in a row that added fewer than 1% of the pool
	take := func(write bool) (*Result, error) {
		oo := o
		oo.ObserveOnly = !write
		res, err := Capture(ctx, conn, oo)
		if err == nil || errors.Is(err, manifest.ErrEmpty) {
			obs.Captures++
			if obs.Captures > 1 && float64(o.History.Added()) < 0.01*float64(max(poolPages, 1)) {
				quiet++
			} else {
				quiet = 0
			}
		}
		return res, err
	}
	if _, err := take(false); err != nil && !errors.Is(err, manifest.ErrEmpty) {
		return nil, err
	}
	readAtCapture, lastRead, lastReadAt := readStart, readStart, time.Now()
	obs.Ended = "the window ended"
watch:
	for time.Since(start) < window {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(observeTick):
		}
		read, pages, err := readAndPoolPages(ctx, conn)
		if err != nil {
			return nil, err
		}
		if pages > 0 {
			poolPages = pages
		}
		now := time.Now()
		if read > lastRead {
			lastRead, lastReadAt = read, now
		}
		switch {
		case early && quiet >= 2:
			obs.Ended = "the last two looks added fewer pages than 1% of the pool"
			break watch
		case early && now.Sub(lastReadAt) >= 5*time.Second:
			obs.Ended = "nothing was read from disk for 5 s"
			break watch
		case float64(read-readAtCapture) >= ChurnShare*float64(max(poolPages, 1)):
			if _, err := take(false); err != nil && !errors.Is(err, manifest.ErrEmpty) {
				return nil, err
			}
			readAtCapture = read
		}
	}
	res, err := take(true)
	if err != nil {
		return nil, err
	}
	if read, _, err := readAndPoolPages(ctx, conn); err == nil {
		obs.PagesRead = read - readStart
	}
	obs.Seconds = time.Since(start).Seconds()
	res.Observed = &obs
	res.Seconds = obs.Seconds
	return res, nil
}

// Package pacing keeps a warm from hurting the server's own work. A Governor samples the
// server once per interval (one SHOW GLOBAL STATUS statement, plus a few trivial probe
// statements under --nice) and the warm's workers ask it before each unit:
//
//   - --max-load: every unit waits while a status variable is above its bound;
//   - --critical-load: the warm stops (ErrCritical) when one is;
//   - --max-rate: units wait while the server's read rate (Innodb_pages_read × page size)
//     is over the cap;
//   - --nice: the read rate the warm may use follows the foreground's distress, measured
//     as a probe's latency and Threads_running against a baseline taken before the warm,
//     and the time the server's reads wait against the lowest seen (additive increase,
//     multiplicative decrease).
//
// A statement cannot be slowed down once it runs, so the governor only decides when the
// next unit starts; units of a few MB to a few tens of MB give control within seconds.
// See docs/pacing.md.
package pacing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/units"
)

// ErrCritical is returned (wrapped, naming the bound) by Acquire once a --critical-load
// bound was exceeded: the caller stops starting units and ends cleanly.
var ErrCritical = errors.New("critical load reached")

// ErrClosed is returned by Acquire after Close.
var ErrClosed = errors.New("pacing: governor closed")

// Config is what the pacing flags ask for.
type Config struct {
	MaxLoad  []Bound // pause while any is exceeded
	Critical []Bound // stop when any is exceeded
	MaxRate  int64   // bytes per second the server may read; 0: no cap
	Nice     bool    // adapt the warm's read rate to the foreground's distress
	// TrafficArrives: the warm starts with its server's traffic (warm --wait-for-server):
	// --nice starts at 1 MiB/s rather than 8, may go down to 256 KiB/s rather than 1 MiB/s,
	// and grows while the signals stay calm. The server's first seconds are its worst (every query misses); a warm that
	// starts at 8 MiB/s takes half of a disk capped at 1,000 reads/s before the first
	// interval shows it, and the backlog it adds lasts.
	TrafficArrives bool
	Interval       time.Duration
	Workers        int // sessions the caller runs at most
}

// UnderTraffic is the pacing of a warm that starts with its server's traffic (warm
// --wait-for-server) when none was asked for: --nice. Measured by the service a restarted
// server loses (docs/pacing.md): on a disk the traffic alone keeps at its limit, an
// unpaced load queues its reads ahead of the traffic's and loses 2.6 times what no warm
// at all loses; under --nice what no warm loses, with clients at full speed and open loop
// at half the hot rate alike, and on a fast disk no more than unpaced.
func UnderTraffic(c Config) Config {
	c.Nice = true
	c.TrafficArrives = true
	return c
}

// Enabled reports whether c asks for any pacing.
func (c Config) Enabled() bool {
	return len(c.MaxLoad) > 0 || len(c.Critical) > 0 || c.MaxRate > 0 || c.Nice
}

// Stats is what the governor did, for the caller's result.
type Stats struct {
	// Samples counts the server status reads; MostOwnSessions is the most warm sessions
	// that were busy, and so subtracted from Threads_running, in one of them.
	Samples          int     `json:"samples"`
	MostOwnSessions  int     `json:"-"`
	Pauses           int     `json:"pauses"`                  // times the load went over a --max-load bound
	PausedSeconds    float64 `json:"paused_seconds"`          // time over a --max-load bound: no unit started
	RateLimitSeconds float64 `json:"rate_limited_seconds"`    // time with units waiting for the --max-rate or --nice budget
	NiceRate         int64   `json:"-"`                       // the rate --nice allows now (bytes/s)
	NiceMinRate      int64   `json:"nice_min_rate,omitempty"` // the lowest it went
	ProbeBaselineMs  float64 `json:"probe_baseline_ms,omitempty"`
	ThreadsBaseline  float64 `json:"threads_running_baseline,omitempty"`
	// ReadWaitMs is the last interval's read wait (-1: not measured: the server did not
	// report its reads in flight, or no foreground statement ran); ReadWaitBaselineMs the
	// lowest --nice saw while reads waited.
	ReadWaitMs         float64 `json:"-"`
	ReadWaitBaselineMs float64 `json:"read_wait_baseline_ms,omitempty"`
	Critical           string  `json:"critical,omitempty"`
	// OwnReadPages is the pages the warm said it had the server read (OwnReads).
	OwnReadPages   int64   `json:"own_read_pages,omitempty"`
	ServerReadMBps float64 `json:"server_read_mb_per_s,omitempty"` // Innodb_pages_read rate while the governor ran (with --max-rate or --nice)

	readBytes, readSeconds float64
}

// Governor paces one warm. A nil *Governor never holds back: every method is a no-op.
type Governor struct {
	cfg      Config
	conn     *connection.Conn
	pageSize int64
	query    string
	maxLoad  []Bound
	critical []Bound

	sess    *connection.Session // used by New, then by the sampler goroutine only
	cancel  context.CancelFunc
	done    chan struct{}
	tripped chan struct{}

	mu         sync.Mutex
	changed    chan struct{} // closed and replaced whenever the state changes
	closed     bool
	busy       map[int]bool
	load       string // the --max-load bound exceeded at the last sample, or ""
	crit       error
	fail       error // the server's status could not be read for too long
	lastGood   time.Time
	lastSample time.Time
	pagesRead  float64 // Innodb_pages_read at the last sample; <0: unknown
	rate       *rateLimiter
	rateWaited bool // a unit waited for the rate budget since the last sample
	nice       *niceCtl
	stats      Stats
	// ownPages is what the warm said it had the server read since the last sample;
	// ownReported that it says so at all (OwnReads).
	ownPages    float64
	ownReported bool
	// reads is the last few intervals' reads, oldest first: --nice's read wait is taken
	// over them, since a unit's reads are reported when it ends, not as they complete.
	reads []readInterval
}

// readInterval is one interval's reads, for --nice's read wait.
type readInterval struct {
	seconds, bytes, ownBytes float64
	pendingSeconds           float64 // mean reads in flight × seconds; <0: not reported
}

// readWindow is how many intervals the read wait is taken over.
const readWindow = 3

// statusReadTimeout bounds one sample's statements.
const statusReadTimeout = 5 * time.Second

// failAfter is how long the status may be unreadable before Acquire fails.
const failAfter = 15 * time.Second

// New checks cfg against the server (each bound must name a numeric SHOW GLOBAL STATUS
// variable: usage error otherwise), measures the --nice baseline (about one interval), and
// starts sampling every cfg.Interval (default 1 s) on a session of its own. It returns a
// nil Governor, which never holds back, when cfg asks for no pacing. Call it just before
// the warm's first unit, so the baseline is the server without the warm.
func New(ctx context.Context, conn *connection.Conn, cfg Config) (*Governor, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	cfg.Workers = max(cfg.Workers, 1)
	g := &Governor{
		cfg: cfg, conn: conn, pageSize: int64(conn.Server.PageSize),
		maxLoad: append([]Bound(nil), cfg.MaxLoad...), critical: append([]Bound(nil), cfg.Critical...),
		done: make(chan struct{}), tripped: make(chan struct{}), changed: make(chan struct{}),
		busy: map[int]bool{}, pagesRead: -1,
	}
	if g.pageSize <= 0 {
		g.pageSize = 16384
	}
	g.query = statusQuery(cfg)
	sess, err := conn.NewSession(ctx)
	if err != nil {
		return nil, fmt.Errorf("pacing: %w", err)
	}
	g.sess = sess
	fail := func(err error) (*Governor, error) {
		sess.Close()
		return nil, err
	}
	vals, raw, err := g.read(ctx)
	if err != nil {
		return fail(fmt.Errorf("pacing: read server status: %w", err))
	}
	adjust(vals, 0)
	if err := check(g.maxLoad, g.critical, vals, raw); err != nil {
		return fail(err)
	}
	if cfg.Nice {
		t0 := time.Now()
		base, err := g.baseline(ctx)
		if err != nil {
			return fail(fmt.Errorf("pacing: latency probe: %w", err))
		}
		g.nice = newNiceCtl(base.latency, base.threads, cfg.MaxRate, cfg.TrafficArrives)
		// The reads' wait before the warm, from what the server read meanwhile: the base the
		// warm's first reads are judged by.
		if after, _, err := g.read(ctx); err == nil {
			if v0, ok := vals["innodb_pages_read"]; ok {
				sig := niceSignals{threads: base.threads, pending: base.pending, pageSize: float64(g.pageSize),
					serverRate: (after["innodb_pages_read"] - v0) * float64(g.pageSize) / time.Since(t0).Seconds()}
				if wait, ok := readWait(sig); ok {
					g.nice.noteRead(wait, base.pending, sig.serverRate/sig.pageSize)
				}
			}
			vals = after
			adjust(vals, 0)
		}
		g.stats.ReadWaitBaselineMs = float64(g.nice.baseRead) / float64(time.Millisecond)
		g.stats.ProbeBaselineMs = float64(base.latency) / float64(time.Millisecond)
		g.stats.ThreadsBaseline = base.threads
		g.stats.NiceMinRate, g.stats.NiceRate = int64(g.nice.rate), int64(g.nice.rate)
	}
	now := time.Now()
	g.lastGood, g.lastSample = now, now
	if v, ok := vals["innodb_pages_read"]; ok {
		g.pagesRead = v
	}
	switch {
	case g.nice != nil:
		g.rate = newRateLimiter(int64(g.nice.rate), cfg.SuggestedUnitBytes(), g.pageSize, now)
	case cfg.MaxRate > 0:
		g.rate = newRateLimiter(cfg.MaxRate, cfg.SuggestedUnitBytes(), g.pageSize, now)
	}
	g.apply(vals, nil, now)

	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	g.cancel = cancel
	go g.loop(sctx)
	return g, nil
}

// Check does New's checks of the bounds against the server without starting anything, so
// that a command can refuse a bad variable before it plans: one SHOW GLOBAL STATUS.
func Check(ctx context.Context, conn *connection.Conn, cfg Config) error {
	q := statusQuery(cfg)
	if q == "" {
		return nil
	}
	sess, err := conn.NewSession(ctx)
	if err != nil {
		return fmt.Errorf("pacing: %w", err)
	}
	g := &Governor{query: q, sess: sess}
	defer g.sess.Close()
	vals, raw, err := g.read(ctx)
	if err != nil {
		return fmt.Errorf("pacing: read server status: %w", err)
	}
	return check(append([]Bound(nil), cfg.MaxLoad...), append([]Bound(nil), cfg.Critical...), vals, raw)
}

// statusQuery reads the bounds' variables and, for --max-rate and --nice,
// Innodb_pages_read; "" when there is nothing to read.
func statusQuery(cfg Config) string {
	var names []string
	seen := map[string]bool{}
	for _, b := range append(append([]Bound(nil), cfg.MaxLoad...), cfg.Critical...) {
		if k := strings.ToLower(b.Name); !seen[k] {
			seen[k] = true
			names = append(names, "'"+b.Name+"'") // ParseBounds allows only [A-Za-z0-9_]
		}
	}
	if (cfg.MaxRate > 0 || cfg.Nice) && !seen["innodb_pages_read"] {
		names = append(names, "'Innodb_pages_read'")
	}
	if len(names) == 0 {
		return ""
	}
	return "SHOW GLOBAL STATUS WHERE Variable_name IN (" + strings.Join(names, ", ") + ")"
}

// check verifies that every bound names a numeric status variable, and sets the limits of
// relative bounds from the values (usage errors name the option's field and the variable).
func check(maxLoad, critical []Bound, vals map[string]float64, raw map[string]string) error {
	for _, set := range []struct {
		field  string
		bounds []Bound
	}{{"MaxLoad", maxLoad}, {"CriticalLoad", critical}} {
		for i, b := range set.bounds {
			k := strings.ToLower(b.Name)
			if _, ok := raw[k]; !ok {
				return exitcode.BadValue(set.field, "%s: no status variable %s on this server (see SHOW GLOBAL STATUS)", b, b.Name)
			}
			v, ok := vals[k]
			if !ok {
				return exitcode.BadValue(set.field, "%s: %s is %q, not a number", b, b.Name, raw[k])
			}
			if b.Relative {
				set.bounds[i].Limit = max(math.Ceil(v*1.2), v+1)
			}
		}
	}
	return nil
}

// read runs the status query: numeric values by lower-case name, and every raw value.
func (g *Governor) read(ctx context.Context) (map[string]float64, map[string]string, error) {
	vals, raw := map[string]float64{}, map[string]string{}
	if g.query == "" {
		return vals, raw, nil
	}
	err := g.sess.Query(ctx, g.query, nil, func(rows *sql.Rows) error {
		var name, val string
		if err := rows.Scan(&name, &val); err != nil {
			return err
		}
		k := strings.ToLower(name)
		raw[k] = val
		if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
			vals[k] = f
		}
		return nil
	})
	return vals, raw, err
}

// loop samples until Close. Under --nice it ticks probesPerSample times per interval and
// probes at each tick; the status query and the decisions happen once per interval.
func (g *Governor) loop(ctx context.Context) {
	defer close(g.done)
	period, every := g.cfg.Interval, 1
	if g.nice != nil {
		period, every = g.cfg.Interval/probesPerSample, probesPerSample
	}
	t := time.NewTicker(period)
	defer t.Stop()
	var probes []probeResult
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if g.nice != nil && g.sess != nil {
			if p, err := g.probe(ctx); err == nil {
				probes = append(probes, p)
			}
		}
		if n%every == 0 {
			g.sample(ctx, probes)
			probes = probes[:0]
		}
	}
}

// sample reads the server once and updates the state.
func (g *Governor) sample(ctx context.Context, probes []probeResult) {
	qctx, cancel := context.WithTimeout(ctx, statusReadTimeout)
	defer cancel()
	var err error
	if g.sess == nil {
		g.sess, err = g.conn.NewSession(qctx)
	}
	var vals map[string]float64
	busyBefore := g.busyCount()
	if err == nil {
		vals, _, err = g.read(qctx)
	}
	busy := min(busyBefore, g.busyCount())
	if ctx.Err() != nil {
		return
	}
	now := time.Now()
	if err != nil {
		if g.sess != nil {
			g.sess.Close()
			g.sess = nil
		}
		g.mu.Lock()
		if now.Sub(g.lastGood) > failAfter && g.fail == nil {
			g.fail = fmt.Errorf("pacing: cannot read the server's status for %s: %w", failAfter, err)
			g.broadcastLocked()
		}
		g.mu.Unlock()
		return
	}
	adjust(vals, busy)
	g.mu.Lock()
	g.stats.Samples++
	g.stats.MostOwnSessions = max(g.stats.MostOwnSessions, busy)
	g.mu.Unlock()
	g.apply(vals, probes, now)
}

// adjust takes the governor's knowledge of the warm out of the sampled values: the warm's
// busy sessions and the sampler's own statement are running threads too.
func adjust(vals map[string]float64, busy int) {
	if v, ok := vals["threads_running"]; ok {
		vals["threads_running"] = max(v-float64(busy)-1, 0)
	}
}

// apply takes one interval's values and probes.
func (g *Governor) apply(vals map[string]float64, probes []probeResult, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lastGood = now
	dt := now.Sub(g.lastSample).Seconds()
	g.lastSample = now
	if g.crit == nil {
		if r := exceeded(g.critical, vals); r != "" {
			g.crit = fmt.Errorf("%w: %s", ErrCritical, r)
			g.stats.Critical = r
			close(g.tripped)
		}
	}
	if g.load != "" {
		g.stats.PausedSeconds += dt
	}
	load := exceeded(g.maxLoad, vals)
	if load != "" && g.load == "" {
		g.stats.Pauses++
	}
	g.load = load
	serverRate, serverBytes := -1.0, 0.0
	own := g.ownPages * float64(g.pageSize)
	g.ownPages = 0
	if v, ok := vals["innodb_pages_read"]; ok {
		if g.pagesRead >= 0 && v >= g.pagesRead && dt > 0 {
			serverBytes = (v - g.pagesRead) * float64(g.pageSize)
			serverRate = serverBytes / dt
			g.stats.readBytes += serverBytes
			g.stats.readSeconds += dt
			if g.rate != nil {
				charge := serverBytes
				if g.chargesOwnReads() {
					charge = min(own, serverBytes)
				}
				g.rate.observe(now, charge)
			}
		}
		g.pagesRead = v
	}
	if g.rate != nil {
		if g.rateWaited {
			g.stats.RateLimitSeconds += dt
		}
		g.rateWaited = false
	}
	if g.nice != nil && len(probes) > 0 && serverRate >= 0 {
		ps := summarize(probes)
		sig := g.readSignals(readInterval{seconds: dt, bytes: serverBytes, ownBytes: own, pendingSeconds: ps.pending * dt})
		sig.probe, sig.threads = ps.latency, ps.threads
		g.nice.update(sig)
		g.stats.ReadWaitMs = -1
		if g.nice.lastRead >= 0 {
			g.stats.ReadWaitMs = float64(g.nice.lastRead) / float64(time.Millisecond)
		}
		g.stats.ReadWaitBaselineMs = float64(g.nice.baseRead) / float64(time.Millisecond)
		g.rate.setRate(g.nice.rate, now)
		g.stats.NiceMinRate, g.stats.NiceRate = int64(g.nice.minRate), int64(g.nice.rate)
	}
	g.broadcastLocked()
}

// readSignals adds an interval to the read window and returns --nice's read signals over
// it: the mean reads in flight (<0: not reported), the server's and the warm's read rates.
func (g *Governor) readSignals(last readInterval) niceSignals {
	if last.pendingSeconds < 0 {
		last.pendingSeconds = -1
	}
	g.reads = append(g.reads, last)
	if len(g.reads) > readWindow {
		g.reads = g.reads[len(g.reads)-readWindow:]
	}
	var secs, bytes, ownBytes, pend float64
	for _, r := range g.reads {
		secs += r.seconds
		bytes += r.bytes
		ownBytes += r.ownBytes
		if r.pendingSeconds < 0 || pend < 0 {
			pend = -1
		} else {
			pend += r.pendingSeconds
		}
	}
	if pend > 0 {
		pend /= secs
	}
	return niceSignals{pending: pend, serverRate: bytes / secs, ownRate: ownBytes / secs, pageSize: float64(g.pageSize)}
}

// OwnReads says the warm's last unit had the server read at most pages pages (an upper
// bound: the caller cannot tell the pages already resident, which cost nothing). A caller
// that says it for every unit gets a --nice that judges the foreground's reads by their
// own completions, and, without --max-rate, a budget charged with the warm's reads only:
// otherwise the server's reads are taken for the warm's, and a foreground that reads as
// fast as the disk allows leaves the warm no budget at all for as long as it does.
func (g *Governor) OwnReads(pages int64) {
	if g == nil || pages < 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ownReported = true
	g.ownPages += float64(pages)
	g.stats.OwnReadPages += pages
}

// chargesOwnReads reports whether the rate budget is charged with the warm's own reads:
// under --nice alone, once the warm reports them. --max-rate caps the server's reads.
func (g *Governor) chargesOwnReads() bool {
	return g.ownReported && g.nice != nil && g.cfg.MaxRate <= 0
}

func (g *Governor) broadcastLocked() {
	close(g.changed)
	g.changed = make(chan struct{})
}

func (g *Governor) busyCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.busy)
}

// Acquire is called by a worker before each unit. It blocks while the warm is held back:
// the load is over a --max-load bound, or the --max-rate (or --nice) budget is spent. It
// returns ErrCritical (wrapped, naming the bound) once a --critical-load bound was
// exceeded, and ctx.Err() when ctx ends. The worker is then busy until Release (or its
// next Acquire): busy workers are what the governor subtracts from Threads_running.
func (g *Governor) Acquire(ctx context.Context, worker int) error {
	if g == nil {
		return ctx.Err()
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	g.mu.Lock()
	delete(g.busy, worker)
	for {
		switch {
		case g.closed:
			g.mu.Unlock()
			return ErrClosed
		case g.crit != nil:
			g.mu.Unlock()
			return g.crit
		case g.fail != nil:
			g.mu.Unlock()
			return g.fail
		case ctx.Err() != nil:
			g.mu.Unlock()
			return ctx.Err()
		}
		var wait time.Duration
		if g.load == "" {
			if g.rate != nil {
				wait = g.rate.reserve(time.Now())
			}
			if wait == 0 {
				g.busy[worker] = true
				g.mu.Unlock()
				return nil
			}
			g.rateWaited = true
		}
		ch := g.changed
		g.mu.Unlock()
		var tc <-chan time.Time
		if wait > 0 {
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			tc = timer.C
		}
		select {
		case <-ctx.Done():
		case <-ch:
		case <-tc:
		}
		g.mu.Lock()
	}
}

// Release says the worker's unit ended: its session no longer counts as the warm's.
func (g *Governor) Release(worker int) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.busy, worker)
}

// Tripped is closed when a --critical-load bound is exceeded, for callers that want to
// stop statements in flight too (a nil Governor's never closes).
func (g *Governor) Tripped() <-chan struct{} {
	if g == nil {
		return nil
	}
	return g.tripped
}

// Err is the ErrCritical-wrapped error once a --critical-load bound tripped, else nil.
func (g *Governor) Err() error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.crit
}

// Status says why the warm is held back, for the progress line: "" when it runs freely,
// else e.g. "Threads_running=31 > 25", "rate 200 MiB/s reached",
// "nice: up to 12 MiB/s (probe 2.30 ms vs 0.90 ms before the warm)".
func (g *Governor) Status() string {
	if g == nil {
		return ""
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.crit != nil:
		return "stopping: " + g.stats.Critical + " (critical load)"
	case g.fail != nil:
		return "cannot read the server's status"
	case g.load != "":
		return g.load
	}
	limited := g.rate != nil && (g.rateWaited || g.rate.spent(time.Now()))
	switch {
	case g.nice != nil && limited && (g.cfg.MaxRate <= 0 || g.nice.rate < float64(g.cfg.MaxRate)):
		return g.nice.status()
	case limited:
		return fmt.Sprintf("rate %s/s reached", units.FormatBytes(g.cfg.MaxRate))
	case g.nice != nil && g.nice.distressed:
		return g.nice.status()
	}
	return ""
}

// Stats reports what the governor did so far.
func (g *Governor) Stats() Stats {
	if g == nil {
		return Stats{}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.stats
	if s.readSeconds > 0 {
		s.ServerReadMBps = s.readBytes / 1e6 / s.readSeconds
	}
	return s
}

// Close stops sampling and releases the governor's session; waiting Acquires return
// ErrClosed.
func (g *Governor) Close() {
	if g == nil {
		return
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.closed = true
	g.broadcastLocked()
	g.mu.Unlock()
	g.cancel()
	<-g.done
	if g.sess != nil {
		g.sess.Close()
	}
}

package agent

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/dumpfile"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/progress"
	"github.com/innowarm/innowarm/internal/snapshot"
	"github.com/innowarm/innowarm/internal/sqlerr"
	"github.com/innowarm/innowarm/internal/units"
	"github.com/innowarm/innowarm/internal/warm"
)

// Agent watches one server and answers for it.
type Agent struct {
	o   Options
	log *logx.Logger

	mu sync.Mutex
	st Status

	// Owned by the monitor (Run's goroutine). held is one connection kept open from the
	// pool: a restart breaks it, however fast the server came back (the pool itself
	// reconnects without a word).
	conn   *connection.Conn
	held   *sql.Conn
	run    *serverRun
	everUp bool

	// The connection the answers ping, and the last ping (see alive). pingHeld is one
	// connection of the server run the monitor measures, kept open as held is: the pool's
	// own ping reconnects to a restarted server without a word, so a ping through the pool
	// alone would take a cold server back for the warm one that went away.
	pingMu   sync.Mutex
	pingConn *connection.Conn
	pingHeld *sql.Conn
	pingDone time.Time
	pingErr  error
	// pingBroken: pingHeld broke and the ping could not tell the run from a new one (a
	// server younger than 3 s stalled past the ping's second): the monitor, whose own
	// connection proves the run the same, gives the answers a new one.
	pingBroken bool
	// runStart and runUptime identify the server run the monitor measures (under mu): a
	// ping that had to reconnect tells a restart from a connection killed alone by them.
	runStart  time.Time
	runUptime int64
	// downAt is when a failed ping marked the server down (under mu): a measure that
	// started before it read a server that was still there, and must not undo it.
	downAt time.Time

	poke  chan struct{}
	auth  *authenticator
	ready chan struct{} // closed after the first measure: the agent-check port starts answering
	// bound is closed once the listeners are open (or failed to): httpAddr and checkAddr
	// are the addresses they got (a port 0 is chosen by the system).
	bound               chan struct{}
	httpAddr, checkAddr string
}

// serverRun is one run of the server (from its start to its stop) as the agent follows it.
type serverRun struct {
	conn    *connection.Conn
	start   time.Time
	uptime  int64 // the server's Uptime at the last measure
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	target  *target
	tracker *tracker
	ready   bool // latched: the run reached the threshold
	// readyNote says what made the run ready; targetRetry is when to read a target that
	// could not be read again (a large manifest costs a read of the whole file).
	readyNote   string
	targetRetry time.Time
	warmed      bool // the warm was started (or skipped) in this run
	// nativeLoad is set while the warm's native load holds the server's dump file: counts
	// then read INNODB_BUFFER_PAGE_LRU instead of waiting for the file.
	nativeLoad   atomic.Bool
	snapshotting atomic.Bool
	lastLog      time.Time
}

// New checks the options and makes an agent; Run starts it.
func New(o Options) (*Agent, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Log == nil {
		o.Log = logx.Default()
	}
	a := &Agent{o: o, log: o.Log, poke: make(chan struct{}, 1), ready: make(chan struct{}), bound: make(chan struct{})}
	auth, err := newAuthenticator(o.AuthTokenFile, o.AuthBasicFile)
	if err != nil {
		return nil, err
	}
	a.auth = auth
	now := time.Now()
	a.st = Status{State: Starting, Since: now, Threshold: o.ReadyCoverage, ReadyNote: "waiting for the server to answer",
		Server: ServerStatus{Target: o.Conn.Target()}, Version: o.Version}
	a.st.Coverage.Target = (*target)(nil).describe(&o)
	a.st.Warm.State = WarmOff
	if o.Warm != nil {
		a.st.Warm.State = WarmPending
	}
	if o.SnapshotTo != "" {
		a.st.Snapshot = &SnapshotStatus{Path: o.SnapshotTo, Every: o.SnapshotEvery.String()}
	}
	if o.AgentCheckListen != "" {
		a.st.AgentCheck = &AgentCheckStatus{Listen: o.AgentCheckListen, Recent: []Answer{}}
	}
	if o.Metrics != nil {
		registerMetrics(o.Metrics, a)
	}
	return a, nil
}

// Run serves until ctx ends (SIGTERM): that is how an agent stops, and it returns nil then.
// It returns an error when a listener cannot be opened, or when the server refuses the
// agent's credentials before it ever answered (a configuration error, exit 2).
func (a *Agent) Run(ctx context.Context) error {
	var servers []func()
	defer func() {
		for _, stop := range servers {
			stop()
		}
	}()
	boundOnce := sync.OnceFunc(func() { close(a.bound) })
	defer boundOnce()
	if a.o.HttpListen != "" {
		stop, addr, err := a.serveHTTP(ctx)
		if err != nil {
			return err
		}
		servers = append(servers, stop)
		a.httpAddr = addr
		a.log.Infof("agent: /ready, /status and /metrics on %s", addr)
	}
	if a.o.AgentCheckListen != "" {
		stop, addr, err := a.serveAgentCheck(ctx)
		if err != nil {
			return err
		}
		servers = append(servers, stop)
		a.checkAddr = addr
		a.log.Infof("agent: HAProxy agent check on %s", addr)
	}
	boundOnce()
	defer a.shutdown()
	first := true
	for {
		if err := a.step(ctx); err != nil {
			return err
		}
		if first {
			first = false
			close(a.ready)
		}
		select {
		case <-ctx.Done():
			a.log.Infof("agent: stopping")
			return nil
		case <-a.poke:
		case <-time.After(a.o.Interval):
		}
	}
}

// Addrs waits until Run has opened its listeners and returns their addresses ("" for one
// not configured, or when opening failed).
func (a *Agent) Addrs() (httpAddr, agentCheckAddr string) {
	<-a.bound
	return a.httpAddr, a.checkAddr
}

// pokeMonitor makes the monitor measure now rather than at the end of the interval.
func (a *Agent) pokeMonitor() {
	select {
	case a.poke <- struct{}{}:
	default:
	}
}

// shutdown ends the run's warm and snapshot (the warm kills its statements and restores
// what it changed) and closes the connection.
func (a *Agent) shutdown() {
	a.endRun()
	a.closeConn()
}

func (a *Agent) closeConn() {
	if a.conn == nil {
		return
	}
	a.pingMu.Lock()
	a.pingConn = nil
	if a.pingHeld != nil {
		a.pingHeld.Close()
		a.pingHeld = nil
	}
	a.pingMu.Unlock()
	if a.held != nil {
		a.held.Close()
		a.held = nil
	}
	a.conn.Close()
	a.conn = nil
}

func (a *Agent) endRun() {
	r := a.run
	if r == nil {
		return
	}
	r.cancel()
	r.wg.Wait()
	a.run = nil
}

// step is one measure: connect if need be, read the page counters, follow the server's run,
// measure the target, and move the state.
func (a *Agent) step(ctx context.Context) error {
	if a.conn == nil {
		if err := a.reachable(ctx); err != nil {
			a.lost(err)
			return nil
		}
		conn, err := connection.Open(ctx, a.o.Conn)
		if ctx.Err() != nil {
			return nil //nolint:nilerr // stopping
		}
		if err != nil {
			// The server answered and refused (credentials, privileges, TLS): a configuration
			// error, reported and fatal before the agent ever got in; later (a password
			// changed under a running agent) the server counts as down until it lets it in.
			if exitcode.Of(err) == exitcode.Usage && !a.everUp {
				return err
			}
			a.lost(err)
			return nil
		}
		a.conn = conn
		if a.held, err = conn.DB.Conn(ctx); err != nil {
			a.lost(err)
			return nil
		}
		pingHeld, err := conn.DB.Conn(ctx)
		if err != nil {
			a.lost(err)
			return nil
		}
		a.pingMu.Lock()
		a.pingConn, a.pingHeld, a.pingDone, a.pingErr = conn, pingHeld, time.Time{}, nil
		a.pingMu.Unlock()
	} else {
		// fresh is taken before held's ping: held still open after it proves fresh is of
		// the same run.
		fresh := a.freshPingConn(ctx)
		if err := a.held.PingContext(ctx); err != nil {
			if fresh != nil {
				fresh.Close()
			}
			if ctx.Err() != nil {
				return nil //nolint:nilerr // stopping
			}
			return a.connectionBroke(ctx, err)
		}
		a.replacePingHeld(fresh)
	}
	now := time.Now()
	counters, err := bufferpool.ReadPageCounters(ctx, a.conn)
	if ctx.Err() != nil {
		return nil //nolint:nilerr // stopping
	}
	if err != nil {
		if sqlerr.ConnectionLost(err) {
			a.lost(err)
		} else {
			a.setCoverageError(err)
		}
		return nil
	}
	start := now.Add(-time.Duration(counters.Uptime) * time.Second)
	if a.run != nil && a.run.restarted(start, counters.Uptime) {
		// The server restarted between two measures: another run, maybe another version
		// (the connection detected the flavor when it opened).
		a.log.Infof("agent: the server restarted (up %d s)", counters.Uptime)
		a.endRun()
		a.closeConn()
		return a.step(ctx)
	}
	if a.run == nil {
		a.mu.Lock()
		a.runStart, a.runUptime = start, counters.Uptime
		a.mu.Unlock()
		a.newRun(ctx, start)
	}
	a.run.uptime = counters.Uptime
	a.mu.Lock()
	a.runStart, a.runUptime = a.run.start, counters.Uptime
	a.mu.Unlock()
	a.measure(ctx, now, counters)
	return nil
}

// connectionBroke starts over after the monitor's own connection broke.
func (a *Agent) connectionBroke(ctx context.Context, err error) error {
	// The connection broke: the server restarted (or the network did). Start over with
	// a new connection (the flavor is detected again: an upgrade is a restart).
	if a.run != nil {
		a.log.Infof("agent: the connection to the server broke (%v): measuring a new run", err)
	}
	// Down until the new connection's first measure: reconnecting to a server that is
	// going away can take up to the connect timeout, and the last run's "ready" must not
	// be answered meanwhile.
	a.markDown(err)
	a.endRun()
	a.closeConn()
	return a.step(ctx)
}

// freshPingConn is a new connection for the answers' ping when theirs broke (pingBroken),
// nil otherwise.
func (a *Agent) freshPingConn(ctx context.Context) *sql.Conn {
	a.pingMu.Lock()
	broken := a.pingBroken && a.pingConn != nil
	a.pingMu.Unlock()
	if !broken {
		return nil
	}
	c, err := a.conn.DB.Conn(ctx)
	if err != nil {
		return nil // the held ping that follows says what is wrong
	}
	return c
}

// replacePingHeld gives the answers' ping a connection of the run the monitor measures.
func (a *Agent) replacePingHeld(c *sql.Conn) {
	if c == nil {
		return
	}
	a.pingMu.Lock()
	defer a.pingMu.Unlock()
	if a.pingHeld != nil {
		a.pingHeld.Close()
	}
	a.pingHeld, a.pingBroken = c, false
	// The next answer pings again rather than take the failure that made it stale.
	a.pingDone, a.pingErr = time.Time{}, nil
}

// reachable tells a server that is not there yet (its socket file not created, its host
// name not in DNS yet: a pod starting) from a configuration error, which connection.Open
// reports alike.
func (a *Agent) reachable(ctx context.Context) error {
	o := a.o.Conn
	if o.UsesSocket() {
		path, err := o.SocketPath()
		if err != nil {
			return err
		}
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("socket %s does not exist (yet)", path)
		}
		return nil
	}
	if _, err := netip.ParseAddr(o.Host); err == nil {
		return nil
	}
	lctx, cancel := context.WithTimeout(ctx, max(o.ConnectTimeout, time.Second))
	defer cancel()
	if _, err := net.DefaultResolver.LookupHost(lctx, o.Host); err != nil {
		return fmt.Errorf("host %s does not resolve (yet): %w", o.Host, err)
	}
	return nil
}

// restarted says whether the server restarted since the run's last measure, which the
// connection pool can hide (it reconnects on its own): its start (now - Uptime, which moves
// by up to a second between reads) moved, or, for a server restarted within seconds of
// its previous start, Uptime went back.
func (r *serverRun) restarted(start time.Time, uptime int64) bool {
	d := r.start.Sub(start)
	return d <= -2*time.Second || d >= 2*time.Second || uptime < r.uptime
}

// lost records that the server does not answer: starting (never answered) or down.
func (a *Agent) lost(err error) {
	if a.run != nil {
		a.log.Warnf("agent: the server stopped answering: %v", err)
	}
	a.endRun()
	a.closeConn()
	a.markDown(err)
}

// markDown records that the server does not answer (Starting before it ever did).
func (a *Agent) markDown(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	state := Starting
	if a.everUp {
		state = Down
	}
	a.setStateLocked(state, "the server does not answer: "+oneLine(err.Error()))
	a.downAt = time.Now()
	a.st.Server.Up = false
	a.st.Server.Error = oneLine(err.Error())
	a.st.Weight = 0
	a.st.Coverage.Known = false
	if a.st.Warm.State == WarmRunning {
		a.st.Warm.State = WarmInterrupted
	}
}

// downSinceLocked says a failed ping marked the server down after t.
func (a *Agent) downSinceLocked(t time.Time) bool {
	return a.st.State == Down && a.downAt.After(t)
}

func (a *Agent) setStateLocked(s State, note string) {
	if a.st.State != s {
		a.st.State, a.st.Since = s, time.Now()
	}
	a.st.Ready = s == Ready
	a.st.ReadyNote = note
}

func (a *Agent) setCoverageError(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	msg := oneLine(err.Error())
	if a.st.Coverage.Error != msg {
		a.log.Warnf("agent: cannot measure the coverage: %s", msg)
	}
	a.st.Coverage.Error = msg
	if a.st.State == Warming {
		a.st.ReadyNote = "cannot measure the coverage: " + msg
	}
}

// newRun starts following a server run: the target as it is now (the latest manifest).
func (a *Agent) newRun(ctx context.Context, start time.Time) {
	r := &serverRun{conn: a.conn, start: start, tracker: newTracker()}
	r.ctx, r.cancel = context.WithCancel(ctx)
	a.run = r
	a.everUp = true
	srv := a.conn.Server
	a.log.Infof("agent: the server answers: %s, pool %s, started %s", srv.String(), units.FormatBytes(srv.PoolSize), start.Format(time.RFC3339))
	a.mu.Lock()
	st := start.UTC()
	a.st.Server = ServerStatus{Target: a.o.Conn.Target(), Up: true, Version: srv.String(), StartedAt: &st, PoolBytes: srv.PoolSize, Runs: a.st.Server.Runs + 1}
	a.st.Coverage = CoverageStatus{Target: a.st.Coverage.Target, Counts: a.st.Coverage.Counts}
	a.st.ReadyAfter = 0
	if a.o.Warm != nil {
		a.st.Warm = WarmStatus{State: WarmPending}
	}
	a.setStateLocked(Warming, "measuring the coverage")
	// The floor until a measure says more: the weight the server went down with is 0, and
	// a fleet restarted at once (its manifest not readable yet, an object store down)
	// would take no traffic anywhere.
	a.st.Weight = weightFor(Warming, 0, false, a.o.MinWeight)
	a.mu.Unlock()
	a.loadTarget(ctx)
	if r.target == nil {
		r.targetRetry = time.Now().Add(max(time.Second, 10*a.o.Interval))
	}
}

func (a *Agent) loadTarget(ctx context.Context) {
	r := a.run
	t, err := loadTarget(ctx, r.conn, &a.o)
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		a.setCoverageError(err)
		a.mu.Lock()
		a.st.ReadyNote = "cannot read the target: " + oneLine(err.Error())
		a.mu.Unlock()
		return
	}
	r.target = t
	a.mu.Lock()
	a.st.Coverage.Target = t.describe(&a.o)
	a.st.Coverage.Error = ""
	a.mu.Unlock()
}

// measure updates the coverage and the state for this server run; now is when the
// counters were read (the measure's start).
func (a *Agent) measure(ctx context.Context, now time.Time, counters bufferpool.PageCounters) {
	r := a.run
	a.mu.Lock()
	if !a.downSinceLocked(now) {
		a.st.Server.Up, a.st.Server.Error = true, ""
	}
	a.mu.Unlock()
	if r.target == nil {
		if now.Before(r.targetRetry) {
			return
		}
		a.loadTarget(ctx)
		if r.target == nil {
			r.targetRetry = now.Add(max(time.Second, 10*a.o.Interval))
			return
		}
	}
	if r.target.none != "" {
		a.becomeReady(r, now, r.target.none)
		a.skipWarm(r, r.target.none)
		a.whenReady(r)
		return
	}
	lruTable := r.nativeLoad.Load() || dumpfile.Busy(ctx, r.conn)
	est, err := r.tracker.measure(now, counters, a.o.ReadyCoverage, r.ready, func() (int64, int64, error) {
		return r.target.count(ctx, r.conn, lruTable)
	})
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		if sqlerr.ConnectionLost(err) {
			a.lost(err)
			return
		}
		a.setCoverageError(err)
		return
	}
	a.mu.Lock()
	c := &a.st.Coverage
	c.Known, c.Coverage, c.CoverageHigh, c.Covered, c.Total, c.Counted = est.Total > 0, est.Low, est.High, est.Covered, est.Total, est.Counted
	c.CountSeconds, c.Error, c.MeasureSeconds = est.CountSeconds, "", time.Since(now).Seconds()
	at, counted := now.UTC(), est.CountedAt.UTC()
	c.MeasuredAt, c.CountedAt = &at, &counted
	if est.Counted {
		c.Counts++
	}
	warmingFor := now.Sub(a.st.Since)
	state := a.st.State
	a.mu.Unlock()

	switch {
	case r.ready:
		a.becomeReady(r, now, "")
	case est.Total == 0:
		a.becomeReady(r, now, "the target has no pages on this server")
	case est.Low >= a.o.ReadyCoverage:
		a.becomeReady(r, now, fmt.Sprintf("coverage %.1f%% reached %.1f%%", 100*est.Low, 100*a.o.ReadyCoverage))
	case a.o.ReadyTimeout > 0 && state == Warming && warmingFor >= a.o.ReadyTimeout:
		a.becomeReady(r, now, fmt.Sprintf("--ready-timeout %s passed at coverage %.1f%% (below %.1f%%)", a.o.ReadyTimeout, 100*est.Low, 100*a.o.ReadyCoverage))
	default:
		a.mu.Lock()
		if a.downSinceLocked(now) {
			a.mu.Unlock()
			return
		}
		a.setStateLocked(Warming, fmt.Sprintf("coverage %.1f%% of %.1f%%", 100*est.Low, 100*a.o.ReadyCoverage))
		a.st.Weight = weightFor(Warming, est.Low, true, a.o.MinWeight)
		a.mu.Unlock()
		if now.Sub(r.lastLog) >= 30*time.Second {
			r.lastLog = now
			a.log.Infof("agent: warming: coverage %.1f%% (%d of %d pages at the last count), ready at %.1f%%", 100*est.Low, est.Covered, est.Total, 100*a.o.ReadyCoverage)
		}
		if !r.warmed && a.o.Warm != nil {
			a.startWarm(r)
		}
	}
	if r.ready && !r.warmed {
		a.skipWarm(r, "the server was ready at the first measure")
	}
	a.whenReady(r)
}

// whenReady starts what runs once the server is ready: the snapshots (a capture of a pool
// still warming would replace a good hot set with a partial one).
func (a *Agent) whenReady(r *serverRun) {
	if r.ready && a.o.SnapshotTo != "" && !r.snapshotting.Load() {
		a.startSnapshot(r)
	}
}

// becomeReady latches the run ready (why says what made it so, the first time) and puts
// the state back to ready after a ping that failed for a moment, unless the ping failed
// after the measure began (measuredAt): then the measure saw the server before it went.
func (a *Agent) becomeReady(r *serverRun, measuredAt time.Time, why string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.downSinceLocked(measuredAt) {
		return
	}
	if !r.ready {
		r.ready, r.readyNote = true, why
		a.st.ReadyAfter = time.Since(r.start).Seconds()
		a.log.Infof("agent: ready: %s, %.1f s after the server started", why, a.st.ReadyAfter)
	}
	a.setStateLocked(Ready, r.readyNote)
	a.st.Weight = weightFor(Ready, 0, true, a.o.MinWeight)
}

func (a *Agent) skipWarm(r *serverRun, why string) {
	if r.warmed || a.o.Warm == nil {
		return
	}
	r.warmed = true
	a.mu.Lock()
	a.st.Warm = WarmStatus{State: WarmSkipped, Note: why}
	a.mu.Unlock()
}

// startWarm warms the target in the background; the agent keeps measuring and serving.
func (a *Agent) startWarm(r *serverRun) {
	r.warmed = true
	req := *a.o.Warm
	if r.target.manifest != nil {
		req.Manifest, req.Filter = r.target.manifest, catalog.Filter{}
	} else {
		req.Filter = a.o.Filter
	}
	req.Run.Progress = progress.Config{Out: a.log.Writer(), Interval: 10 * time.Second, Observe: func(done, total int64) {
		a.mu.Lock()
		defer a.mu.Unlock()
		w := &a.st.Warm
		w.DonePages, w.TotalPages = done, total
		if total > 0 {
			w.Progress = min(float64(done)/float64(total), 1)
		}
	}}
	t0 := time.Now()
	a.mu.Lock()
	at := t0.UTC()
	a.st.Warm = WarmStatus{State: WarmRunning, StartedAt: &at}
	a.mu.Unlock()
	a.log.Infof("agent: warming %s", a.st.Coverage.Target)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		out, err := warm.Execute(r.ctx, r.conn, req, func(method, why string) {
			if method == warm.MethodNative {
				r.nativeLoad.Store(true)
			}
			a.mu.Lock()
			a.st.Warm.Method, a.st.Warm.Why = method, why
			a.mu.Unlock()
			a.log.Infof("agent: warm method %s (%s)", method, why)
		})
		r.nativeLoad.Store(false)
		a.finishWarm(r, t0, out, err)
		a.pokeMonitor()
	}()
}

func (a *Agent) finishWarm(r *serverRun, t0 time.Time, out *warm.Outcome, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	w := &a.st.Warm
	end := time.Now().UTC()
	w.FinishedAt, w.Seconds = &end, time.Since(t0).Seconds()
	if out != nil && out.Result != nil {
		w.Loaded = out.Result.PagesLoaded
		if w.TotalPages > 0 && w.DonePages >= w.TotalPages {
			w.Progress = 1
		}
	}
	switch {
	case err == nil:
		w.State = WarmDone
		if r.target != nil {
			r.target.warmed.Store(true)
		}
		a.log.Infof("agent: warm done in %.1f s: %d pages now resident that were not", w.Seconds, w.Loaded)
	case r.ctx.Err() != nil || sqlerr.ConnectionLost(err):
		w.State = WarmInterrupted
		w.Error = oneLine(err.Error())
		a.log.Infof("agent: warm interrupted after %.1f s: %s", w.Seconds, w.Error)
	default:
		// The agent keeps serving: readiness follows the coverage, which traffic also raises.
		w.State = WarmFailed
		w.Error = oneLine(err.Error())
		a.log.Warnf("agent: the warm failed (the agent keeps measuring and serving): %s", w.Error)
	}
}

// startSnapshot keeps the manifest fresh while the server is ready (snapshot --every).
func (a *Agent) startSnapshot(r *serverRun) {
	r.snapshotting.Store(true)
	so := a.o.Snapshot
	so.Path, so.Log, so.Store = a.o.SnapshotTo, a.log, a.o.Store
	metricsFailed := so.OnFailure
	so.OnFailure = func(err error, inARow int) {
		// /status says why the manifest is not being replaced, as the log does.
		a.mu.Lock()
		a.st.Snapshot.Failures++
		a.st.Snapshot.Error = fmt.Sprintf("capture failed (%d in a row), previous manifest kept: %s", inARow, oneLine(err.Error()))
		a.mu.Unlock()
		if metricsFailed != nil {
			metricsFailed(err, inARow)
		}
	}
	a.mu.Lock()
	a.st.Snapshot.Running, a.st.Snapshot.Error = true, ""
	a.mu.Unlock()
	a.log.Infof("agent: capturing the hot set every %s to %s", a.o.SnapshotEvery, a.o.SnapshotTo)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		err := snapshot.Every(r.ctx, r.conn, so, a.o.SnapshotEvery, func(res *snapshot.Result) {
			a.mu.Lock()
			s := a.st.Snapshot
			s.Captures++
			at := res.CapturedAt.UTC()
			s.LastAt, s.LastPages, s.Error = &at, res.Entries, ""
			a.mu.Unlock()
			if a.o.OnSnapshot != nil {
				a.o.OnSnapshot(res)
			}
		}, a.log)
		a.mu.Lock()
		a.st.Snapshot.Running = false
		if err != nil {
			a.st.Snapshot.Error = oneLine(err.Error())
		}
		a.mu.Unlock()
		r.snapshotting.Store(false)
	}()
}

// Status is a copy of what the agent knows now.
func (a *Agent) Status() Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.st
	if s.Snapshot != nil {
		c := *s.Snapshot
		s.Snapshot = &c
	}
	if s.AgentCheck != nil {
		c := *s.AgentCheck
		c.Recent = append(make([]Answer, 0, len(c.Recent)), c.Recent...)
		s.AgentCheck = &c
	}
	s.Now = time.Now().UTC()
	return s
}

// alive pings the server for an answer (a proxy's check, a probe): a server killed since the
// last measure is reported at once, not an interval later. One ping at a time: an answer
// that waited for a ping takes its result; one that comes after takes a success up to
// 100 ms old, never an older one nor a failure (a server back from a stall is seen at once).
// A failed ping marks the server down until the monitor sees it back.
func (a *Agent) alive(ctx context.Context) error {
	arrived := time.Now()
	a.pingMu.Lock()
	defer a.pingMu.Unlock()
	if !a.pingDone.IsZero() && (a.pingDone.After(arrived) || (a.pingErr == nil && arrived.Sub(a.pingDone) < 100*time.Millisecond)) {
		return a.pingErr
	}
	var err error
	if a.pingConn == nil {
		// Between a restart and the monitor's next measure: have it reconnect now rather
		// than at the end of its interval, so the next check sees the server back.
		err = errors.New("not connected to the server yet (reconnecting)")
		a.pokeMonitor()
	} else {
		err = a.pingRun(ctx)
	}
	a.pingDone, a.pingErr = time.Now(), err
	if err != nil && a.pingConn != nil {
		a.mu.Lock()
		if a.st.State == Warming || a.st.State == Ready {
			note := "the server does not answer a ping: " + oneLine(err.Error())
			if errors.Is(err, errRestarted) {
				// Down, as the monitor says of a broken connection, until the new run's
				// first measure: the last run's answer must not be given for this one.
				note = oneLine(err.Error())
			}
			a.setStateLocked(Down, note)
			a.downAt = time.Now()
			a.st.Server.Up, a.st.Server.Error, a.st.Weight = false, oneLine(err.Error()), 0
			// As markDown: the last measure is of a server that no longer answers.
			a.st.Coverage.Known = false
		}
		a.mu.Unlock()
		a.pokeMonitor()
	}
	return err
}

// errRestarted: the server answers, but it is another run than the one measured (its
// coverage and readiness are not this run's).
var errRestarted = errors.New("the server restarted")

// youngRunSeconds: a run last measured younger than this cannot be told from a restart
// as quick by its start, which moves by up to a second between reads (tests make every
// run young).
var youngRunSeconds int64 = 3

// pingRun pings the server run the monitor measures, within a second: nil when it
// answers, errRestarted when another run answers (a restart between two measures: the
// monitor measures it once poked), the failure when nothing answers. Under pingMu.
func (a *Agent) pingRun(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	answered := func(err error) error {
		if err != nil && !sqlerr.ConnectionLost(err) && !errors.Is(err, context.DeadlineExceeded) {
			return nil // a server that answers with an error is there
		}
		return err
	}
	err := a.pingHeld.PingContext(pctx)
	if err == nil || !sqlerr.ConnectionLost(err) {
		return answered(err)
	}
	// The run's connection broke: the server restarted, or this connection alone was
	// killed (wait_timeout, KILL, pt-kill). Whoever answers through the pool says which.
	a.pingBroken = true
	if err := answered(a.pingConn.DB.PingContext(pctx)); err != nil {
		return err
	}
	st, err := a.pingConn.GlobalStatus(pctx, "Uptime")
	if err != nil {
		if answered(err) != nil {
			return err
		}
		return fmt.Errorf("%w? its connection broke, and its uptime cannot be read: %w", errRestarted, err)
	}
	uptime := st["uptime"]
	a.mu.Lock()
	measured := &serverRun{start: a.runStart, uptime: a.runUptime}
	a.mu.Unlock()
	// A run last measured at least 3 s into its life started before any new one could
	// within the start's second of jitter, so the start alone tells them apart; a younger
	// one cannot be told from a restart as quick, and is taken for one (the monitor,
	// poked, measures at once): a cold server must not inherit a warm one's answer.
	if measured.uptime < youngRunSeconds || measured.restarted(time.Now().Add(-time.Duration(uptime)*time.Second), uptime) {
		return fmt.Errorf("%w (up %d s): measuring the new run", errRestarted, uptime)
	}
	held, err := a.pingConn.DB.Conn(pctx)
	if err != nil {
		return answered(err)
	}
	a.pingHeld.Close()
	a.pingHeld, a.pingBroken = held, false
	return nil
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.NewReplacer("\r", " ", "\n", " | ").Replace(s)
}

// listen opens a TCP listener.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		// The system's reason (address in use, not an address of this host), without the
		// *net.OpError around it: that one means a lost server connection to the CLI.
		var se *os.SyscallError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("listen on %s: %w", addr, se.Err)
		}
		return nil, fmt.Errorf("listen on %s: %s", addr, strings.TrimPrefix(err.Error(), "listen tcp "+addr+": "))
	}
	return ln, nil
}

// statusCode is /ready's status for a state.
func (a *Agent) statusCode(s State) int {
	switch s {
	case Ready:
		return http.StatusOK
	case Warming:
		return a.o.WarmingStatus
	}
	return http.StatusServiceUnavailable
}

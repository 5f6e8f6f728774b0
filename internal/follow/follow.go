// Package follow keeps a standby's buffer pool close to a primary's hot set, continuously:
// every interval it captures the source's hot set (as snapshot does), resolves it on the
// target by name, loads what the target lacks within a budget and the pacing limits (as
// warm --from does), and reports the lag: the share of the source's hot set resident on
// the target, and the age of that hot set. A lost connection on either side is logged and
// retried with backoff; the loop ends when its context does, after Options.Rounds rounds,
// or at once when, before any round has succeeded, a round meets an error that no retry
// can fix (see Run). Between rounds it watches the source's disk reads: a workload that
// shifts makes the source read its new hot set, and a round then starts before the
// interval is up.
package follow

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/pacing"
	"github.com/innowarm/innowarm/internal/progress"
	"github.com/innowarm/innowarm/internal/snapshot"
	"github.com/innowarm/innowarm/internal/sqlerr"
	"github.com/innowarm/innowarm/internal/warm"
)

// Options shape a follow.
type Options struct {
	Source, Target connection.Options
	// Interval is the time from one round's capture of the source to the next: a round
	// whose load takes longer starts the next at once.
	Interval time.Duration
	Filter   catalog.Filter
	// Budget caps the pages one round may add to the target's pool (warm.ParseBudget);
	// empty: up to the pool less the page cleaner's free-page target.
	Budget warm.Budget
	Method string // warm method on the target: auto, native or scan
	// Pacing is for a round whose target serves traffic when PacingChosen (the flags were
	// given) and for every round on an idle target; a target that serves traffic is loaded
	// under pacing.UnderTraffic (--nice) unless the flags chose.
	Pacing       pacing.Config
	PacingChosen bool
	PageList     string // how the source's page list is read (snapshot.Options.PageList)
	ToolVersion  string
	// NoChurnRounds: rounds only every Interval. By default a round also starts early once
	// the source has read ChurnPages pages from disk since the last capture (a sixteenth of
	// its pool when 0), at most once every max(Interval/5, 1 s) after that capture.
	NoChurnRounds bool
	ChurnPages    int64
	// Rounds stops after this many rounds (0: until the context ends); Run then returns
	// the last round's error when it failed.
	Rounds int
	// OnSwitch, when set, is called as a round's load stops for traffic (the status so far:
	// TrafficArrived and the rest), before the rest of the round loads: a round ended by
	// its context is never reported.
	OnSwitch func(Status)
	Log      *logx.Logger
	// LoadProgress is where each round's load logs (zero: standard error, as warm does).
	LoadProgress progress.Config
}

// Validate checks the options' values.
func (o Options) Validate() error {
	if o.Interval < time.Second {
		return fmt.Errorf("interval %s: at least 1s", o.Interval)
	}
	if o.ChurnPages < 0 {
		return fmt.Errorf("churn pages %d: 0 or more", o.ChurnPages)
	}
	switch o.Method {
	case "", warm.MethodAuto, warm.MethodNative, warm.MethodScan:
	default:
		return fmt.Errorf("method %q: want auto, native or scan", o.Method)
	}
	return snapshot.Options{PageList: o.PageList}.Validate()
}

// Status is one round's report.
type Status struct {
	Round int       `json:"round"`
	At    time.Time `json:"at"`
	OK    bool      `json:"ok"`
	Error string    `json:"error,omitempty"`
	// Side is "source" or "target" when a round failed on one of them, "local" when on this
	// machine (the hot set's file in TMPDIR).
	Side string `json:"side,omitempty"`
	// HotSetPages is the source's hot set as resolved on the target; Dropped the entries
	// the target lacks (tables not there, pages past the end of a file).
	HotSetPages int64 `json:"hot_set_pages"`
	Dropped     int64 `json:"dropped_pages"`
	// ServerPages is the target's pool pages of its own tablespaces (system, undo,
	// temporary, dictionary) when the hot set was cut to fit beside them; 0 when the hot
	// set fit without counting them. CutPages is the source's hot pages the target's pool
	// cannot hold beside them, the coldest: left out of HotSetPages.
	ServerPages int64 `json:"server_pages,omitempty"`
	CutPages    int64 `json:"cut_pages,omitempty"`
	// CoverageBefore and Coverage are the share of the hot set's pages resident on the
	// target before and after the round's load; Lag is 1 - Coverage. They are always a
	// share of pages. Where the target is no page-for-page copy of the source
	// (warm.IndexPath), the hot set's page numbers name other rows there: its pages are then
	// those of the target's own B-trees that hold the hot key ranges, where innowarm can read
	// those trees (the tree path, on the database host). Pages no number names on the target
	// (indexes read by range scans whose trees innowarm cannot read, off-page LOB pages of a
	// logical copy) cannot be told resident: they are left out of the figure and counted in
	// UncountedPages (CoverageOf "pages by number"); when more than a tenth of the hot set
	// cannot be counted, Coverage and Lag are NaN (null in JSON, CoverageOf "unknown") and
	// RangeStatementsRun says how far the round's range statements got. CoverageBefore is
	// null when unknown: no page list said what was resident before the load.
	CoverageBefore *float64 `json:"coverage_before"`
	Coverage       float64  `json:"coverage"`
	Lag            float64  `json:"lag"`
	// KeyRanges is how many of the hot set's pages were read by key range (the sql path);
	// Paths counts the indexes by the path they took.
	KeyRanges int64          `json:"key_ranges,omitempty"`
	Paths     map[string]int `json:"paths,omitempty"`
	// CoverageOf says what Coverage is the share of: CoverageOfHotSet, CoverageOfCounted
	// (UncountedPages are not in it) or CoverageUnknown (more than a tenth could not be).
	CoverageOf string `json:"coverage_of,omitempty"`
	// UncountedPages is how many of the hot set's pages no page number names on the target:
	// not in Coverage, neither resident nor not.
	UncountedPages int64 `json:"uncounted_pages,omitempty"`
	// UncheckedPages is how many of the counted pages go by their page number alone: their
	// indexes have no key ranges in the hot set (snapshot could not read the source's
	// files), and no index of the round showed the target to be a page-for-page copy of the
	// source. On a logical copy those numbers name other rows: the coverage holds only on a
	// page-for-page copy (a physical clone).
	UncheckedPages int64 `json:"unchecked_pages,omitempty"`
	// RangeStatements and RangeStatementsRun are the round's range statements (the sql
	// path), and how many of them ran: a count of statements, not of pages.
	RangeStatements    int64 `json:"range_statements,omitempty"`
	RangeStatementsRun int64 `json:"range_statements_run,omitempty"`
	// AgeSeconds is how old the hot set was when the round ended.
	AgeSeconds     float64 `json:"hot_set_age_seconds"`
	Requested      int64   `json:"requested_pages"`
	Loaded         int64   `json:"loaded_pages"`
	LeftOut        int64   `json:"left_out_pages"` // over the budget
	Method         string  `json:"method,omitempty"`
	PageList       string  `json:"page_list,omitempty"`
	CaptureSeconds float64 `json:"capture_seconds"`
	LoadSeconds    float64 `json:"load_seconds"`
	// TargetTraffic is the client statements per second the target ran as the load began;
	// Pacing how the load was paced ("" unpaced).
	TargetTraffic float64 `json:"target_statements_per_s"`
	Pacing        string  `json:"pacing,omitempty"`
	// TrafficArrived is the client statements per second the target began to serve during
	// a load planned for an idle target, TrafficArrivedAfter seconds into it: that load
	// stopped, and the rest of the round's pages went hottest first under the pacing for
	// traffic. LoadedBeforeTraffic is how many more of the hot set's pages were resident
	// then than when the round began.
	TrafficArrived      float64 `json:"traffic_arrived_statements_per_s,omitempty"`
	TrafficArrivedAfter float64 `json:"traffic_arrived_after_s,omitempty"`
	LoadedBeforeTraffic int64   `json:"loaded_before_traffic_pages,omitempty"`
	// SkippedResident: pages of the load's later chunks left out because they were
	// resident when their turn came (a paced load on a target whose traffic read them).
	SkippedResident int64 `json:"skipped_resident_pages,omitempty"`
	// Early: the round started before the interval was up, because the source had read
	// EarlyReads pages from disk since the previous capture.
	Early      bool  `json:"early,omitempty"`
	EarlyReads int64 `json:"early_after_reads,omitempty"`
	// Interrupted: follow was stopped (Ctrl-C, SIGTERM) before this round ended. Like a
	// failed round it carries the figures of LastOKRound, the last round that succeeded.
	Interrupted bool `json:"interrupted,omitempty"`
	LastOKRound int  `json:"last_ok_round,omitempty"`

	// the source's counters just before the capture, for the churn check
	sourceReads, sourcePoolPages int64
	// err is why the round failed, naming the side; exitcode.Usage when no retry can fix
	// it (a wrong password, a missing privilege, an unknown database, the same server on
	// both sides).
	err error
}

// What Status.Coverage is the share of.
const (
	CoverageOfHotSet  = "hot set"         // every page of the hot set
	CoverageOfCounted = "pages by number" // the pages a number names on the target: Status.UncountedPages are not in it
	CoverageUnknown   = "unknown"         // over a tenth of the hot set's pages cannot be counted on the target
)

// MarshalJSON writes an unknown coverage and lag (NaN) as null, which JSON has and NaN not.
func (s Status) MarshalJSON() ([]byte, error) {
	type plain Status
	out := struct {
		plain
		Coverage *float64 `json:"coverage"`
		Lag      *float64 `json:"lag"`
	}{plain: plain(s)}
	if !math.IsNaN(s.Coverage) {
		out.Coverage = &s.Coverage
	}
	if !math.IsNaN(s.Lag) {
		out.Lag = &s.Lag
	}
	return json.Marshal(out)
}

// Metrics are follow's Prometheus metrics; NewMetrics registers them.
type Metrics struct {
	coverage, coverageBefore, hotSet, missing, lastRound prometheus.Gauge
	uncounted, unchecked, statementsRun, cut, server     prometheus.Gauge
	loaded                                               prometheus.Counter
	rounds                                               *prometheus.CounterVec
	lastCapture                                          time.Time
}

// NewMetrics registers follow's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		coverage: prometheus.NewGauge(prometheus.GaugeOpts{Name: "innowarm_follow_coverage_ratio",
			Help: "Share of the source's hot set pages resident on the target after the last successful round (1 - lag); pages no page number names on the target (innowarm_follow_hot_set_uncounted_pages) are not in it, and it is NaN when more than a tenth of the hot set cannot be counted."}),
		coverageBefore: prometheus.NewGauge(prometheus.GaugeOpts{Name: "innowarm_follow_coverage_before_ratio",
			Help: "Share of the source's hot set pages resident on the target when the last successful round began, as innowarm_follow_coverage_ratio (NaN when unknown)."}),
		uncounted: prometheus.NewGauge(prometheus.GaugeOpts{Name: "innowarm_follow_hot_set_uncounted_pages",
			Help: "Pages of the source's hot set that no page number names on the target (a logical copy's indexes read by range scans, whose trees innowarm cannot read): not in the coverage."}),
		unchecked: prometheus.NewGauge(prometheus.GaugeOpts{Name: "innowarm_follow_hot_set_unchecked_pages",
			Help: "Pages in the coverage counted by page number alone, which name the same rows only on a page-for-page copy of the source: the hot set has no key ranges to check them (snapshot could not read the source's files)."}),
		statementsRun: prometheus.NewGauge(prometheus.GaugeOpts{Name: "innowarm_follow_range_statements_run_ratio",
			Help: "Share of the last successful round's range statements (key ranges read by range scans) that ran: statements, not pages (NaN when the round ran none)."}),
		hotSet: prometheus.NewGauge(prometheus.GaugeOpts{Name: "innowarm_follow_hot_set_pages",
			Help: "Pages of the source's hot set that exist on the target."}),
		missing: prometheus.NewGauge(prometheus.GaugeOpts{Name: "innowarm_follow_hot_set_missing_pages",
			Help: "Pages of the source's hot set the target lacks (tables it does not have): counted in the coverage as not resident."}),
		cut: prometheus.NewGauge(prometheus.GaugeOpts{Name: "innowarm_follow_hot_set_cut_pages",
			Help: "Pages of the source's hot set the target's pool cannot hold (the pool less its other uses, the page cleaner's free target and the server's own pages): the coldest, left out of the hot set and the coverage."}),
		server: prometheus.NewGauge(prometheus.GaugeOpts{Name: "innowarm_follow_target_server_pages",
			Help: "Pages of the target's own tablespaces (system, undo, temporary, dictionary) in its pool, where the last round counted them to fit the hot set beside them; 0 where the hot set fitted without."}),
		lastRound: prometheus.NewGauge(prometheus.GaugeOpts{Name: "innowarm_follow_last_success_timestamp_seconds",
			Help: "Unix time of the last successful round."}),
		loaded: prometheus.NewCounter(prometheus.CounterOpts{Name: "innowarm_follow_loaded_pages_total",
			Help: "Pages loaded into the target's pool."}),
		rounds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "innowarm_follow_rounds_total",
			Help: "Rounds by result: ok, source_error, target_error, local_error (this machine: the hot set's file)."}, []string{"result"}),
	}
	age := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "innowarm_follow_hot_set_age_seconds",
		Help: "Age of the source hot set the coverage refers to (time since its capture)."}, func() float64 {
		if m.lastCapture.IsZero() {
			return 0
		}
		return time.Since(m.lastCapture).Seconds()
	})
	reg.MustRegister(m.coverage, m.coverageBefore, m.hotSet, m.missing, m.uncounted, m.unchecked, m.statementsRun, m.cut, m.server, m.lastRound, m.loaded, m.rounds, age)
	for _, r := range []string{"ok", "source_error", "target_error", "local_error"} {
		m.rounds.WithLabelValues(r)
	}
	return m
}

func (m *Metrics) observe(s Status, captured time.Time) {
	if m == nil {
		return
	}
	if s.Interrupted {
		return
	}
	if !s.OK {
		m.rounds.WithLabelValues(s.Side + "_error").Inc()
		return
	}
	m.rounds.WithLabelValues("ok").Inc()
	m.coverage.Set(s.Coverage)
	if s.CoverageBefore != nil {
		m.coverageBefore.Set(*s.CoverageBefore)
	} else {
		m.coverageBefore.Set(math.NaN())
	}
	m.hotSet.Set(float64(s.HotSetPages))
	m.missing.Set(float64(s.Dropped))
	m.cut.Set(float64(s.CutPages))
	m.server.Set(float64(s.ServerPages))
	m.uncounted.Set(float64(s.UncountedPages))
	m.unchecked.Set(float64(s.UncheckedPages))
	m.statementsRun.Set(math.NaN())
	if s.RangeStatements > 0 {
		m.statementsRun.Set(float64(s.RangeStatementsRun) / float64(s.RangeStatements))
	}
	m.loaded.Add(float64(max(s.Loaded, 0)))
	m.lastRound.Set(float64(s.At.Unix()))
	m.lastCapture = captured
}

// endpoint is one side's connection, reopened after a failure.
type endpoint struct {
	name string
	opts connection.Options
	conn *connection.Conn
	// catalogs keeps this server's catalog between rounds (see catalog.Cache): a round
	// reads it on both servers, and on MariaDB each full read opens every table.
	catalogs catalog.Cache
	// fresh: connected since the last check that the two sides are two servers.
	fresh bool
	// countPages: the last round's hot set had pages no number names here (the target's
	// side only), counted apart (pageCount).
	countPages bool
}

func (e *endpoint) get(ctx context.Context) (*connection.Conn, error) {
	if e.conn != nil {
		return e.conn, nil
	}
	c, err := connection.Open(ctx, e.opts)
	if err != nil {
		if exitcode.Of(err) == exitcode.Usage && mayBeStarting(ctx, e.opts) {
			// A socket or a host name that is not there yet is a server not up yet (a
			// sidecar started before its server, a pod whose DNS name comes with it):
			// retried, and a runtime failure for the last of --rounds.
			err = &exitcode.Error{Code: exitcode.Runtime, Err: err}
		}
		return nil, err
	}
	e.conn, e.fresh = c, true
	return c, nil
}

// mayBeStarting reports whether a connection refused as the user's input (exit 2) may be
// to a server that is not up yet: its socket file does not exist, or its host name does
// not resolve.
func mayBeStarting(ctx context.Context, o connection.Options) bool {
	if o.UsesSocket() {
		_, err := o.SocketPath()
		return err != nil
	}
	if o.Host == "" || net.ParseIP(o.Host) != nil {
		return false
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := net.DefaultResolver.LookupHost(lctx, o.Host)
	var dnsErr *net.DNSError
	return errors.As(err, &dnsErr)
}

// probeLockName names the lock sameServer takes: no other process's.
var probeLockName = func() string {
	return fmt.Sprintf("innowarm.follow.%d.%d", os.Getpid(), time.Now().UnixNano())
}

// sameServer reports whether the two connections reach one server, and its identity (as
// ping prints it). Servers whose UUID, host name, port or data directory differ are two;
// where all are equal (two servers without networking in containers of one host), a named
// lock taken on one and looked for on the other tells; when that fails, they are taken
// for one.
func sameServer(ctx context.Context, a, b *connection.Conn) (bool, string) {
	sa, sb := a.Server, b.Server
	id := sa.Identity()
	if sa.UUID != sb.UUID || sa.Hostname != sb.Hostname || sa.Port != sb.Port || sa.Datadir != sb.Datadir {
		return false, id
	}
	lock, err := a.DB.Conn(ctx)
	if err != nil {
		return true, id
	}
	defer lock.Close()
	name := probeLockName()
	var got sql.NullInt64
	if err := lock.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", name).Scan(&got); err != nil || !got.Valid || got.Int64 != 1 {
		return true, id
	}
	defer func() { _, _ = lock.ExecContext(context.WithoutCancel(ctx), "DO RELEASE_LOCK(?)", name) }()
	var holder sql.NullInt64
	if err := b.DB.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?)", name).Scan(&holder); err != nil {
		return true, id
	}
	return holder.Valid, id
}

// drop forgets a connection that failed, so the next round connects again.
func (e *endpoint) drop() {
	if e.conn != nil {
		e.conn.Close()
		e.conn = nil
	}
}

func (e *endpoint) close() { e.drop() }

// Run follows until ctx ends (it returns nil then) or o.Rounds rounds are done, calling
// report after every round. A failed round is retried with backoff, but:
//   - before any round has succeeded, an error that no retry can fix (exitcode.Usage: a
//     wrong password, a missing privilege, an unknown database, the same server on both
//     sides) ends Run with that error at once, unreported; a socket that does not exist
//     or a host name that does not resolve is a server not up yet, and retried;
//   - with o.Rounds, a last round that failed ends Run with its error: exit 1, or 2 when
//     the error is of the user's setup.
func Run(ctx context.Context, o Options, m *Metrics, report func(Status)) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if o.Log == nil {
		o.Log = logx.Default()
	}
	log := o.Log
	dir, err := os.MkdirTemp("", "innowarm-follow-")
	if err != nil {
		return exitcode.UsageError(fmt.Errorf("follow keeps each round's hot set in a temporary directory, and cannot make one in %s (TMPDIR): %w", os.TempDir(), err))
	}
	defer os.RemoveAll(dir)
	src := &endpoint{name: "source", opts: o.Source}
	tgt := &endpoint{name: "target", opts: o.Target}
	defer src.close()
	defer tgt.close()
	failures := 0
	succeeded := false
	var early int64
	var last Status // the last round that succeeded
	for round := 1; ; round++ {
		s, captured := runRound(ctx, o, src, tgt, filepath.Join(dir, "source.manifest"), log)
		s.Round = round
		s.Early, s.EarlyReads = early > 0, early
		if ctx.Err() != nil {
			// Stopped mid-round (Ctrl-C, SIGTERM): the round in flight is reported as such,
			// with the last round's figures, so that a user who interrupts the first round
			// of a long load sees where the standby stands rather than nothing.
			s = Status{Round: round, At: time.Now(), Interrupted: true, Error: "stopped before the round ended"}
			s.carry(last, succeeded)
			report(s)
			return nil
		}
		if !s.OK && !succeeded && exitcode.Of(s.err) == exitcode.Usage {
			// A wrong password, a missing GRANT, a -D that names nothing: retrying every
			// interval would only hide it. Once a round has succeeded the setup was right,
			// and such an error (a password rotated, a failover) is retried as any other.
			return s.err
		}
		if !s.OK {
			s.carry(last, succeeded)
		} else {
			last = s
		}
		succeeded = succeeded || s.OK
		m.observe(s, captured)
		report(s)
		if !s.OK && errors.Is(s.err, warm.ErrNotRestored) && !sqlerr.ConnectionLost(s.err) {
			// The standby is left with a setting innowarm changed (its user lost the
			// privilege to put it back): rounds that went on, by scans, said ok while it
			// stayed changed. Stop, saying what to run. Not when the server went away: a
			// restarted standby came back with its own setting, and the next round's warm
			// puts back one a lost network left changed (follow stopped, exit 1, when its
			// standby restarted during a load).
			return &exitcode.Error{Code: exitcode.Runtime, Err: fmt.Errorf("round %d: %w", round, s.err)}
		}
		if o.Rounds > 0 && round >= o.Rounds {
			if s.OK {
				return nil
			}
			code := exitcode.Runtime
			if exitcode.Of(s.err) == exitcode.Usage {
				code = exitcode.Usage
			}
			return &exitcode.Error{Code: code, Err: fmt.Errorf("round %d of %d failed: %w", round, o.Rounds, s.err)}
		}
		wait := o.Interval
		if s.OK {
			failures = 0
		} else {
			failures++
			// 1 s, 2 s, 4 s ... up to the interval: a server that comes back is found soon,
			// one that stays away is not hammered.
			wait = min(time.Duration(1<<min(failures-1, 10))*time.Second, o.Interval)
			log.Warnf("follow round %d: %s side: %s; retrying in %s", round, s.Side, s.Error, wait)
		}
		from := time.Now()
		if s.OK && !captured.IsZero() {
			// Rounds are spaced from capture to capture: a round whose load took longer
			// than the interval starts the next at once, or the standby of a source still
			// warming up would fall behind by a wait and a capture more every round.
			from = captured
		}
		if early, err = waitNext(ctx, o, src, s, from, wait); err != nil {
			return nil
		}
	}
}

// carry gives a round that measured nothing (failed, or interrupted) the figures of the
// last round that succeeded, whose age grows, or, before any, a lag of 1. A failed round
// said "coverage 0, lag 0", which a script read as in sync.
func (s *Status) carry(last Status, succeeded bool) {
	s.Coverage, s.Lag = 0, 1
	if !succeeded {
		return
	}
	s.Coverage, s.Lag, s.CoverageOf, s.UncountedPages = last.Coverage, last.Lag, last.CoverageOf, last.UncountedPages
	s.LastOKRound = last.Round
	s.AgeSeconds = time.Since(last.At).Seconds() + last.AgeSeconds
}

// pagesRead counts the pages a server read from disk: on demand, and by read-ahead, which
// brings in most of a scan's pages (MySQL's linear read-ahead) and is counted apart.
func pagesRead(t bufferpool.Totals) int64 { return t.DiskReads + t.ReadAhead }

// waitNext waits for the next round: until wait after from (the last capture), or less
// when the source's disk reads since the last capture reach the churn threshold (0 when
// the round is not early), checked once a second from max(Interval/5, 1 s) after the
// capture. It returns an error only when ctx ends. A failed status read only means
// waiting the whole interval.
func waitNext(ctx context.Context, o Options, src *endpoint, last Status, from time.Time, wait time.Duration) (int64, error) {
	deadline := from.Add(wait)
	threshold := o.ChurnPages
	if threshold <= 0 {
		threshold = last.sourcePoolPages / 16
	}
	watch := !o.NoChurnRounds && last.OK && last.sourceReads > 0 && threshold > 0
	nextCheck := from.Add(max(o.Interval/5, time.Second))
	for {
		now := time.Now()
		if !now.Before(deadline) {
			return 0, nil
		}
		if watch && !now.Before(nextCheck) {
			nextCheck = now.Add(time.Second)
			if c, err := src.get(ctx); err == nil {
				tot, err := bufferpool.ReadTotals(ctx, c)
				if err != nil {
					src.drop()
				} else if read := pagesRead(tot) - last.sourceReads; read >= threshold {
					o.Log.Infof("follow: the source read %d pages from disk since the last capture (threshold %d): next round now", read, threshold)
					return read, nil
				}
			}
			continue
		}
		until := deadline
		if watch && nextCheck.Before(until) {
			until = nextCheck
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Until(until)):
		}
	}
}

func runRound(ctx context.Context, o Options, src, tgt *endpoint, path string, log *logx.Logger) (Status, time.Time) {
	t0 := time.Now()
	s := Status{At: t0}
	fail := func(side *endpoint, err error) (Status, time.Time) {
		// Any failure reconnects: a lost server, a restarted one, a pool of dead
		// connections; opening one is cheap against an interval.
		side.drop()
		s.Side, s.Error, s.At = side.name, err.Error(), time.Now()
		s.err = fmt.Errorf("%s: %w", side.name, err)
		return s, time.Time{}
	}
	sc, err := src.get(ctx)
	if err != nil {
		return fail(src, err)
	}
	tc, err := tgt.get(ctx)
	if err != nil {
		return fail(tgt, err)
	}
	if src.fresh || tgt.fresh {
		// Checked at each new connection: a source reached by a name that moves with a
		// failover may now be the target itself.
		if same, id := sameServer(ctx, sc, tc); same {
			err := exitcode.UsageError(fmt.Errorf("source and target are the same server (%s): follow needs a standby", id))
			s, _ = fail(src, err)
			s.err = err
			return s, time.Time{}
		}
		src.fresh, tgt.fresh = false, false
	}
	if tot, err := bufferpool.ReadTotals(ctx, sc); err == nil {
		s.sourceReads, s.sourcePoolPages = pagesRead(tot), tot.PagesTotal
	}
	capture, err := snapshot.Capture(ctx, sc, snapshot.Options{Path: path, AllowEmpty: true, Filter: o.Filter, ToolVersion: o.ToolVersion, PageList: o.PageList, Log: log, Catalogs: &src.catalogs})
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && strings.HasPrefix(pe.Path, filepath.Dir(path)) {
			// The manifest's own file here (a full or read-only TMPDIR): no server's fault,
			// and it was counted as the source's.
			s.Side, s.Error, s.At = "local", fmt.Sprintf("the hot set's file in %s (TMPDIR): %v", filepath.Dir(path), err), time.Now()
			s.err = fmt.Errorf("this machine: %s", s.Error)
			return s, time.Time{}
		}
		return fail(src, err)
	}
	captured := capture.CapturedAt
	s.PageList, s.CaptureSeconds = capture.PageList, time.Since(t0).Seconds()
	mf, err := manifest.Load(path)
	if err != nil {
		return fail(src, err)
	}
	resolved, err := warm.ResolveCached(ctx, tc, mf, &tgt.catalogs)
	if err != nil {
		return fail(tgt, err)
	}
	s.Dropped, _ = resolved.DroppedByReason()
	if len(resolved.Pages) == 0 && s.Dropped > 0 {
		// Not one page of the hot set exists on the target (a schema it lacks): a round
		// that "succeeds" with nothing to load would hide it. Before any round has
		// succeeded, follow exits 2 on it, as warm --from does.
		return fail(tgt, exitcode.UsageError(fmt.Errorf("it has none of the source's %d hot pages: %s", s.Dropped, warm.Unresolved(mf, resolved))))
	}
	// The hot set is what the target can hold: the source's list, hottest first, cut to the
	// target's pool less its own pages and the page cleaner's free target. A longer list
	// cannot all be resident: each round would load what the last one lacked by evicting,
	// from the tail of an idle target's LRU list, pages an earlier round loaded, hot or not.
	tot, err := bufferpool.ReadTotals(ctx, tc)
	if err != nil {
		return fail(tgt, err)
	}
	hold := warm.PoolHold(tot, 0)
	if int64(len(resolved.Pages)) > hold-tot.PagesData {
		// The server's own pages stay beside the hot set: it reads them for itself (an idle
		// standby's dictionary, undo and temporary pages, touched by this round's own
		// queries and purge), so a hot set that counted their room as the load's was
		// evicted by the page cleaner after the round: a 64 MiB MySQL standby lost 13% of
		// it a second after a round that reported it all resident.
		if s.ServerPages, err = bufferpool.CountResident(ctx, tc, tc.Server.ServerSpace); err != nil {
			return fail(tgt, fmt.Errorf("count the server's own pages: %w", err))
		}
		hold = warm.PoolHold(tot, s.ServerPages)
	}
	whole := int64(len(resolved.Pages))
	resolved = resolved.Hottest(int(hold))
	s.HotSetPages = int64(len(resolved.Pages))
	s.CutPages = whole - s.HotSetPages
	method, _, err := warm.ChooseMethod(ctx, tc, o.Method)
	if err != nil {
		return fail(tgt, err)
	}
	s.Method = method
	budget := o.Budget
	if budget.Bytes == 0 && budget.Percent == 0 {
		budget = roomToLoad(tot, s.ServerPages)
	}
	budget.ServerPages = s.ServerPages
	// The hot set's pages where the last round had to count them apart (a logical copy's
	// key ranges), before the load: the round's coverage before is then of the same pages.
	var pre *pageCount
	var before *float64
	if tgt.countPages {
		if pre, err = countPages(ctx, tc, resolved); err != nil {
			return fail(tgt, err)
		}
		c, ok, err := pre.coverage(ctx, tc)
		if err != nil {
			return fail(tgt, err)
		}
		if ok {
			before = &c
		}
	}
	t1 := time.Now()
	rate, serving, err := warm.SampleTraffic(ctx, tc)
	if err != nil {
		return fail(tgt, err)
	}
	s.TargetTraffic = rate
	pc, why := o.pacingFor(serving)
	s.Pacing = why
	// An idle standby's pool holds what earlier rounds loaded: the load replaces what went
	// stale there (the old sublist raised for it). A target that serves traffic keeps its
	// own LRU policy: raised for a load at --nice's pace, which lasts, the old sublist
	// would hold the traffic's pages too, for minutes.
	ro := warm.RunOptions{Pacing: pc, Catalog: resolved.Catalog, ReplaceStale: !serving, Progress: o.LoadProgress,
		StopOnTraffic: !serving && method == warm.MethodNative}
	res, err := warm.FromManifest(ctx, tc, resolved, method, warm.Options{Budget: budget, ExpectTraffic: serving}, ro)
	var first *warm.Result
	if err == nil && res.StoppedForTraffic() {
		// A promoted standby: the load planned for an idle pool (at full speed, coldest
		// first into a tight one) would go on queueing its reads ahead of the queries.
		first = res
		s.TrafficArrived, s.TrafficArrivedAfter, s.LoadedBeforeTraffic = res.Native.TrafficArrived, res.Native.Seconds, max(res.PagesLoaded, 0)
		pc, why = o.pacingFor(true)
		s.Pacing = why
		if o.OnSwitch != nil {
			o.OnSwitch(s)
		}
		log.Infof("follow: the target began serving %.0f client statements/s %.1f s into the load (%d more of the hot set's pages resident): the rest of the round's pages go hottest first, paced (%s)", s.TrafficArrived, s.TrafficArrivedAfter, s.LoadedBeforeTraffic, cmp.Or(why, "unpaced, as asked"))
		ro.Pacing, ro.StopOnTraffic, ro.ReplaceStale = pc, false, false
		res, err = warm.FromManifest(ctx, tc, resolved, method, warm.Options{Budget: budgetLeft(budget, s.LoadedBeforeTraffic, tot), ExpectTraffic: true}, ro)
	}
	s.LoadSeconds = time.Since(t1).Seconds()
	if err != nil {
		return fail(tgt, err)
	}
	if res != nil && res.Native != nil {
		s.SkippedResident = res.Native.SkippedResident
	}
	if first != nil {
		res.PagesLoaded += first.PagesLoaded
		if res.Manifest != nil && first.Manifest != nil {
			res.Manifest.CoverageBefore = first.Manifest.CoverageBefore
		}
	}
	s.CoverageOf = CoverageOfHotSet
	if mr := res.Manifest; mr != nil {
		s.CoverageBefore, s.Coverage = &mr.CoverageBefore, mr.CoverageAfter
		s.Requested, s.LeftOut, s.KeyRanges = mr.Requested, mr.LeftOut, mr.KeyRanges
		s.Paths = map[string]int{}
		var unkeyed int64
		checked := false
		for _, ip := range mr.Paths {
			// A table's file pages and LOB pages go by number or not at all whatever the
			// copy: counted, they read as an index by page number on a logical standby.
			if ip.Kind != warm.KindIndex {
				continue
			}
			s.Paths[ip.Path]++
			switch {
			case ip.Path == warm.PathPages && ip.KeyedPages == 0:
				unkeyed += resolved.ByTarget[warm.TargetKey{Schema: ip.Schema, Table: ip.Table, Partition: ip.Partition, Index: ip.Index, Kind: ip.Kind}]
			case ip.Path == warm.PathPages:
				// Its key ranges were found on the same page numbers here (choosePaths
				// samples them): a page-for-page copy.
				checked = true
			}
		}
		if !checked {
			s.UncheckedPages = unkeyed
		}
		if mr.KeyRanges > 0 {
			s.RangeStatements, s.RangeStatementsRun = int64(res.Units), int64(res.UnitsDone)
		}
		// Pages read by range scans (or not warmed) have no page number here: the load's
		// own figure left them out, or, when every index went so, was the share of its
		// statements that ran, which a dashboard read as pages. They are counted in this
		// server's own trees where innowarm can read them, as the agent and the readiness
		// gate count them; the next round counts them before its load too.
		tgt.countPages = mr.NotWarmed > 0 || mr.KeyRanges > 0
		if tgt.countPages {
			if pre == nil {
				if pre, err = countPages(ctx, tc, resolved); err != nil {
					return fail(tgt, err)
				}
				if 10*(mr.KeyRanges+mr.NotWarmed) <= s.HotSetPages {
					// Not counted before this load, but the load's own figure, of the
					// pages by number, left out at most a tenth of the hot set.
					before = s.CoverageBefore
				}
			}
			if err := s.measurePages(ctx, tc, pre, before); err != nil {
				return fail(tgt, err)
			}
		}
	}
	s.Loaded = res.PagesLoaded
	if s.Dropped > 0 && s.CoverageOf != CoverageUnknown {
		// The hot set's pages the target lacks (tables it does not have) are hot pages not
		// resident: counted only against what resolved, a standby without half of the hot
		// set read 100%.
		share := float64(s.HotSetPages) / float64(s.HotSetPages+s.Dropped)
		s.Coverage *= share
		if s.CoverageBefore != nil {
			b := *s.CoverageBefore * share
			s.CoverageBefore = &b
		}
	}
	if s.HotSetPages == 0 && s.Dropped == 0 {
		// Nothing hot to follow (a source just restarted): nothing lags. It read "coverage
		// 0, lag 1" on a standby fully warm.
		s.Coverage = 1
	}
	s.Lag = 1 - s.Coverage
	s.OK, s.At = true, time.Now()
	s.AgeSeconds = s.At.Sub(captured).Seconds()
	return s, captured
}

// pageCount is the hot set's pages as warm.MeasureTarget finds them on the target: by
// number on a page-for-page copy, in the target's own B-trees elsewhere where innowarm can
// read them; the rest (a logical copy's indexes whose trees it cannot read) are uncounted.
type pageCount struct {
	measured  *warm.Resolved
	uncounted int64
}

func countPages(ctx context.Context, conn *connection.Conn, r *warm.Resolved) (*pageCount, error) {
	measured, _, uncounted, err := warm.MeasureTarget(ctx, conn, r)
	if err != nil {
		return nil, fmt.Errorf("find the hot set's pages: %w", err)
	}
	return &pageCount{measured: measured, uncounted: uncounted}, nil
}

// coverage is the share of the counted pages resident now; false when none is counted.
func (pc *pageCount) coverage(ctx context.Context, conn *connection.Conn) (float64, bool, error) {
	if len(pc.measured.Pages) == 0 {
		return 0, false, nil
	}
	set, err := bufferpool.Resident(ctx, conn, pc.measured.Spaces())
	if err != nil {
		return 0, false, fmt.Errorf("read the hot set's resident pages: %w", err)
	}
	c, _ := pc.measured.Coverage(set)
	return c, true, nil
}

// measurePages sets the round's coverage from pc: UncountedPages are not in it, and with
// more than a tenth of the hot set uncounted it is unknown (NaN). before is the coverage of the same pages before the
// load, nil when not measured.
func (s *Status) measurePages(ctx context.Context, conn *connection.Conn, pc *pageCount, before *float64) error {
	s.UncountedPages, s.CoverageBefore = pc.uncounted, before
	c, ok, err := pc.coverage(ctx, conn)
	if err != nil {
		return err
	}
	if !ok || 10*pc.uncounted > int64(len(pc.measured.Pages))+pc.uncounted {
		// Beyond a tenth of the hot set uncounted, the rest says little of it (the few
		// pages of no index, a small table's): a standby whose hot index was cold read
		// 100%, and one fully warm 33%. The readiness gate refuses such a target alike.
		s.Coverage, s.CoverageBefore, s.CoverageOf = math.NaN(), nil, CoverageUnknown
		return nil
	}
	s.Coverage, s.CoverageOf = c, CoverageOfHotSet
	if pc.uncounted > 0 {
		s.CoverageOf = CoverageOfCounted
	}
	return nil
}

// pacingFor is the pacing of a round's load, and how to say it ("" unpaced): the flags',
// or, on a target that serves traffic and unless the flags chose, --nice, as for a warm
// that starts with its traffic: on a disk the traffic keeps at its limit an unpaced load
// queues its reads ahead of the queries' (docs/pacing.md).
func (o Options) pacingFor(serving bool) (pacing.Config, string) {
	c := o.Pacing
	if serving && !o.PacingChosen {
		return pacing.UnderTraffic(c), "--nice: the target serves traffic"
	}
	c.TrafficArrives = serving
	if c.Enabled() {
		return c, "as asked"
	}
	return c, ""
}

// budgetLeft is a round's budget less the pages a first load of it added.
func budgetLeft(b warm.Budget, loaded int64, tot bufferpool.Totals) warm.Budget {
	page := int64(max(tot.PageSize, 1))
	total := b.Bytes
	if total == 0 {
		total = int64(float64(tot.PagesTotal)*b.Percent/100) * page
	}
	left := max(total-loaded*page, page)
	return warm.Budget{Bytes: left, Raw: fmt.Sprintf("%d pages (the round's budget less the %d pages loaded before the traffic came)", left/page, loaded), ServerPages: b.ServerPages}
}

// roomToLoad is the default budget of a round: the target's pool less the page cleaner's
// free-page target, which the server keeps free by evicting from the LRU tail; filling
// past it would evict what the round just loaded.
func roomToLoad(tot bufferpool.Totals, serverPages int64) warm.Budget {
	pages := warm.PoolHold(tot, serverPages)
	return warm.Budget{Bytes: pages * int64(tot.PageSize), Raw: fmt.Sprintf("%d pages (the pool less its other uses, the server's own pages and the page cleaner's free target)", pages), ServerPages: serverPages}
}

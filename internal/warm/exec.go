package warm

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/pacing"
	"github.com/innowarm/innowarm/internal/periodic"
	"github.com/innowarm/innowarm/internal/progress"
	"github.com/innowarm/innowarm/internal/sqlerr"
)

// RunOptions shape the execution of a plan.
type RunOptions struct {
	StatementTimeout time.Duration // per statement, enforced by the server
	LockWaitTimeout  time.Duration // how long a statement may wait for a metadata lock
	MakeYoung        bool          // innodb_old_blocks_time=0 during the run
	// KeepTablesClosed leaves the tables a native load warmed closed (openTables opens
	// them after it: their first query then pays no table open).
	KeepTablesClosed bool
	// ReplaceStale raises innodb_old_blocks_pct during a native load, so that the load
	// replaces untouched pages of the young sublist instead of its own (raiseOldBlocksPct).
	ReplaceStale bool
	// makeYoungIfAllowed: a native load hottest first into a tight pool sets
	// innodb_old_blocks_time=0 where the account may (NativePlan.Run), unless it is paced by
	// --nice: then the traffic's misses, not the load, fill the pool, and making each of them
	// young at its first touch lets the long tail into the young sublist (a hot, disk-bound
	// MariaDB 10.11 served 5,192-5,210 qps with it, 5,475-5,563 without: a promoted standby
	// whose --nice load lasted through its hot seconds ran 4.5-6% below the cold runs').
	makeYoungIfAllowed bool
	// Until stops the run as soon as Measure says the target is Want resident (--until-coverage).
	Until Until
	// StopOnTraffic stops a native load, as a met coverage goal does, once the server
	// serves client statements (20 a second or more, looked at every second): a load
	// planned for an idle server (follow's standby) reads at full speed in whatever order
	// suits an idle pool, and queues its reads ahead of the queries of a server that has
	// just been given traffic (a promoted standby). The caller plans the rest for the
	// traffic (NativeResult.TrafficArrived says it stopped for that).
	StopOnTraffic bool
	// Pacing holds units back while the server is busy (--max-load, --max-rate, --nice) and
	// stops the run at --critical-load.
	Pacing   pacing.Config
	Progress progress.Config
	Catalog  *catalog.Catalog
	// Verify reads the pool after a native load to report each index's residency, where the
	// page counters would prove it (bufferpool.Residency.AfterLoad) at the cost of one
	// status read instead of a copy of the pool's page list.
	Verify bool

	// afterLoad proves the residency after a native load from the counters; nil, or a nil
	// residency with the reason, when it cannot.
	afterLoad func(ctx context.Context) (*bufferpool.Residency, string, error)
	// guard cuts a native load's budget if the pool shrinks while it runs.
	guard *poolGuard
}

// Until is a coverage goal that ends a run early.
type Until struct {
	Want    float64
	Measure func(ctx context.Context) (float64, string, error)
}

func (u Until) set() bool { return u.Want > 0 && u.Measure != nil }

// untilReportEvery is how many of the goal's checks (one a second) pass between lines
// saying how far the warm is from it.
const untilReportEvery = 5

// watch checks the goal every second and calls stop once it is reached; every few checks it
// logs how far the coverage is from the goal and how fast it rises (log may be nil). It
// returns what it found, when the returned func is called.
func (u Until) watch(ctx context.Context, stop func(), log *logx.Logger) func() string {
	if !u.set() {
		return func() string { return "" }
	}
	var reached string
	var mu sync.Mutex
	var trend progress.Trend
	checks := 0
	t0 := time.Now()
	stopWatching := periodic.Every(ctx, time.Second, func(ctx context.Context) bool {
		c, detail, err := u.Measure(ctx)
		if err != nil {
			return true
		}
		trend.Add(time.Now(), c)
		checks++
		if c < u.Want {
			if log != nil && checks%untilReportEvery == 0 {
				log.Infof("coverage %s (%s)", trend.Text(u.Want), detail)
			}
			return true
		}
		mu.Lock()
		reached = fmt.Sprintf("stopped early: coverage %.1f%% reached the %.1f%% goal after %.1f s (%s)", 100*c, 100*u.Want, time.Since(t0).Seconds(), detail)
		mu.Unlock()
		stop()
		return false
	})
	return func() string {
		stopWatching()
		mu.Lock()
		defer mu.Unlock()
		return reached
	}
}

// UnitResult is one statement's outcome.
type UnitResult struct {
	Unit    *Unit
	Seconds float64
	Err     error
}

// TargetResult is what one index (or LOB set) got.
type TargetResult struct {
	Schema         string  `json:"schema"`
	Table          string  `json:"table"`
	Partition      string  `json:"partition,omitempty"`
	Index          string  `json:"index"`
	Kind           Kind    `json:"kind"`
	Units          int     `json:"units"`
	UnitsDone      int     `json:"units_done"`
	EstPages       int64   `json:"estimated_pages"`
	ResidentBefore int64   `json:"resident_before"`
	ResidentAfter  int64   `json:"resident_after"`
	PagesLoaded    int64   `json:"pages_loaded"`
	IndexPages     int64   `json:"index_pages"`
	CoverageBefore float64 `json:"coverage_before"`
	CoverageAfter  float64 `json:"coverage_after"`
	CoverageExact  bool    `json:"coverage_exact"` // false: the index's size is an upper bound, coverage a lower one
	Seconds        float64 `json:"seconds"`
	MBps           float64 `json:"mb_per_s"`
	Partial        bool    `json:"partial,omitempty"`
	Error          string  `json:"error,omitempty"`
	// Fulltext: a FULLTEXT index, or bufferpool.FulltextCommon, whose pages are its
	// auxiliary tables' (bufferpool.IndexResidency.Fulltext).
	Fulltext bool `json:"fulltext,omitempty"`

	first, last time.Time
}

// UnitReport is one statement of a run, for --json.
type UnitReport struct {
	ID      int     `json:"id"`
	Target  string  `json:"target"`
	Range   string  `json:"range,omitempty"`
	Seconds float64 `json:"seconds"`
	Error   string  `json:"error,omitempty"`
}

// Result is the outcome of a run.
type Result struct {
	Method      string            `json:"method"`
	Targets     []*TargetResult   `json:"targets"`
	Skipped     []catalog.Skip    `json:"skipped"`
	LeftOut     []LeftOut         `json:"left_out"`
	Units       int               `json:"units"`
	UnitsDone   int               `json:"units_done"`
	UnitsFailed int               `json:"units_failed"`
	PagesRead   int64             `json:"pages_read"` // Innodb_pages_read during the run (all sessions)
	PagesLoaded int64             `json:"pages_loaded"`
	Seconds     float64           `json:"seconds"`
	MBps        float64           `json:"mb_per_s"`
	Parallel    int               `json:"parallel"`
	Interrupted bool              `json:"interrupted,omitempty"`
	Errors      []string          `json:"errors,omitempty"`
	Notes       []string          `json:"notes,omitempty"`
	PoolBefore  bufferpool.Totals `json:"pool_before"`
	PoolAfter   bufferpool.Totals `json:"pool_after"`
	PageSize    int64             `json:"page_size"`
	UnitsRun    []UnitReport      `json:"unit_results,omitempty"`
	// Stopped says why the run ended before its last unit (--until-coverage, the budget).
	Stopped     string `json:"stopped,omitempty"`
	UnitsCancel int    `json:"units_stopped,omitempty"`
	// Sessions is how many sessions ran the units, when the server refused some of the
	// Parallel (max_connections, max_user_connections).
	Sessions int `json:"sessions,omitempty"`
	// Pacing says what --max-load, --max-rate and --nice did.
	Pacing *pacing.Stats `json:"pacing,omitempty"`
	// MethodReason says why auto chose the method.
	MethodReason string `json:"method_reason,omitempty"`
	// PoolResize says how the buffer pool changed size during the run, and what that did to
	// the budget.
	PoolResize *PoolResize `json:"pool_resized,omitempty"`
	// Proof says how the residency after the run was established: a read of the pool, or
	// the page counters after a native load (--verify reads the pool).
	Proof    string          `json:"proof,omitempty"`
	Native   *NativeResult   `json:"native,omitempty"`
	Manifest *ManifestReport `json:"manifest,omitempty"`
	// Paths (warm --from) is the path each index of the manifest took, and why.
	Paths []IndexPath `json:"index_paths,omitempty"`
	// UntilCoverage says whether the coverage goal (--until-coverage) was reached, and if
	// not why: a warm that ends below it for its budget still completes (exit 0).
	UntilCoverage *UntilOutcome `json:"until_coverage,omitempty"`
	// TablesOpened (a native load) says which of the tables it warmed were opened after it,
	// so that their first query pays no table open.
	TablesOpened *OpenedTables `json:"tables_opened,omitempty"`

	// manifestOnly: per-index results are about the manifest's pages (warm --from native).
	manifestOnly bool
}

// Complete reports whether every planned unit ran to its end, or the coverage goal was met.
func (r *Result) Complete() bool {
	return (r.UnitsDone == r.Units || r.Stopped != "") && !r.Interrupted && r.UnitsFailed == 0
}

// Run executes the plan. It always returns a result, also on error or interrupt (what was
// done so far); the error is ctx.Err() after an interrupt.
func Run(ctx context.Context, conn *connection.Conn, pl *Plan, o RunOptions) (_ *Result, err error) {
	r := newScanRun(conn, pl, o)
	if len(pl.Units) == 0 {
		return r.res, finish(ctx, conn, pl, r.res, o, nil)
	}
	restore, err := applyVariables(ctx, conn, o, r.log)
	if err != nil {
		return r.res, err
	}
	defer func() { err = errors.Join(err, restore()) }()
	r.o.Pacing.Workers = pl.Parallel
	if r.gov, err = pacing.New(ctx, conn, r.o.Pacing); err != nil {
		return r.res, err
	}
	defer r.gov.Close()
	if pl.Before != nil {
		r.guard = newPoolGuard(ctx, conn, pl.Budget, pl.Before.Totals, pl.BudgetPages)
	}
	r.openProgress()
	return r.run(ctx)
}

// scanRun is one warm by scans in progress: what the workers and the collector share.
type scanRun struct {
	conn    *connection.Conn
	pl      *Plan
	o       RunOptions
	res     *Result
	targets map[*Target]*TargetResult
	gov     *pacing.Governor
	rep     *progress.Reporter
	tl      *tableLog
	log     *logx.Logger
	queue   chan *Unit
	results chan UnitResult
	// lost is the first unit that failed because the server went away.
	lost error
	// guard leaves units out, or stops the run, when the pool shrinks under the budget.
	guard      *poolGuard
	leftOutFor map[*Target]int // index in res.LeftOut of a target's units left out for the pool
	sessions   sessionCount
	// ledger holds the statements of a budgeted run to its budget (nil without a budget):
	// all of a run of the sql path, else the LOB units it reads in steps (ledgerHolds);
	// atBudget says the run was stopped there, by the ledger or the budget's watch.
	ledger      *budgetLedger
	atBudget    atomic.Bool
	ledgerEnded atomic.Bool // the ledger, not the watch, ended the run at its budget
	// unheldLeft counts the units the ledger does not hold that have not ended: while
	// any reads, the budget's watch keeps a margin.
	unheldLeft atomic.Int64
	stopRun    func()
	lobStepped sync.Map // target name -> true: LOB units read in steps (runLOBWithin)
}

// sessionCount is what became of the workers' sessions: a worker whose session the server
// refuses for a limit on connections leaves the units to those that opened.
type sessionCount struct {
	mu              sync.Mutex
	opened, refused int
	refusal         error // the first refusal
}

// settle counts a worker's session, opened or refused (err). It says whether a refused
// worker is the last of workers and none opened: then the run has no session at all.
func (c *sessionCount) settle(err error, workers int) (none bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.opened++
		return false
	}
	c.refused++
	if c.refusal == nil {
		c.refusal = err
	}
	return c.opened == 0 && c.refused == workers
}

// reopened counts a refused worker's session that opened at last.
func (c *sessionCount) reopened() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refused--
	c.opened++
}

// lastTries bound how long the last worker tries again for a session when the server
// refused every worker's.
const (
	lastTries   = 20
	lastTryWait = 50 * time.Millisecond
)

// lastTry opens a session for the last worker after every worker's was refused (refusal):
// the error is errNoSession when the server kept refusing, ctx's when the run stopped.
func (r *scanRun) lastTry(ctx context.Context, refusal error) (*connection.Session, error) {
	for try := 0; try < lastTries; try++ {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(lastTryWait):
		}
		sess, err := r.conn.NewSessionNow(ctx)
		switch {
		case err == nil:
			return sess, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case !connection.LimitReached(err):
			return nil, err
		}
		refusal = err
	}
	return nil, &errNoSession{refusal}
}

// ran says how many sessions ran the units and the first refusal, if any was refused.
func (c *sessionCount) ran() (int, int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opened, c.refused, c.refusal
}

// errNoSession marks a run none of whose sessions the server let open.
type errNoSession struct{ err error }

func (e *errNoSession) Error() string {
	return fmt.Sprintf("no warm session could open: the server refuses more connections (max_connections / max_user_connections): %v", e.err)
}
func (e *errNoSession) Unwrap() error { return e.err }

func newScanRun(conn *connection.Conn, pl *Plan, o RunOptions) *scanRun {
	r := &scanRun{conn: conn, pl: pl, o: o, targets: map[*Target]*TargetResult{}, log: logx.Default(),
		res: &Result{Method: "scan", Skipped: pl.Skipped, LeftOut: append([]LeftOut(nil), pl.LeftOut...), Units: len(pl.Units), Parallel: pl.Parallel, Notes: pl.Notes, PageSize: pl.PageSize}}
	if pl.Before != nil {
		r.res.PoolBefore = pl.Before.Totals
	}
	for _, tg := range append(append([]*Target{}, pl.Targets...), pl.Resident...) {
		tr := &TargetResult{Schema: tg.Table.Schema, Table: tg.Table.Name, Partition: tg.Part.Name, Index: tg.Index.Name, Kind: tg.Kind,
			Units: len(tg.Units), EstPages: tg.EstPages, ResidentBefore: tg.ResidentBefore, Partial: tg.Partial}
		r.targets[tg] = tr
		r.res.Targets = append(r.res.Targets, tr)
	}
	return r
}

func (r *scanRun) openProgress() {
	pg := &r.o.Progress
	pg.Total, pg.Workers, pg.Bytes = max(r.pl.NewPages, 1), r.pl.Parallel, r.pl.PageSize
	if pg.Title == "" {
		pg.Title = "warm"
	}
	r.rep = progress.New(*pg)
	r.log = r.rep.Log()
	r.tl = newTableLog(r.pl, r.log)
}

// run starts the workers and the samplers, collects the units' results and reports.
func (r *scanRun) run(parent context.Context) (*Result, error) {
	conn, pl, res := r.conn, r.pl, r.res
	pagesReadStart, _ := pagesRead(parent, conn)
	if since := pagesReadStart - pl.budgetReadMark; pl.BudgetPages > 0 && pl.budgetReadMark > 0 && since > 0 {
		// The free pages the budget was measured in, less those read since (by the
		// planning, or the server's other sessions): 12 of them took a LOB warm that
		// filled its budget past the pool's room (TestLOBWarmKeepsToItsBudget, MariaDB 11.8).
		pl.BudgetPages = max(pl.BudgetPages-since, 1)
		pl.BudgetSource += fmt.Sprintf(", less %d pages read since it was measured", since)
	}
	t0 := time.Now()
	// The run's own context: the coverage goal ends it without it being an interrupt.
	ctx, stopRun := context.WithCancel(parent)
	defer stopRun()
	r.stopRun = stopRun
	r.ledger = newBudgetLedger(conn, pl, pagesReadStart)
	for _, u := range pl.Units {
		if !r.ledgerHolds(u) {
			r.unheldLeft.Add(1)
		}
	}
	stopped := r.o.Until.watch(ctx, stopRun, r.log)
	resized := r.guard.watch(ctx, stopRun)
	atBudget := r.watchBudget(ctx, pagesReadStart, stopRun)
	go func() {
		// --critical-load stops the units in flight too.
		select {
		case <-r.gov.Tripped():
			stopRun()
		case <-ctx.Done():
		}
	}()
	every := 250 * time.Millisecond
	if !r.o.Progress.Bars {
		every = time.Second
	}
	stopSampling := periodic.Every(ctx, every, func(ctx context.Context) bool {
		if n, err := pagesRead(ctx, conn); err == nil {
			r.rep.SetDone(n - pagesReadStart)
		}
		r.rep.Paused(r.gov.Status())
		return true
	})

	r.queue, r.results = make(chan *Unit), make(chan UnitResult)
	var workers sync.WaitGroup
	startErrs := make(chan error, pl.Parallel)
	for w := 0; w < pl.Parallel; w++ {
		workers.Add(1)
		go func(w int) {
			defer workers.Done()
			if err := r.worker(ctx, w); err != nil {
				startErrs <- err
			}
		}(w)
	}
	go func() {
		defer close(r.queue)
		for _, u := range pl.Units {
			if !r.guard.admit(u.NewPages) {
				select {
				case r.results <- UnitResult{Unit: u, Err: errPoolShrank}:
					continue
				case <-ctx.Done():
					return
				}
			}
			select {
			case r.queue <- u:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { workers.Wait(); close(r.results) }()
	for ur := range r.results {
		r.record(ctx, parent, ur, stopRun)
	}
	sort.Slice(res.UnitsRun, func(i, j int) bool { return res.UnitsRun[i].ID < res.UnitsRun[j].ID })
	if n := r.lobStepsNote(); n != "" {
		res.Notes = append(res.Notes, n)
	}
	stopSampling()
	if res.PoolResize = resized(); res.PoolResize != nil && !res.PoolResize.Stopped {
		res.Notes = append(res.Notes, res.PoolResize.Text())
	}
	close(startErrs)
	var firstStartErr error
	for e := range startErrs {
		var none *errNoSession
		if errors.As(e, &none) && parent.Err() == nil {
			// Not one session: nothing ran, and the pool is as full as the server allows.
			res.Seconds = time.Since(t0).Seconds()
			r.rep.Finish(false)
			return res, e
		}
		if firstStartErr == nil {
			firstStartErr = e
		}
	}
	res.Seconds = time.Since(t0).Seconds()
	if opened, refused, _ := r.sessions.ran(); refused > 0 && opened > 0 && parent.Err() == nil {
		res.Sessions = opened
		r.log.Warnf("ran on %d of %d sessions: the server refused more (max_connections / max_user_connections)", opened, pl.Parallel)
	}
	if r.lost != nil {
		// Nothing more to ask a server that is gone (a remote one could make each
		// question wait for the connect timeout).
		r.rep.Finish(false)
		return res, r.lost
	}
	for tg, tm := range r.tl.timings {
		if tr := r.targets[tg]; tr != nil {
			tr.first, tr.last = tm.First, tm.Last
		}
	}
	if n, err := pagesRead(context.WithoutCancel(ctx), conn); err == nil {
		res.PagesRead = n - pagesReadStart
		r.rep.SetDone(res.PagesRead)
	}
	stopRun()
	res.Stopped = stopped()
	if pr := res.PoolResize; pr != nil && pr.Stopped && res.Stopped == "" {
		res.Stopped = "stopped: " + pr.Text()
	}
	if reached := atBudget(); reached && res.Stopped == "" {
		res.Stopped = r.budgetStop()
	}
	if r.gov != nil { // no pacing asked for
		st := r.gov.Stats()
		res.Pacing = &st
	}
	r.rep.Finish(parent.Err() == nil && res.UnitsFailed == 0)
	if parent.Err() != nil {
		res.Interrupted = true
		return res, parent.Err()
	}
	if cerr := r.gov.Err(); cerr != nil {
		res.Stopped = "stopped: " + cerr.Error()
		// Sessions that could not open because of the stop are not the failure to report.
		if err := finish(parent, conn, pl, res, r.o, nil); err != nil && !errors.Is(err, context.Canceled) {
			return res, err
		}
		return res, cerr
	}
	if res.Stopped != "" && errors.Is(firstStartErr, context.Canceled) {
		// A session that could not open because the run was stopped (the budget, the
		// coverage goal) is the stop, not a failure.
		firstStartErr = nil
	}
	return res, finish(parent, conn, pl, res, r.o, firstStartErr)
}

// budgetEvery is how often a scan run reads its pages read against the budget: a scan reads
// up to some 20,000 pages a second, and the run must stop before it passes its budget.
const budgetEvery = 10 * time.Millisecond

// readAheadPages is what one session may still have in flight when its statement is
// stopped: a linear read-ahead of a whole extent.
const readAheadPages = 64

// watchBudget stops the run before the pages it reads pass the plan's budget: sizes are
// estimates (statistics can count a clustered index's BLOB pages as its leaves; a LOB
// unit's pages are a guess without the file), and a warm that reads past its budget evicts
// what was resident before. The pages read (Innodb_pages_read, every session's: on a busy
// server the run stops sooner, never later) are sampled every budgetEvery; the run stops
// (its statements get KILL QUERY) once they, with a margin for what is read before the
// stop takes effect, reach the budget. The margin is what the rate of the last 100 ms reads
// in three samples, and a read-ahead in flight per session, at most a quarter of the
// budget; and, where the plan's sizes are not guesses (no LOB unit but those the ledger
// reads in steps, runLOBWithin), at most what is left
// of the plan and a read-ahead per session: units that end within their plan read no more,
// and a margin of a quarter stopped plans that fitted (a 5,683-page plan in a 6,272-page
// budget stopped at 5,105 pages read, its last units killed). A run the ledger holds
// (budgetLedger: its statements' rows end within the budget), or whose units the ledger
// does not hold have all ended, is stopped at the budget itself: a margin there killed
// statements that would have ended in it. The returned func
// says whether the run was stopped at the budget (by the watch or the ledger).
func (r *scanRun) watchBudget(ctx context.Context, start int64, stop func()) func() bool {
	budget := r.pl.BudgetPages
	if budget <= 0 || len(r.pl.Units) == 0 {
		return func() bool { return false }
	}
	planned, sized := r.pl.NewPages, true
	for _, u := range r.pl.Units {
		// A LOB unit the ledger reads in steps holds itself to the budget.
		if u.Kind == KindLOB && !r.ledgerHolds(u) {
			sized = false
		}
	}
	type sample struct {
		at    time.Time
		pages int64
	}
	window := []sample{{time.Now(), start}}
	inFlight := int64(min(r.pl.Parallel, len(r.pl.Units))) * readAheadPages
	stopWatching := periodic.Every(ctx, budgetEvery, func(ctx context.Context) bool {
		n, err := pagesRead(ctx, r.conn)
		if err != nil {
			return true
		}
		now := time.Now()
		window = append(window, sample{now, n})
		for len(window) > 2 && now.Sub(window[1].at) >= 100*time.Millisecond {
			window = window[1:]
		}
		// Reads complete in bursts (a read-ahead is 64 pages at once): a rate over less
		// than a few samples would see bursts as speed.
		span := max(now.Sub(window[0].at), 3*budgetEvery)
		rate := float64(n-window[0].pages) / span.Seconds()
		margin := min(int64(rate*3*budgetEvery.Seconds())+inFlight, budget/4)
		if sized {
			margin = min(margin, max(planned-(n-start), 0)+inFlight)
		}
		if r.ledger != nil && r.unheldLeft.Load() == 0 {
			// Only statements the ledger holds read now (all of them where it holds the
			// whole run). The LOB steps of a table whose
			// scans had ended stopped at 3,000-3,450 pages of a 4,050-page budget, a
			// margin short.
			margin = 0
		}
		if n-start+margin < budget {
			return true
		}
		r.atBudget.Store(true)
		stop()
		return false
	})
	return func() bool {
		stopWatching()
		return r.atBudget.Load()
	}
}

// ledgerHolds says whether the run's ledger reads u, statement by statement within the
// budget: every unit of a run of the sql path it holds whole, else a LOB unit it can step.
func (r *scanRun) ledgerHolds(u *Unit) bool {
	return r.ledger != nil && (r.ledger.holdsAll || lobSteps(u) != "")
}

// reachBudget stops the run at its budget (the ledger's end).
func (r *scanRun) reachBudget() {
	r.ledgerEnded.Store(true)
	r.atBudget.Store(true)
	r.stopRun()
}

// stoppedAtBudget starts Result.Stopped when the budget stopped the run (UntilOutcome.Why).
const stoppedAtBudget = "stopped at the budget"

// budgetStop says how a run that reached its budget ended, and leaves out what it did not
// read.
func (r *scanRun) budgetStop() string {
	res, pl := r.res, r.pl
	notRun := 0
	for _, tg := range pl.Targets {
		tr := r.targets[tg]
		if tr == nil || tr.UnitsDone == tr.Units {
			continue
		}
		left := len(tg.Units) - tr.UnitsDone
		notRun += left
		tr.Partial = true
		res.LeftOut = append(res.LeftOut, LeftOut{Schema: tg.Table.Schema, Table: tg.Table.Name, Partition: tg.Part.Name, Index: tg.Index.Name, Kind: tg.Kind,
			Pages:  tg.newPages() * int64(left) / int64(max(len(tg.Units), 1)),
			Reason: fmt.Sprintf("the run reached its budget: %d of %d units not read to their end", left, len(tg.Units))})
	}
	how := "stopped (KILL QUERY) or not started"
	if r.ledgerEnded.Load() {
		how = "read in part or not started: each statement's rows were what the pages left hold"
	}
	return fmt.Sprintf(stoppedAtBudget+": %d pages read, budget %d pages (%s); %d units %s",
		res.PagesRead, pl.BudgetPages, pl.BudgetSource, notRun, how)
}

// record takes one unit's outcome into the result: done, failed, or ended by the coverage
// goal, --critical-load or the server going away (which stops the run).
func (r *scanRun) record(ctx, parent context.Context, ur UnitResult, stopRun func()) {
	if !r.ledgerHolds(ur.Unit) {
		r.unheldLeft.Add(-1)
	}
	res, tr := r.res, r.targets[ur.Unit.Target]
	rep := UnitReport{ID: ur.Unit.ID, Target: ur.Unit.Target.Name(), Seconds: ur.Seconds}
	if ur.Unit.Ranges > 1 {
		rep.Range = fmt.Sprintf("%d/%d", ur.Unit.RangeNo, ur.Unit.Ranges)
	}
	if ur.Err != nil {
		rep.Error = ur.Err.Error()
	}
	if errors.Is(ur.Err, errPoolShrank) {
		r.leaveOutForPool(ur.Unit)
		return
	}
	res.UnitsRun = append(res.UnitsRun, rep)
	switch {
	case ur.Err != nil && r.lost != nil:
		res.UnitsFailed++
	case ur.Err != nil && ctx.Err() == nil && sqlerr.ConnectionLost(ur.Err):
		// The server went away: every unit left would fail the same way. Stop them all
		// and say it once. (Once the run is stopped, by the coverage goal, --critical-load
		// or Ctrl-C, a session that could not open says "operation was canceled" in words
		// that look the same: that is the stop, not a lost server.)
		res.UnitsFailed++
		r.lost = fmt.Errorf("%s: %w", ur.Unit.Label(), ur.Err)
		stopRun()
	case ur.Err != nil && ctx.Err() != nil && parent.Err() == nil && r.gov.Err() == nil:
		res.UnitsCancel++ // ended by the coverage goal
	case ur.Err != nil && r.gov.Err() != nil:
		res.UnitsCancel++ // ended by --critical-load
	case ur.Err != nil:
		res.UnitsFailed++
		msg := fmt.Sprintf("%s: %v", ur.Unit.Label(), ur.Err)
		if ctx.Err() == nil {
			res.Errors = append(res.Errors, msg)
			if tr.Error == "" {
				tr.Error = ur.Err.Error()
			}
			r.log.Warnf("%s", msg)
			r.tl.done(ur.Unit, ur.Err)
		} else {
			r.tl.done(ur.Unit, errUnitInterrupted)
		}
	default:
		res.UnitsDone++
		tr.UnitsDone++
		r.tl.done(ur.Unit, nil)
	}
}

// errPoolShrank marks a unit not started: the pool shrank under the budget it was planned in.
var errPoolShrank = errors.New("left out: the buffer pool shrank during the warm")

// leaveOutForPool takes a unit out of the run's count and into its target's line of
// LeftOut.
func (r *scanRun) leaveOutForPool(u *Unit) {
	res, tr := r.res, r.targets[u.Target]
	res.Units--
	tr.Units--
	tr.Partial = true
	r.tl.leftOut(u)
	if r.leftOutFor == nil {
		r.leftOutFor = map[*Target]int{}
	}
	i, ok := r.leftOutFor[u.Target]
	if !ok {
		tg := u.Target
		res.LeftOut = append(res.LeftOut, LeftOut{Schema: tg.Table.Schema, Table: tg.Table.Name, Partition: tg.Part.Name, Index: tg.Index.Name, Kind: tg.Kind,
			Reason: "the buffer pool shrank during the warm: over the budget the smaller pool leaves"})
		i = len(res.LeftOut) - 1
		r.leftOutFor[u.Target] = i
	}
	res.LeftOut[i].Pages += u.NewPages
}

// worker runs units from the queue on a session of its own, each when the governor lets
// it; a session that cannot open fails every unit it would have run, but one the server
// refuses for a limit on connections takes none: the units run on the sessions that opened,
// and the run fails (one error) only when none did.
func (r *scanRun) worker(ctx context.Context, w int) error {
	fail := func(err error) error {
		for u := range r.queue {
			r.results <- UnitResult{Unit: u, Err: err}
		}
		return err
	}
	sess, err := r.conn.NewSessionNow(ctx)
	switch {
	case err != nil && connection.LimitReached(err):
		if !r.sessions.settle(err, r.pl.Parallel) {
			return nil // the units run on the sessions that opened
		}
		// The last worker, and none opened: innowarm's own reads beside the run (pages
		// read, the budget, pacing) may hold the connections the server allows a moment.
		if sess, err = r.lastTry(ctx, err); err != nil {
			if none := (*errNoSession)(nil); errors.As(err, &none) {
				return err
			}
			return fail(err)
		}
		r.sessions.reopened()
	case err != nil:
		return fail(err)
	default:
		r.sessions.settle(nil, r.pl.Parallel)
	}
	defer sess.Close()
	setup := []string{"SET SESSION TRANSACTION ISOLATION LEVEL READ UNCOMMITTED"}
	if r.o.LockWaitTimeout > 0 {
		setup = append(setup, fmt.Sprintf("SET SESSION lock_wait_timeout = %d", max(int(r.o.LockWaitTimeout.Seconds()), 1)))
	}
	setup = append(setup, r.pl.sessionSetup...)
	for _, q := range setup {
		if _, err := sess.Exec(ctx, q); err != nil {
			return fail(err)
		}
	}
	for u := range r.queue {
		if ctx.Err() != nil {
			r.results <- UnitResult{Unit: u, Err: ctx.Err()}
			continue
		}
		if err := r.gov.Acquire(ctx, w); err != nil {
			r.results <- UnitResult{Unit: u, Err: err}
			continue
		}
		r.rep.Worker(w, u.Label())
		r.tl.start(u)
		t0 := time.Now()
		var err error
		switch {
		case !r.ledgerHolds(u):
			err = runUnit(ctx, sess, r.pl, u, r.o.StatementTimeout)
		case u.Kind == KindLOB:
			err = r.runLOBWithin(ctx, sess, u, r.o.StatementTimeout, r.reachBudget)
		default:
			err = r.runKeyedWithin(ctx, sess, u, r.o.StatementTimeout, r.reachBudget)
		}
		d := time.Since(t0)
		r.tl.timing(u, t0, time.Now())
		r.gov.Release(w)
		r.rep.Worker(w, "")
		r.results <- UnitResult{Unit: u, Seconds: d.Seconds(), Err: explainUnitError(err, r.pl, r.o)}
	}
	return nil
}

// runUnit reads one unit inside a read-only transaction; the statement returns one number.
func runUnit(ctx context.Context, sess *connection.Session, pl *Plan, u *Unit, limit time.Duration) error {
	q, args := Statement(pl.Server, u, limit)
	var v any
	return queryReadOnly(ctx, sess, q, args, &v)
}

// queryReadOnly runs a statement of one row inside a read-only transaction and scans the
// row into dest.
func queryReadOnly(ctx context.Context, sess *connection.Session, q string, args []any, dest ...any) error {
	if _, err := sess.Exec(ctx, "START TRANSACTION READ ONLY"); err != nil {
		return err
	}
	err := sess.QueryRow(ctx, q, args, dest...)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if _, cerr := sess.Exec(ctx, "COMMIT"); err == nil {
		err = cerr
	}
	return err
}

func explainUnitError(err error, pl *Plan, o RunOptions) error {
	if err == nil {
		return nil
	}
	switch {
	case sqlerr.Timeout(err):
		return &exitcode.FieldError{Field: "StatementTimeout", Err: fmt.Errorf("(%s) stopped the scan: raise it, or cut the scans smaller (split pages)", o.StatementTimeout)}
	case sqlerr.Is(err, sqlerr.LockWaitTimeout):
		return fmt.Errorf("waited %s for a metadata lock held by another session (DDL?): skipped", o.LockWaitTimeout)
	}
	return err
}

// finish reads the pool again and fills in what each target got.
func finish(ctx context.Context, conn *connection.Conn, pl *Plan, res *Result, o RunOptions, startErr error) error {
	after, err := residencyAfter(ctx, conn, res, o)
	if err != nil {
		return err
	}
	res.PoolAfter = after.Totals
	type key struct{ schema, table, part, index string }
	idx := map[key]bufferpool.IndexResidency{}
	for _, r := range after.Indexes {
		idx[key{r.Schema, r.Table, r.Partition, r.Index}] = r
	}
	for _, tr := range res.Targets {
		r := idx[key{tr.Schema, tr.Table, tr.Partition, tr.Index}]
		if tr.Kind == KindLOB {
			tr.ResidentAfter = r.LOBResident
			tr.IndexPages = tr.EstPages
			tr.CoverageBefore = ratio(tr.ResidentBefore, tr.EstPages)
			tr.CoverageAfter = ratio(tr.ResidentAfter, tr.EstPages)
		} else {
			tr.ResidentAfter = r.Resident
			tr.IndexPages = r.Pages
			tr.CoverageBefore = ratio(tr.ResidentBefore, r.Pages)
			tr.CoverageAfter = r.Coverage
			tr.CoverageExact = r.Known
		}
		tr.PagesLoaded = max(0, tr.ResidentAfter-tr.ResidentBefore)
		res.PagesLoaded += tr.PagesLoaded
		if !tr.first.IsZero() {
			tr.Seconds = tr.last.Sub(tr.first).Seconds()
			if tr.Seconds > 0 {
				tr.MBps = float64(tr.PagesLoaded*pl.PageSize) / 1e6 / tr.Seconds
			}
		}
	}
	if res.Seconds > 0 {
		res.MBps = float64(res.PagesRead*pl.PageSize) / 1e6 / res.Seconds
	}
	if startErr != nil {
		return fmt.Errorf("open a warm session: %w", startErr)
	}
	if res.UnitsFailed > 0 {
		return fmt.Errorf("%d of %d units failed; first: %s", res.UnitsFailed, res.Units, res.Errors[0])
	}
	return nil
}

// residencyAfter is the residency a run reports after: proved from the page counters after
// a native load that completed, where they prove it and --verify did not ask for a read;
// else read from the pool.
func residencyAfter(ctx context.Context, conn *connection.Conn, res *Result, o RunOptions) (*bufferpool.Residency, error) {
	why := ""
	if o.afterLoad != nil && !o.Verify && res.Native != nil && !res.Native.Aborted && res.Native.Stopped == "" {
		after, reason, err := o.afterLoad(ctx)
		if err != nil {
			return nil, err
		}
		if after != nil {
			res.Proof = after.Proof
			return after, nil
		}
		why = ": the page counters cannot prove it (" + reason + ")"
	} else if o.Verify {
		why = ": --verify"
	}
	after, err := readResidency(ctx, conn, o.Catalog)
	if err != nil {
		return nil, err
	}
	res.Proof = "read the pool (" + after.PageList + ")" + why
	return after, nil
}

func ratio(a, b int64) float64 {
	if b <= 0 {
		return 0
	}
	return min(1, float64(a)/float64(b))
}

func pagesRead(ctx context.Context, conn *connection.Conn) (int64, error) {
	var name string
	var n int64
	err := conn.DB.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_pages_read'").Scan(&name, &n)
	return n, err
}

// tableLog prints the 2017 tool's familiar lines: START/SUCCESS WARMUP FOR DB and TABLE, as
// the first unit of a schema or table starts and its last one ends.
type tableLog struct {
	mu      sync.Mutex
	log     *logx.Logger
	left    map[string]int
	started map[string]bool
	failed  map[string]bool
	// stopped: a unit of it was interrupted (Ctrl-C, the coverage goal), which is no failure.
	stopped map[string]bool
	timings map[*Target]*TargetTiming
}

// errUnitInterrupted is a unit's end by the run's interrupt, for the table log.
var errUnitInterrupted = errors.New("interrupted")

// TargetTiming is when the first unit of a target started and its last one ended.
type TargetTiming struct{ First, Last time.Time }

func newTableLog(pl *Plan, log *logx.Logger) *tableLog {
	tl := &tableLog{log: log, left: map[string]int{}, started: map[string]bool{}, failed: map[string]bool{}, stopped: map[string]bool{}, timings: map[*Target]*TargetTiming{}}
	for _, u := range pl.Units {
		tl.left["db:"+u.Table.Schema]++
		tl.left["t:"+u.Table.Quoted()]++
	}
	return tl
}

func (tl *tableLog) start(u *Unit) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	db, t := "db:"+u.Table.Schema, "t:"+u.Table.Quoted()
	if !tl.started[db] {
		tl.started[db] = true
		tl.log.Infof("--- >>>>>>> START WARMUP FOR DB: %s <<<<<<", u.Table.Schema)
	}
	if !tl.started[t] {
		tl.started[t] = true
		tl.log.Infof("--- START WARMUP FOR TABLE: %s", u.Table.Quoted())
	}
}

func (tl *tableLog) timing(u *Unit, start, end time.Time) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tm := tl.timings[u.Target]
	if tm == nil {
		tm = &TargetTiming{First: start, Last: end}
		tl.timings[u.Target] = tm
	}
	if start.Before(tm.First) {
		tm.First = start
	}
	if end.After(tm.Last) {
		tm.Last = end
	}
}

// leftOut counts a unit that will not run: a table whose every unit is left out says
// nothing, one that started says how it ended once its last unit has.
func (tl *tableLog) leftOut(u *Unit) {
	tl.mu.Lock()
	started := tl.started["t:"+u.Table.Quoted()]
	tl.mu.Unlock()
	if started {
		tl.done(u, nil)
		return
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	db := "db:" + u.Table.Schema
	tl.left["t:"+u.Table.Quoted()]--
	tl.left[db]--
	if tl.left[db] == 0 && tl.started[db] {
		if tl.failed[db] {
			tl.log.Infof("--- xxxxxxx FAILED WARMUP FOR DB: %s xxxxxxx", u.Table.Schema)
		} else {
			tl.log.Infof("--- +++++++ SUCCESS WARMUP FOR DB: %s +++++++", u.Table.Schema)
		}
	}
}

func (tl *tableLog) done(u *Unit, err error) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	db, t := "db:"+u.Table.Schema, "t:"+u.Table.Quoted()
	switch {
	case errors.Is(err, errUnitInterrupted):
		tl.stopped[db], tl.stopped[t] = true, true
	case err != nil:
		tl.failed[db], tl.failed[t] = true, true
	}
	tl.left[t]--
	tl.left[db]--
	if tl.left[t] == 0 {
		switch {
		case tl.failed[t]:
			tl.log.Infof("--- FAILED WARMUP FOR TABLE: %s", u.Table.Quoted())
		case tl.stopped[t]:
			tl.log.Infof("--- INTERRUPTED WARMUP FOR TABLE: %s", u.Table.Quoted())
		default:
			tl.log.Infof("--- SUCCESS WARMUP FOR TABLE: %s", u.Table.Quoted())
		}
	}
	if tl.left[db] == 0 {
		if tl.stopped[db] && !tl.failed[db] {
			tl.log.Infof("--- xxxxxxx INTERRUPTED WARMUP FOR DB: %s xxxxxxx", u.Table.Schema)
			return
		}
		if tl.failed[db] {
			tl.log.Infof("--- xxxxxxx FAILED WARMUP FOR DB: %s xxxxxxx", u.Table.Schema)
		} else {
			tl.log.Infof("--- +++++++ SUCCESS WARMUP FOR DB: %s +++++++", u.Table.Schema)
		}
	}
}

package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/cobra"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/pacing"
	"github.com/innowarm/innowarm/internal/progress"
	"github.com/innowarm/innowarm/internal/readiness"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/units"
	"github.com/innowarm/innowarm/internal/warm"
)

func init() { register(newWarmCmd) }

type warmFlags struct {
	sel              selectionFlags
	dryRun, verbose  bool
	budget           string
	order            string
	parallel         int
	lob              bool
	makeYoung        bool
	verify           bool
	statementTimeout time.Duration
	lockWaitTimeout  time.Duration
	splitPages       int64
	asJSON, quiet    bool
	progressEvery    time.Duration
	from             string
	s3               *s3Flags
	method           string
	untilCoverage    string
	waitForServer    string
	byKey            string
}

func newWarmCmd() *cobra.Command {
	var f warmFlags
	cmd := &cobra.Command{
		Use:   "warm",
		Short: "Load chosen schemas/tables/indexes into the buffer pool, in parallel, within a budget",
		Long: `warm reads every index of the chosen tables into the InnoDB buffer pool: primary keys,
secondary indexes (composite and prefix), hidden clustered indexes, every partition and
subpartition, and with --lob the off-page BLOB/TEXT pages. Each unit is one read-only
statement (COUNT(*) with FORCE INDEX, checked with EXPLAIN) that returns one number; big
indexes are cut into key ranges and read by --parallel sessions.

The plan stays within a budget: by default the free pages of the pool, so nothing already
cached is evicted. Smaller units go first (--order). --dry-run chooses the method and plans
exactly as the warm would and prints that plan; it loads nothing beyond the few pages that
planning reads (the first and last keys of each index it cuts into key ranges). A selection
or a manifest that matches nothing here exits 2. Ctrl-C stops every statement on the
server (KILL QUERY) and exits 130.

FULLTEXT and SPATIAL indexes cannot be read by such statements and are listed as skipped.
Needs SELECT on the tables and the PROCESS privilege (to read the pool's page list).`,
		Example: `  innowarm warm -u admin -p -D shop --dry-run
  innowarm warm -D shop,billing --budget 70% --parallel 4
  innowarm warm --tables 'shop.order*' --exclude 'shop.order_archive' --lob
  innowarm warm -S /run/mysqld/mysqld.sock -D shop --json > warm.json`,
	}
	cf := addConnFlags(cmd)
	f.sel.bind(cmd)
	fl := cmd.Flags()
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the plan the warm would follow (method and why, units or tablespaces, pages, budget, what is left out and why) and load nothing beyond the few pages planning reads (the first and last keys of each index cut into key ranges)")
	fl.BoolVar(&f.verbose, "verbose", false, "with --dry-run, print every statement (with --replay: every statement that would run)")
	fl.StringVar(&f.budget, "budget", "", "most the warm may add: a size (2G) or a percent of the pool (70%), held to what the pool holds beside the page cleaner's free pages and the selection's resident pages; default: the free pages")
	fl.StringVar(&f.order, "order", "small-first", "priority: "+strings.Join(warm.Orders, ", "))
	fl.IntVar(&f.parallel, "parallel", 0, "parallel sessions; 0: the default, twice innodb_read_io_threads (4 to 16)")
	fl.BoolVar(&f.lob, "lob", false, "also read off-page BLOB/TEXT/JSON pages")
	fl.BoolVar(&f.verify, "verify", false, "after a native load, read the pool to report each index's residency (by default a load during which no page left the pool is proved by the server's page counters: one status read instead of a copy of the pool's page list)")
	fl.BoolVar(&f.makeYoung, "make-young", false, "set innodb_old_blocks_time=0 during the run (restored after, also on error or Ctrl-C)")
	fl.DurationVar(&f.statementTimeout, "statement-timeout", time.Hour, "server-side time limit of each statement")
	fl.DurationVar(&f.lockWaitTimeout, "lock-wait-timeout", 10*time.Second, "how long a statement may wait for a table's metadata lock (e.g. behind DDL)")
	fl.Int64Var(&f.splitPages, "split-pages", warm.DefaultSplitPages, "cut indexes larger than this many pages into key ranges")
	fl.StringVar(&f.from, "from", "", "warm the pages a manifest names (written by innowarm snapshot, maybe on another server): a file, s3://BUCKET/PREFIX/NAME, or - for stdin")
	f.s3 = addS3Flags(cmd)
	fl.StringVar(&f.method, "method", warm.MethodAuto, "auto, native or scan: native hands the page list to the server's own loader (innowarm must run on the database host and write its dump file); auto uses it when possible, except for tables on MySQL that scans read whole (its loader is slower than scans)")
	fl.StringVar(&f.byKey, "by-key", warm.ByKeyAuto, "with --from, how each index is warmed: pages (its page numbers: a page-for-page copy of the source), sql (its pages' key ranges, read by range scans: any copy of the data, any server), tree (the key ranges found in this server's own B-tree and loaded natively: on the database host, keys that compare in Go), or auto: pages where a sample of pages read here holds the manifest's keys, else tree where it can and sql elsewhere and wherever the method is scan")
	fl.StringVar(&f.untilCoverage, "until-coverage", "", "stop as soon as the plan (or the manifest's pages) is this resident, e.g. 95%; the result says whether it was reached, and if not why (the budget, no more pages, a stop)")
	fl.StringVar(&f.waitForServer, "wait-for-server", "", "start before the server answers (systemd ExecStartPost, a sidecar): connect the moment it does, waiting at most this long (bare flag: 10m); a load of its own dump that the server started is aborted, since innowarm loads instead; without a pacing flag the warm runs --nice, yielding to the traffic that arrives with it")
	fl.Lookup("wait-for-server").NoOptDefVal = "10m"
	fl.BoolVar(&f.asJSON, "json", false, "print the plan and result as JSON on stdout")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress output")
	fl.DurationVar(&f.progressEvery, "progress-interval", 5*time.Second, "time between progress lines when stderr is not a terminal (logs); more than 0")
	minDuration(fl, "progress-interval", time.Millisecond)
	rf := addReplayFlags(cmd)
	pf := addPacingFlags(cmd)
	cmd.RunE = run(func(cmd *cobra.Command, _ []string) error {
		opts, err := cf.resolve(cmd)
		if err != nil {
			return err
		}
		// --replay is a method of its own: it reads a log, not the catalog (and -D is its
		// default schema, so it must come before -D becomes a list of schemas).
		if err := rf.validate(); err != nil {
			return err
		}
		pace, err := pf.config(f.parallel)
		if err != nil {
			return err
		}
		if rf.active() {
			conn, err := connection.Open(cmd.Context(), rf.connOptions(opts))
			if err != nil {
				return err
			}
			defer conn.Close()
			if err := pacing.Check(cmd.Context(), conn, pace); err != nil {
				return err
			}
			return rf.run(cmd, conn, f.asJSON, pace)
		}
		wait, err := f.waitTimeout()
		if err != nil {
			return err
		}
		if wait >= 0 {
			var note string
			if pace, note = pf.underTraffic(pace); note != "" && !f.quiet {
				logx.Infof("pacing: %s", note)
			}
		}
		req, err := f.request(cmd, &opts, pace)
		if err != nil {
			return err
		}
		conn, err := f.connect(cmd, opts, wait)
		if err != nil {
			return err
		}
		defer conn.Close()
		ctx := cmd.Context()
		outcome, runErr := warm.Execute(ctx, conn, req, func(method, why string) {
			if !f.quiet {
				logx.Infof("method: %s (%s)", method, why)
			}
		})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return printWarmOutcome(cmd, outcome, &f, runErr)
	})
	return cmd
}

// waitTimeout reads --wait-for-server: -1 when not given.
func (f *warmFlags) waitTimeout() (time.Duration, error) {
	if f.waitForServer == "" {
		return -1, nil
	}
	d, err := time.ParseDuration(f.waitForServer)
	if err != nil || d <= 0 {
		return 0, usagef("--wait-for-server %q: give how long to wait, e.g. 10m (or the bare flag)", f.waitForServer)
	}
	return d, nil
}

// connect opens the connection; with --wait-for-server it waits for the server to answer
// and then takes the load over from the server's own load at startup.
func (f *warmFlags) connect(cmd *cobra.Command, opts connection.Options, wait time.Duration) (*connection.Conn, error) {
	ctx := cmd.Context()
	if wait < 0 {
		return connection.Open(ctx, opts)
	}
	t0 := time.Now()
	conn, err := connection.WaitOpen(ctx, opts, wait, func(why error) {
		if !f.quiet {
			logx.Infof("waiting for the server at %s (at most %s): %v", opts.Target(), wait, why)
		}
	})
	if err != nil {
		return nil, err
	}
	if !f.quiet {
		logx.Infof("the server at %s answered after %.2f s", opts.Target(), time.Since(t0).Seconds())
	}
	if f.dryRun {
		return conn, nil
	}
	did, err := warm.TakeOverStartupLoad(ctx, conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	if did != "" {
		logx.Infof("%s", did)
	}
	return conn, nil
}

type planUnitJSON struct {
	ID        int    `json:"id"`
	Target    string `json:"target"`
	Range     string `json:"range,omitempty"`
	EstPages  int64  `json:"estimated_pages"`
	NewPages  int64  `json:"new_pages"`
	Statement string `json:"statement,omitempty"`
}

func planJSON(pl *warm.Plan, limit time.Duration, withSQL bool) map[string]any {
	var unitsOut []planUnitJSON
	for _, u := range pl.Units {
		pu := planUnitJSON{ID: u.ID, Target: u.Target.Name(), EstPages: u.EstPages, NewPages: u.NewPages}
		if u.Ranges > 1 {
			pu.Range = fmt.Sprintf("%d/%d", u.RangeNo, u.Ranges)
		}
		if withSQL {
			pu.Statement = warm.SQLText(pl.Server, u, limit)
		}
		unitsOut = append(unitsOut, pu)
	}
	var resident []string
	for _, t := range pl.Resident {
		resident = append(resident, t.Name())
	}
	return map[string]any{
		"units": unitsOut, "parallel": pl.Parallel, "estimated_pages": pl.EstPages, "new_pages": pl.NewPages,
		"page_size": pl.PageSize, "pool_pages": pl.PoolPages, "free_pages": pl.FreePages,
		"budget_pages": pl.BudgetPages, "budget_source": pl.BudgetSource,
		"left_out": pl.LeftOut, "skipped": pl.Skipped, "already_resident": resident, "notes": pl.Notes,
	}
}

func printPlan(w io.Writer, pl *warm.Plan, verbose bool, limit time.Duration) {
	mib := func(pages int64) string { return units.FormatBytes(pages * pl.PageSize) }
	tables := map[string]bool{}
	for _, tg := range pl.Targets {
		tables[tg.Table.Quoted()] = true
	}
	fmt.Fprintf(w, "plan: %d units on %d indexes of %d tables, %d parallel sessions\n", len(pl.Units), len(pl.Targets), len(tables), pl.Parallel)
	fmt.Fprintf(w, "reads ~%d pages (%s), of which ~%d (%s) not resident yet\n", pl.EstPages, mib(pl.EstPages), pl.NewPages, mib(pl.NewPages))
	printBudget(w, pl.BudgetPages, pl.BudgetSource, pl.PoolPages, pl.FreePages, pl.PageSize)
	t := newTable(w, table.Row{"#", "table", "partition", "index", "units", "est. pages", "new pages", "resident before"}, 5)
	for i, tg := range pl.Targets {
		var est, nw int64
		for _, u := range tg.Units {
			est += u.EstPages
			nw += u.NewPages
		}
		idx := tg.Index.Name
		if tg.Kind == warm.KindLOB {
			idx += " (LOB pages)"
		}
		if tg.Partial {
			idx += " (partial)"
		}
		if tg.Prefix {
			idx += " (prefix: last)"
		}
		t.AppendRow(table.Row{i + 1, tg.Table.Quoted(), tg.Part.Name, idx, len(tg.Units), est, nw, tg.ResidentBefore})
	}
	t.Render()
	if verbose {
		for _, u := range pl.Units {
			fmt.Fprintf(w, "%d: %s\n", u.ID, warm.SQLText(pl.Server, u, limit))
		}
	}
	var resident []string
	for _, tg := range pl.Resident {
		resident = append(resident, fmt.Sprintf("%s (%d pages)", tg.Name(), tg.ResidentBefore))
	}
	printAlreadyResident(w, resident)
	printLeftOut(w, pl.LeftOut)
	printSkipped(w, pl.Skipped)
	for _, n := range pl.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

func parenList(items []string) string {
	if len(items) == 0 {
		return ""
	}
	return " (" + strings.Join(items, ", ") + ")"
}

func printSkipped(w io.Writer, skipped []catalog.Skip) {
	for _, s := range skipped {
		what := sqltext.Table(s.Schema, s.Table)
		if s.Index != "" {
			what += " index " + sqltext.Ident(s.Index)
		}
		fmt.Fprintf(w, "skipped: %s: %s\n", what, s.Reason)
	}
}

func printWarmResult(w io.Writer, res *warm.Result) {
	native := res.Native != nil
	// A warm that failed before it measured the pool after (its error goes to stderr)
	// has no after figures: they print as unknown, not as zeros.
	measured := res.PoolAfter.PagesTotal > 0
	after := func(n int64) any {
		if !measured {
			return "?"
		}
		return n
	}
	header := table.Row{"table", "partition", "index", "units", "pages before", "pages after", "loaded", "coverage", "seconds", "MB/s"}
	if native {
		header = table.Row{"table", "partition", "index", "pages before", "pages after", "loaded", "coverage"}
	}
	t := newTable(w, header, 4)
	for _, tr := range res.Targets {
		idx := warm.IndexLabel(tr.Index, tr.Kind)
		// Nothing resident is 0% whatever the size's bound (a FULLTEXT index's files).
		before := fmtCoverage(tr.CoverageBefore, tr.CoverageExact || tr.ResidentBefore == 0)
		cov := before + " → " + fmtCoverage(tr.CoverageAfter, tr.CoverageExact)
		if !measured {
			cov = before + " → ?"
		}
		if native {
			t.AppendRow(table.Row{sqltext.Table(tr.Schema, tr.Table), tr.Partition, idx, tr.ResidentBefore, after(tr.ResidentAfter), after(tr.PagesLoaded), cov})
			continue
		}
		units := fmt.Sprintf("%d/%d", tr.UnitsDone, tr.Units)
		if tr.Error != "" {
			units += " FAILED"
		}
		t.AppendRow(table.Row{sqltext.Table(tr.Schema, tr.Table), tr.Partition, idx, units, tr.ResidentBefore, after(tr.ResidentAfter), after(tr.PagesLoaded), cov,
			fmt.Sprintf("%.2f", tr.Seconds), fmt.Sprintf("%.0f", tr.MBps)})
	}
	if len(res.Targets) > 0 {
		t.Render()
	}
	nothing := (res.Native != nil && res.Native.Requested == 0) || (res.Native == nil && res.Units == 0)
	switch n := res.Native; {
	case !measured && n != nil:
		fmt.Fprintf(w, "warm (native) FAILED (see its error): %d pages requested, %d loaded by the server in %.2f s; the pool after not measured\n", n.Requested, n.Loaded, n.Seconds)
	case !measured:
		fmt.Fprintf(w, "warm (%s) FAILED (see its error): %d of %d units done in %.2f s, %d parallel; the pages read and the pool after not measured\n",
			res.Method, res.UnitsDone, res.Units, res.Seconds, res.Parallel)
	case nothing && (len(res.LeftOut) > 0 || (res.Manifest != nil && res.Manifest.LeftOut > 0)):
		fmt.Fprintf(w, "warm (%s): nothing loaded: what is resident stays, what is not is over the budget (left out below; --budget, a size or a percent of the pool, lets the warm evict other pages)\n", res.Method)
	case n != nil && n.Requested == 0 && res.Manifest != nil:
		fmt.Fprintln(w, "warm (native): nothing to load: every page of the manifest that resolves here was already resident")
	case n != nil && n.Requested == 0:
		fmt.Fprintln(w, "warm (native): nothing to load: every tablespace of the selection was already resident")
	case n != nil:
		how := "native"
		if m := res.Manifest; m != nil && m.KeyRanges > m.TreeRanges {
			// Most of a logical copy's pages may come from range scans, not the loader.
			how = fmt.Sprintf("native, and %d key ranges by range scans", m.KeyRanges-m.TreeRanges)
		}
		fmt.Fprintf(w, "warm (%s): %d pages requested, %d loaded by the server in %.2f s; %d pages read from disk (%.0f MB/s); %d pages now resident that were not\n",
			how, n.Requested, n.Loaded, n.Seconds, res.PagesRead, n.MBps, res.PagesLoaded)
		fmt.Fprintf(w, "server load status: %s; dump file %s: %s\n", n.Status, n.DumpFile, n.Restored)
		if n.SkippedResident > 0 {
			fmt.Fprintf(w, "%d of the requested pages were resident when their turn came (read by the traffic) and were left out of the load\n", n.SkippedResident)
		}
		if res.PagesRead == 0 && res.PagesLoaded == 0 && n.Loaded == n.Requested {
			fmt.Fprintln(w, "every requested page was already resident: the server read none from disk")
		}
	case res.Units == 0 && len(res.Targets) > 0:
		fmt.Fprintf(w, "warm (%s): nothing to load: every selected index was already resident\n", res.Method)
	case res.Units == 0:
		fmt.Fprintf(w, "warm (%s): nothing to load\n", res.Method)
	case res.Manifest != nil && res.Method == warm.MethodNative:
		// Every index took the sql path: the loader had nothing by number.
		fmt.Fprintf(w, "warm (native, every index by range scans of its key ranges, none by page number): %d of %d statements in %.2f s, %d parallel; %d pages read (%s), %.0f MB/s; %d pages now resident that were not\n",
			res.UnitsDone, res.Units, res.Seconds, res.Parallel, res.PagesRead, units.FormatBytes(res.PagesRead*res.PageSize), res.MBps, res.PagesLoaded)
	default:
		parallel := fmt.Sprintf("%d parallel", res.Parallel)
		if res.Sessions > 0 && res.Sessions < res.Parallel {
			parallel = fmt.Sprintf("%d parallel sessions of the %d asked (the server refused more)", res.Sessions, res.Parallel)
		}
		fmt.Fprintf(w, "warm (%s): %d of %d units in %.2f s, %s; %d pages read (%s), %.0f MB/s; %d pages now resident that were not\n",
			res.Method, res.UnitsDone, res.Units, res.Seconds, parallel, res.PagesRead, units.FormatBytes(res.PagesRead*res.PageSize), res.MBps, res.PagesLoaded)
	}
	if m := res.Manifest; m != nil {
		printManifestSummary(w, m)
		coverage := fmt.Sprintf("coverage of the pages read by number: %.1f%% → %.1f%%", 100*m.CoverageBefore, 100*m.CoverageAfter)
		if m.CoveragePages == 0 {
			coverage = "no page is read by number, so no coverage by number: the range scans read this server's pages of the key ranges, which the manifest does not number"
		}
		fmt.Fprintf(w, "requested %d pages by number%s and %d key ranges by range scans (%d already resident, %d left out by the budget); %s\n",
			m.Requested, treeNote(m), m.KeyRanges-m.TreeRanges, m.AlreadyThere, m.LeftOut, coverage)
		printPaths(w, res.Paths)
	}
	if res.Stopped != "" {
		fmt.Fprintf(w, "%s\n", res.Stopped)
	}
	if line := res.UntilCoverage.Text(); line != "" {
		fmt.Fprintln(w, line)
	}
	if res.MethodReason != "" {
		fmt.Fprintf(w, "method %s: %s\n", res.Method, res.MethodReason)
	}
	if measured {
		fmt.Fprintf(w, "pool: %d free → %d free pages of %d\n", res.PoolBefore.PagesFree, res.PoolAfter.PagesFree, res.PoolAfter.PagesTotal)
	}
	if res.Proof != "" {
		fmt.Fprintf(w, "residency after: %s\n", res.Proof)
	}
	printLeftOut(w, res.LeftOut)
	printSkipped(w, res.Skipped)
	for _, e := range res.Errors {
		fmt.Fprintf(w, "error: %s\n", e)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// request turns the flags into a warm.Request and validates it; -D becomes the selection.
func (f *warmFlags) request(cmd *cobra.Command, opts *connection.Options, pace pacing.Config) (warm.Request, error) {
	budget, err := warm.ParseBudget(f.budget)
	if err != nil {
		return warm.Request{}, usagef("--budget: %v", err)
	}
	filter, err := f.sel.filter(opts)
	if err != nil {
		return warm.Request{}, err
	}
	req := warm.Request{
		Filter: filter, Method: f.method, DryRun: f.dryRun,
		Plan:            warm.Options{Budget: budget, Order: f.order, Parallel: f.parallel, LOB: f.lob, SplitPages: f.splitPages, LockWaitTimeout: f.lockWaitTimeout, ByKey: f.byKey, ExpectTraffic: f.waitForServer != ""},
		SplitPagesGiven: cmd.Flags().Changed("split-pages"),
		Run: warm.RunOptions{
			StatementTimeout: f.statementTimeout, LockWaitTimeout: f.lockWaitTimeout, MakeYoung: f.makeYoung, Pacing: pace, Verify: f.verify,
			Progress: progress.Config{Out: os.Stderr, Bars: !f.quiet && progress.IsTerminal(os.Stderr), Quiet: f.quiet, Interval: f.progressEvery},
		},
	}
	if f.untilCoverage != "" {
		if req.UntilCoverage, err = readiness.ParsePercent(f.untilCoverage); err != nil {
			return req, usagef("--until-coverage: %v", err)
		}
	}
	// The value checks come first: a bad flag is reported before a manifest is read.
	if err := req.Validate(); err != nil && !isSelectionError(err) {
		return req, err
	}
	// A manifest is read and verified in full (checksum, counts) before anything else.
	if f.from != "" {
		if !filter.Empty() {
			return req, usagef("--from warms what the manifest names: leave out -D, --tables and --all-databases")
		}
		if req.Manifest, err = f.s3.store().Load(cmd.Context(), f.from); err != nil {
			return req, err
		}
	}
	if err := req.Validate(); err != nil {
		return req, err
	}
	return req, nil
}

func isSelectionError(err error) bool {
	var fe *exitcode.FieldError
	return errors.As(err, &fe) && fe.Field == "Selection"
}

// printWarmOutcome prints a warm's plan (a dry run) or result, as text or JSON, and returns
// the run's error.
func printWarmOutcome(cmd *cobra.Command, o *warm.Outcome, f *warmFlags, runErr error) error {
	out := cmd.OutOrStdout()
	if o == nil || (o.Result == nil && (runErr != nil || !f.dryRun)) || (runErr != nil && !didWork(o.Result)) {
		// A failure before anything was read (a privilege, a lost server) is its one line.
		return runErr
	}
	if o.Result == nil {
		// A dry run exits as the warm would: 1 where it would load nothing and leave
		// pages cold (a full pool's budget).
		work := o.CheckWork()
		if f.asJSON {
			doc := map[string]any{"plan": planDoc(o, f.statementTimeout, f.verbose)}
			err := withError(cmd.Context(), doc, work)
			if perr := printJSON(out, doc); perr != nil {
				return perr
			}
			return err
		}
		printDryRun(out, o, f.verbose, f.statementTimeout)
		return work
	}
	if f.asJSON {
		doc := map[string]any{"result": o.Result, "plan": planDoc(o, f.statementTimeout, false)}
		err := withError(cmd.Context(), doc, runErr)
		if perr := printJSON(out, doc); perr != nil {
			return perr
		}
		return err
	}
	printWarmResult(out, o.Result)
	return runErr
}

// didWork reports whether a run read anything before it ended.
func didWork(res *warm.Result) bool {
	return res != nil && (len(res.UnitsRun) > 0 || res.PagesRead > 0 || (res.Native != nil && res.Native.Loaded > 0))
}

// planDoc is the JSON of the plan a warm follows: the method and why, and the scan units,
// the native load's tablespaces, or a manifest's pages.
func planDoc(o *warm.Outcome, limit time.Duration, withSQL bool) map[string]any {
	doc := map[string]any{}
	nativeDoc := func(np *warm.NativePlan) map[string]any {
		return map[string]any{
			"tablespaces": np.Spaces, "requested_pages": np.Requested, "new_pages": np.NewPages,
			"page_size": np.PageSize, "pool_pages": np.PoolPages, "free_pages": np.FreePages,
			"budget_pages": np.BudgetPages, "budget_source": np.BudgetSource,
			"left_out": np.LeftOut, "already_resident": np.Resident, "skipped": np.Skipped, "notes": np.Notes,
		}
	}
	switch {
	case o.Plan != nil && o.Native != nil && o.Manifest == nil:
		// auto: the load, then scans of the system tablespace's tables.
		doc = nativeDoc(o.Native)
		doc["system_tablespace_scans"] = planJSON(o.Plan, limit, withSQL)
	case o.Plan != nil:
		doc = planJSON(o.Plan, limit, withSQL)
	case o.Native != nil:
		doc = nativeDoc(o.Native)
	}
	doc["method"], doc["method_reason"] = o.Method, o.Why
	if m := o.Manifest; m != nil {
		doc["manifest"], doc["manifest_targets"], doc["index_paths"] = m.Report, m.Targets, m.Paths
		if m.Keyed != nil {
			doc["key_ranges"] = planJSON(m.Keyed, limit, withSQL)
		}
	}
	return doc
}

// printDryRun prints the plan a warm would follow.
func printDryRun(w io.Writer, o *warm.Outcome, verbose bool, limit time.Duration) {
	fmt.Fprintf(w, "method: %s (%s)\n", o.Method, o.Why)
	if m := o.Manifest; m != nil {
		printManifestPlan(w, m)
	}
	switch {
	case o.Plan != nil && o.Native != nil && o.Manifest == nil:
		// auto: the system tablespace's tables are scanned after the load.
		printNativePlan(w, o.Native)
		fmt.Fprintln(w, "then, by scans, the tables in the system tablespace (the loader cannot tell their pages from the others'):")
		printPlan(w, o.Plan, verbose, limit)
	case o.Plan != nil:
		printPlan(w, o.Plan, verbose, limit)
	case o.Native != nil && o.Manifest == nil:
		printNativePlan(w, o.Native)
	}
	if m := o.Manifest; m != nil && m.Keyed != nil {
		fmt.Fprintln(w, "key ranges (path sql), read after the pages:")
		printPlan(w, m.Keyed, verbose, limit)
	}
}

// printPaths says which path each index of a manifest takes, and why.
func printPaths(w io.Writer, paths []warm.IndexPath) {
	if len(paths) == 0 {
		return
	}
	t := newTable(w, table.Row{"index", "path", "keyed pages", "ranges", "runs", "statements", "why"}, 2)
	for _, ip := range paths {
		t.AppendRow(table.Row{ip.Label(), ip.Path, ip.KeyedPages, ip.Ranges, ip.Runs, ip.Statements, ip.Reason})
	}
	t.Render()
}

// printNativePlan prints a native load of a selection, planned: tablespace by tablespace.
func printNativePlan(w io.Writer, np *warm.NativePlan) {
	size := func(pages int64) string { return units.FormatBytes(pages * np.PageSize) }
	if len(np.Spaces) > 0 {
		spaces := "tablespaces"
		if len(np.Spaces) == 1 {
			spaces = "tablespace"
		}
		fmt.Fprintf(w, "plan: the server's loader reads %d pages (%s) of %d %s, ~%d (%s) not resident yet\n",
			np.Requested, size(np.Requested), len(np.Spaces), spaces, np.NewPages, size(np.NewPages))
	} else {
		fmt.Fprintln(w, "plan: nothing to load")
	}
	printBudget(w, np.BudgetPages, np.BudgetSource, np.PoolPages, np.FreePages, np.PageSize)
	if len(np.Spaces) > 0 {
		t := newTable(w, table.Row{"#", "tablespace", "pages in use", "file pages", "resident before", "to load"}, 3)
		for i, sp := range np.Spaces {
			t.AppendRow(table.Row{i + 1, sp.Name, sp.Pages, sp.FilePages, sp.Resident, sp.Load})
		}
		t.Render()
	}
	printAlreadyResident(w, np.Resident)
	printLeftOut(w, np.LeftOut)
	printSkipped(w, np.Skipped)
	for _, n := range np.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// printManifestPlan prints a warm of a manifest's pages, planned: what resolves here, what
// is resident, and what the budget lets the load read, per index.
func printManifestPlan(w io.Writer, mp *warm.ManifestPlan) {
	mr := mp.Report
	printManifestSummary(w, mr)
	// The pages by number include this server's own pages the tree path found by key:
	// they are not a share of the resolved entries.
	fmt.Fprintf(w, "%d of the pages resolved by number already resident; to load: %d pages by number%s, %d key ranges by range scans; %d left out by the budget\n",
		mr.AlreadyThere, mr.Requested, treeNote(mr), mr.KeyRanges-mr.TreeRanges, mr.LeftOut)
	printPaths(w, mp.Paths)
	np := mp.Native
	if np == nil {
		return // the scan plan follows
	}
	printBudget(w, np.BudgetPages, np.BudgetSource, np.PoolPages, np.FreePages, np.PageSize)
	t := newTable(w, table.Row{"table", "partition", "index", "manifest pages", "resident before", "to load"}, 4)
	for _, mt := range mp.Targets {
		t.AppendRow(table.Row{sqltext.Table(mt.Schema, mt.Table), mt.Partition, warm.IndexLabel(mt.Index, mt.Kind), mt.ManifestPages, mt.Resident, mt.Load})
	}
	t.Render()
	printSkipped(w, np.Skipped)
}

func printManifestSummary(w io.Writer, m *warm.ManifestReport) {
	var dropped int64
	var reasons []string
	for r, n := range m.Dropped {
		dropped += n
		reasons = append(reasons, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(reasons)
	keyed := ""
	if m.Keyed > 0 {
		keyed = fmt.Sprintf(", %d with a key range here", m.Keyed)
		if m.KeyedOnly > 0 {
			keyed += fmt.Sprintf(" (%d of them by key only: past the end of this server's file)", m.KeyedOnly)
		}
	}
	unnamed := ""
	if m.UnnamedLeftOut > 0 {
		unnamed = fmt.Sprintf(", %d left out: pages its source's files did not name, of tables that are not page-for-page copies here (their numbers name other pages)", m.UnnamedLeftOut)
	}
	fmt.Fprintf(w, "manifest %s (from %s, captured %s): %d entries, %d resolved here by page number%s, %d dropped%s%s\n",
		m.File, m.SourceServer, m.CapturedAt, m.Entries, m.Resolved, keyed, dropped, parenList(reasons), unnamed)
}

func printBudget(w io.Writer, budget int64, source string, pool, free, pageSize int64) {
	size := func(pages int64) string { return units.FormatBytes(pages * pageSize) }
	fmt.Fprintf(w, "budget %d pages (%s): %s; pool %d pages (%s), %d free\n", budget, size(budget), source, pool, size(pool), free)
}

// listedInText is how many lines of one kind (left out, already resident) the text output
// gives before it sums up the rest: a schema of thousands of tables would otherwise print
// a line for each. --json lists them all.
const listedInText = 20

func printLeftOut(w io.Writer, leftOut []warm.LeftOut) {
	var restPages int64
	for i, l := range leftOut {
		if i >= listedInText {
			restPages += l.Pages
			continue
		}
		what := ""
		if l.Table != "" {
			what = l.Name() + ": "
		}
		fmt.Fprintf(w, "left out: %s%s\n", what, l.Reason)
	}
	if n := len(leftOut) - listedInText; n > 0 {
		fmt.Fprintf(w, "left out: %d more (%d pages; --json lists them all)\n", n, restPages)
	}
}

// printAlreadyResident lists what the plan found resident, listedInText names at most.
func printAlreadyResident(w io.Writer, names []string) {
	for i, name := range names {
		if i == listedInText {
			fmt.Fprintf(w, "already resident: %d more (--json lists them all)\n", len(names)-listedInText)
			break
		}
		fmt.Fprintf(w, "already resident: %s\n", name)
	}
}

// treeNote says how many of a manifest warm's key ranges the tree path turned into pages
// by number (counted with them), "" when none.
func treeNote(m *warm.ManifestReport) string {
	if m.TreeRanges == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d key ranges found in this server's B-trees among them)", m.TreeRanges)
}

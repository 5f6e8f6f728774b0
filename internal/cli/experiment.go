package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/innowarm/innowarm/internal/experiment"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/progress"
	"github.com/innowarm/innowarm/internal/units"
)

func init() { register(newExperimentCmd) }

func newExperimentCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "experiment",
		Short: "Reproduce the classic buffer-pool experiments: coldstart, hotrows, concurrency; and recovery under traffic",
		Long: `experiment runs one of the three classic buffer-pool experiments, or recovery under live
traffic, in one command, on a throwaway sandbox server by default (sized with --pool-size
and --rows or --scale), or on an existing server given with the connection flags;
coldstart and recovery, which restart the server cold, then need --restart-cmd. An
experiment writes only into a schema of its own, which it creates, marks and drops.

Each prints a Markdown table on stdout (--json: everything as JSON) and writes a report
directory (--report-dir): report.html (self-contained, charts embedded, opens offline),
report.md, report.json and the charts as SVG and PNG.`,
		Example: `  innowarm experiment coldstart --rows 1000000
  innowarm experiment hotrows --pool-size 64M --rows 1000000
  innowarm experiment concurrency --scale 0.001
  innowarm experiment coldstart -h db1 -u admin -p --restart-cmd 'ssh db1 sudo systemctl restart mariadb'`,
	}
	cmd.AddCommand(newColdstartCmd(), newHotrowsCmd(), newConcurrencyCmd(), newRecoveryCmd())
	return cmd
}

// expFlags are the flags every experiment has.
type expFlags struct {
	cf             *connFlags
	restartCmd     string
	restartTimeout time.Duration
	pool           string
	sandboxDir     string
	keepSandbox    bool
	reportDir      string
	schema         string
	keepData       bool
	asJSON, quiet  bool
	flavor         string
}

// bind adds the common flags; --restart-cmd and --restart-timeout only to the experiments
// that restart the server (restarts), since the others would ignore them.
func (f *expFlags) bind(cmd *cobra.Command, name, pool string, restarts bool) {
	f.cf = addConnFlags(cmd)
	fl := cmd.Flags()
	f.restartTimeout = 5 * time.Minute
	if restarts {
		fl.StringVar(&f.restartCmd, "restart-cmd", "", "on an existing server: shell command that restarts it (run with sh -c; innowarm then waits until it answers and drops the OS page cache when root)")
		fl.DurationVar(&f.restartTimeout, "restart-timeout", f.restartTimeout, "how long to wait for the server to answer after --restart-cmd")
	}
	fl.StringVar(&f.pool, "pool-size", pool, "sandbox: innodb_buffer_pool_size")
	fl.StringVar(&f.sandboxDir, "sandbox-dir", "", "sandbox: directory (default: a temporary one)")
	fl.BoolVar(&f.keepSandbox, "keep-sandbox", false, "sandbox: keep it (stopped) instead of removing it at the end")
	flavorFlag(cmd, &f.flavor)
	fl.StringVar(&f.reportDir, "report-dir", "", "report directory (default: ./innowarm-"+name+"-YYYYMMDD-HHMMSS)")
	fl.StringVar(&f.schema, "schema", "innowarm_"+name, "schema the experiment creates, fills and drops")
	fl.BoolVar(&f.keepData, "keep-data", false, "leave the experiment's schema in place at the end")
	fl.BoolVar(&f.asJSON, "json", false, "print the results as JSON instead of the Markdown table")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress output")
}

// serverFlags are the connection flags that point at an existing server: any of them
// sends the experiment there (`--login-path prod` ran on a sandbox). The rest of the
// connection flags (notServerFlags) say nothing of which server; a test keeps every
// connection flag in one list or the other.
var serverFlags = []string{"host", "port", "socket", "protocol", "user", "password",
	"defaults-file", "defaults-extra-file", "defaults-group-suffix", "login-path",
	"ssl-mode", "ssl", "skip-ssl", "ssl-verify-server-cert", "ssl-ca", "ssl-cert", "ssl-key"}

// notServerFlags are the connection flags that do not point at a server by themselves
// (--database names the experiment's schema).
var notServerFlags = []string{"database", "db", "connect-timeout", "no-defaults", "help"}

// onServer reports whether the command line points at an existing server.
func (f *expFlags) onServer(cmd *cobra.Command) bool {
	if f.restartCmd != "" {
		return true
	}
	for _, n := range serverFlags {
		if cmd.Flags().Changed(n) {
			return true
		}
	}
	return false
}

// prepare checks the common flags, then creates the target: a sandbox, or the existing
// server. undo removes the report directory prepare created, while it is empty: for a run
// refused or failed before its report.
func (f *expFlags) prepare(cmd *cobra.Command, name string, needsRestart bool) (t *experiment.Target, dir string, undo func(), log *logx.Logger, prog progress.Config, err error) {
	log = logx.New(cmd.ErrOrStderr(), f.quiet)
	opts, err := f.cf.resolve(cmd)
	if err != nil {
		return nil, "", nil, nil, prog, err
	}
	if cmd.Flags().Changed("database") && !cmd.Flags().Changed("schema") {
		f.schema = opts.Database
	}
	opts.Database = ""
	if strings.TrimSpace(f.schema) == "" {
		return nil, "", nil, nil, prog, usagef("--schema is empty: name the schema the experiment may create")
	}
	server := f.onServer(cmd)
	if server {
		for _, n := range []string{"pool-size", "sandbox-dir", "keep-sandbox", "flavor"} {
			if cmd.Flags().Changed(n) {
				return nil, "", nil, nil, prog, usagef("--%s applies to the sandbox, but the connection flags point at an existing server: leave one or the other out", n)
			}
		}
		if needsRestart && f.restartCmd == "" {
			return nil, "", nil, nil, prog, usagef("%s needs cold restarts and this server has no restart method: give --restart-cmd (e.g. 'systemctl restart mariadb'), or leave out the connection flags to run it on a sandbox", name)
		}
	} else if f.restartCmd != "" {
		return nil, "", nil, nil, prog, usagef("--restart-cmd applies to an existing server")
	}
	pool, err := units.ParseBytes(f.pool)
	if err != nil {
		return nil, "", nil, nil, prog, usagef("--pool-size: %v", err)
	}
	if f.restartTimeout < time.Second {
		return nil, "", nil, nil, prog, usagef("--restart-timeout must be at least 1s")
	}
	dir = f.reportDir
	if dir == "" {
		dir = fmt.Sprintf("innowarm-%s-%s", name, time.Now().Format("20060102-150405"))
	}
	if undo, err = experiment.PrepareReportDir(dir); err != nil {
		return nil, "", nil, nil, prog, err
	}
	prog = progress.Config{Out: cmd.ErrOrStderr(), Bars: !f.quiet && progress.IsTerminal(os.Stderr) && cmd.ErrOrStderr() == os.Stderr, Quiet: f.quiet}
	if server {
		t = experiment.OnServer(opts, f.restartCmd, log)
		t.RestartTimeout = f.restartTimeout
		return t, dir, undo, log, prog, nil
	}
	t, err = experiment.NewSandbox(cmd.Context(), experiment.SandboxConfig{Dir: f.sandboxDir, PoolSize: pool, Keep: f.keepSandbox, Flavor: f.flavor}, log)
	if err != nil {
		undo()
		return nil, "", nil, nil, prog, err
	}
	return t, dir, undo, log, prog, nil
}

// runFunc runs one experiment on a target.
type runFunc func(ctx context.Context, t *experiment.Target, dir string, log *logx.Logger, prog progress.Config) (experiment.Result, error)

// runE checks the flags, prepares the target, runs the experiment, writes the report and
// prints the results; the sandbox is removed at the end, also after an error or Ctrl-C.
func (f *expFlags) runE(name string, needsRestart bool, validate func() error, runExp runFunc) func(*cobra.Command, []string) error {
	return run(func(cmd *cobra.Command, _ []string) error {
		if err := validate(); err != nil {
			return err
		}
		t, dir, undo, log, prog, err := f.prepare(cmd, name, needsRestart)
		if err != nil {
			return err
		}
		defer t.Close()
		res, err := runExp(cmd.Context(), t, dir, log, prog)
		if err == nil {
			err = f.finish(cmd, res, dir, log)
		}
		if err != nil {
			undo() // a run refused at the server (a schema not its own) wrote nothing
		}
		return err
	})
}

// finish writes the report and prints the results.
func (f *expFlags) finish(cmd *cobra.Command, res experiment.Result, dir string, log *logx.Logger) error {
	if err := experiment.WriteReport(dir, res); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if f.asJSON {
		return printJSON(out, res)
	}
	_, _ = io.WriteString(out, res.Markdown())
	fmt.Fprintf(out, "\nReport: %s\n", experiment.ReportHTML(dir))
	log.Infof("report written to %s", dir)
	return nil
}

func newColdstartCmd() *cobra.Command {
	var f expFlags
	var o experiment.ColdstartOptions
	var seed int64
	var scenarios []string
	cmd := &cobra.Command{
		Use:   "coldstart",
		Short: "The 2017 mysql-warmup benchmark: unique-key lookups after cold restarts, with and without warm-ups",
		Long: `coldstart builds test_data (id INT AUTO_INCREMENT primary key, random_str VARCHAR(255)
indexed, random_str2 VARCHAR(255)) with --rows unique random strings (generated by the
server, the index added after the load), writes a file of --queries lookups of distinct
existing random_str values, and runs it on one connection after cold restarts:

  cold restart: first pass (cold), second pass (hot)
  cold restart, innowarm warm: first and second pass
  cold restart, old-tool scans (one connection, one statement per key column, as the
    2017 mysql-warmup gem did): first and second pass
  cold restart, InnoDB's own load of its dump taken after the hot pass at
    innodb_buffer_pool_dump_pct 25, then 100: first pass
  with --snapshot: cold restart, innowarm warm --from a manifest captured after the hot
    pass: first pass

It reports seconds, QPS, p95, buffer-pool misses (Innodb_buffer_pool_reads) and read-ahead
per pass, warm-up times and ratios to the hot pass, beside the 2017 figures. On an existing
server it needs --restart-cmd; the dump/load baselines need innowarm on the database host.`,
		Example: `  innowarm experiment coldstart --rows 2000000 --pool-size 512M
  innowarm experiment coldstart --rows 10000000 --pool-size 256M --snapshot   # the 2017 scale
  innowarm experiment coldstart -S /run/mysqld/mysqld.sock -u root --restart-cmd 'systemctl restart mariadb'`,
	}
	f.bind(cmd, "coldstart", "512M", true)
	fl := cmd.Flags()
	fl.Int64Var(&o.Rows, "rows", 2_000_000, "rows of test_data")
	fl.Int64Var(&o.Queries, "queries", 20_000, "lookups in the query file")
	fl.BoolVar(&o.Snapshot, "snapshot", false, "also warm from a manifest captured after the hot pass (innowarm snapshot + warm --from)")
	fl.StringVar(&o.WarmMethod, "warm-method", "auto", "innowarm warm's --method: auto, native or scan")
	fl.DurationVar(&o.Interval, "interval", time.Second, "resolution of the warm-up curve")
	fl.Int64Var(&seed, "seed", 2017, "seed of the random lookups")
	fl.IntVar(&o.Repeat, "repeat", 1, "run every scenario this many times (each after its own cold restart) and report the runs with the median times")
	fl.StringSliceVar(&scenarios, "scenarios", nil, "run only these scenarios besides cold: "+strings.Join(experiment.ColdstartScenarios[1:], ","))
	cmd.RunE = f.runE("coldstart", true, func() error {
		o.Seed, o.Scenarios = uint64(seed), scenarios
		return experiment.ValidateColdstart(o)
	}, func(ctx context.Context, t *experiment.Target, dir string, log *logx.Logger, prog progress.Config) (experiment.Result, error) {
		o.Schema, o.KeepData, o.Dir, o.Progress, o.Log = f.schema, f.keepData, dir, prog, log
		res, err := experiment.Coldstart(ctx, t, o)
		if err != nil {
			return nil, err
		}
		res.ReportDir = dir
		return res, nil
	})
	return cmd
}

func newHotrowsCmd() *cobra.Command {
	var f expFlags
	var o experiment.HotrowsOptions
	var seed int64
	cmd := &cobra.Command{
		Use:   "hotrows",
		Short: "Rows vs pages: how many random hot rows fit in the buffer pool, and how many once clustered",
		Long: `hotrows shows that InnoDB caches pages, not rows. On an sbtest table (id, k, c CHAR(120),
pad CHAR(60); ~224 bytes a row, ~70 a page) several times the pool, it picks a random hot
set of K ids (K from --min-hot, doubling), reads each row once, then times --queries random
selects of the set, and reports per K the distinct pages the set spans, misses per query,
QPS and p95, and where the set stops fitting (the 2007 measurement: a 128 MiB pool that
should hold ~500k such rows held only 6,400-12,800 random hot rows). Then the same rows,
clustered into a contiguous id range in a copy of the table, show how far the knee moves.`,
		Example: `  innowarm experiment hotrows --pool-size 64M --rows 1000000
  innowarm experiment hotrows --pool-size 128M --rows 10000000 --queries 50000   # the 2007 scale`,
	}
	f.bind(cmd, "hotrows", "64M", false)
	fl := cmd.Flags()
	fl.Int64Var(&o.Rows, "rows", 1_000_000, "rows of the sbtest table (make it several times the pool)")
	fl.Int64Var(&o.Queries, "queries", 10_000, "timed random selects per hot-set size")
	fl.Int64Var(&o.MinHot, "min-hot", 100, "smallest hot set")
	fl.Int64Var(&o.MaxHot, "max-hot", 0, "largest hot set; 0: 128 times the pool's pages, at most --rows")
	fl.Int64Var(&seed, "seed", 2007, "seed of the hot sets")
	fl.BoolVar(&o.MakeYoung, "make-young", true, "set innodb_old_blocks_time=0 while measuring (restored after), so a hot page is made young on its second read as in 2007; =false keeps the server's setting")
	cmd.RunE = f.runE("hotrows", false, func() error {
		o.Seed = uint64(seed)
		return experiment.ValidateHotrows(o)
	}, func(ctx context.Context, t *experiment.Target, dir string, log *logx.Logger, prog progress.Config) (experiment.Result, error) {
		o.Schema, o.KeepData, o.Progress, o.Log = f.schema, f.keepData, prog, log
		res, err := experiment.Hotrows(ctx, t, o)
		if err != nil {
			return nil, err
		}
		res.ReportDir = dir
		return res, nil
	})
	return cmd
}

func newConcurrencyCmd() *cobra.Command {
	var f expFlags
	var o experiment.ConcurrencyOptions
	var clients string
	cmd := &cobra.Command{
		Use:   "concurrency",
		Short: "The MariaDB mixed-load matrix: mysqlslap's auto-generated mixed load by clients and queries",
		Long: `concurrency runs mysqlslap's auto-generated mixed load (--auto-generate-sql
--auto-generate-sql-add-autoincrement --auto-generate-sql-load-type=mixed --engine=innodb)
with innowarm bench at every --concurrency level and at the original's queries per client
(1,000 to 1,000,000) times --scale, --iterations times each, and prints the original's two
tables: total seconds, and milliseconds per query (seconds over queries per client), plus
the p95 latency of one query. The original (MariaDB 10.0, HDD) went from ~0.6 ms a query at
one client to ~3.0 ms at 100.`,
		Example: `  innowarm experiment concurrency --scale 0.001
  innowarm experiment concurrency --scale 0.01 --concurrency 1,10,50 -S /run/mysqld/mysqld.sock -u root`,
	}
	f.bind(cmd, "concurrency", "256M", false)
	fl := cmd.Flags()
	fl.Float64Var(&o.Scale, "scale", 0.001, "multiplies the original queries per client (1,000 ... 1,000,000)")
	fl.StringVar(&clients, "concurrency", "1,10,30,50,100", "concurrency levels")
	fl.IntVar(&o.Iterations, "iterations", 3, "rounds per cell")
	cmd.RunE = f.runE("concurrency", false, func() error {
		for _, c := range strings.Split(clients, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(c))
			if err != nil || n < 1 || n > 10000 {
				return usagef("--concurrency %q: give client counts from 1 to 10000, comma-separated", clients)
			}
			o.Clients = append(o.Clients, n)
		}
		return experiment.ValidateConcurrency(o)
	}, func(ctx context.Context, t *experiment.Target, dir string, log *logx.Logger, prog progress.Config) (experiment.Result, error) {
		o.Schema, o.KeepData, o.Progress, o.Log = f.schema, f.keepData, prog, log
		res, err := experiment.Concurrency(ctx, t, o)
		if err != nil {
			return nil, err
		}
		res.ReportDir = dir
		return res, nil
	})
	return cmd
}

func newRecoveryCmd() *cobra.Command {
	var f expFlags
	var o experiment.RecoveryOptions
	var scenarios []string
	cmd := &cobra.Command{
		Use:   "recovery",
		Short: "Restart to hot under live traffic: throughput and p95 each second from the moment a restarted server answers",
		Long: `recovery builds sbtest1 (make --rows several times the pool), then restarts the server cold
again and again with traffic (--clients point selects, keys drawn --dist; closed loop, or
open loop at --rate) from the moment it answers, and records throughput and p95 every
second for --duration:

  cold: the traffic's own reads only
  innodb-load-25, innodb-load-100: the server loads its own dump (taken from the hot pool at
    innodb_buffer_pool_dump_pct 25 / 100) at startup (sandbox only)
  innowarm-snapshot: innowarm warm --from a snapshot of the hot pool, started with the server
    (waiting for it, as --wait-for-server does) and running beside the traffic
  innowarm-indexes: innowarm warm of the schema, started the same way
  follow-failover: a standby (a physical copy, sandbox only) restarted cold and kept by
    innowarm follow while the primary serves the traffic; then the primary stops and the
    traffic moves to the standby (follow, not told, runs on: its round in flight finishes)

Each run's hot level is the same traffic's next --hot-duration on the recovered server, so
that other work on the machine moves the level and the window alike. Per scenario it reports, as medians of --rounds: seconds of full service lost (the
integral of (hot - qps) / hot), t50 and t95 (from then on throughput stays at or above 50% /
95% of hot), the share of hot served in the first 5 s, the worst second's p95 and when the pool
held 90% of the hot pool; beside the physical limit: the hot set's bytes over the disk's
sequential read speed, measured on the table's file in the same run.`,
		Example: `  innowarm experiment recovery --pool-size 256M --rows 3000000 --rounds 3
  innowarm experiment recovery --scenarios innodb-load-100,innowarm-snapshot --duration 30s`,
	}
	f.bind(cmd, "recovery", "256M", true)
	fl := cmd.Flags()
	fl.Int64Var(&o.Rows, "rows", 3_000_000, "rows of sbtest1 (about 230 bytes each: make it several times the pool)")
	fl.IntVar(&o.Clients, "clients", 8, "clients of the traffic")
	var writers string
	fl.StringVar(&writers, "write-clients", "", "of --clients, this many (N, or N% rounded up) run sysbench's read-write transactions instead of point selects: traffic that also writes; the curve is the point selects'")
	fl.DurationVar(&o.UnsettledPrimary, "unsettled-primary", 0, "follow-failover: restart the primary cold as follow starts and fail it after this much of its traffic (and one good follow round): a standby following a primary still warming up; 0: the primary is hot")
	fl.DurationVar(&o.PoolPagesEvery, "pool-pages-every", 0, "cold and follow-failover: take the server's list of its pages this often (e.g. 5s) and report in report.json's turnover which pages came in and left between each two: pages read back after they were evicted, by their place in the pool when the server answered; 0: off")
	var rate string
	fl.StringVar(&rate, "rate", "", "open-loop traffic: point selects per second, or N% of the hot throughput a closed-loop run measures first (e.g. 50%); default: closed loop")
	fl.StringVar(&o.Dist, "dist", "pareto", "key distribution of the point selects: uniform, zipf[:S], pareto[:H], special (sysbench 1.0's default, its --rand-spec-* defaults), hotset:ROWS_PCT:ACCESS_PCT")
	fl.DurationVar(&o.Duration, "duration", 60*time.Second, "traffic after each restart")
	fl.DurationVar(&o.HotDuration, "hot-duration", 20*time.Second, "traffic after each window, on the recovered server: that run's hot level")
	fl.IntVar(&o.Rounds, "rounds", 3, "rounds of every scenario (each after its own cold restart); medians are reported")
	fl.StringVar(&o.WarmMethod, "warm-method", "auto", "innowarm warm's --method: auto, native or scan")
	fl.StringVar(&o.WarmByKey, "warm-by-key", "", "innowarm-snapshot: warm --from's --by-key (auto, pages, sql, tree); default auto")
	fl.IntVar(&o.WarmParallel, "warm-parallel", 0, "innowarm warm's --parallel; 0: its default")
	fl.StringSliceVar(&scenarios, "scenarios", nil, "run only these scenarios besides cold: "+strings.Join(experiment.RecoveryScenarios[1:], ","))
	pace := addPacingFlagsNamed(cmd, "warm-")
	cmd.RunE = f.runE("recovery", true, func() error {
		o.Scenarios = scenarios
		var err error
		if o.WarmPacing, err = pace.config(0); err != nil {
			return err
		}
		// The warm starts with the traffic, as warm --wait-for-server does: the same default.
		var dflt string
		if o.WarmPacing, dflt = pace.underTraffic(o.WarmPacing); dflt != "" {
			o.WarmPacingText = "--warm-nice (the default under traffic)"
		} else {
			o.WarmPacingText = pace.describe()
		}
		if o.Rate, o.RateOfHot, err = parseRate(rate); err != nil {
			return err
		}
		if o.WriteClients, err = parseShareOf(writers, o.Clients, "--write-clients"); err != nil {
			return err
		}
		return experiment.ValidateRecovery(o)
	}, func(ctx context.Context, t *experiment.Target, dir string, log *logx.Logger, prog progress.Config) (experiment.Result, error) {
		o.Schema, o.KeepData, o.Dir, o.Progress, o.Log = f.schema, f.keepData, dir, prog, log
		res, err := experiment.Recovery(ctx, t, o)
		if err != nil {
			return nil, err
		}
		res.ReportDir = dir
		return res, nil
	})
	return cmd
}

// parseShareOf reads a count ("2") or a share of total rounded up ("10%" of 8 is 1); "" is 0.
func parseShareOf(s string, total int, flag string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || v < 0 || v > 100 {
			return 0, usagef("%s %q: give a count or a share from 0%% to 100%%", flag, s)
		}
		return int(math.Ceil(v / 100 * float64(total))), nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, usagef("%s %q: give a count or a share from 0%% to 100%%", flag, s)
	}
	return n, nil
}

// parseRate reads recovery's --rate: "" (closed loop), a rate ("4000") or a share of the
// hot throughput ("50%").
func parseRate(s string) (rate, ofHot float64, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, 0, nil
	}
	pct, isPct := strings.CutSuffix(s, "%")
	v, perr := strconv.ParseFloat(pct, 64)
	switch {
	case perr != nil || v <= 0 || math.IsInf(v, 0) || math.IsNaN(v):
		return 0, 0, usagef("--rate %q: give point selects per second (4000) or a share of the hot throughput (50%%)", s)
	case isPct && v > 100:
		return 0, 0, usagef("--rate %q: a share of the hot throughput is at most 100%%", s)
	case isPct:
		return 0, v / 100, nil
	}
	return v, 0, nil
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/innowarm/innowarm/internal/bench"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sqltext"
)

func init() { register(newBenchCmd) }

func newBenchCmd() *cobra.Command {
	o := bench.Defaults()
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load generator: mysqlslap's command line, sysbench's statistics (latency percentiles, intervals, skewed keys)",
		Long: `bench runs queries from many clients and measures them. It takes mysqlslap's command
lines (--query, --delimiter, --concurrency 1,10,50, --iterations, --number-of-queries,
--create, --auto-generate-sql and its options, --csv ...) with the same meaning and the same
generated SQL, and prints mysqlslap's result block, so scripts that parse it keep working,
followed by innowarm's lines: QPS, per-query latency percentiles from HdrHistograms, errors,
and the connection set-up, which is timed apart and never counted in the query latency.

With --workload it runs sysbench's point-select, read-only or read-write transactions (or hot-rows:
point selects on a fixed set of rows spread over the table) against the tables
'innowarm bench prepare' creates, with keys drawn --dist uniform (the default), zipf[:S],
pareto[:H], gaussian (tuned by --rand-spec-iter), special (sysbench 1.0's default, tuned by
--rand-spec-pct, --rand-spec-iter and --rand-spec-res) or hotset:ROWS_PCT:ACCESS_PCT, for
--time or --events. A transaction draws a table for each group of its statements, as
sysbench's do.

--report-interval 1s prints a line per interval (qps, p95, errors): the warm-up curve after
a restart. --histogram prints the latency histogram, --json every run and interval.

Safety: bench creates and drops only a schema it created itself (it marks them). Pointed at
an existing schema it runs there and never drops it; a run that writes (--create, write,
update and mixed load types, writing queries) refuses a schema innowarm did not create
unless --allow-writes-in-existing-schema.

A failed query stops the run with its SQL and the server's message (exit 1), unless
--ignore-errors, which counts failures by error and goes on. Ctrl-C stops every running
query on the server (KILL QUERY) and exits 130.`,
		Example: `  # the 2017 warm-up benchmark: 20k lookups from a file
  innowarm bench -u root -p --create-schema=warmup_benchmark --delimiter=";" \
      --query=benchmark_query_20000_rows.sql --concurrency=1 --iterations=1
  # mysqlslap's mixed load at 1, 10 and 50 clients, 3 rounds each
  innowarm bench -a --auto-generate-sql-add-autoincrement --concurrency=1,10,50 \
      --number-of-queries=10000 --iterations=3 --engine=innodb
  # sysbench-style: tables, then a skewed point-select load with a line per second
  innowarm bench prepare --rows 1000000 --tables 4
  innowarm bench --workload point-select --dist zipf:0.9 -c 8 --time 60s --report-interval 1s
  innowarm bench cleanup`,
	}
	cf := addConnFlags(cmd)
	// mysqlslap's users keep its settings in [mysqlslap] (MariaDB's also [mariadb-slap]).
	cf.flags.ReadAlso("mysqlslap", "mariadb-slap")
	fl := cmd.Flags()
	var csv string
	// mysqlslap's options
	fl.StringVarP(&o.Query, "query", "q", "", "query to run: SQL text, or a file of statements split at --delimiter")
	fl.StringVarP(&o.Delimiter, "delimiter", "F", bench.DefaultDelimiter, "statement delimiter in --query, --create, --pre-query and --post-query")
	fl.StringVarP(&o.ConcurrencySpec, "concurrency", "c", "1", "clients; a list like 1,10,50 runs once per level")
	fl.IntVarP(&o.Iterations, "iterations", "i", 1, "rounds per concurrency level")
	fl.Uint64Var(&o.NumberOfQueries, "number-of-queries", 0, "total queries, split evenly over the clients as mysqlslap does (the remainder is not run)")
	fl.StringVar(&o.Create, "create", "", "SQL text or file run before each round, in a fresh schema innowarm creates")
	fl.StringVar(&o.PreQuery, "pre-query", "", "SQL text or file run before each round")
	fl.StringVar(&o.PostQuery, "post-query", "", "SQL text or file run after each round")
	fl.StringVar(&o.Schema, "create-schema", "", `schema to run in (default: -D, else "mysqlslap", or "sbtest" for --workload)`)
	fl.BoolVar(&o.NoDrop, "no-drop", false, "keep the schema innowarm created")
	fl.StringVarP(&o.EngineSpec, "engine", "e", "", "storage engines for the created tables, comma-separated (engine:option allowed); the run repeats per engine")
	fl.IntVar(&o.Commit, "commit", 0, "COMMIT every N statements (autocommit off)")
	fl.IntVar(&o.Detach, "detach", 0, "close and reopen each client's connection every N statements")
	fl.StringVar(&csv, "csv", "", "print mysqlslap's CSV lines to FILE (appended), or to stdout with --csv alone")
	fl.Lookup("csv").NoOptDefVal = "-"
	fl.BoolVarP(&o.Silent, "silent", "s", false, "print no results")
	fl.BoolVar(&o.OnlyPrint, "only-print", false, "print the SQL the run would send, without connecting")
	fl.BoolVarP(&o.AutoGenerate, "auto-generate-sql", "a", false, "generate the table and the queries, as mysqlslap does")
	fl.StringVar(&o.Auto.LoadType, "auto-generate-sql-load-type", bench.LoadMixed, "mixed, read, write, key or update")
	fl.BoolVar(&o.Auto.AddAutoincrement, "auto-generate-sql-add-autoincrement", false, "add an AUTO_INCREMENT id to t1")
	fl.BoolVar(&o.Auto.GUIDPrimary, "auto-generate-sql-guid-primary", false, "add a UUID primary key to t1")
	fl.Uint64Var(&o.Auto.UniqueQueryNumber, "auto-generate-sql-unique-query-number", 10, "distinct generated queries")
	fl.Uint64Var(&o.Auto.UniqueWriteNumber, "auto-generate-sql-unique-write-number", 10, "distinct generated INSERTs for the load phase")
	fl.Uint64Var(&o.Auto.WriteNumber, "auto-generate-sql-write-number", 100, "statements of the load phase, the CREATE TABLE included")
	fl.IntVar(&o.Auto.SecondaryIndexes, "auto-generate-sql-secondary-indexes", 0, "UUID columns with a unique key to add to t1")
	fl.Uint64Var(&o.Auto.ExecuteNumber, "auto-generate-sql-execute-number", 0, "queries per client")
	fl.StringVarP(&o.IntColsSpec, "number-int-cols", "y", "", "INT columns of t1 (default 1); N:1 indexes them")
	fl.StringVarP(&o.CharColsSpec, "number-char-cols", "x", "", "VARCHAR(128) columns of t1 (default 1); N:1 indexes them")
	// innowarm's
	fl.BoolVar(&o.AllowWrites, "allow-writes-in-existing-schema", false, "let a writing run use a schema innowarm did not create")
	fl.StringVar(&o.Workload, "workload", "", "point-select, read-only, read-write or hot-rows, on 'bench prepare' tables")
	fl.StringVar(&o.Dist, "dist", "", "key distribution of --workload: uniform (default), zipf[:S], pareto[:H], gaussian, special, hotset:ROWS_PCT:ACCESS_PCT")
	// sysbench's name of it, so a sysbench command line's --rand-type carries over.
	fl.StringVar(&o.Dist, "rand-type", "", "sysbench's name of --dist")
	_ = fl.MarkHidden("rand-type")
	var specIter, specPct, specRes int
	fl.IntVar(&specIter, "rand-spec-iter", bench.DefaultSpecIter, "--dist gaussian: uniform draws averaged for each key; --dist special: for each key outside the special part (sysbench's --rand-spec-iter)")
	fl.IntVar(&specPct, "rand-spec-pct", bench.DefaultSpecPct, "--dist special: size of the special part, in % of the ids, at the middle of the range (sysbench 1.0's --rand-spec-pct)")
	fl.IntVar(&specRes, "rand-spec-res", bench.DefaultSpecRes, "--dist special: % of the keys drawn from the special part (sysbench 1.0's --rand-spec-res)")
	fl.IntVar(&o.Tables, "tables", 0, "sbtest tables to use (default: all of sbtest1..N)")
	fl.Int64Var(&o.HotRows, "hot-rows", 0, "rows in the hot set of --workload hot-rows (default: 1% of the table)")
	fl.Int64Var(&o.RangeSize, "range-size", 100, "rows per range query of --workload read-only and read-write")
	fl.DurationVar(&o.Time, "time", 0, "run each round this long (default for --workload: 10s)")
	fl.Uint64Var(&o.Events, "events", 0, "--workload: stop each round after this many events (transactions), all clients together")
	fl.Float64Var(&o.Rate, "rate", 0, "--workload: open loop, this many events per second (all clients together), each started on schedule; one started late because its client was busy counts from that time (sysbench --rate). Default: closed loop")
	fl.DurationVar(&o.ReportInterval, "report-interval", 0, "print qps, p95 and errors every interval (e.g. 1s)")
	fl.BoolVar(&o.Histogram, "histogram", false, "print the latency histogram of each level")
	fl.BoolVar(&o.JSON, "json", false, "print every run and interval as JSON")
	fl.BoolVar(&o.IgnoreErrors, "ignore-errors", false, "count failed queries (by error) and go on instead of stopping")
	fl.StringVar(&o.IOMode, "io", bench.IOAuto, "how clients wait for the server: auto, blocking or netpoll")
	_ = fl.MarkHidden("io")
	mysqlBoolForms(fl, "no-drop", "silent", "only-print", "auto-generate-sql", "auto-generate-sql-add-autoincrement",
		"auto-generate-sql-guid-primary", "allow-writes-in-existing-schema", "histogram", "json", "ignore-errors")

	cmd.RunE = run(func(cmd *cobra.Command, _ []string) error {
		opts, err := resolveMysqlslapGroups(cmd, cf)
		if err != nil {
			return err
		}
		dropOtherModesFileOptions(cmd)
		o.CSV = csv
		// Only the ones given: bench refuses them without --dist special (or gaussian). An
		// option file's apply where the run's distribution takes them, and are ignored
		// elsewhere, with a warning: a file kept for special runs must not stop the others.
		var unused []string
		for _, x := range []struct {
			name string
			v    *int
			dst  **int
		}{{"rand-spec-iter", &specIter, &o.RandSpecIter}, {"rand-spec-pct", &specPct, &o.RandSpecPct}, {"rand-spec-res", &specRes, &o.RandSpecRes}} {
			switch {
			case onCommandLine(fl, x.name):
				*x.dst = x.v
			case given(fl, x.name) && distTakes(o.Workload, o.Dist, x.name):
				*x.dst = x.v
			case given(fl, x.name):
				unused = append(unused, fmt.Sprintf("%s=%d", x.name, *x.v))
			}
		}
		if len(unused) > 0 {
			logx.New(cmd.ErrOrStderr(), false).Warnf("option files: ignoring %s, which this run's key distribution does not take", strings.Join(unused, ", "))
		}
		o.Schema = schemaName(cmd, o.Schema, opts.Database, o.Workload != "")
		plan, err := bench.NewPlan(o)
		if err != nil {
			return err
		}
		stdout := cmd.OutOrStdout()
		if plan.OnlyPrint {
			return bench.PrintOnly(stdout, plan)
		}
		if plan.JSON && plan.CSV == "-" {
			return usagef("--csv without a file prints to stdout, as --json does: give --csv=FILE")
		}
		log := logx.New(cmd.ErrOrStderr(), plan.Silent)
		sink := &bench.Sink{Histogram: plan.Histogram}
		if !plan.Silent && !plan.JSON && plan.CSV == "" {
			sink.Out = stdout
		}
		if plan.ReportInterval > 0 && !plan.Silent {
			sink.Intervals = cmd.ErrOrStderr()
			if sink.Out != nil {
				sink.Intervals = stdout
			}
		}
		switch plan.CSV {
		case "":
		case "-":
			sink.CSV = stdout
		default:
			f, err := os.OpenFile(plan.CSV, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				return usagef("--csv: cannot open %s: %v", plan.CSV, err)
			}
			defer f.Close()
			sink.CSV = f
		}
		opts.Database = "" // the schema may not exist yet: bench creates it
		conn, err := connection.Open(cmd.Context(), opts)
		if err != nil {
			return err
		}
		defer conn.Close()
		rep, err := bench.Run(cmd.Context(), plan, bench.Env{Admin: conn, Sink: sink, Log: log})
		if err != nil {
			if plan.JSON && rep != nil && len(rep.Runs) > 0 && !errors.Is(err, context.Canceled) {
				// The levels that ran, the last one marked "partial" if the error cut it
				// short; the error still ends the command.
				if jerr := printJSON(stdout, rep); jerr != nil {
					log.Warnf("print the partial results: %v", jerr)
				}
			}
			return err
		}
		if plan.JSON {
			return printJSON(stdout, rep)
		}
		return nil
	})
	cmd.AddCommand(newBenchPrepareCmd(), newBenchCleanupCmd())
	return cmd
}

// mysqlslapOnlyOptions are the options of mysqlslap and mariadb-slap that bench does not
// implement ('mysqlslap --help' of MySQL 9.7, 'mariadb-slap --help' of MariaDB 10.11,
// MySQL 5.7's secure-auth and the Windows builds' pipe and shared-memory-base-name). Their
// connection options (host, port, socket, protocol, user, password, ssl, ssl-mode, ssl-ca,
// ssl-cert, ssl-key, ssl-verify-server-cert) apply as [client]'s do, and every other one
// is a flag of bench's with the same meaning.
var mysqlslapOnlyOptions = []string{
	// both
	"character-sets-dir", "compress", "debug", "debug-check", "debug-info", "default-auth",
	"plugin-dir", "post-system", "pre-system", "ssl-capath", "ssl-cipher", "ssl-crl",
	"ssl-crlpath", "tls-version", "verbose", "version",
	// mariadb-slap's
	"init-command",
	// MySQL's mysqlslap
	"compression-algorithms", "enable-cleartext-plugin", "get-server-public-key", "password1",
	"password2", "password3", "secure-auth", "server-public-key-path", "sql-mode",
	"ssl-fips-mode", "ssl-session-data", "ssl-session-data-continue-on-failed-reuse",
	"tls-ciphersuites", "tls-sni-servername", "zstd-compression-level",
	// Windows builds
	"pipe", "shared-memory-base-name",
}

// mysqlslapOnlyBooleans are the booleans of mysqlslapOnlyOptions: an option file may give
// them as skip-, disable- or enable- too, as mysqlslap reads them.
var mysqlslapOnlyBooleans = []string{
	"compress", "debug-check", "debug-info", "secure-auth", "get-server-public-key",
	"ssl-session-data-continue-on-failed-reuse",
}

// boolPrefixes are the mysql programs' prefixes of a boolean option (my_getopt): skip-
// and disable- set it false, enable- sets it true; given a value, skip-X=V and
// disable-X=V set X to the opposite of V.
var boolPrefixes = []struct {
	prefix string
	negate bool
}{{"skip-", true}, {"disable-", true}, {"enable-", false}}

// boolFamily is a boolean flag and its skip-, disable- and enable- forms: one setting.
type boolFamily struct {
	flags []*pflag.Flag
	// fromFiles is set while option files are applied: a family given on the command
	// line, in any of its forms, keeps the command line's value.
	fromFiles bool
}

func (f *boolFamily) changed() bool {
	for _, fl := range f.flags {
		if fl.Changed {
			return true
		}
	}
	return false
}

// slapBool is one form of a boolean flag, reading values as the mysql programs do: 1, 0,
// ON, OFF, TRUE or FALSE in any case (and Go's t, f).
type slapBool struct {
	inner  pflag.Value // the flag's own value: the family's setting
	fam    *boolFamily
	negate bool
	alias  bool
}

func (b *slapBool) String() string {
	if b.alias {
		return "false"
	}
	return b.inner.String()
}
func (b *slapBool) Type() string     { return "bool" }
func (b *slapBool) IsBoolFlag() bool { return true }
func (b *slapBool) Set(s string) error {
	v, ok := parseSlapBool(s)
	if !ok {
		return fmt.Errorf("%q is not a boolean: use 1 or 0, ON or OFF, TRUE or FALSE", s)
	}
	if b.fam.fromFiles && b.fam.changed() {
		return nil // the command line wins over option files, whichever form it used
	}
	return b.inner.Set(strconv.FormatBool(v != b.negate))
}

func parseSlapBool(s string) (bool, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "on", "true", "t":
		return true, true
	case "0", "off", "false", "f":
		return false, true
	}
	return false, false
}

// mysqlBoolForms makes the boolean flags names read values as mariadb-slap does (ON,
// OFF ...), and adds their hidden skip-, disable- and enable- forms, on the command line
// and in option files ([mysqlslap] skip-auto-generate-sql-add-autoincrement, a user's
// --enable-no-drop).
func mysqlBoolForms(fl *pflag.FlagSet, names ...string) {
	for _, name := range names {
		f := fl.Lookup(name)
		fam := &boolFamily{flags: []*pflag.Flag{f}}
		inner := f.Value
		f.Value = &slapBool{inner: inner, fam: fam}
		for _, p := range boolPrefixes {
			a := fl.VarPF(&slapBool{inner: inner, fam: fam, negate: p.negate, alias: true}, p.prefix+name, "", "mysqlslap's form of --"+name)
			a.NoOptDefVal = "true"
			a.Hidden = true
			fam.flags = append(fam.flags, a)
		}
	}
}

// given says whether a flag was set, on the command line or by an option file (which does
// not mark it changed): its value is not its default.
func given(fl *pflag.FlagSet, name string) bool {
	f := fl.Lookup(name)
	return onCommandLine(fl, name) || f.Value.String() != f.DefValue
}

// onCommandLine says whether a flag was given on the command line: a boolean in any of
// its forms (--skip-no-drop gives --no-drop).
func onCommandLine(fl *pflag.FlagSet, name string) bool {
	f := fl.Lookup(name)
	if b, ok := f.Value.(*slapBool); ok {
		return b.fam.changed()
	}
	return f.Changed
}

// distTakes says whether a --workload run keyed by dist takes the --rand-spec-* option
// name: special takes the three, gaussian --rand-spec-iter. A dist bench refuses takes
// them all, so that its error is the one reported.
func distTakes(workload, dist, name string) bool {
	if workload == "" {
		return false
	}
	d, err := bench.ParseDist(dist)
	switch {
	case err != nil, d.Kind == bench.DistSpecial:
		return true
	case d.Kind == bench.DistGaussian:
		return name == "rand-spec-iter"
	}
	return false
}

// Options that choose a kind of run and those that apply to one kind only. An option
// file's [mysqlslap] group holds mysqlslap's settings (engine=, number-of-queries=, ...)
// for mysqlslap-style runs; a --workload run must not stop on them, and an option file's
// --workload settings must not stop a mysqlslap-style run given on the command line.
var (
	slapRunOptions     = []string{"query", "create", "auto-generate-sql", "engine", "number-of-queries", "commit", "csv", "only-print"}
	workloadRunOptions = []string{"workload", "dist", "rand-type", "rand-spec-iter", "rand-spec-pct", "rand-spec-res", "rate", "events"}
)

// dropOtherModesFileOptions resets the option-file settings that apply to another kind of
// run than the one chosen (on the command line, or by the option files alone), with one
// warning naming them. A flag on the command line is never dropped: combining it with
// another kind of run stays a usage error.
func dropOtherModesFileOptions(cmd *cobra.Command) {
	fl := cmd.Flags()
	fromFile := func(name string) bool {
		f := fl.Lookup(name)
		return !onCommandLine(fl, name) && f.Value.String() != f.DefValue
	}
	slapGiven := onCommandLine(fl, "query") || onCommandLine(fl, "auto-generate-sql")
	var drop []string
	switch {
	case fl.Lookup("workload").Value.String() != "" && (onCommandLine(fl, "workload") || !slapGiven):
		drop = slapRunOptions
	case slapGiven:
		drop = workloadRunOptions
	}
	var dropped []string
	for _, name := range drop {
		if fromFile(name) {
			f := fl.Lookup(name)
			dropped = append(dropped, name+"="+f.Value.String())
			_ = f.Value.Set(f.DefValue)
		}
	}
	if len(dropped) > 0 {
		logx.New(cmd.ErrOrStderr(), false).Warnf("option files: ignoring %s, which apply to another kind of run than this one", strings.Join(dropped, ", "))
	}
}

// resolveMysqlslapGroups resolves the connection options of a bench command, which reads
// mysqlslap's option groups: a user's existing [mysqlslap] or [mariadb-slap] group must
// not stop bench. The options of mysqlslap that bench does not implement are ignored, with
// one warning naming them; a key neither knows is still refused (exit 2), as everywhere in
// innowarm's own groups. On the command line they stay unknown flags: a user typing one
// now is told at once.
func resolveMysqlslapGroups(cmd *cobra.Command, cf *connFlags) (connection.Options, error) {
	var ignored []string
	register := func(key, name string) {
		// Registered after the command line was parsed, so that resolving the option files
		// finds them as the command's flags and hands them over instead of refusing them.
		if f := cmd.Flags().Lookup(key); f != nil {
			if v, ok := f.Value.(*ignoredOption); ok {
				v.seen = &ignored // a command run again in the same process
			}
			return
		}
		f := cmd.Flags().VarPF(&ignoredOption{name: name, seen: &ignored}, key, "", "mysqlslap's, ignored by bench")
		f.Hidden = true
	}
	for _, name := range mysqlslapOnlyOptions {
		register(name, name)
	}
	for _, name := range mysqlslapOnlyBooleans {
		for _, p := range boolPrefixes {
			register(p.prefix+name, name)
		}
	}
	// Option files are applied now: a boolean set on the command line in any of its forms
	// keeps that value.
	var families []*boolFamily
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if b, ok := f.Value.(*slapBool); ok && !b.alias {
			families = append(families, b.fam)
		}
	})
	for _, fam := range families {
		fam.fromFiles = true
	}
	opts, err := cf.resolve(cmd)
	for _, fam := range families {
		fam.fromFiles = false
	}
	if err != nil {
		return opts, err
	}
	if len(ignored) > 0 {
		logx.New(cmd.ErrOrStderr(), false).Warnf("option files: ignoring mysqlslap's %s, which innowarm bench does not implement", strings.Join(ignored, ", "))
	}
	return opts, nil
}

// ignoredOption is a mysqlslap option from an option file that bench ignores: setting it
// only records its name.
type ignoredOption struct {
	name string
	seen *[]string
}

func (o *ignoredOption) String() string { return "" }
func (o *ignoredOption) Type() string   { return "string" }
func (o *ignoredOption) Set(string) error {
	if !slices.Contains(*o.seen, o.name) {
		*o.seen = append(*o.seen, o.name)
	}
	return nil
}

// schemaName picks the schema: --create-schema, else the first -D schema, else mysqlslap's
// default (or sysbench's for workloads).
func schemaName(cmd *cobra.Command, flagValue, database string, workload bool) string {
	if cmd.Flags().Changed("create-schema") || flagValue != "" {
		return flagValue
	}
	if database != "" {
		return strings.TrimSpace(strings.Split(database, ",")[0])
	}
	if workload {
		return "sbtest"
	}
	return "mysqlslap"
}

func newBenchPrepareCmd() *cobra.Command {
	var o bench.PrepareOptions
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "prepare",
		Short: "Create sysbench-shaped tables (sbtest1..T: id PK, k INT indexed, c CHAR(120), pad CHAR(60)) for --workload",
		Long: `prepare creates T tables of N rows shaped like sysbench's (so sysbench runs on them too),
fast: the rows are generated by the server (MariaDB's Sequence engine; elsewhere multi-row
INSERTs) and the index on k is added after the load. The schema (default sbtest) is
created and marked as innowarm's; a schema innowarm created earlier is dropped and created
again. An existing schema innowarm did not create is refused unless
--allow-writes-in-existing-schema, and even then no existing table is ever dropped.`,
		Example: `  innowarm bench prepare --rows 1000000 --tables 4 -S /run/mysqld/mysqld.sock -u root
  innowarm bench --workload point-select --dist pareto -c 8 --time 30s`,
	}
	cf := addConnFlags(cmd)
	// mysqlslap's users keep its settings in [mysqlslap] (MariaDB's also [mariadb-slap]).
	cf.flags.ReadAlso("mysqlslap", "mariadb-slap")
	fl := cmd.Flags()
	fl.Int64Var(&o.Rows, "rows", 10000, "rows per table")
	fl.IntVar(&o.Tables, "tables", 1, "tables (sbtest1..T)")
	fl.StringVar(&o.Schema, "create-schema", "", `schema (default: -D, else "sbtest")`)
	fl.StringVar(&o.Engine, "engine", "InnoDB", "storage engine")
	fl.IntVar(&o.Threads, "threads", 2, "tables filled at once")
	fl.BoolVar(&o.AllowWrites, "allow-writes-in-existing-schema", false, "create the tables in an existing schema innowarm did not create")
	fl.BoolVar(&asJSON, "json", false, "print the result as JSON")
	mysqlBoolForms(fl, "allow-writes-in-existing-schema", "json")
	cmd.RunE = run(func(cmd *cobra.Command, _ []string) error {
		opts, err := resolveMysqlslapGroups(cmd, cf)
		if err != nil {
			return err
		}
		if err := prepareEngine(cmd, &o); err != nil {
			return err
		}
		o.Schema = schemaName(cmd, o.Schema, opts.Database, true)
		if o.Schema == "" {
			return usagef("the schema name is empty: give --create-schema")
		}
		opts.Database = ""
		conn, err := connection.Open(cmd.Context(), opts)
		if err != nil {
			return err
		}
		defer conn.Close()
		rep, err := bench.Prepare(cmd.Context(), conn, o, logx.Default())
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(cmd.OutOrStdout(), rep)
		}
		w := cmd.OutOrStdout()
		fmt.Fprintf(w, "prepared %d table(s) of %d rows in %s in %.1f s (%.0f rows/s): load %.1f s, index on k %.1f s; %s\n",
			len(rep.Tables), rep.Rows, sqltext.Ident(rep.Schema), rep.Seconds, rep.RowsPerSecond, rep.LoadSeconds, rep.IndexSeconds, rep.Method)
		return nil
	})
	return cmd
}

// prepareEngine reads prepare's --engine as mysqlslap's (engine:option adds the option to
// the CREATE TABLE). An option file's [mysqlslap] engine= is mysqlslap's list, one run per
// engine: prepare creates one set of tables, in the list's first engine, and says so; a
// list on the command line is refused.
func prepareEngine(cmd *cobra.Command, o *bench.PrepareOptions) error {
	engines, err := bench.ParseEngines(o.Engine)
	if err != nil {
		return err
	}
	if len(engines) > 1 {
		if onCommandLine(cmd.Flags(), "engine") {
			return usagef("--engine %q: prepare creates one set of tables, in one engine", o.Engine)
		}
		logx.New(cmd.ErrOrStderr(), false).Warnf("option files: engine=%s lists %d engines (mysqlslap runs once per engine): prepare creates its tables in the first, %s", o.Engine, len(engines), engines[0].Name)
	}
	o.Engine, o.EngineOption = engines[0].Name, engines[0].Option
	return nil
}

func newBenchCleanupCmd() *cobra.Command {
	var schema string
	cmd := &cobra.Command{
		Use:     "cleanup",
		Short:   "Drop a schema 'innowarm bench' created (never any other)",
		Example: "  innowarm bench cleanup --create-schema sbtest\n  innowarm bench cleanup --create-schema mysqlslap",
	}
	cf := addConnFlags(cmd)
	// mysqlslap's users keep its settings in [mysqlslap] (MariaDB's also [mariadb-slap]).
	cf.flags.ReadAlso("mysqlslap", "mariadb-slap")
	cmd.Flags().StringVar(&schema, "create-schema", "", `schema (default: -D, else "sbtest")`)
	cmd.RunE = run(func(cmd *cobra.Command, _ []string) error {
		opts, err := resolveMysqlslapGroups(cmd, cf)
		if err != nil {
			return err
		}
		schema = schemaName(cmd, schema, opts.Database, true)
		opts.Database = ""
		conn, err := connection.Open(cmd.Context(), opts)
		if err != nil {
			return err
		}
		defer conn.Close()
		dropped, err := bench.Cleanup(cmd.Context(), conn, schema)
		if err != nil {
			return err
		}
		w := cmd.OutOrStdout()
		if dropped {
			fmt.Fprintf(w, "dropped schema %s\n", sqltext.Ident(schema))
		} else {
			fmt.Fprintf(w, "schema %s does not exist: nothing to drop\n", sqltext.Ident(schema))
		}
		return nil
	})
	return cmd
}

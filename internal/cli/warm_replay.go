package cli

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/pacing"
	"github.com/innowarm/innowarm/internal/replay"
	"github.com/innowarm/innowarm/internal/report"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/units"
)

// replayFlags are the flags of warm --replay SOURCE.
type replayFlags struct {
	cmd         *cobra.Command
	source      string
	format      string
	concurrency int
	dedupe      bool
	sample      float64
	seed        uint64
	limit       int64
	timeout     time.Duration
	schema      string
	// connSchema is -D's schema as connOptions gave it to the connection.
	connSchema *string
}

// replayOnlyFlags only mean something with --replay.
var replayOnlyFlags = []string{"replay-format", "concurrency", "dedupe", "sample", "sample-seed", "limit", "replay-timeout", "replay-schema"}

// replayAlsoFlags are warm's flags, beside the connection's, the pacing's and the replay's
// own, that a replay uses. Every other warm flag is refused with --replay rather than
// silently ignored: a flag added to warm later is refused until a replay honours it.
var replayAlsoFlags = []string{"help", "database", "dry-run", "verbose", "json", "quiet", "lock-wait-timeout", "progress-interval"}

// replayFlagHints say what to give instead of a warm flag that a replay does not use.
var replayFlagHints = map[string]string{
	"parallel":          "its sessions are --concurrency",
	"statement-timeout": "its statements' time limit is --replay-timeout",
	"tables":            "it runs the statements of its SOURCE, in their own schemas",
	"exclude":           "it runs the statements of its SOURCE, in their own schemas",
	"all-databases":     "it runs the statements of its SOURCE, in their own schemas",
}

// replayAllowed is the set of flags a replay uses, the connection and pacing flags taken
// from their own definitions.
func replayAllowed() map[string]bool {
	probe := &cobra.Command{Use: "probe"}
	addConnFlags(probe)
	addPacingFlags(probe)
	allowed := map[string]bool{"replay": true}
	probe.Flags().VisitAll(func(fl *pflag.Flag) { allowed[fl.Name] = true })
	for _, name := range append(slices.Clone(replayOnlyFlags), replayAlsoFlags...) {
		allowed[name] = true
	}
	return allowed
}

func addReplayFlags(cmd *cobra.Command) *replayFlags {
	f := &replayFlags{cmd: cmd}
	fl := cmd.Flags()
	fl.StringVar(&f.source, "replay", "", "warm by running the application's own reads again: SOURCE is a slow log, a general log, a SQL file (- for stdin; gzip or bzip2 data is decompressed) or performance_schema")
	fl.StringVar(&f.format, "replay-format", string(replay.FormatAuto), "with --replay: the file's format: auto, slow, general, sql")
	fl.IntVar(&f.concurrency, "concurrency", replay.DefaultConcurrency, "with --replay: parallel sessions")
	fl.BoolVar(&f.dedupe, "dedupe", false, "with --replay: run one statement per digest (same shape, other values) and schema")
	fl.Float64Var(&f.sample, "sample", 1, "with --replay: run this fraction (0-1] of the read-only statements, the same ones for the same --sample-seed")
	fl.Uint64Var(&f.seed, "sample-seed", 1, "with --replay: seed of --sample")
	fl.Int64Var(&f.limit, "limit", 0, "with --replay: run at most this many statements (0: all)")
	fl.DurationVar(&f.timeout, "replay-timeout", 30*time.Second, "with --replay: server-side time limit of each statement (0: none)")
	fl.StringVar(&f.schema, "replay-schema", "", "with --replay: schema for statements whose source names none (default: -D)")
	return f
}

// active reports whether --replay was given.
func (f *replayFlags) active() bool { return f.source != "" }

// validate checks the replay flags: usage errors (exit 2) for bad values, for replay flags
// without --replay, and for scan flags with it. It returns nil when nothing replay-related
// was given.
func (f *replayFlags) validate() error {
	changed := func(name string) bool {
		fl := f.cmd.Flags().Lookup(name)
		return fl != nil && fl.Changed
	}
	if !f.active() {
		if changed("replay") {
			return usagef("--replay needs a SOURCE: a slow log, a general log, a SQL file, - or performance_schema")
		}
		for _, name := range replayOnlyFlags {
			if changed(name) {
				return usagef("--%s needs --replay SOURCE", name)
			}
		}
		return nil
	}
	allowed := replayAllowed()
	var refused error
	f.cmd.Flags().Visit(func(fl *pflag.Flag) {
		if refused == nil && !allowed[fl.Name] {
			hint := cmp.Or(replayFlagHints[fl.Name], "a replay runs the statements of its SOURCE")
			refused = usagef("--%s does not go with --replay: %s", fl.Name, hint)
		}
	})
	if refused != nil {
		return refused
	}
	if db := f.cmd.Flags().Lookup("database"); db != nil && db.Changed && len(catalog.SchemaNames(db.Value.String())) > 1 {
		return usagef("with --replay, -D names one schema: the default of the statements whose SOURCE names none (a name with a comma goes in backticks: -D '`a,b`')")
	}
	format, err := replay.ParseFormat(f.format)
	if err != nil {
		return usagef("--replay-format: %v", err)
	}
	if f.source == replay.PerfSchemaSource && format != replay.FormatAuto {
		return usagef("--replay-format does not apply to --replay performance_schema")
	}
	if f.concurrency < 1 || f.concurrency > 64 {
		return usagef("--concurrency %d: use 1 to 64", f.concurrency)
	}
	if !(f.sample > 0 && f.sample <= 1) {
		return usagef("--sample %g: use a fraction above 0 and at most 1 (0.1 runs one statement in ten)", f.sample)
	}
	if f.limit < 0 {
		return usagef("--limit %d: use 0 (all) or more", f.limit)
	}
	if f.timeout < 0 || f.timeout > 0 && f.timeout < time.Millisecond {
		return usagef("--replay-timeout %s: use 0 (no limit) or at least 1ms", f.timeout)
	}
	if f.source != "-" && f.source != replay.PerfSchemaSource {
		st, err := os.Stat(f.source)
		if err != nil {
			return usagef("--replay %s: %v (name a slow log, a general log, a SQL file, - for stdin, or performance_schema)", f.source, unwrapPathErr(err))
		}
		if st.IsDir() {
			return usagef("--replay %s is a directory: name a log or SQL file", f.source)
		}
	}
	return nil
}

// connOptions are the options to connect with for a replay: -D's one schema, unquoted
// (-D '`a,b`' names the schema a,b), is the session's database.
func (f *replayFlags) connOptions(opts connection.Options) connection.Options {
	if names := catalog.SchemaNames(opts.Database); len(names) == 1 {
		opts.Database = names[0]
		f.connSchema = &names[0]
	}
	return opts
}

// defaultSchema is the schema of the statements whose source names none when
// --replay-schema is not given: -D's one schema (the connection's database once
// connOptions has unquoted it), or none for a list.
func (f *replayFlags) defaultSchema(connDB string) string {
	if f.connSchema != nil && *f.connSchema == connDB {
		return connDB
	}
	if names := catalog.SchemaNames(connDB); len(names) == 1 {
		return names[0]
	}
	return ""
}

// quotedSchema reads --replay-schema: a name as given, or one name in backticks as innowarm
// prints it ("[`shop`]" in its lists), unquoted.
func quotedSchema(raw string) string {
	t := strings.TrimSpace(raw)
	if len(t) >= 2 && t[0] == '`' && t[len(t)-1] == '`' {
		if names := catalog.SchemaNames(t); len(names) == 1 {
			return names[0]
		}
	}
	return raw
}

func unwrapPathErr(err error) error {
	if pe := (*os.PathError)(nil); errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// flagBool and flagDuration read a flag of the command the replay flags were added to, if it
// has one (warm's --dry-run, --quiet, --lock-wait-timeout).
func (f *replayFlags) flagBool(name string) bool {
	if f.cmd.Flags().Lookup(name) == nil {
		return false
	}
	v, _ := f.cmd.Flags().GetBool(name)
	return v
}

func (f *replayFlags) flagDuration(name string) time.Duration {
	if f.cmd.Flags().Lookup(name) == nil {
		return 0
	}
	v, _ := f.cmd.Flags().GetDuration(name)
	return v
}

// run replays SOURCE on conn and prints the result: a table, or JSON ({"replay": {...}}).
// With the command's --dry-run it reads and classifies, and runs nothing.
func (f *replayFlags) run(cmd *cobra.Command, conn *connection.Conn, asJSON bool, pace pacing.Config) error {
	ctx := cmd.Context()
	format, err := replay.ParseFormat(f.format)
	if err != nil {
		return usagef("--replay-format: %v", err)
	}
	mode, err := replay.ServerMode(ctx, conn)
	if err != nil {
		return err
	}
	quiet := f.flagBool("quiet")
	log := logx.Default()
	if quiet {
		log = logx.New(os.Stderr, true)
	}
	var src replay.Source
	var psInfo *replay.PerfSchemaInfo
	if f.source == replay.PerfSchemaSource {
		s, info, err := replay.OpenPerfSchema(ctx, conn)
		if err != nil {
			return err
		}
		src, psInfo, format = s, &info, replay.FormatPerfSchema
		own := ""
		if info.Own > 0 {
			own = fmt.Sprintf(", %d of them innowarm's own", info.Own)
		}
		log.Infof("replay: %d statements from %s (keeps at most %d)%s", info.Rows, info.Table, info.Capacity, own)
	} else {
		s, used, err := replay.OpenFile(f.source, replay.FileOptions{Format: format, Mode: mode, Stdin: cmd.InOrStdin()})
		if err != nil {
			return err
		}
		src, format = s, used
		log.Infof("replay: reading %s as a %s", f.source, formatName(used))
	}
	defer src.Close()
	schema := quotedSchema(f.schema)
	if schema == "" {
		schema = f.defaultSchema(conn.Opts.Database)
	}
	// --verbose with --dry-run lists the statements that would run, as warm's plan does.
	type wouldRun struct {
		Line   int    `json:"line,omitempty"`
		Schema string `json:"schema,omitempty"`
		SQL    string `json:"sql"`
	}
	listed := []wouldRun{}
	var selected func(replay.Statement)
	if f.flagBool("dry-run") && f.flagBool("verbose") {
		selected = func(st replay.Statement) {
			listed = append(listed, wouldRun{Line: st.Line, Schema: cmp.Or(st.Schema, schema), SQL: st.SQL})
		}
	}
	o := f.options(schema, pace)
	o.Selected, o.Log, o.Mode = selected, log, &mode
	res, runErr := replay.Run(ctx, conn, src, o)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	res.Source, res.Format, res.PerfSchema = f.source, string(format), psInfo
	if psInfo != nil && psInfo.Truncated > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d statements were cut at performance_schema_max_sql_text_length and skipped: raise it (a restart) to replay them", psInfo.Truncated))
	}
	out := cmd.OutOrStdout()
	if asJSON {
		doc := map[string]any{"replay": res}
		if selected != nil {
			doc["statements"] = listed
		}
		runErr = withError(ctx, doc, runErr)
		if err := printJSON(out, doc); err != nil {
			return err
		}
	} else {
		for _, st := range listed {
			where := ""
			if st.Line > 0 {
				where = fmt.Sprintf("line %d: ", st.Line)
			}
			if st.Schema != "" {
				where += "[" + sqltext.Ident(st.Schema) + "] "
			}
			fmt.Fprintf(out, "would run: %s%s\n", where, st.SQL)
		}
		printReplayResult(out, res)
	}
	return runErr
}

// options are the replay's options from the flags: the replay's own, and warm's that it
// honours (--dry-run, --lock-wait-timeout, --progress-interval, the pacing).
func (f *replayFlags) options(schema string, pace pacing.Config) replay.Options {
	return replay.Options{
		Concurrency: f.concurrency, Dedupe: f.dedupe, Sample: f.sample, Seed: f.seed, Limit: f.limit,
		Timeout: f.timeout, LockWaitTimeout: f.flagDuration("lock-wait-timeout"), DefaultSchema: schema,
		DryRun: f.flagBool("dry-run"), Pacing: pace, ProgressEvery: f.flagDuration("progress-interval"),
	}
}

func formatName(f replay.Format) string {
	switch f {
	case replay.FormatSlow:
		return "slow log"
	case replay.FormatGeneral:
		return "general log"
	case replay.FormatSQL:
		return "SQL file"
	}
	return string(f)
}

func printReplayResult(w io.Writer, res *replay.Result) {
	what := fmt.Sprintf("%s (%s)", res.Source, formatName(replay.Format(res.Format)))
	if res.PerfSchema != nil {
		what = res.PerfSchema.Table
	}
	fmt.Fprintf(w, "replay of %s: %d statements read, %d read-only, %d skipped; ", what, res.Read, res.Runnable, res.SkippedTotal)
	if res.DryRun {
		fmt.Fprintf(w, "%d would run (dry run)\n", res.Selected)
	} else {
		fmt.Fprintf(w, "%d run, %d failed", res.Run, res.Errors)
		if res.TimedOut > 0 {
			fmt.Fprintf(w, " (%d at the time limit)", res.TimedOut)
		}
		fmt.Fprintf(w, ", in %.2f s on %d sessions\n", res.Seconds, res.Concurrency)
	}
	var left []string
	if res.Duplicates > 0 {
		left = append(left, fmt.Sprintf("%d duplicates (--dedupe)", res.Duplicates))
	}
	if res.SampledOut > 0 {
		left = append(left, fmt.Sprintf("%d not sampled (--sample)", res.SampledOut))
	}
	if res.LimitReached {
		left = append(left, "the rest after --limit")
	}
	if len(left) > 0 {
		fmt.Fprintf(w, "left out: %s\n", strings.Join(left, ", "))
	}
	if !res.DryRun {
		pageSize := int64(res.PoolAfter.PageSize)
		fmt.Fprintf(w, "pages loaded: %d (%s); pool: %d → %d data pages, %d free of %d\n",
			res.PagesLoaded, units.FormatBytes(res.PagesLoaded*pageSize), res.PoolBefore.PagesData, res.PoolAfter.PagesData, res.PoolAfter.PagesFree, res.PoolAfter.PagesTotal)
	}
	if res.SkippedTotal > 0 {
		reasons := make([]string, 0, len(res.Skipped))
		for r := range res.Skipped {
			reasons = append(reasons, r)
		}
		sort.Slice(reasons, func(i, j int) bool {
			if res.Skipped[reasons[i]] != res.Skipped[reasons[j]] {
				return res.Skipped[reasons[i]] > res.Skipped[reasons[j]]
			}
			return reasons[i] < reasons[j]
		})
		t := newTable(w, table.Row{"skipped because", "statements", "first one"}, 2)
		t.t.Align[2] = report.AlignLeft
		for _, r := range reasons {
			t.AppendRow(table.Row{r, res.Skipped[r], truncate(res.SkipExamples[r], 70)})
		}
		t.AppendFooter(table.Row{"total", res.SkippedTotal, ""})
		t.Render()
	}
	for _, e := range res.ErrorSamples {
		fmt.Fprintf(w, "error: %s\n", e)
	}
	if res.Errors > int64(len(res.ErrorSamples)) {
		fmt.Fprintf(w, "error: ... and %d more\n", res.Errors-int64(len(res.ErrorSamples)))
	}
	for _, n := range res.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

package cli

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/follow"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/metrics"
	"github.com/innowarm/innowarm/internal/snapshot"
	"github.com/innowarm/innowarm/internal/warm"
)

func init() { register(newFollowCmd) }

func newFollowCmd() *cobra.Command {
	var (
		sel           selectionFlags
		database      string
		interval      time.Duration
		budget        string
		method        string
		pageList      string
		asJSON        bool
		metricsFile   string
		metricsListen string
		rounds        int
		churnPages    int64
		noChurn       bool
	)
	cmd := &cobra.Command{
		Use:   "follow",
		Short: "Keep a standby's buffer pool close to a primary's hot set, continuously",
		Long: `follow keeps the target server's buffer pool close to the source server's hot set, as
Amazon Aurora's cluster cache management does for its failover target, for any MariaDB/MySQL
pair: every --interval (from one capture to the next; a round whose load takes longer starts
the next at once) it captures the source's hot set (as 'snapshot' does), resolves it on
the target by schema, table, partition and index name (tablespace ids differ), loads what the
target lacks (as 'warm --from' does: hottest first, within --budget, paced by --max-load,
--max-rate and --nice), and reports the lag: the share of the source's hot set resident on the
target, and that hot set's age.

A target that serves traffic (a read replica, a promoted standby) is loaded under --nice unless
a pacing flag is given (--nice=false: full speed), hottest first. A load planned for an idle
target stops once the target begins serving traffic (20 client statements/s or more over the
last second, looked at every 250 ms), and the rest of the round's pages go hottest first under that pacing: the load
would otherwise queue its reads ahead of the first queries of a promoted standby.

A workload that shifts makes the source read its new hot set from disk: once the source has
read --churn-pages pages since the last capture (default: a sixteenth of its pool), the next
round starts at once rather than at the end of the interval, at most once every
max(--interval/5, 1 s) after the previous capture. Between rounds follow reads the source's
status counters once a second for this (--no-churn-rounds: rounds only every --interval).

The coverage is always a share of the hot set's pages. On a standby that is no page-for-page
copy of the source (restored from a logical dump), the hot set's page numbers name other rows:
its pages there are found in the standby's own B-trees, where innowarm can read them (on the
database host). Pages it cannot place are not counted ("not counted: N pages", --json's
uncounted_pages, the gauge innowarm_follow_hot_set_uncounted_pages); when more than a tenth of
the hot set cannot be counted, the coverage is unknown (--json: null, the gauge NaN). How many
of the round's range statements ran is said apart (range_statements_run, the gauge
innowarm_follow_range_statements_run_ratio). Where the hot set has no key ranges (snapshot
could not read the source's files: a source elsewhere), its pages are counted by number
unchecked (unchecked_pages, innowarm_follow_hot_set_unchecked_pages): that figure holds only
on a page-for-page copy.

The hot set is the source's list cut, hottest first, to what the target's pool holds beside
its other uses, the page cleaner's free target and the pages of the server's own tablespaces
(system, undo, temporary, dictionary: server_pages, innowarm_follow_target_server_pages): a
longer list would have each round evict what the previous one loaded. The colder pages cut
are counted (cut_pages, innowarm_follow_hot_set_cut_pages).

The default budget is the target's pool less the page cleaner's free-page target
(innodb_lru_scan_depth per instance) and those pages: filling past it makes the server evict
at once.

Connections: --source-* and --target-* flags, option-file groups [client] then
[innowarm-source] / [innowarm-target]. A lost connection on either side is logged and retried
with backoff (1 s, 2 s, 4 s ... up to --interval); SIGTERM or Ctrl-C stops after the current
statement, and prints the round in flight as stopped, with the last round's figures (--json:
"interrupted": true). A status line per round goes to stdout (--json: one JSON object per line), and the
lag can be exported in the Prometheus text format (--metrics-listen, --metrics-file).

Exit status. Until a round has succeeded, an error that no retry can fix stops follow at once
with exit 2: a wrong password, a missing privilege (PROCESS, SELECT), an unknown database or a
-D/--tables that matches nothing, source and target being the same server. A server that is
down, refuses connections or does not answer is retried, and so is a socket file that does not
exist or a host name that does not resolve yet (a server still starting). Once a round has
succeeded, every error is retried. With --rounds N the exit status is the last round's: 0 when
it succeeded, else 1 (2 when its error is one of the above), so that a cron job or a health
check fails when the standby was not brought up to date. SIGTERM ends with 0, Ctrl-C with 130.`,
		Example: `  innowarm follow --source-host primary.db --target-host standby.db -D shop --interval 10s
  innowarm follow --source-socket /run/mysqld/a.sock --target-socket /run/mysqld/b.sock \
      --max-load Threads_running=20 --metrics-listen :9104 --json`,
		Args: noArgs,
	}
	cmd.Flags().BoolP("help", "?", false, "help for follow")
	srcFlags := connection.BindPrefixedFlags(cmd.Flags(), "source")
	tgtFlags := connection.BindPrefixedFlags(cmd.Flags(), "target")
	sel.bind(cmd)
	pf := addPacingFlags(cmd)
	fl := cmd.Flags()
	fl.StringVarP(&database, "database", "D", "", "schemas whose pages to follow, comma-separated, as -D of the other commands (default: every schema)")
	// --databases was follow's own spelling: it still works.
	fl.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if name == "databases" {
			name = "database"
		}
		return pflag.NormalizedName(name)
	})
	fl.DurationVar(&interval, "interval", 10*time.Second, "time from one round's capture of the source to the next")
	fl.StringVar(&budget, "budget", "", "pages one round may add to the target's pool, e.g. 2G or 50% (default: the pool less the page cleaner's free target)")
	fl.StringVar(&method, "method", warm.MethodAuto, "how the target loads: auto, native or scan (as warm)")
	fl.StringVar(&pageList, "page-list", snapshot.PageListAuto, "how the source's page list is read: auto, dump or lru-table (as snapshot)")
	fl.BoolVar(&asJSON, "json", false, "one JSON object per round on stdout")
	fl.StringVar(&metricsFile, "metrics-file", "", "write Prometheus text-format metrics to this file after every round (node_exporter textfile collector)")
	fl.StringVar(&metricsListen, "metrics-listen", "", "serve Prometheus metrics on this address, e.g. :9104 (path /metrics)")
	fl.IntVar(&rounds, "rounds", 0, "stop after this many rounds, with exit 1 when the last one failed (default: until stopped)")
	fl.Int64Var(&churnPages, "churn-pages", 0, "start a round early once the source has read this many pages from disk since the last capture (default: a sixteenth of its pool)")
	fl.BoolVar(&noChurn, "no-churn-rounds", false, "rounds only every --interval, however much the source reads")
	cmd.RunE = run(func(cmd *cobra.Command, _ []string) error {
		home, _ := os.UserHomeDir()
		srcOpts, _, err := srcFlags.Resolve(os.Getenv, home)
		if err != nil {
			return err
		}
		tgtOpts, _, err := tgtFlags.Resolve(os.Getenv, home)
		if err != nil {
			return err
		}
		filterOpts := connection.Options{Database: database}
		filter, err := sel.filter(&filterOpts)
		if err != nil {
			return err
		}
		if filter.Empty() {
			filter.All = true
		}
		if rounds < 0 {
			return usagef("--rounds must be 0 or more")
		}
		if churnPages < 0 {
			return usagef("--churn-pages must be 0 or more")
		}
		o := follow.Options{Source: srcOpts, Target: tgtOpts, Interval: interval, Filter: filter, Method: method,
			PageList: pageList, ToolVersion: version, Rounds: rounds, Log: logx.Default(),
			ChurnPages: churnPages, NoChurnRounds: noChurn}
		if o.Budget, err = warm.ParseBudget(budget); err != nil {
			return usagef("--budget: %v", err)
		}
		if o.Pacing, err = pf.config(0); err != nil {
			return err
		}
		o.PacingChosen = pf.chosen()
		if err := o.Validate(); err != nil {
			return usagef("%v", err)
		}
		exp, err := metrics.New(metricsListen, metricsFile)
		if err != nil {
			return usagef("%v", err)
		}
		defer exp.Close()
		if exp.Addr != "" {
			logx.Infof("metrics on http://%s/metrics", exp.Addr)
		}
		m := follow.NewMetrics(exp.Registry)
		w := cmd.OutOrStdout()
		err = follow.Run(cmd.Context(), o, m, func(s follow.Status) {
			if asJSON {
				_ = printJSONLine(w, s)
			} else {
				printFollowStatus(w, s)
			}
			if err := exp.Flush(); err != nil {
				logx.Warnf("%v", err)
			}
		})
		return serviceEnd(cmd.Context(), err)
	})
	return cmd
}

func printFollowStatus(w io.Writer, s follow.Status) {
	ts := s.At.Format("15:04:05")
	if s.Interrupted {
		if s.LastOKRound == 0 {
			fmt.Fprintf(w, "%s round %d: stopped before it ended; no round succeeded: the standby's share of the hot set is not known\n", ts, s.Round)
			return
		}
		fmt.Fprintf(w, "%s round %d: stopped before it ended; as of round %d: %s, age %.1f s\n", ts, s.Round, s.LastOKRound, coverageText(s), s.AgeSeconds)
		return
	}
	if !s.OK {
		if s.Side == "local" {
			fmt.Fprintf(w, "%s round %d: failed on this machine: %s\n", ts, s.Round, s.Error)
		} else {
			fmt.Fprintf(w, "%s round %d: %s unavailable: %s\n", ts, s.Round, s.Side, s.Error)
		}
		return
	}
	early := ""
	if s.Early {
		early = fmt.Sprintf(" (early: the source read %d pages from disk)", s.EarlyReads)
	}
	how := s.Method
	if s.Pacing != "" {
		how += ", paced " + s.Pacing
	}
	if s.TrafficArrived > 0 {
		how += fmt.Sprintf("; the target began serving %.0f statements/s %.1f s into the load, and the rest went hottest first", s.TrafficArrived, s.TrafficArrivedAfter)
	}
	if s.SkippedResident > 0 {
		how += fmt.Sprintf("; %d pages left out, resident by their turn", s.SkippedResident)
	}
	if len(s.Paths) > 0 {
		names := make([]string, 0, len(s.Paths))
		for p := range s.Paths {
			names = append(names, p)
		}
		sort.Strings(names)
		for i, p := range names {
			names[i] = fmt.Sprintf("%s %d", p, s.Paths[p])
		}
		how += "; indexes by path: " + strings.Join(names, ", ")
	}
	cut := ""
	if s.CutPages > 0 {
		cut = fmt.Sprintf(" (%d colder pages left out: the target's pool holds no more", s.CutPages)
		if s.ServerPages > 0 {
			cut += fmt.Sprintf(" beside the server's own %d", s.ServerPages)
		}
		cut += ")"
	}
	fmt.Fprintf(w, "%s round %d%s: hot set %d pages%s, %s, age %.1f s; loaded %d pages in %.2f s (%s), captured in %.2f s\n",
		ts, s.Round, early, s.HotSetPages, cut, coverageText(s), s.AgeSeconds, s.Loaded, s.LoadSeconds, how, s.CaptureSeconds)
	if s.RangeStatements > 0 && (s.RangeStatementsRun < s.RangeStatements || s.CoverageOf == follow.CoverageUnknown) {
		fmt.Fprintf(w, "%s round %d: %d of its %d range statements ran\n", ts, s.Round, s.RangeStatementsRun, s.RangeStatements)
	}
	if s.UncheckedPages > 0 {
		fmt.Fprintf(w, "%s round %d: %d of the pages counted go by page number unchecked: the hot set has no key ranges for their indexes (snapshot could not read the source's files), and the figure holds only if the target is a page-for-page copy of the source (a physical clone), not a logical one\n", ts, s.Round, s.UncheckedPages)
	}
	if s.Dropped > 0 {
		fmt.Fprintf(w, "%s round %d: %d pages of the source's hot set are not on the target (tables it lacks, files smaller than the source's): counted above as not resident\n", ts, s.Round, s.Dropped)
	}
}

// coverageText says the round's coverage and what it is of: always a share of pages, never
// of range statements (a dashboard read a range count as a page fraction).
func coverageText(s follow.Status) string {
	switch s.CoverageOf {
	case follow.CoverageUnknown:
		return fmt.Sprintf("coverage unknown: no page number names %d of its pages on the target (key ranges innowarm could not place in the target's own trees, or off-page BLOB/TEXT pages)", s.UncountedPages)
	case follow.CoverageOfCounted:
		return fmt.Sprintf("%.1f%% of the pages counted resident on the target (lag %.1f%%); not counted: %d pages no page number names there (key ranges innowarm could not place in the target's own trees, or off-page BLOB/TEXT pages)", 100*s.Coverage, 100*s.Lag, s.UncountedPages)
	}
	return fmt.Sprintf("%.1f%% resident on the target (lag %.1f%%)", 100*s.Coverage, 100*s.Lag)
}

package warm

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/pacing"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// Request is a warm as asked for: what to warm (a selection of tables, or a manifest's
// pages) and how. Validate checks its values; Execute runs it. The command line only fills
// it in and prints the outcome.
type Request struct {
	Filter   catalog.Filter
	Manifest *manifest.Manifest // warm the pages it names instead of a selection
	Method   string             // MethodAuto, MethodNative or MethodScan
	DryRun   bool
	Plan     Options // budget, order, parallel sessions, LOB, key-range size, lock wait
	// SplitPagesGiven: Plan.SplitPages was chosen by the user; otherwise a paced warm uses
	// smaller units, so that a pause takes effect within seconds.
	SplitPagesGiven bool
	Run             RunOptions // statement timeout, make-young, pacing, progress
	// UntilCoverage stops the warm once the target is this resident (0 to 1); 0: no goal.
	UntilCoverage float64
}

// RequestError is a value of a Request that cannot be: Field names the Request's field
// (exitcode.FieldError, which the command line maps to its flag).
type RequestError = exitcode.FieldError

func badValue(field, format string, args ...any) error {
	return exitcode.BadValue(field, format, args...)
}

// Validate checks the request's values and that it names something to warm.
func (r *Request) Validate() error {
	if !contains(Orders, r.Plan.Order) {
		return badValue("Order", "%q: use one of %s", r.Plan.Order, strings.Join(Orders, ", "))
	}
	if r.Plan.Parallel < 0 || r.Plan.Parallel > 64 {
		return badValue("Parallel", "%d: use 1 to 64, or 0 for the default", r.Plan.Parallel)
	}
	if r.Plan.SplitPages < 16 {
		return badValue("SplitPages", "%d: at least 16", r.Plan.SplitPages)
	}
	if r.Run.StatementTimeout < time.Second {
		return badValue("StatementTimeout", "%s: at least 1s", r.Run.StatementTimeout)
	}
	if r.UntilCoverage < 0 || r.UntilCoverage > 1 {
		return badValue("UntilCoverage", "%g: between 0 and 1", r.UntilCoverage)
	}
	if r.Plan.ByKey != "" && !contains(ByKeyModes, r.Plan.ByKey) {
		return badValue("ByKey", "%q: use %s", r.Plan.ByKey, strings.Join(ByKeyModes, ", "))
	}
	if !contains(Methods, r.Method) {
		return badValue("Method", "%q: use %s", r.Method, strings.Join(Methods, ", "))
	}
	switch {
	case r.Manifest != nil && !r.Filter.Empty():
		return badValue("Manifest", "names what to warm: no table selection with it")
	case r.Manifest == nil && r.Filter.Empty():
		return badValue("Selection", "is empty: choose schemas, tables, all databases, or a manifest")
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Outcome is what Execute did: the method and why, the plan it followed (by scans, Plan; by
// the server's loader, Native; from a manifest, Manifest too), and, unless it was a dry run,
// the result.
type Outcome struct {
	Method, Why string
	Plan        *Plan
	Native      *NativePlan
	Manifest    *ManifestPlan
	Result      *Result
}

// Execute runs a validated request on conn: it chooses the method, plans, and (unless the
// request is a dry run, which returns the plan that run would follow) loads. started is
// called once the method is known, before anything is read. It returns the outcome so far
// together with any error.
func Execute(ctx context.Context, conn *connection.Conn, r Request, started func(method, why string)) (*Outcome, error) {
	out := &Outcome{}
	if r.Manifest != nil {
		if err := r.Manifest.CheckPageSize(conn.Server.PageSize); err != nil {
			return out, err
		}
	}
	if err := pacing.Check(ctx, conn, r.Run.Pacing); err != nil {
		return out, err
	}
	if !r.DryRun {
		RepairLeftoverVariables(ctx, conn, logx.Default())
	}
	if unit := r.Run.Pacing.SuggestedUnitBytes(); unit > 0 && !r.SplitPagesGiven {
		r.Plan.SplitPages = max(unit/int64(conn.Server.PageSize), 16)
	}
	if r.Manifest != nil {
		return out, r.executeManifest(ctx, conn, out, started)
	}
	cat, err := catalog.Load(ctx, conn, r.Filter)
	if err != nil {
		// The catalog reads beside the connection's own session: an account allowed one
		// connection at once got the server's raw refusal (exit 1).
		return out, connection.ExplainLimit(ctx, conn, err, 2, "a warm")
	}
	if len(cat.Tables) == 0 && len(cat.Skipped) == 0 {
		return out, badValue("Selection", "matches no tables")
	}
	if why := cat.NoInnoDBTable(); why != "" {
		return out, badValue("Selection", "%s", why)
	}
	if out.Method, out.Why, err = ChooseSelectionMethod(ctx, conn, r.Method, cat, r.Plan.LOB); err != nil {
		return out, err
	}
	started(out.Method, out.Why)
	if out.Method == MethodNative {
		return out, r.executeNative(ctx, conn, out, cat)
	}
	if out.Plan, err = BuildPlan(ctx, conn, cat, r.Plan); err != nil {
		return out, err
	}
	if r.DryRun {
		return out, nil
	}
	if err := out.Plan.CheckWork(); err != nil {
		return out, err
	}
	r.Run.Catalog = cat
	var goal *untilGoal
	if r.UntilCoverage > 0 {
		pl := out.Plan
		goal = newUntilGoal(r.UntilCoverage, func(ctx context.Context) (float64, string, error) {
			return PlanCoverage(ctx, conn, cat, pl)
		})
		r.Run.Until = goal.until()
	}
	res, err := Run(ctx, conn, out.Plan, r.Run)
	goal.settle(ctx, out, res, err)
	return out, out.record(res, err)
}

// record keeps a run's result, with the reason for its method.
func (o *Outcome) record(res *Result, err error) error {
	o.Result = res
	if res != nil {
		res.MethodReason = o.Why
	}
	return err
}

// executeNative loads a selection with the server's own loader.
func (r Request) executeNative(ctx context.Context, conn *connection.Conn, out *Outcome, cat *catalog.Catalog) (runErr error) {
	var goal *untilGoal
	// After the scans of the system tablespace too: the goal is the whole selection's.
	defer func() { goal.settle(ctx, out, out.Result, runErr) }()
	np, err := PlanNative(ctx, conn, cat, r.Plan)
	if err != nil {
		return err
	}
	out.Native = np
	// auto: the tables in the system tablespace, which the loader cannot tell apart and
	// leaves out (a selection that also holds what only the loader reads, a FULLTEXT
	// index), are read by scans after the load.
	var system *catalog.Catalog
	if r.Method == MethodAuto || r.Method == "" {
		system = systemSpaceTables(cat)
	}
	if system != nil {
		if out.Plan, err = BuildPlan(ctx, conn, system, r.Plan); err != nil {
			return err
		}
		np.Skipped = withoutSystemSpaceSkips(np.Skipped, system)
	}
	if r.DryRun {
		return nil
	}
	if err := np.CheckWork(); err != nil && (out.Plan == nil || out.Plan.CheckWork() != nil) {
		return err
	}
	if r.UntilCoverage > 0 {
		goal = newUntilGoal(r.UntilCoverage, func(ctx context.Context) (float64, string, error) {
			covered, total, err := bufferpool.SelectionCountFrom(ctx, conn, cat, bufferpool.SourceLRUTable)
			if err != nil || total == 0 {
				return 0, "", err
			}
			return float64(covered) / float64(total), fmt.Sprintf("%d of %d index pages resident", covered, total), nil
		})
		r.Run.Until = goal.until()
	}
	res, err := np.Run(ctx, conn, r.Run)
	if err == nil && res != nil && !res.Interrupted {
		err = res.openWarmedTables(ctx, conn, r.Run)
	}
	if err != nil || system == nil || res == nil || res.Interrupted || res.Stopped != "" {
		return out.record(res, err)
	}
	// Planned again: the load changed what is resident and the room left.
	pl, err := BuildPlan(ctx, conn, system, r.Plan)
	if err != nil {
		return out.record(res, err)
	}
	out.Plan = pl
	ro := r.Run
	ro.Catalog, ro.Until = system, Until{}
	scanned, err := Run(ctx, conn, pl, ro)
	if scanned != nil {
		res.Skipped = withoutSystemSpaceSkips(res.Skipped, system)
	}
	return out.record(mergeSystemSpaceScans(res, scanned), err)
}

// systemSpaceTables is the part of cat stored in the system tablespace, nil when none is.
func systemSpaceTables(cat *catalog.Catalog) *catalog.Catalog {
	var tables []*catalog.Table
	for _, t := range cat.Tables {
		for _, p := range t.Parts {
			if p.SpaceKnown && p.Space == 0 {
				tables = append(tables, t)
				break
			}
		}
	}
	if len(tables) == 0 {
		return nil
	}
	sub := *cat
	sub.Tables, sub.Skipped, sub.Notes = tables, nil, nil
	return &sub
}

// withoutSystemSpaceSkips is skipped without the native load's skips of system's tables,
// which scans read instead.
func withoutSystemSpaceSkips(skipped []catalog.Skip, system *catalog.Catalog) []catalog.Skip {
	scanned := map[[2]string]bool{}
	for _, t := range system.Tables {
		scanned[[2]string{t.Schema, t.Name}] = true
	}
	var kept []catalog.Skip
	for _, s := range skipped {
		if !(s.Reason == systemSpaceSkip && scanned[[2]string{s.Schema, s.Table}]) {
			kept = append(kept, s)
		}
	}
	return kept
}

// mergeSystemSpaceScans adds the scans of the system tablespace's tables to a native
// load's result.
func mergeSystemSpaceScans(res, scanned *Result) *Result {
	if scanned == nil {
		return res
	}
	read := map[[2]string]bool{}
	for _, tr := range scanned.Targets {
		read[[2]string{tr.Schema, tr.Table}] = true
	}
	res = mergeKeyed(res, scanned)
	if len(read) == 0 {
		return res
	}
	res.Notes = append(res.Notes, fmt.Sprintf("%d %s in the system tablespace read by scans after the load (the server's loader cannot tell their pages from the others')",
		len(read), plural(int64(len(read)), "table", "tables")))
	return res
}

// executeManifest warms a manifest's pages, natively or by scans of the indexes it names.
// A manifest of which nothing resolves here is a usage error: it names another server's
// schemas or tables.
func (r Request) executeManifest(ctx context.Context, conn *connection.Conn, out *Outcome, started func(method, why string)) error {
	var err error
	if out.Method, out.Why, err = ChooseMethod(ctx, conn, r.Method); err != nil {
		return err
	}
	resolved, err := Resolve(ctx, conn, r.Manifest)
	if err != nil {
		return err
	}
	if err := CheckResolved(r.Manifest, resolved); err != nil {
		return err
	}
	started(out.Method, out.Why)
	mp, err := PlanFromManifest(ctx, conn, resolved, out.Method, r.Plan, r.UntilCoverage > 0)
	if err != nil {
		return err
	}
	out.Manifest, out.Plan, out.Native = mp, mp.Scan, mp.Native
	if r.DryRun {
		return nil
	}
	if err := mp.CheckWork(); err != nil {
		return err
	}
	var goal *untilGoal
	if r.UntilCoverage > 0 {
		// The pages counted as inspect and the readiness gate count them (MeasureTarget):
		// the manifest's by number on a page-for-page copy, this server's own B-trees' pages
		// of the key ranges elsewhere, where innowarm can read them. The plan's page list
		// was no measure on a logical copy warmed by scans: its few pages by number (a
		// table's file pages) said "33.3% (1 of 3 manifest pages)" where inspect said 99.9%.
		var counted *Resolved
		var uncounted int64
		var countedMu sync.Mutex
		goal = newUntilGoal(r.UntilCoverage, func(ctx context.Context) (float64, string, error) {
			countedMu.Lock()
			defer countedMu.Unlock()
			if counted == nil {
				m, _, u, err := MeasureTarget(ctx, conn, resolved)
				if err != nil {
					return 0, "", err
				}
				if len(m.Pages) == 0 || 10*u > int64(len(resolved.Pages)) {
					return 0, "", fmt.Errorf("%d of the manifest's %d pages cannot be counted here (key ranges read by range scans name no pages)", u, len(resolved.Pages))
				}
				counted, uncounted = m, u
			}
			// The LRU table: a native load holds the dump file while this measures.
			set, err := bufferpool.ResidentFromLRUTable(ctx, conn, counted.Spaces())
			if err != nil {
				return 0, "", err
			}
			c, n := counted.Coverage(set)
			detail := fmt.Sprintf("%d of %d manifest pages resident", n, len(counted.Pages))
			if uncounted > 0 {
				detail += fmt.Sprintf(", %d not counted", uncounted)
			}
			return c, detail, nil
		})
		r.Run.Until = goal.until()
	}
	r.Run.Catalog = resolved.Catalog
	res, err := mp.Run(ctx, conn, r.Run)
	goal.settle(ctx, out, res, err)
	return out.record(res, err)
}

// CheckResolved is a usage error (exit 2) when nothing of manifest m resolves on this server
// (r): it names another server's schemas or tables, or is empty; nil otherwise.
func CheckResolved(m *manifest.Manifest, r *Resolved) error {
	if len(r.Pages) > 0 {
		return nil
	}
	return exitcode.UsageError(fmt.Errorf("manifest %s matches nothing here: %s", r.Name, unresolved(m, r)))
}

// Unresolved says why none of a manifest's entries resolve on a server (follow's target).
func Unresolved(m *manifest.Manifest, r *Resolved) string { return unresolved(m, r) }

// DroppedByReason is how many of the manifest's entries do not resolve here, and why: the
// reasons, most entries first.
func (r *Resolved) DroppedByReason() (total int64, reasons []string) {
	for reason, n := range r.Dropped {
		total += n
		reasons = append(reasons, reason)
	}
	sort.Slice(reasons, func(i, j int) bool {
		if r.Dropped[reasons[i]] != r.Dropped[reasons[j]] {
			return r.Dropped[reasons[i]] > r.Dropped[reasons[j]]
		}
		return reasons[i] < reasons[j]
	})
	return total, reasons
}

// unresolved says why none of a manifest's entries resolve here: the drop reasons, most
// entries first, and the schemas the manifest names.
func unresolved(m *manifest.Manifest, r *Resolved) string {
	if r.Entries == 0 {
		return "it has no entries"
	}
	_, reasons := r.DroppedByReason()
	for i, reason := range reasons {
		reasons[i] = fmt.Sprintf("%d of them: %s", r.Dropped[reason], reason)
	}
	seen := map[string]bool{}
	var schemas []string
	for _, o := range m.Objects {
		if !seen[o.Schema] {
			seen[o.Schema] = true
			schemas = append(schemas, sqltext.Ident(o.Schema))
		}
	}
	sort.Strings(schemas)
	if len(schemas) > 5 {
		schemas = append(schemas[:5], fmt.Sprintf("and %d more", len(schemas)-5))
	}
	return fmt.Sprintf("none of its %d entries resolve on this server (%s); it names the schemas %s", r.Entries, strings.Join(reasons, ", "), strings.Join(schemas, ", "))
}

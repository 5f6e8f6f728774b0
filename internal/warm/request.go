package warm

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/pacing"
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

// Outcome is what Execute did: the method and why; for a dry run of a selection by scans,
// the plan only; otherwise the result (and, for scans, the plan it ran).
type Outcome struct {
	Method, Why string
	Plan        *Plan
	Result      *Result
}

// Execute runs a validated request on conn. started is called once the method is known,
// before anything is read. It returns the outcome so far together with any error.
func Execute(ctx context.Context, conn *connection.Conn, r Request, started func(method, why string)) (*Outcome, error) {
	out := &Outcome{}
	requested := r.Method
	if r.DryRun && requested == MethodAuto && r.Manifest == nil {
		// A dry run of a selection shows the scan plan, the one with something to show.
		requested = MethodScan
	}
	if r.Manifest != nil {
		if err := r.Manifest.CheckPageSize(conn.Server.PageSize); err != nil {
			return out, err
		}
	}
	if err := pacing.Check(ctx, conn, r.Run.Pacing); err != nil {
		return out, err
	}
	if unit := r.Run.Pacing.SuggestedUnitBytes(); unit > 0 && !r.SplitPagesGiven {
		r.Plan.SplitPages = max(unit/int64(conn.Server.PageSize), 16)
	}
	var err error
	if r.Manifest != nil {
		if out.Method, out.Why, err = ChooseMethod(ctx, conn, requested); err != nil {
			return out, err
		}
		return out, r.executeNative(ctx, conn, out, nil, started)
	}
	cat, err := catalog.Load(ctx, conn, r.Filter)
	if err != nil {
		return out, err
	}
	if out.Method, out.Why, err = ChooseSelectionMethod(ctx, conn, requested, cat, r.Plan.LOB); err != nil {
		return out, err
	}
	if out.Method == MethodNative {
		return out, r.executeNative(ctx, conn, out, cat, started)
	}
	if len(cat.Tables) == 0 && len(cat.Skipped) == 0 {
		return out, badValue("Selection", "matches no tables")
	}
	started(out.Method, out.Why)
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
	if r.UntilCoverage > 0 {
		pl := out.Plan
		r.Run.Until = Until{Want: r.UntilCoverage, Measure: func(ctx context.Context) (float64, string, error) {
			return PlanCoverage(ctx, conn, cat, pl)
		}}
	}
	out.Result, err = Run(ctx, conn, out.Plan, r.Run)
	if out.Result != nil {
		out.Result.MethodReason = out.Why
	}
	return out, err
}

// executeNative warms a manifest's pages (natively or by scans of the indexes it names),
// or a selection with the server's own loader.
func (r Request) executeNative(ctx context.Context, conn *connection.Conn, out *Outcome, cat *catalog.Catalog, started func(method, why string)) error {
	r.Run.DryRun = r.DryRun
	var err error
	if r.Manifest != nil {
		resolved, rerr := Resolve(ctx, conn, r.Manifest)
		if rerr != nil {
			return rerr
		}
		if r.UntilCoverage > 0 {
			r.Run.Until = Until{Want: r.UntilCoverage, Measure: func(ctx context.Context) (float64, string, error) {
				// The LRU table: a native load holds the dump file while this measures.
				set, err := bufferpool.ResidentFromLRUTable(ctx, conn, resolved.Spaces())
				if err != nil {
					return 0, "", err
				}
				c, n := resolved.Coverage(set)
				return c, fmt.Sprintf("%d of %d manifest pages resident", n, len(resolved.Pages)), nil
			}}
		}
		started(out.Method, out.Why)
		out.Result, err = FromManifest(ctx, conn, resolved, out.Method, r.Plan, r.Run)
	} else {
		if r.UntilCoverage > 0 {
			r.Run.Until = Until{Want: r.UntilCoverage, Measure: func(ctx context.Context) (float64, string, error) {
				covered, total, err := bufferpool.SelectionCountFrom(ctx, conn, cat, bufferpool.SourceLRUTable)
				if err != nil || total == 0 {
					return 0, "", err
				}
				return float64(covered) / float64(total), fmt.Sprintf("%d of %d index pages resident", covered, total), nil
			}}
		}
		started(out.Method, out.Why)
		out.Result, err = NativeFromCatalog(ctx, conn, cat, r.Plan, r.Run)
	}
	if out.Result != nil {
		out.Result.MethodReason = out.Why
	}
	return err
}

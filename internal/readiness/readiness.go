// Package readiness answers "is the pool warm enough?": the share of a target (the indexes of
// chosen tables, or a manifest's pages) that is resident, and a wait until it reaches a
// threshold, for systemd ExecStartPost, Kubernetes readiness probes and failover hooks.
package readiness

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/progress"
	"github.com/innowarm/innowarm/internal/warm"
)

// ParsePercent reads "95%", "95" or "0.95" as a fraction.
func ParsePercent(s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(t, "%"), 64)
	if err != nil {
		return 0, fmt.Errorf("bad coverage %q: use a percent such as 95%%", s)
	}
	if pct || v > 1 {
		v /= 100
	}
	if v <= 0 || v > 1 {
		return 0, fmt.Errorf("bad coverage %q: between 0%% (exclusive) and 100%%", s)
	}
	return v, nil
}

// Target measures how much of something is resident.
type Target interface {
	// Coverage is the resident share, 0 to 1, with a one-line description.
	Coverage(ctx context.Context) (float64, string, error)
}

// Selection is the indexes of the catalog's tables: resident B-tree pages over their pages.
type Selection struct {
	Conn    *connection.Conn
	Catalog *catalog.Catalog
}

// Coverage implements Target.
func (s Selection) Coverage(ctx context.Context) (float64, string, error) {
	return coverageOf(s.Count(ctx))
}

// Count implements Counted: resident B-tree pages of the selected indexes, and their pages.
// Each index counts against the most pages it may have (bufferpool.SelectionCount), never
// the fewest: a gate must not say ready on a cold server. Where those sizes are only
// information_schema.TABLES's (a user who may not read the statistics, innowarm away from
// the database host's files), that bound can be far above the index (a secondary index's
// allocation, or a table's whole allocation shared out among its indexes), and the gate
// could wait forever on a warm server: it refuses, naming the grant.
func (s Selection) Count(ctx context.Context) (covered, total int64, detail string, err error) {
	if est := s.Catalog.Estimated(); len(est) > 0 && s.Catalog.StatisticsDenied != "" {
		return 0, 0, "", exitcode.UsageError(fmt.Errorf("the readiness gate needs index sizes: GRANT SELECT ON mysql.innodb_index_stats TO %s, or run innowarm on the database host (it counts them in the tablespace files); information_schema.TABLES only bounds them (%d indexes, such as %s)",
			s.Conn.Opts.User, len(est), est[0]))
	}
	if covered, total, err = bufferpool.SelectionCount(ctx, s.Conn, s.Catalog); err != nil {
		return 0, 0, "", err
	}
	if total == 0 {
		return 0, 0, "the selected tables have no pages", nil
	}
	return covered, total, fmt.Sprintf("%d of %d index pages resident (%.1f%%)", covered, total, 100*float64(covered)/float64(total)), nil
}

// PageExact implements Counted: sizes come from statistics.
func (s Selection) PageExact() bool { return false }

// coverageOf turns a count into a coverage.
func coverageOf(covered, total int64, detail string, err error) (float64, string, error) {
	if err != nil || total == 0 {
		return 0, detail, err
	}
	return float64(covered) / float64(total), detail, nil
}

// Manifest is the resolvable pages of a manifest.
type Manifest struct {
	Conn     *connection.Conn
	Resolved *warm.Resolved
}

// Coverage implements Target.
func (m Manifest) Coverage(ctx context.Context) (float64, string, error) {
	return coverageOf(m.Count(ctx))
}

// PageExact implements Counted: a manifest's pages are a fixed set.
func (m Manifest) PageExact() bool { return true }

// Count implements Counted: the manifest's resolvable pages resident, and their number.
func (m Manifest) Count(ctx context.Context) (covered, total int64, detail string, err error) {
	set, err := bufferpool.Resident(ctx, m.Conn, m.Resolved.Spaces())
	if err != nil {
		return 0, 0, "", err
	}
	_, n := m.Resolved.Coverage(set)
	total = int64(len(m.Resolved.Pages))
	// Pages of the hot set this server lacks (a table dropped or never restored here) are
	// hot pages not resident: a gate that counted only the rest said ready at 100% on a
	// standby that lacked half of the hot set.
	missing, reasons := m.Resolved.DroppedByReason()
	total += missing
	c := 0.0
	if total > 0 {
		c = float64(n) / float64(total)
	}
	detail = fmt.Sprintf("%d of %d manifest pages resident (%.1f%%)", n, total, 100*c)
	if missing > 0 {
		for i, why := range reasons {
			reasons[i] = fmt.Sprintf("%d: %s", m.Resolved.Dropped[why], why)
		}
		detail += fmt.Sprintf(", %d of them not on this server (%s)", missing, strings.Join(reasons, "; "))
	}
	return n, total, detail, nil
}

// Result of a wait.
type Result struct {
	Reached  bool    `json:"reached"`
	Coverage float64 `json:"coverage"`
	Want     float64 `json:"want"`
	Seconds  float64 `json:"seconds"`
	Checks   int     `json:"checks"`
	Detail   string  `json:"detail"`
	// RisePerSecond is how fast the coverage rose over the last checks (a share per second),
	// and ETASeconds when it would reach Want at that pace: how far along the recovery is.
	RisePerSecond float64  `json:"rise_per_s"`
	ETASeconds    *float64 `json:"eta_s,omitempty"`
}

// Wait checks the target every interval until its coverage reaches want, or timeout passes
// (a usage-visible timeout error, exit 3), or ctx ends.
func Wait(ctx context.Context, t Target, want float64, timeout, interval time.Duration, log *logx.Logger) (Result, error) {
	res := Result{Want: want}
	t0 := time.Now()
	deadline := t0.Add(timeout)
	var trend progress.Trend
	for {
		c, detail, err := t.Coverage(ctx)
		res.Checks++
		res.Seconds = time.Since(t0).Seconds()
		if err != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			return res, err
		}
		res.Coverage, res.Detail = c, detail
		trend.Add(time.Now(), c)
		res.RisePerSecond, _ = trend.Rate()
		res.ETASeconds = nil
		if eta, ok := trend.ETA(want); ok {
			secs := eta.Seconds()
			res.ETASeconds = &secs
		}
		if c >= want {
			res.Reached = true
			return res, nil
		}
		left := time.Until(deadline)
		if timeout > 0 && left <= 0 {
			return res, exitcode.TimeoutError(fmt.Errorf("coverage did not reach %.1f%% within %s: %s (%s)", 100*want, timeout, trend.Text(want), detail))
		}
		log.Infof("waiting: %s (%s)", trend.Text(want), detail)
		wait := interval
		if timeout > 0 && left < wait {
			wait = left
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(wait):
		}
	}
}

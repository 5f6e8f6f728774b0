package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync/atomic"
	"time"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/manifest/location"
	"github.com/innowarm/innowarm/internal/warm"
)

// openManifest reads and verifies the manifest at a location. It is the one place the agent
// opens a manifest, so that other kinds of location (object storage) come in here.
func openManifest(ctx context.Context, store *location.Store, loc string) (*manifest.Manifest, error) {
	if store == nil {
		store = &location.Store{}
	}
	return store.Load(ctx, loc)
}

// target is what coverage measures during one server run: the selection's indexes, or the
// manifest's pages resolved by name on this server.
type target struct {
	cat      *catalog.Catalog
	manifest *manifest.Manifest // the pages to warm, for the warm
	resolved *warm.Resolved
	// uncounted are the manifest's pages of indexes only range scans read here (no page
	// numbers to count): not covered until this agent's own warm has read them (warmed).
	uncounted int64
	warmed    atomic.Bool
	// none says why there is nothing to wait for (a manifest not written yet, a target
	// with no pages on this server): the run is ready at once.
	none string
}

// loadTarget reads the target for a new server run: the manifest as it is now (the latest
// snapshot), resolved on this server, or the selection's catalog.
func loadTarget(ctx context.Context, conn *connection.Conn, o *Options) (*target, error) {
	if o.Manifest == "" {
		cat, err := catalog.Load(ctx, conn, o.Filter)
		if err != nil {
			return nil, fmt.Errorf("load the selection's tables: %w", err)
		}
		t := &target{cat: cat}
		if len(cat.Tables) == 0 {
			t.none = "the selection matches no table on this server"
		}
		return t, nil
	}
	mf, err := openManifest(ctx, o.Store, o.Manifest)
	if errors.Is(err, fs.ErrNotExist) {
		return &target{none: fmt.Sprintf("no manifest at %s yet: no hot set to restore", o.Manifest)}, nil
	}
	if err != nil {
		return nil, err
	}
	r, err := warm.Resolve(ctx, conn, mf)
	if err != nil {
		return nil, fmt.Errorf("resolve the manifest %s: %w", o.Manifest, err)
	}
	t := &target{manifest: mf, resolved: r}
	// On a copy that is not page-for-page the manifest's page numbers name other rows: the
	// pages counted are those of this server's trees that hold its key ranges, as the warm
	// finds them, where innowarm can read the trees.
	measured, _, uncounted, err := warm.MeasureTarget(ctx, conn, r)
	if err != nil {
		return nil, fmt.Errorf("resolve the manifest %s: %w", o.Manifest, err)
	}
	// Pages no warm reads here (path none: an index without key ranges on a copy, its
	// off-page pages) are neither counted nor taken as read once the warm has run: the
	// gate said a copy's left-out index was warm.
	t.resolved, t.uncounted = measured, uncounted-measured.LeftOut
	if len(r.Pages) == 0 {
		t.none = fmt.Sprintf("none of the manifest's %d entries names a page of this server", r.Entries)
	}
	return t, nil
}

// describe names the target for /status.
func (t *target) describe(o *Options) string {
	if o.Manifest != "" {
		if t != nil && t.resolved != nil {
			leftOut := ""
			if n := t.resolved.LeftOut; n > 0 {
				leftOut = fmt.Sprintf("; %d left out, not counted: no warm reads them here (path none)", n)
			}
			if t.uncounted > 0 {
				return fmt.Sprintf("manifest %s (%d of its %d entries counted here by page; %d of indexes only range scans read, counted once this agent's warm has read them%s)", o.Manifest, len(t.resolved.Pages), t.resolved.Entries, t.uncounted, leftOut)
			}
			return fmt.Sprintf("manifest %s (%d of its %d entries resolve here%s)", o.Manifest, len(t.resolved.Pages), t.resolved.Entries, leftOut)
		}
		return "manifest " + o.Manifest
	}
	if t != nil && t.cat != nil {
		return fmt.Sprintf("selection of %d tables", len(t.cat.Tables))
	}
	return "selection"
}

// count is an exact count of the target's resident pages. lruTable reads the page list from
// INNODB_BUFFER_PAGE_LRU: while a native load holds the server's dump file, borrowing it
// would wait for the load to end.
func (t *target) count(ctx context.Context, conn *connection.Conn, lruTable bool) (covered, total int64, err error) {
	source := bufferpool.PageListAuto
	if lruTable {
		source = bufferpool.SourceLRUTable
	}
	if t.cat != nil {
		return bufferpool.SelectionCountFrom(ctx, conn, t.cat, source)
	}
	var set bufferpool.PageSet
	if lruTable {
		set, err = bufferpool.ResidentFromLRUTable(ctx, conn, t.resolved.Spaces())
	} else {
		set, err = bufferpool.Resident(ctx, conn, t.resolved.Spaces())
	}
	if err != nil {
		return 0, 0, err
	}
	_, n := t.resolved.Coverage(set)
	total = int64(len(t.resolved.Pages)) + t.uncounted
	if t.warmed.Load() {
		// The warm ran the range statements of the pages no number names here.
		n += t.uncounted
	}
	return n, total, nil
}

// An exact count reads the pool's page list: its cost grows with the pool (about 0.3 s per
// GiB of data pages from INNODB_BUFFER_PAGE_LRU). Between two counts InnoDB's page counters
// bound how far the count can have moved (see internal/readiness: every page that entered
// was read or created, every page that left shortened the list or made room for one), so a
// measure costs one status read while
//   - the server is ready (it stays ready for the run; the bounds are shown as they are),
//   - the lower bound already reaches the threshold (ready now), or
//   - the bounds are within tolerance of each other (the weight HAProxy gets would not
//     change by more than that).
//
// Otherwise (a warm in progress: pages enter) it counts, but never spends more than about a
// tenth of the time counting: after a count that took d, the next waits at least 9d.

// anchor is the last exact count and the counters read with it.
type anchor struct {
	covered, total int64
	counters       bufferpool.PageCounters
	at             time.Time
}

// bounds on the covered count now, from the counters (readiness.BoundsSince, for an anchor
// kept in memory rather than in a state file).
func (a anchor) bounds(now bufferpool.PageCounters) (low, high int64) {
	entered := max(now.Read-a.counters.Read, 0) + max(now.Created-a.counters.Created, 0)
	return max(a.covered-now.LeftSince(a.counters), 0), min(a.covered+entered, a.total)
}

// estimate is a measure of the coverage.
type estimate struct {
	Low, High      float64 // bounds on the coverage now; equal after a count
	Covered, Total int64   // the last exact count
	Counted        bool    // this measure counted pages
	CountedAt      time.Time
	CountSeconds   float64 // what the last count took
}

// tracker decides when to count.
type tracker struct {
	tolerance float64       // widest bounds a measure reports without counting
	maxAge    time.Duration // count at least this often
	dutyRatio float64       // the next count waits at least this many times the last one's duration
	last      *anchor
	lastCost  time.Duration
}

func newTracker() *tracker {
	return &tracker{tolerance: 0.02, maxAge: time.Hour, dutyRatio: 9}
}

// decide says whether a measure at now, with the counters read, must count pages.
func (t *tracker) decide(now time.Time, c bufferpool.PageCounters, want float64, ready bool) bool {
	a := t.last
	if a == nil || a.total == 0 || now.Sub(a.at) >= t.maxAge {
		return true
	}
	if now.Sub(a.at) < time.Duration(t.dutyRatio*float64(t.lastCost)) {
		return false
	}
	low, high := a.bounds(c)
	lo, hi := float64(low)/float64(a.total), float64(high)/float64(a.total)
	return !ready && lo < want && hi-lo > t.tolerance
}

// measure returns the estimate now: from the counters c, or from count when decide says so.
func (t *tracker) measure(now time.Time, c bufferpool.PageCounters, want float64, ready bool, count func() (covered, total int64, err error)) (estimate, error) {
	if t.decide(now, c, want, ready) {
		t0 := time.Now()
		covered, total, err := count()
		if err != nil {
			return estimate{}, err
		}
		t.lastCost = time.Since(t0)
		t.last = &anchor{covered: covered, total: total, counters: c, at: now}
		e := estimate{Covered: covered, Total: total, Counted: true, CountedAt: now, CountSeconds: t.lastCost.Seconds()}
		if total > 0 {
			e.Low = float64(covered) / float64(total)
			e.High = e.Low
		}
		return e, nil
	}
	a := t.last
	low, high := a.bounds(c)
	return estimate{Low: float64(low) / float64(a.total), High: float64(high) / float64(a.total), Covered: a.covered, Total: a.total,
		CountedAt: a.at, CountSeconds: t.lastCost.Seconds()}, nil
}

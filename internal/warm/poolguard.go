package warm

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/periodic"
	"github.com/innowarm/innowarm/internal/units"
)

// The buffer pool can change size while a warm runs: SET GLOBAL innodb_buffer_pool_size
// resizes it online (MySQL 5.7+, MariaDB 10.2+), and MariaDB 10.11.12+, 11.4.6+ and 11.8.2+
// shrink it by themselves under memory pressure, down to innodb_buffer_pool_size_auto_min
// (MDEV-29445; flavor.Server.PoolShrinkFloor). A budget computed from the pool at the start
// would then fill a smaller pool past its room: every page read beyond it evicts one that was
// there, the warm's own among the first. A poolGuard follows the pool's size during the run
// and cuts the budget to what the pool holds now.

// PoolResize is what a warm saw of the pool changing size while it ran.
type PoolResize struct {
	FromPages int64   `json:"from_pages"` // Innodb_buffer_pool_pages_total when the warm was planned
	ToPages   int64   `json:"to_pages"`   // the smallest (or, grown, the latest) it was during the run
	AtSeconds float64 `json:"at_seconds"` // into the run, when first seen
	// ReadBefore is the pages the server had read since the run began when the change was
	// seen; BudgetBefore and BudgetAfter are the pages the run could add before and after.
	ReadBefore   int64 `json:"read_before_pages"`
	BudgetBefore int64 `json:"budget_before_pages"`
	BudgetAfter  int64 `json:"budget_after_pages"`
	// LeftOutUnits and LeftOutPages are the units (or native pages) not started for the cut.
	LeftOutUnits int   `json:"units_left_out,omitempty"`
	LeftOutPages int64 `json:"pages_left_out,omitempty"`
	// Stopped: the pages read passed the cut budget with units still running, and the run
	// was stopped; ServerAborted: the server aborted its own load as it shrank the pool.
	Stopped       bool `json:"stopped,omitempty"`
	ServerAborted bool `json:"server_aborted_load,omitempty"`
	pageSize      int64
}

// Text says what happened in one line.
func (p *PoolResize) Text() string {
	size := func(pages int64) string { return units.FormatBytes(pages * p.pageSize) }
	if p.ToPages > p.FromPages {
		return fmt.Sprintf("the buffer pool grew from %d to %d pages (%s to %s) %.1f s into the warm; the plan kept its budget of %d pages",
			p.FromPages, p.ToPages, size(p.FromPages), size(p.ToPages), p.AtSeconds, p.BudgetBefore)
	}
	s := fmt.Sprintf("the buffer pool shrank from %d to %d pages (%s to %s) %.1f s into the warm, with %d pages read: the budget went from %d to %d pages",
		p.FromPages, p.ToPages, size(p.FromPages), size(p.ToPages), p.AtSeconds, p.ReadBefore, p.BudgetBefore, p.BudgetAfter)
	switch {
	case p.LeftOutUnits > 0:
		s += fmt.Sprintf("; %d units (%d pages) left out", p.LeftOutUnits, p.LeftOutPages)
	case p.LeftOutPages > 0:
		s += fmt.Sprintf("; %d pages left out", p.LeftOutPages)
	}
	switch {
	case p.ServerAborted:
		s += "; the server aborted its buffer pool load to shrink the pool"
	case p.Stopped:
		s += "; the pages read reached the new budget and the warm stopped"
	}
	return s
}

// poolSample is one reading of the counters the guard follows.
type poolSample struct {
	Total, Free, Read int64 // Innodb_buffer_pool_pages_total, _pages_free, Innodb_pages_read
}

// poolGuard keeps a run within the pool the server has now.
type poolGuard struct {
	conn    *connection.Conn
	budget  Budget
	start   bufferpool.Totals // when the plan was made
	planned int64             // the plan's budget, in pages
	t0      time.Time
	readAt0 int64

	mu      sync.Mutex
	allowed int64 // pages the run may read from the start (≤ planned)
	issued  int64 // new pages of the units started
	read    int64 // pages read since the start, at the last sample
	resize  *PoolResize
	// newPages are the pages the plan reads that were not resident (roomAfterWait).
	newPages int64
}

// newPoolGuard starts guarding a run planned on the pool start with budget b (planned pages).
func newPoolGuard(ctx context.Context, conn *connection.Conn, b Budget, start bufferpool.Totals, planned int64) *poolGuard {
	g := &poolGuard{conn: conn, budget: b, start: start, planned: planned, allowed: planned, t0: time.Now()}
	if s, err := g.sample(ctx); err == nil {
		g.readAt0 = s.Read
	}
	return g
}

func (g *poolGuard) sample(ctx context.Context) (poolSample, error) {
	st, err := g.conn.GlobalStatus(ctx, "Innodb_buffer_pool_pages_total", "Innodb_buffer_pool_pages_free", "Innodb_pages_read")
	if err != nil {
		return poolSample{}, err
	}
	return poolSample{Total: st["innodb_buffer_pool_pages_total"], Free: st["innodb_buffer_pool_pages_free"], Read: st["innodb_pages_read"]}, nil
}

// cutBudget is the budget, in pages the run may read from its start, once the pool holds
// s.Total pages: --budget N% of the pool it has now; --budget SIZE no more than the smaller
// pool holds besides the page cleaner's free pages; the default (nothing evicted) what was
// read so far and the room the pool has left. A budget is only ever cut: a pool that grows
// does not bring back what the plan left out.
func cutBudget(b Budget, start bufferpool.Totals, planned int64, s poolSample, readSince int64) int64 {
	now := start
	now.PagesTotal, now.PagesFree = s.Total, s.Free
	room, reserve := now.Room()
	var cut int64
	switch {
	case b.Percent > 0:
		cut = int64(float64(s.Total) * b.Percent / 100)
	case b.Bytes > 0:
		cut = min(b.Bytes/max(int64(start.PageSize), 1), max(s.Total-reserve, 0))
	default:
		cut = readSince + room
	}
	return min(planned, cut)
}

// observe takes a sample into account; it reports whether the pages read passed a budget the
// pool's shrinking cut.
func (g *poolGuard) observe(s poolSample) (over bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.read = max(s.Read-g.readAt0, 0)
	if s.Total <= 0 || s.Total == g.start.PagesTotal {
		return g.resize != nil && g.resize.BudgetAfter < g.planned && g.read > g.allowed
	}
	if g.resize == nil {
		g.resize = &PoolResize{FromPages: g.start.PagesTotal, AtSeconds: time.Since(g.t0).Seconds(), ReadBefore: g.read,
			BudgetBefore: g.planned, BudgetAfter: g.planned, ToPages: s.Total, pageSize: int64(max(g.start.PageSize, 1))}
	}
	if s.Total < g.start.PagesTotal {
		g.resize.ToPages = min(g.resize.ToPages, s.Total)
		g.allowed = min(g.allowed, cutBudget(g.budget, g.start, g.planned, s, g.read))
		g.resize.BudgetAfter = g.allowed
	} else if g.resize.ToPages > g.start.PagesTotal {
		g.resize.ToPages = s.Total
	}
	return g.read > g.allowed
}

// admit says whether a unit of newPages may start within the budget, and counts it if so.
func (g *poolGuard) admit(newPages int64) bool {
	if g == nil {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.resize == nil || g.allowed >= g.planned {
		g.issued += newPages
		return true
	}
	// What the units started will still read is not known: the larger of what they
	// planned and what the server read stands for what the run has used.
	if max(g.issued, g.read)+newPages > g.allowed {
		if g.resize != nil {
			g.resize.LeftOutUnits++
			g.resize.LeftOutPages += newPages
		}
		return false
	}
	g.issued += newPages
	return true
}

// roomAfterWait is, for a run whose budget is the default (nothing evicted), how many of
// the list's pages (listLen, resident ones among them) to load when the pool's room now is
// less than the new pages the plan counted on (newPages), else -1: the free pages may
// have been filled before the load could start (another innowarm's load held the server's
// dump file meanwhile). The shortfall comes off the list's end.
func (g *poolGuard) roomAfterWait(ctx context.Context, listLen int64) int64 {
	if g == nil || g.budget.Percent > 0 || g.budget.Bytes > 0 || g.newPages <= 0 {
		return -1
	}
	s, err := g.sample(ctx)
	if err != nil {
		return -1
	}
	now := g.start
	now.PagesTotal, now.PagesFree = s.Total, s.Free
	room, _ := now.Room()
	short := g.newPages - room
	if short <= 0 {
		return -1
	}
	return max(listLen-short, 0)
}

// left is the pages the run may still read (native chunks): the cut budget less what the
// server read since the start; -1 while the budget is the plan's.
func (g *poolGuard) left() int64 {
	if g == nil {
		return -1
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.resize == nil || g.allowed >= g.planned {
		return -1
	}
	return max(g.allowed-g.read, 0)
}

// leaveOut counts native pages not loaded for the cut.
func (g *poolGuard) leaveOut(pages int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.resize != nil {
		g.resize.LeftOutPages += pages
	}
}

// shrank reads the pool now and reports whether it is smaller than when the run was planned.
func (g *poolGuard) shrank(ctx context.Context) bool {
	if g == nil {
		return false
	}
	if s, err := g.sample(context.WithoutCancel(ctx)); err == nil {
		g.observe(s)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.resize != nil && g.resize.ToPages < g.resize.FromPages
}

// serverAborted records that the server aborted its own load of requested pages to shrink
// the pool: what it had not read by then is left out.
func (g *poolGuard) serverAborted(requested int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.resize == nil {
		return
	}
	g.resize.Stopped, g.resize.ServerAborted = true, true
	g.resize.LeftOutPages = max(g.resize.LeftOutPages, requested-g.read)
}

// guardEvery is how often the guard reads the pool's size: one status read, a few pages of
// reading at warm speeds.
const guardEvery = 100 * time.Millisecond

// watch samples the pool until ctx ends and calls stop once the run has read more than the
// budget a shrink left it. The returned func stops watching and returns what it saw (nil: the
// pool kept its size).
func (g *poolGuard) watch(ctx context.Context, stop func()) func() *PoolResize {
	if g == nil {
		return func() *PoolResize { return nil }
	}
	stopWatching := periodic.Every(ctx, guardEvery, func(ctx context.Context) bool {
		s, err := g.sample(ctx)
		if err != nil {
			return true // the run's own statements report a lost server
		}
		if g.observe(s) {
			g.mu.Lock()
			g.resize.Stopped = true
			g.mu.Unlock()
			stop()
			return false
		}
		return true
	})
	return func() *PoolResize {
		stopWatching()
		// A last look: a shrink between the last sample and the end is still reported.
		if s, err := g.sample(context.WithoutCancel(ctx)); err == nil {
			g.observe(s)
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.resize == nil {
			return nil
		}
		r := *g.resize
		return &r
	}
}

package warm

import (
	"context"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/manifest"
)

// budgetLedger holds a budgeted run to its budget by measurement, statement by statement,
// where the plan's sizes are estimates the watch alone (watchBudget) held a poll and a
// KILL QUERY late, or a margin early. On the sql path the plan counts the manifest's pages
// and this server's rows a page by its statistics, and both miss on a copy built
// otherwise: on a logical copy whose statistics said 41.6 rows a leaf where its leaves
// held about 35, a 172-page budget read 185-201 pages (MySQL 9.7, its statement's row
// limit from the statistics); on MariaDB, whose union reads every member before its limit
// applies, the watch killed the statement at 151-160 pages, a margin short. So each
// statement of a budgeted run of the sql path is given, as it starts, the rows the pages
// left may hold: at first half of them by the statistics, then 90% of them by the rows the
// run has counted over the pages it has read (never more than the statistics say). A
// statement that reaches its rows is read on from where it stopped (its pages are in the
// pool: read again, they cost no page), so the run ends at its budget in a few short
// steps, on every flavor. A LOB unit whose size is a guess is read the same way, in steps
// of rows (runLOBWithin).
type budgetLedger struct {
	conn   *connection.Conn
	budget int64 // pages the run may read
	start  int64 // Innodb_pages_read at the run's start
	// holdsAll says every unit is the ledger's (the sql path's): the budget's watch then
	// stops nothing early.
	holdsAll bool

	mu sync.Mutex
	// reserved is what the statements in flight are expected to read, in pages; release
	// is closed (and replaced) whenever one ends.
	reserved int64
	release  chan struct{}
	// rows is the new rows the run's statements counted: over the pages the run has read
	// (every session's, those of statements still in flight included: the rows a page look
	// fewer, and the run stops sooner, never later), the rows a page here.
	rows int64
}

const (
	// firstShare is the part of the pages left that a statement may read before the run
	// has measured its rows a page: the statistics may count more than the leaves hold.
	firstShare = 0.5
	// measuredShare is the part once measured: the rows a page differ from leaf to leaf.
	measuredShare = 0.9
	// minMeasuredPages is the pages read before the run's own rows a page count.
	minMeasuredPages = 8
	// minLeftPages is the fewest pages left worth a statement: one reads a leaf at least,
	// and the one past its run's end.
	minLeftPages = 2
	// maxLedgerStatements bounds the statements of one unit (each reads a share of what is
	// left, so a handful reach the budget).
	maxLedgerStatements = 64
	// staleFirstRows is the rows of a unit's first step where the statistics give no rows
	// a page (a table loaded and restarted before the server recalculated them); each step
	// after reads at most twice the unit's rows so far, until the run's own rows a page
	// give its share of what is left.
	staleFirstRows = 32
)

// newBudgetLedger is the ledger of a budgeted run, or nil where the run has no budget. It
// holds the whole run (holdsAll) where every unit is of the sql path; elsewhere it holds
// the LOB units it can read in steps (lobSteps) and the budget's watch the rest.
func newBudgetLedger(conn *connection.Conn, pl *Plan, start int64) *budgetLedger {
	if pl.BudgetPages <= 0 || len(pl.Units) == 0 {
		return nil
	}
	return &budgetLedger{conn: conn, budget: pl.BudgetPages, start: start, holdsAll: pl.ledgerHoldsAll()}
}

// ledgerHoldsAll says whether a run of the plan is the ledger's whole: a budget, and every
// unit of the sql path. A unit without plausible statistics is held too, in steps that
// measure its rows a page (staleFirstRows): left to the watch, it stopped a margin short
// (a 174-page budget at 159 pages, MariaDB 10.11 on a busy machine, its copy's statistics
// not yet recalculated after the restart).
func (pl *Plan) ledgerHoldsAll() bool {
	if pl.BudgetPages <= 0 || len(pl.Units) == 0 {
		return false
	}
	for _, u := range pl.Units {
		if u.keyed == nil {
			return false
		}
	}
	return true
}

// wholeStep is a step that reads each of a unit's runs whole, at its own limit: the
// statement a dry run shows for a unit the ledger will read.
func wholeStep(kr *keyedRead) []stepRead {
	reads := make([]stepRead, len(kr.conds))
	for k := range kr.conds {
		reads[k] = stepRead{run: k, to: membersOf(kr, k), limit: kr.limits[k]}
	}
	return reads
}

// rowsPerPage is the rows a page the next statement is given by, the run having read pages:
// the run's own, once it has read enough pages, at most the statistics' (stats); measured
// says which. The caller holds mu.
func (l *budgetLedger) rowsPerPage(stats float64, pages int64) (rpp float64, measured bool) {
	if pages >= minMeasuredPages && l.rows > 0 {
		rpp = float64(l.rows) / float64(pages)
		if stats > 0 {
			rpp = min(rpp, stats)
		}
		return rpp, true
	}
	return stats, false
}

// released wakes the statements waiting for pages a statement in flight held. The caller
// holds mu.
func (l *budgetLedger) released() {
	if l.release != nil {
		close(l.release)
		l.release = nil
	}
}

// take reads the pages the run has read and what is left of the budget for a statement,
// less what the statements in flight are expected to read; when that is what holds it
// short, it waits for one of them to end. It returns with mu held.
func (l *budgetLedger) take(ctx context.Context) (read, left int64, err error) {
	for {
		before, err := pagesRead(ctx, l.conn)
		if err != nil {
			return 0, 0, err
		}
		l.mu.Lock()
		read = before - l.start
		left = l.budget - read - l.reserved
		if left >= minLeftPages || l.budget-read < minLeftPages || l.reserved == 0 {
			return read, left, nil
		}
		l.mu.Unlock()
		if err := l.waitRelease(ctx); err != nil {
			return 0, 0, err
		}
	}
}

// short ends a step too short of pages to read anything, called with mu held (it returns
// with mu released): where statements in flight hold pages, it waits for one to end (nil:
// try again); with none, the budget is reached: it stops the run (reach) and returns the
// run's context error.
func (l *budgetLedger) short(ctx context.Context, reach func()) error {
	if l.reserved > 0 {
		l.mu.Unlock()
		return l.waitRelease(ctx)
	}
	l.mu.Unlock()
	reach()
	return context.Canceled
}

// waitRelease waits until a statement in flight ends.
func (l *budgetLedger) waitRelease(ctx context.Context) error {
	l.mu.Lock()
	if l.reserved == 0 {
		l.mu.Unlock()
		return nil
	}
	if l.release == nil {
		l.release = make(chan struct{})
	}
	ch := l.release
	l.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// runCursor is how far a ledger has read one run of a unit: its rows below member from's
// low key are read (before of them), and partial more from there by a step its rows cut
// short (read again by the next step: they are in the pool).
type runCursor struct {
	from            int
	before, partial int64
	done            bool
}

// stepRead is one run's read in a ledger step: from its cursor up to member to's low key
// (to = len(members): the run's high bound), at most limit rows.
type stepRead struct {
	run   int
	to    int
	limit int64
}

// nextStep gives out rows, the rows the pages left may hold, to the unit's runs in their
// order (hottest first) from run next: each run up to its own limit, the last one cut where
// the rows run out. A run cut short is read up to the member past the rows it is given at
// rowsPerMember (a source page's rows): the optimizer's estimate of a range reads up to
// ten of its leaves, which a limit does not stop, and a 10-page step of a whole run's range
// read 17 pages (MySQL 9.7, EXPLAIN alone 10).
func nextStep(kr *keyedRead, cur []runCursor, next int, rows int64, rowsPerMember float64) []stepRead {
	var reads []stepRead
	for k := next; k < len(kr.conds) && rows > 0; k++ {
		c := cur[k]
		if c.done {
			continue
		}
		may := kr.limits[k] - c.before // the rows the run may still read from its cursor
		give := min(may-c.partial, rows)
		if give <= 0 {
			continue
		}
		rd := stepRead{run: k, limit: c.partial + give, to: membersOf(kr, k)}
		if rd.limit < may && rowsPerMember > 0 && narrowable(kr, k) {
			need := int(math.Ceil(float64(rd.limit)/rowsPerMember)) + 1
			rd.to = min(c.from+need, rd.to)
		}
		reads = append(reads, rd)
		rows -= give
	}
	return reads
}

// membersOf is the number of run k's members (none where the unit keeps no runs).
func membersOf(kr *keyedRead, k int) int {
	if k < len(kr.runs) {
		return len(kr.runs[k].members)
	}
	return 0
}

// narrowable says whether run k's reads can start and end at its members' low keys: a run
// of leaves with both bounds (an open run reads the index from its start).
func narrowable(kr *keyedRead, k int) bool {
	if kr.cond == nil || k >= len(kr.runs) {
		return false
	}
	run := kr.runs[k]
	open := func(b string) bool { return b == manifest.OpenBound || b == "" }
	return len(run.members) > 1 && !open(run.low) && !open(run.high) && run.members[0].low == run.low
}

// condOf is the condition of a step's read of run k.
func condOf(kr *keyedRead, cur []runCursor, rd stepRead) (string, error) {
	from := cur[rd.run].from
	if from == 0 && rd.to >= membersOf(kr, rd.run) {
		return kr.conds[rd.run], nil
	}
	run := kr.runs[rd.run]
	high := run.high
	if rd.to < len(run.members) {
		high = run.members[rd.to].low
	}
	return kr.cond(run.members[from].low, high)
}

// advance takes a step's counts into the runs' cursors: a read that ended before its limit
// read its range to the end; one that reached it stopped inside (or at the run's own
// limit: done, as a statement of the whole unit). It returns the new rows counted and, of
// the ranges read to their end, their rows and members (the source's pages).
func advance(kr *keyedRead, cur []runCursor, reads []stepRead, counts []int64) (newRows, rangeRows, rangeMembers int64) {
	for i, rd := range reads {
		c, n := &cur[rd.run], counts[i]
		newRows += max(n-c.partial, 0)
		members := membersOf(kr, rd.run)
		switch {
		case n < rd.limit && rd.to >= members:
			c.done = true
			if members > c.from {
				rangeRows, rangeMembers = rangeRows+n, rangeMembers+int64(members-c.from)
			}
		case n < rd.limit:
			rangeRows, rangeMembers = rangeRows+n, rangeMembers+int64(rd.to-c.from)
			c.from, c.before, c.partial = rd.to, c.before+n, 0
		case rd.limit >= kr.limits[rd.run]-c.before:
			c.done = true
		default:
			c.partial = n
		}
	}
	return newRows, rangeRows, rangeMembers
}

// buildRunCounts is a statement of a ledger step: each read's rows counted on its own (one
// row of numbers leaves the server), so that the step says which runs it read to their end.
func buildRunCounts(from string, conds []string, reads []stepRead) string {
	parts := make([]string, len(reads))
	for i, rd := range reads {
		parts[i] = "(SELECT COUNT(*) FROM (SELECT 1 FROM " + from + " WHERE " + conds[i] + " LIMIT " +
			strconv.FormatInt(rd.limit, 10) + ") AS innowarm_run" + strconv.Itoa(i+1) + ")"
	}
	return "SELECT " + StatementTag + " " + strings.Join(parts, ", ")
}

// runKeyedWithin reads a unit of the sql path in ledger steps until its runs are read or
// the budget is: then it stops the run (reach), as the budget's watch does, and returns the
// run's context error.
func (r *scanRun) runKeyedWithin(ctx context.Context, sess *connection.Session, u *Unit, limit time.Duration, reach func()) error {
	l, kr := r.ledger, u.keyed
	from := fromClause(r.pl.Server, u.Table, u.Part, u.Index)
	cur := make([]runCursor, len(kr.conds))
	next := 0
	var rangeRows, rangeMembers int64 // of the ranges read to their end: rows a source page
	var unitRows int64                // the rows this unit's steps counted
	for steps := 0; next < len(kr.conds); steps++ {
		read, left, err := l.take(ctx)
		if err != nil {
			return err
		}
		rpp, measured := l.rowsPerPage(kr.budgetRowsPerPage, read)
		share := firstShare
		if measured {
			share = measuredShare
		}
		rows := int64(float64(left) * share * rpp)
		if kr.budgetRowsPerPage <= 0 {
			// No statistics to bound a step: it grows from a few rows as the run's own
			// rows a page are measured.
			grow := max(staleFirstRows, 2*unitRows)
			if rpp <= 0 {
				rows = grow
			}
			rows = min(rows, grow)
		}
		if steps == maxLedgerStatements {
			// Steps that never reached the budget (rows already in the pool): the rest at
			// their own limits, held by the budget's watch.
			rows = math.MaxInt64
		} else if left < minLeftPages || rows < 1 {
			if err := l.short(ctx, reach); err != nil {
				return err
			}
			steps--
			continue
		}
		perMember := kr.budgetRowsPerPage
		if rangeMembers > 0 && rangeRows > 0 {
			perMember = float64(rangeRows) / float64(rangeMembers)
		}
		reads := nextStep(kr, cur, next, rows, perMember)
		reserve := min(stepPages(kr, cur, reads, perMember, rpp), max(int64(float64(left)*share), 1))
		l.reserved += reserve
		l.mu.Unlock()

		conds := make([]string, len(reads))
		for i, rd := range reads {
			if conds[i], err = condOf(kr, cur, rd); err != nil {
				break
			}
		}
		var counts []int64
		if err == nil {
			counts, err = r.runLedgerStep(ctx, sess, buildRunCounts(from, conds, reads), len(reads), limit)
		}
		l.mu.Lock()
		l.reserved -= reserve
		if err == nil {
			newRows, rr, rm := advance(kr, cur, reads, counts)
			rangeRows, rangeMembers = rangeRows+rr, rangeMembers+rm
			l.rows += newRows
			unitRows += newRows
		}
		l.released()
		l.mu.Unlock()
		if err != nil {
			return err
		}
		for next < len(kr.conds) && cur[next].done {
			next++
		}
	}
	return nil
}

// stepPages is what a step's reads are expected to read, in this server's pages: each
// read's source pages (members) times the rows a source page holds over the rows a page
// holds here, at most what its rows fill, and a page for its end.
func stepPages(kr *keyedRead, cur []runCursor, reads []stepRead, perMember, rpp float64) int64 {
	if rpp <= 0 {
		return 0
	}
	var pages float64
	for _, rd := range reads {
		byRows := float64(rd.limit-cur[rd.run].partial) / rpp
		if m := rd.to - cur[rd.run].from; m > 0 && perMember > 0 {
			byRows = min(byRows, float64(m)*perMember/rpp)
		}
		pages += byRows + 1
	}
	return int64(math.Ceil(pages))
}

// runLedgerStep runs one ledger statement and returns its n counts.
func (r *scanRun) runLedgerStep(ctx context.Context, sess *connection.Session, q string, n int, limit time.Duration) ([]int64, error) {
	counts := make([]int64, n)
	dest := make([]any, n)
	for i := range counts {
		dest[i] = &counts[i]
	}
	if err := queryReadOnly(ctx, sess, r.pl.Server.WithTimeLimit(q, limit), nil, dest...); err != nil {
		return nil, err
	}
	return counts, nil
}

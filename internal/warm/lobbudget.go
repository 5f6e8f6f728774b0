package warm

import (
	"bytes"
	"context"
	"database/sql"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// lobSteps is the key column a LOB unit of a budgeted run is read in steps by, or "" where
// it is read in one statement: where the budget may end inside it, that is where its pages
// are a guess (not the file's: off the database host the statistics count the LOB pages as
// the clustered index's leaves, and the guess said 1 page of 6,000) or the budget cut its
// set (a partial or bounded target), and the clustered index has one whole key column. The
// budget's watch alone stopped such a read a poll and a KILL late: 4,252 pages read with
// 4,051 of room, beside a CI run on the 2 CPUs (TestLOBWarmKeepsToItsBudget); or, on the
// database host, its margin early: 3,267 pages read of a 3,773-page budget.
// The key's type must come back from the server and go to it again as the same value: an
// integer, an exact decimal, a date or time, a string in its own charset or bytes (a float's
// text is not always its value).
func lobSteps(u *Unit) string {
	if u.Kind != KindLOB || u.prefixColumn != "" || u.Index == nil || len(u.Index.Columns) != 1 || u.Index.Columns[0].SubPart > 0 {
		return ""
	}
	if sz, ok := u.Index.Sizes[u.Part.Name]; ok && sz.FromFile && (u.Target == nil || !u.Target.Partial && !u.Target.Bounded) {
		return ""
	}
	c := u.Index.Columns[0].Column
	if kindOf(c) == splitNone {
		return ""
	}
	switch strings.ToLower(c.DataType) {
	case "float", "double", "real":
		return ""
	}
	return u.Index.Columns[0].Name
}

// firstLOBRows is the most rows the first step of a LOB unit reads, before the pages a row
// reads are measured; each step after reads at most twice the rows read before it.
const firstLOBRows = 256

// runLOBWithin reads a LOB unit in steps of rows in key order, each step's rows the pages
// left may hold at the pages a row has read so far (at first the statistics' pages of the
// clustered index a row, which count its LOB pages): `SELECT COUNT(*), MAX(k), SUM(len)
// FROM (SELECT k, LENGTH(lob) ... WHERE k > last ORDER BY k LIMIT n)`, one row of three
// numbers. A step reads about its share of what is left: more only where its rows hold
// more off-page pages than the rows before them (the budget's watch then stops it). At the
// budget it stops the run (reach).
func (r *scanRun) runLOBWithin(ctx context.Context, sess *connection.Session, u *Unit, limit time.Duration, reach func()) error {
	l := r.ledger
	r.lobStepped.Store(u.Target.Name(), true)
	key := sqltext.Ident(lobSteps(u))
	var terms []string
	for _, c := range u.Table.LOBColumns() {
		terms = append(terms, "COALESCE(LENGTH("+sqltext.Ident(c.Name)+"), 0)")
	}
	statsPerRow := 0.0
	if _, pages := u.Table.IndexPages(u.Index, u.Part); u.Part.Rows > 0 && pages > 0 {
		statsPerRow = float64(pages) / float64(u.Part.Rows)
	}
	var last any // the key of the last row read; nil before the first step
	var prevKey []byte
	var rows, pages int64
	for {
		read, left, err := l.take(ctx)
		if err != nil {
			return err
		}
		before := l.start + read
		perRow, share := statsPerRow, firstShare
		if rows > 0 && pages >= minMeasuredPages {
			// Never fewer pages a row than the statistics' average: rows read before may
			// have held no off-page value.
			perRow, share = max(float64(pages)/float64(rows), statsPerRow), measuredShare
		}
		// A step at most twice the rows read so far: what it holds of the budget is what
		// the units on the other sessions cannot have meanwhile.
		n := max(firstLOBRows, 2*rows)
		if perRow > 0 {
			n = min(n, int64(float64(left)*share/perRow))
		}
		if n < 1 || left < minLeftPages {
			if err := l.short(ctx, reach); err != nil {
				return err
			}
			continue
		}
		reserve := max(int64(math.Ceil(float64(n)*perRow)), 1)
		l.reserved += reserve
		l.mu.Unlock()

		var p params
		where := []string{}
		if c := rangeCondition(u.splitColumn, u.Range, &p); c != "" {
			where = append(where, c)
		}
		if last != nil {
			where = append(where, key+" > "+p.add(last))
		}
		inner := "SELECT " + key + " AS innowarm_key, " + strings.Join(terms, " + ") + " AS innowarm_len FROM " + fromClause(r.pl.Server, u.Table, u.Part, u.Index)
		if len(where) > 0 {
			inner += " WHERE " + strings.Join(where, " AND ")
		}
		inner += " ORDER BY " + key + " LIMIT " + strconv.FormatInt(n, 10)
		q := "SELECT " + StatementTag + " COUNT(*), MAX(innowarm_key), SUM(innowarm_len) FROM (" + inner + ") AS innowarm_lob"
		var count int64
		var maxKey []byte
		var sum sql.NullFloat64
		err = queryReadOnly(ctx, sess, r.pl.Server.WithTimeLimit(q, limit), p.args, &count, &maxKey, &sum)
		after, aerr := pagesRead(context.WithoutCancel(ctx), r.conn)
		l.mu.Lock()
		l.reserved -= reserve
		l.released()
		l.mu.Unlock()
		if err != nil {
			return err
		}
		if aerr == nil {
			pages += max(after-before, 0)
		}
		rows += count
		if count < n || maxKey == nil || (prevKey != nil && bytes.Equal(maxKey, prevKey)) {
			// The set's end (or a key that did not move on: nothing more to read by it).
			return nil
		}
		prevKey = maxKey
		if dt := strings.ToLower(u.Index.Columns[0].Column.DataType); dt == "binary" || dt == "varbinary" {
			last = append([]byte(nil), maxKey...)
		} else {
			last = string(maxKey)
		}
	}
}

// lobStepsNote says which LOB sets were read in steps, or "".
func (r *scanRun) lobStepsNote() string {
	var names []string
	r.lobStepped.Range(func(k, _ any) bool {
		names = append(names, k.(string))
		return true
	})
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	return "off-page LOB pages read in steps of rows in key order, each within what was left of the budget (their number a guess without the tablespace file, or more than the budget): " + strings.Join(names, ", ")
}

package warm

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// A native load puts a table's pages in the pool without opening the table: its first
// query after a restart still pays for the open (the table's definition from the data
// dictionary or the .frm, InnoDB's table object and its persistent statistics), measured
// on this project's VM at 3.5-4.2 ms a table on MySQL 9.7 and 1.6-1.7 ms on MariaDB
// 10.11, where the same query then took 0.1-0.7 ms. On a workload pass of 12-25 ms over a
// few tables that was the first pass's gap to its hot pass on the tree path (MySQL 9.7's
// logical copy: 3-14 ms slower in 5 rounds of 6; the sql path, whose range scans open the
// tables, was not). So after a native load the warm opens the tables it loaded, hottest
// first, as the table cache has room for.

// tableRef names a table to open.
type tableRef struct{ schema, table string }

// openTablesSessions is how many sessions open tables at once: an open is mostly the
// server's CPU and its dictionary's locks, not the disk.
const openTablesSessions = 2

// openTablesLockWait bounds the wait of an open behind DDL (a metadata lock): the table is
// left to its first query.
const openTablesLockWait = time.Second

// OpenedTables says what the warm's opening of its tables did.
type OpenedTables struct {
	Opened  int     `json:"opened"`
	Already int     `json:"already_open"` // in the table cache before
	Left    int     `json:"left_out,omitempty"`
	Failed  int     `json:"failed,omitempty"`
	Seconds float64 `json:"seconds"`
	Why     string  `json:"why,omitempty"` // why some were left out
}

// openTables opens each of tables (hottest first) that the table cache does not hold yet,
// with a statement that reads no row (SELECT 1 ... LIMIT 0), up to the room the table
// cache and the table definition cache have left: opening more would close tables the
// server's own workload has open. Errors of one table (dropped since, a lock held by DDL)
// leave it to its first query; the context's end stops it, killing what runs.
func openTables(ctx context.Context, conn *connection.Conn, tables []tableRef) (out OpenedTables, err error) {
	if len(tables) == 0 {
		return out, nil
	}
	t0 := time.Now()
	defer func() { out.Seconds = time.Since(t0).Seconds() }()
	open, err := tablesOpen(ctx, conn)
	if err != nil {
		return out, fmt.Errorf("open the warmed tables: %w", err)
	}
	var openCache, defCache int
	if err := conn.DB.QueryRowContext(ctx, "SELECT @@table_open_cache, @@table_definition_cache").Scan(&openCache, &defCache); err != nil {
		return out, fmt.Errorf("open the warmed tables: %w", err)
	}
	todo, room := pickTablesToOpen(tables, open, min(openCache, defCache)-len(open))
	out.Already, out.Left, out.Why = room.already, room.left, room.why
	if len(todo) == 0 {
		return out, nil
	}
	var mu sync.Mutex
	next := 0
	var wg sync.WaitGroup
	var firstErr error
	for range min(openTablesSessions, len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sess, err := conn.NewSession(ctx)
			if err == nil {
				defer sess.Close()
				err = sess.SetLockWaitTimeout(ctx, openTablesLockWait)
			}
			if err != nil {
				mu.Lock()
				firstErr = cmp.Or(firstErr, err)
				mu.Unlock()
				return
			}
			for ctx.Err() == nil && sess.Usable() {
				mu.Lock()
				if next >= len(todo) {
					mu.Unlock()
					return
				}
				t := todo[next]
				next++
				mu.Unlock()
				_, err := sess.Exec(ctx, "SELECT "+StatementTag+" 1 FROM "+sqltext.Table(t.schema, t.table)+" LIMIT 0")
				mu.Lock()
				if err == nil {
					out.Opened++
				} else if ctx.Err() == nil {
					out.Failed++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return out, err
	}
	if out.Opened == 0 && firstErr != nil {
		return out, fmt.Errorf("open the warmed tables: %w", firstErr)
	}
	return out, nil
}

type openRoom struct {
	already, left int
	why           string
}

// tablesOpen is the tables in the server's table cache (SHOW OPEN TABLES).
func tablesOpen(ctx context.Context, conn *connection.Conn) (map[tableRef]bool, error) {
	rows, err := conn.DB.QueryContext(ctx, "SHOW OPEN TABLES")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	open := map[tableRef]bool{}
	for rows.Next() {
		var db, tbl string
		var inUse, nameLocked sql.RawBytes
		if err := rows.Scan(&db, &tbl, &inUse, &nameLocked); err != nil {
			return nil, err
		}
		open[tableRef{db, tbl}] = true
	}
	return open, rows.Err()
}

// pickTablesToOpen is tables (hottest first, each once) less those open, cut to room.
func pickTablesToOpen(tables []tableRef, open map[tableRef]bool, room int) ([]tableRef, openRoom) {
	seen := map[tableRef]bool{}
	var todo []tableRef
	var r openRoom
	for _, t := range tables {
		if seen[t] {
			continue
		}
		seen[t] = true
		if open[t] {
			r.already++
			continue
		}
		todo = append(todo, t)
	}
	room = max(room, 0)
	if len(todo) <= room {
		return todo, r
	}
	r.left = len(todo) - room
	r.why = fmt.Sprintf("the table cache has room for %d more (the smaller of table_open_cache and table_definition_cache, less the tables open): more would close the workload's", room)
	return todo[:room], r
}

// openWarmedTables opens the tables of res's targets that the load left pages of
// (openTables), unless ro keeps them closed, and says so in res. Only the context's end is
// an error: a table that cannot be opened is left to its first query.
func (res *Result) openWarmedTables(ctx context.Context, conn *connection.Conn, ro RunOptions) error {
	if ro.KeepTablesClosed {
		return nil
	}
	// Most resident pages first: they are the most of the warm, and the table cache's
	// room may not hold them all.
	resident := map[tableRef]int64{}
	var tables []tableRef
	for _, tr := range res.Targets {
		if tr.ResidentAfter <= 0 {
			continue
		}
		t := tableRef{tr.Schema, tr.Table}
		if _, seen := resident[t]; !seen {
			tables = append(tables, t)
		}
		resident[t] += tr.ResidentAfter
	}
	if len(tables) == 0 {
		return nil
	}
	sort.SliceStable(tables, func(i, j int) bool { return resident[tables[i]] > resident[tables[j]] })
	opened, err := openTables(ctx, conn, tables)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		res.Notes = append(res.Notes, err.Error())
		return nil
	}
	res.TablesOpened = &opened
	if opened.Opened+opened.Failed+opened.Left > 0 {
		res.Notes = append(res.Notes, opened.Text())
	}
	return nil
}

// Text is the line the warm's report says of it.
func (o OpenedTables) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "opened %d %s the load warmed (their first query pays no table open)", o.Opened, plural(int64(o.Opened), "table", "tables"))
	if o.Already > 0 {
		fmt.Fprintf(&b, ", %d were open", o.Already)
	}
	if o.Failed > 0 {
		fmt.Fprintf(&b, ", %d could not be opened now (left to their first query)", o.Failed)
	}
	if o.Left > 0 {
		fmt.Fprintf(&b, ", %d left out: %s", o.Left, o.Why)
	}
	fmt.Fprintf(&b, " in %.0f ms", 1000*o.Seconds)
	return b.String()
}

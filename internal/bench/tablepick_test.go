package bench

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestTransactionDrawsATablePerStatementGroup: sysbench's oltp_read_only and
// oltp_read_write (oltp_common.lua) draw a table for each group of statements: the 10
// point selects, each kind of range, the indexed UPDATE, the non-indexed UPDATE, and the
// DELETE with its INSERT. Before, bench drew one table per transaction: with --tables 4
// every transaction stayed in one table, so its locks, its undo and its pages did not
// spread as sysbench's do.
func TestTransactionDrawsATablePerStatementGroup(t *testing.T) {
	for _, workload := range []string{WorkloadReadOnly, WorkloadReadWrite} {
		t.Run(workload, func(t *testing.T) {
			const nTables = 4
			r := &runner{p: &Plan{Options: Options{Workload: workload, RangeSize: 100}, Mode: ModeWorkload}}
			w := &worker{r: r, st: &roundState{}, rng: rand.New(rand.NewPCG(7, 11))}
			for i := range nTables {
				name := sbName(i + 1)
				r.tables = append(r.tables, sbTable{name: name, rows: 1000, sampler: uniform{n: 1000}})
				mk := func(sql string) *psStmt { return &psStmt{sql: strings.ReplaceAll(sql, "%s", name)} }
				w.prepared = append(w.prepared, sbStmts{
					point: mk(sqlPoint), simple: mk(sqlSimple), sum: mk(sqlSum), order: mk(sqlOrder), distinct: mk(sqlDistinct),
					indexUpdate: mk(sqlIndexUpdate), nonIndexUpdate: mk(sqlNonIndexUpdate), del: mk(sqlDelete), ins: mk(sqlInsert),
				})
			}
			prog := newWorkloadProgram(w, roundSpec{clients: 1})
			spanning := 0
			groupTables := map[string]map[string]bool{} // group -> tables seen across transactions
			for range 200 {
				var tx []step
				for {
					s, ok := prog.next(false)
					if !ok {
						t.Fatal("the program ended")
					}
					prog.done(s, false)
					tx = append(tx, s)
					if s.event {
						break
					}
				}
				tableOf := func(s step) string {
					for _, name := range []string{"sbtest1", "sbtest2", "sbtest3", "sbtest4"} {
						if strings.Contains(s.ps.sql, name+" ") || strings.HasSuffix(s.ps.sql, name) {
							return name
						}
					}
					t.Fatalf("no table in %q", s.ps.sql)
					return ""
				}
				// The statements of one group share a table: the point selects, and the
				// DELETE with the INSERT that puts the row back.
				var points []string
				var del, ins string
				seen := map[string]bool{}
				for _, s := range tx {
					if s.ps == nil {
						continue
					}
					tb := tableOf(s)
					seen[tb] = true
					kind := strings.ReplaceAll(s.ps.sql, tb, "T")
					switch {
					case kind == strings.ReplaceAll(sqlPoint, "%s", "T"):
						points = append(points, tb)
					case strings.HasPrefix(s.ps.sql, "DELETE"):
						del = tb
					case strings.HasPrefix(s.ps.sql, "INSERT"):
						ins = tb
					}
					if groupTables[kind] == nil {
						groupTables[kind] = map[string]bool{}
					}
					groupTables[kind][tb] = true
				}
				if len(points) != pointSelectsPerTx {
					t.Fatalf("%d point selects in a transaction, want %d", len(points), pointSelectsPerTx)
				}
				for _, tb := range points {
					if tb != points[0] {
						t.Fatalf("the point selects of one transaction went to %v: sysbench sends them to one table", points)
					}
				}
				if del != ins {
					t.Fatalf("DELETE on %s and its INSERT on %s: sysbench puts the row back where it deleted it", del, ins)
				}
				if len(seen) > 1 {
					spanning++
				}
			}
			// With 5 (read-only) or 8 (read-write) groups over 4 tables, a transaction stays in
			// one table with probability 4^-4 or 4^-7: nearly every one spans several.
			if spanning < 150 {
				t.Errorf("%d of 200 transactions spanned more than one table: sysbench draws a table per statement group", spanning)
			}
			for kind, tables := range groupTables {
				if len(tables) != nTables {
					t.Errorf("statements %q went to %d of the %d tables", kind, len(tables), nTables)
				}
			}
		})
	}
}

package warm_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/warm"
)

// TestWarmByKeyOfEveryKeyType: a table keyed by a DECIMAL primary key, with a secondary
// index on a column of each other type keys are read for (DECIMAL with a scale, BIT, YEAR,
// SET, ENUM, FLOAT, DOUBLE, TIMESTAMP(6), TIME(2), DATETIME(3), DATE, BINARY, BIGINT
// UNSIGNED, VARCHAR in a binary collation), grown by random-order inserts and read at
// scattered rows through every index, is snapshot with its keys and replaced by a logical
// copy; warm --from the snapshot (auto, and --by-key sql) takes a key path for every
// index, and the workload's first pass then misses at most its hot pass's misses plus a
// tenth of a cold pass's. Before, a manifest naming a DECIMAL(P,S) key column could not be
// read back at all ("key type decimal(14: unclosed").
func TestWarmByKeyOfEveryKeyType(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	db := sandboxtest.Schema(t)
	tbl, hot := sqltext.Table(db, "t"), sqltext.Table(db, "hot")
	const rows = 30000
	cols := []struct{ name, ddl, value, keyType string }{
		{"d", "DECIMAL(14,2) NOT NULL", "(CAST(seq AS SIGNED) * 7919 % 100003) / 100 - 400", "decimal(14,2)"},
		{"b", "BIT(12) NOT NULL", "seq * 13 % 4096", "bit12"},
		{"y", "YEAR NOT NULL", "1901 + seq % 255", "year"},
		{"st", "SET('a','b','c','d','e') NOT NULL", "1 + seq % 31", "set1"},
		{"en", "ENUM('red','green','blue','cyan') NOT NULL", "1 + seq % 4", "enum"},
		{"f", "FLOAT NOT NULL", "(CAST(seq AS SIGNED) * 7919 % 100003) / 7", "float"},
		{"g", "DOUBLE NOT NULL", "-(CAST(seq AS SIGNED) * 7919 % 100003) / 3", "double"},
		{"ts", "TIMESTAMP(6) NOT NULL DEFAULT '2000-01-01 00:00:00'", "FROM_UNIXTIME(1000000000 + (CAST(seq AS SIGNED) * 7919 % 100003) * 37 + (seq % 1000) / 1000000)", "timestamp(6)"},
		{"tm", "TIME(2) NOT NULL", "SEC_TO_TIME((CAST(seq AS SIGNED) * 7919 % 100003) - 50000 + 0.25)", "time(2)"},
		{"dt", "DATETIME(3) NOT NULL", "'2020-01-01' + INTERVAL (CAST(seq AS SIGNED) * 7919 % 100003) * 1001000 MICROSECOND", "datetime(3)"},
		{"da", "DATE NOT NULL", "'1990-01-01' + INTERVAL seq % 12000 DAY", "date"},
		{"bi", "BINARY(8) NOT NULL", "UNHEX(LPAD(HEX(seq * 2654435761 % 4294967291), 16, '0'))", "binary8"},
		{"u", "BIGINT UNSIGNED NOT NULL", "seq * 2654435761 % 18446744073709551557", "uint8"},
		{"vb", "VARCHAR(20) COLLATE utf8mb4_bin NOT NULL", "CONCAT('k', CAST(seq AS SIGNED) * 7919 % 100003)", "varchar@utf8mb4_bin"},
	}
	var defs, names, values, keyDefs []string
	indexes := []string{"PRIMARY"}
	for _, c := range cols {
		defs = append(defs, sqltext.Ident(c.name)+" "+c.ddl)
		names = append(names, sqltext.Ident(c.name))
		values = append(values, c.value)
		keyDefs = append(keyDefs, "KEY "+sqltext.Ident("k_"+c.name)+" ("+sqltext.Ident(c.name)+")")
		indexes = append(indexes, "k_"+c.name)
	}
	exec := func(conn *connection.Conn, stmts ...string) {
		t.Helper()
		for _, q := range stmts {
			if _, err := conn.DB.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	exec(conn,
		"SET SESSION time_zone = '+00:00'",
		"CREATE TABLE "+tbl+" (id DECIMAL(20,4) NOT NULL, "+strings.Join(defs, ", ")+", pad CHAR(120) CHARACTER SET latin1 NOT NULL DEFAULT '', "+
			"PRIMARY KEY (id), "+strings.Join(keyDefs, ", ")+")",
		// Random key order: the primary key is a permutation of seq, the others scattered.
		fmt.Sprintf("INSERT INTO %s (id, %s) SELECT (seq * 7919 %% %d) / 8, %s FROM %s ORDER BY seq",
			tbl, strings.Join(names, ", "), rows+1, strings.Join(values, ", "), conn.Server.Series(db, 1, rows)),
		// The hot rows' values, which the workload looks up through every index.
		"CREATE TABLE "+hot+" AS SELECT * FROM "+tbl+" WHERE id * 8 % 300 = 0",
		"ANALYZE TABLE "+tbl,
		"FLUSH TABLES "+tbl+" FOR EXPORT", "UNLOCK TABLES")
	var lookups []string
	lookups = append(lookups, "SELECT STRAIGHT_JOIN SUM(LENGTH(a.pad)) FROM "+hot+" h JOIN "+tbl+" a FORCE INDEX (PRIMARY) ON a.id = h.id")
	for _, c := range cols {
		n := sqltext.Ident(c.name)
		lookups = append(lookups, "SELECT STRAIGHT_JOIN COUNT(a.id) FROM "+hot+" h JOIN "+tbl+" a FORCE INDEX ("+sqltext.Ident("k_"+c.name)+") ON a."+n+" = h."+n)
	}
	measure := func(conn *connection.Conn) int64 {
		t.Helper()
		before := poolReads(t, conn)
		exec(conn, lookups...)
		return poolReads(t, conn) - before
	}
	cold := coldRestarter(t)
	conn = cold()
	measure(conn)
	m := keyedSnapshot(t, conn, db, "types.manifest")
	keyed := map[string]string{}
	for _, o := range m.Objects {
		if o.Table == "t" && o.Index != "" {
			keyed[o.Index] = o.KeyColumns
		}
	}
	if keyed["PRIMARY"] != "id:decimal(20,4)" {
		t.Errorf("PRIMARY's key columns %q, want id:decimal(20,4)", keyed["PRIMARY"])
	}
	for _, c := range cols {
		if want := c.name + ":" + c.keyType + ",id:decimal(20,4)"; keyed["k_"+c.name] != want {
			t.Errorf("k_%s's key columns %q, want %q", c.name, keyed["k_"+c.name], want)
		}
	}

	replaceByLogicalCopy(t, conn, db, tbl)
	conn = cold()
	coldPass := measure(conn)
	hotPass := measure(conn)
	if coldPass < 200 {
		t.Fatalf("a cold pass missed %d pages: too few to tell a warm from none", coldPass)
	}
	for _, mode := range []struct{ byKey, want string }{{warm.ByKeyAuto, ""}, {warm.ByKeySQL, warm.PathSQL}} {
		conn = cold()
		out := warmByKey(t, conn, m, mode.byKey, false)
		paths := indexPaths(out)
		// The denser copy's files are smaller: entries past their ends resolve by key
		// (every object here has keys), they are not dropped.
		if mr := out.Manifest.Report; mr.Dropped[warm.DropPastEOF] > 0 || mr.Keyed == 0 {
			t.Errorf("--by-key %s: %d entries dropped past the end of a file, %d keyed (%d by key only)", mode.byKey, mr.Dropped[warm.DropPastEOF], mr.Keyed, mr.KeyedOnly)
		} else {
			t.Logf("--by-key %s: %d entries, %d resolved by page number, %d keyed, %d by key only", mode.byKey, mr.Entries, mr.Resolved, mr.Keyed, mr.KeyedOnly)
		}
		for _, ix := range indexes {
			ip, ok := paths[ix]
			switch {
			case !ok:
				t.Errorf("--by-key %s: no path for index %s", mode.byKey, ix)
			case mode.want != "" && ip.Path != mode.want, ip.Path != warm.PathSQL && ip.Path != warm.PathTree, ip.Statements == 0 && ip.TreePages == 0:
				t.Errorf("--by-key %s: index %s takes path %s with %d statements and %d tree pages (%s)", mode.byKey, ix, ip.Path, ip.Statements, ip.TreePages, ip.Reason)
			}
		}
		if res := out.Result; res.UnitsFailed > 0 || len(res.Errors) > 0 || len(res.Skipped) > 0 {
			t.Errorf("--by-key %s: %d units failed (%v), skipped %v", mode.byKey, res.UnitsFailed, res.Errors, res.Skipped)
		}
		after := measure(conn)
		bound := hotPass + coldPass/10
		t.Logf("--by-key %s: misses cold %d, hot %d, after the warm %d (bound %d)", mode.byKey, coldPass, hotPass, after, bound)
		if after > bound {
			t.Errorf("--by-key %s: the first pass after the warm missed %d pages, more than %d (hot %d + a tenth of cold %d)", mode.byKey, after, bound, hotPass, coldPass)
		}
	}
}

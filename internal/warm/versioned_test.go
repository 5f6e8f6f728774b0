package warm_test

import (
	"context"
	"testing"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/warm"
)

// TestVersionedPartitionsScan (MariaDB): system-versioned tables with partitions, by
// SYSTEM_TIME (history apart, which refuses FOR SYSTEM_TIME beside a named partition) and
// by RANGE (a partition named before FOR SYSTEM_TIME ALL, or the statement does not parse):
// every unit's statement runs, and each index's units count every row, history included,
// once. A warm of the schema by scans then succeeds (it failed on its plan's EXPLAIN).
func TestVersionedPartitionsScan(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	if !conn.Server.SystemVersioning() {
		t.Skipf("%s has no system-versioned tables", conn.Server)
	}
	db := sandboxtest.Schema(t)
	series := conn.Server.Series(db, 1, 6000) + " ORDER BY seq"
	tables := map[string]string{
		"by_time":  "PARTITION BY SYSTEM_TIME (PARTITION p_hist HISTORY, PARTITION p_cur CURRENT)",
		"by_range": "PARTITION BY RANGE (id) (PARTITION a VALUES LESS THAN (3000), PARTITION b VALUES LESS THAN MAXVALUE)",
		"by_time_sub": "PARTITION BY SYSTEM_TIME SUBPARTITION BY HASH (id) SUBPARTITIONS 2 " +
			"(PARTITION p_hist HISTORY, PARTITION p_cur CURRENT)",
	}
	for name, parts := range tables {
		q := sqltext.Table(db, name)
		// No statistics recalculated in the background, and the update's purge done
		// before the restart: either reads the tables' pages after it, and the plan
		// leaves out what is resident.
		sandboxtest.Exec(t,
			"CREATE TABLE "+q+" (id INT PRIMARY KEY, x INT, pad CHAR(60), KEY kx (x)) STATS_AUTO_RECALC=0 WITH SYSTEM VERSIONING "+parts,
			"INSERT INTO "+q+" SELECT seq, seq, 'p' FROM "+series,
			"UPDATE "+q+" SET x = x + 1 WHERE id MOD 3 = 0",
			"ANALYZE TABLE "+q)
	}
	sandboxtest.Exec(t, "SET GLOBAL innodb_max_purge_lag_wait = 0")
	// Cold, so that the plan has every index to read.
	if _, err := sandboxtest.Server(t).ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	conn = sandboxtest.Reconnect(t)
	cat, err := catalog.Load(ctx, conn, catalog.Filter{Schemas: []string{db}})
	if err != nil {
		t.Fatal(err)
	}
	pl, err := warm.BuildPlan(ctx, conn, cat, warm.Options{SplitPages: 2})
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	type ixKey struct{ table, index string }
	counted := map[ixKey]int64{}
	if len(pl.Targets) == 0 {
		t.Fatalf("the plan has nothing to read: %+v", pl)
	}
	for _, tg := range pl.Targets {
		for _, u := range tg.Units {
			q, args := warm.Statement(pl.Server, u, 0)
			var n int64
			if err := conn.DB.QueryRow(q, args...).Scan(&n); err != nil {
				t.Fatalf("%s: %s: %v", u.Label(), q, err)
			}
			counted[ixKey{tg.Table.Name, tg.Index.Name}] += n
		}
	}
	for name := range tables {
		var total int64
		if err := conn.DB.QueryRow("SELECT COUNT(*) FROM " + sqltext.Table(db, name) + " FOR SYSTEM_TIME ALL").Scan(&total); err != nil {
			t.Fatal(err)
		}
		if total != 8000 {
			t.Fatalf("%s: %d rows with history, want 8000", name, total)
		}
		for _, ix := range []string{"PRIMARY", "kx"} {
			if got := counted[ixKey{name, ix}]; got != total {
				t.Errorf("%s.%s: the units count %d rows, the table has %d with its history", name, ix, got, total)
			}
		}
	}
	if _, err := warm.Run(ctx, conn, pl, quiet()); err != nil {
		t.Fatalf("warm: %v", err)
	}
}

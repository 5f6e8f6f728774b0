package bufferpool_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

func TestMain(m *testing.M) { sandboxtest.Main(m, sandboxtest.Options{PoolSize: 128 << 20}) }

func TestParseTableName(t *testing.T) {
	cases := []struct{ in, schema, table, part string }{
		{"`shop`.`orders`", "shop", "orders", ""},
		{"`shop`.`orders` /* Partition `p2023` */", "shop", "orders", "p2023"},
		{"`d`.`t` /* Partition `p0`, Subpartition `p0sp1` */", "d", "t", "p0sp1"},
		{"`we``ird`.`t``x`", "we`ird", "t`x", ""},
		{"`zoo ü`.`a.b`", "zoo ü", "a.b", ""},
		{"test/t1", "test", "t1", ""}, // MySQL 5.6's internal form
		// A session with ANSI_QUOTES in its sql_mode.
		{`"shop"."orders"`, "shop", "orders", ""},
		{`"d"."t" /* Partition "p0", Subpartition "p0sp1" */`, "d", "t", "p0sp1"},
		{"\"we\"\"ird\".\"t`x\"", `we"ird`, "t`x", ""},
		{"`a\"b`.`c`", `a"b`, "c", ""},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			s, tb, p := bufferpool.ParseTableName(c.in)
			if s != c.schema || tb != c.table || p != c.part {
				t.Errorf("ParseTableName(%q) = %q %q %q", c.in, s, tb, p)
			}
		})
	}
}

func find(res *bufferpool.Residency, table, part, index string) *bufferpool.IndexResidency {
	for i := range res.Indexes {
		r := &res.Indexes[i]
		if r.Table == table && r.Partition == part && r.Index == index {
			return r
		}
	}
	return nil
}

// After a restart, pages loaded by InnoDB's own loader belong to tables the server has not
// opened, so they carry no names; Read must still attribute them to the right index.
func TestAttributionAfterNativeLoad(t *testing.T) {
	ctx := context.Background()
	zoo := sandboxtest.Zoo(t)
	db := sqltext.Ident(zoo)
	sb := sandboxtest.Server(t)
	// Creating the zoo left all of it in the pool: start from a cold pool.
	if _, err := sb.ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	sandboxtest.Reconnect(t)
	sandboxtest.Exec(t,
		"SELECT COUNT(*) FROM "+db+".`composite pk` FORCE INDEX (kb_c)",
		"SELECT SUM(LENGTH(body)) FROM "+db+".lobs")
	sandboxtest.DumpPool(t)
	// The catalog is read before the restart: reading information_schema.TABLES opens every
	// table, which would name their pages and hide what Read must handle on its own.
	cat, err := catalog.Load(ctx, sandboxtest.Conn(t), catalog.Filter{Schemas: []string{zoo}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	conn := sandboxtest.Reconnect(t)
	sandboxtest.Exec(t, "SET GLOBAL innodb_buffer_pool_load_now = ON")
	waitStatus(t, "Innodb_buffer_pool_load_status", "completed")

	res, err := bufferpool.Read(ctx, conn, cat, bufferpool.ReadOptions{IncludeZero: true, OnlyCatalog: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.OpenedTables == 0 {
		t.Error("expected Read to open tables whose pages had no names")
	}
	kb := find(res, "composite pk", "", "kb_c")
	if kb == nil || kb.Coverage < 0.99 {
		t.Fatalf("kb_c after native load: %+v", kb)
	}
	if pk := find(res, "composite pk", "", "PRIMARY"); pk == nil || pk.Coverage > 0.2 {
		t.Errorf("PRIMARY should be mostly cold: %+v", pk)
	}
	lob := find(res, "lobs", "", "PRIMARY")
	if lob == nil || lob.LOBResident < 100 || lob.LOBPages < lob.LOBResident/2 {
		t.Errorf("LOB pages of lobs: %+v", lob)
	}
	if u := find(res, "composite pk", "", bufferpool.UnknownIndex); u != nil {
		t.Errorf("pages left unattributed: %+v", u)
	}
	if res.Totals.PagesTotal == 0 || res.Totals.PagesData < kb.Resident {
		t.Errorf("totals: %+v", res.Totals)
	}
	// Every catalog index appears with includeZero, even when nothing of it is resident.
	if z := find(res, "empty_t", "", "kz"); z == nil || z.Resident != 0 && z.LeafPages == 0 {
		t.Errorf("empty_t.kz: %+v", z)
	}
	if p := find(res, "parts", "pmaxsp1", "kv"); p == nil {
		t.Error("subpartition index missing")
	}
}

// Old/young: scanned pages go to the old sublist (innodb_old_blocks_time), which InnoDB
// keeps once the LRU list holds more than 512 pages.
func TestOldPagesCounted(t *testing.T) {
	ctx := context.Background()
	zoo := sandboxtest.Zoo(t)
	if _, err := sandboxtest.Server(t).ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	conn := sandboxtest.Reconnect(t)
	db := sqltext.Ident(zoo)
	sandboxtest.Exec(t,
		"SELECT COUNT(*) FROM "+db+".`composite pk` FORCE INDEX (PRIMARY)",
		"SELECT COUNT(*) FROM "+db+".`composite pk` FORCE INDEX (kb_c)",
		"SELECT COUNT(*) FROM "+db+".nopk FORCE INDEX (ky)")
	cat, err := catalog.Load(ctx, conn, catalog.Filter{Schemas: []string{zoo}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := bufferpool.Read(ctx, conn, cat, bufferpool.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var old, resident int64
	for _, r := range res.Indexes {
		if r.Old > r.Resident+r.LOBResident {
			t.Errorf("%s.%s: %d old of %d resident", r.Table, r.Index, r.Old, r.Resident)
		}
		old += r.Old
		resident += r.Resident
	}
	if resident < 512 || old == 0 || old == resident {
		t.Errorf("%d of %d resident pages old; want some but not all after cold scans", old, resident)
	}
	// Opening a table reads its clustered root page and no more.
	if g := find(res, "nopk", "", catalog.GenClustIndex); g != nil && g.Resident > 2 {
		t.Errorf("GEN_CLUST_INDEX should be cold: %+v", g)
	}
	if find(res, "uniq_nn", "", "kv") != nil {
		t.Error("includeZero=false must leave out indexes with nothing resident")
	}
}

func waitStatus(t *testing.T, name, want string) {
	t.Helper()
	conn := sandboxtest.Conn(t)
	for i := 0; i < 600; i++ {
		var n, v string
		if err := conn.DB.QueryRow("SHOW GLOBAL STATUS LIKE ?", name).Scan(&n, &v); err != nil {
			t.Fatal(err)
		}
		if contains(v, want) {
			return
		}
		sleep()
	}
	t.Fatalf("%s never reached %q", name, want)
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func sleep() { time.Sleep(50 * time.Millisecond) }

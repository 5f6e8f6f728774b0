package bufferpool_test

import (
	"context"
	"testing"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// Statistics taken before a bulk load say the table is tiny: a size smaller than what is
// resident is not believed; the tablespace file bounds it, and the answer says so.
func TestStaleStatisticsAreNotBelieved(t *testing.T) {
	ctx := context.Background()
	srv := sandboxtest.Flavor(t)
	db := sandboxtest.Schema(t)
	tbl := sqltext.Table(db, "grown")
	sandboxtest.Exec(t,
		"CREATE TABLE "+tbl+" (id INT PRIMARY KEY, pad CHAR(200)) STATS_PERSISTENT=1 STATS_AUTO_RECALC=0",
		"INSERT INTO "+tbl+" VALUES (1, 'x')",
		"ANALYZE TABLE "+tbl,
		"INSERT INTO "+tbl+" SELECT seq + 1, REPEAT('p', 200) FROM "+srv.Series(db, 1, 30000)+" ORDER BY seq",
		"SELECT SUM(LENGTH(pad)) FROM "+tbl,
	)
	conn := sandboxtest.Conn(t)
	cat, err := catalog.Load(ctx, conn, catalog.Filter{Schemas: []string{db}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := bufferpool.Read(ctx, conn, cat, bufferpool.ReadOptions{IncludeZero: true, OnlyCatalog: true})
	if err != nil {
		t.Fatal(err)
	}
	pk := find(res, "grown", "", "PRIMARY")
	if pk == nil {
		t.Fatal("no row for PRIMARY")
	}
	t.Logf("%+v", *pk)
	if pk.Resident < 300 || pk.Pages < pk.Resident || pk.Coverage > 1 {
		t.Fatalf("PRIMARY after a bulk load: %+v; want 300+ pages resident, no more than its size", *pk)
	}
	if pk.SizeSource == bufferpool.SizeCounted {
		// The server wrote the file's segment descriptors since the load (a busy machine
		// gives its page cleaner the time): the file's own count replaces the statistics.
		return
	}
	if pk.Known || pk.SizeNote == "" || (pk.SizeSource != bufferpool.SizeFromFile && pk.SizeSource != bufferpool.SizeResidentFloor) {
		t.Errorf("PRIMARY after a bulk load with stale statistics: %+v; want a size from the file (or the resident pages), not believed exact, and why", *pk)
	}
}

package warm

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/pacing"
	"github.com/innowarm/innowarm/internal/progress"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// A paced load under traffic can take minutes while the traffic reads the hot pages itself:
// the pages of later chunks that are resident when their turn comes are left out, rather
// than each chunk taking its turn (and the load holding the server's dump file and its LRU
// settings) for pages already there.
func TestPacedLoadLeavesOutResidentPages(t *testing.T) {
	was := residentCheckEvery
	residentCheckEvery = 0 // check before every chunk after the first
	defer func() { residentCheckEvery = was }()
	ctx := context.Background()
	sb := sandboxtest.Server(t)
	db := sandboxtest.Schema(t)
	tbl := sqltext.Table(db, "paced_resident")
	sandboxtest.Exec(t, "CREATE TABLE "+tbl+" (id INT PRIMARY KEY, pad CHAR(250) NOT NULL) CHARSET latin1",
		"INSERT INTO "+tbl+" VALUES (1, REPEAT('x', 250))")
	for n := 1; n < 1<<16; n *= 2 {
		sandboxtest.Exec(t, fmt.Sprintf("INSERT INTO %s SELECT id + %d, pad FROM %s", tbl, n, tbl))
	}
	conn := sandboxtest.Conn(t)
	var space uint32
	var pages int64
	if err := conn.DB.QueryRow("SELECT SPACE, FILE_SIZE DIV @@innodb_page_size FROM "+conn.Server.TablespacesTable()+" WHERE NAME = ?", db+"/paced_resident").Scan(&space, &pages); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	conn = sandboxtest.Reconnect(t)
	list := make([]PageID, 0, pages)
	for p := uint32(3); int64(p) < pages; p++ {
		list = append(list, MakePageID(space, p))
	}
	// The traffic has read the whole table before the load's turn comes.
	if _, err := conn.DB.Exec("SELECT SUM(LENGTH(pad)) FROM " + tbl); err != nil {
		t.Fatal(err)
	}
	set, err := bufferpool.ResidentFromLRUTable(ctx, conn, map[uint32]bool{space: true})
	if err != nil {
		t.Fatal(err)
	}
	resident := 0
	for _, p := range list {
		if set.Has(p.Space(), p.Page()) {
			resident++
		}
	}
	if resident < len(list)/2 {
		t.Fatalf("the scan left %d of the table's %d pages resident", resident, len(list))
	}
	g, err := pacing.New(ctx, conn, pacing.Config{MaxRate: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	const chunk = 64
	res, err := LoadNativePaced(ctx, conn, [][]PageID{list}, progress.Config{Quiet: true}, logx.New(io.Discard, true), Until{}, g, chunk)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d pages listed, %d resident before the load; %d left out as resident, %d loaded, in %.1f s", sandboxtest.Flavor(t), len(list), resident, res.SkippedResident, res.Loaded, res.Seconds)
	// The first chunk goes before the first check.
	if res.SkippedResident < int64(resident-chunk) || res.SkippedResident > int64(len(list)) {
		t.Errorf("%d pages left out as resident; %d of the %d listed were resident, %d of them after the first chunk at least", res.SkippedResident, resident, len(list), resident-chunk)
	}
}

// A paced load's progress counts its finished chunks and at most the current one: the
// server's pages read since the chunk began include the traffic's, which the line counted
// as the load's (100% after the first chunks of a load beside a busy workload).
func TestPacedLoadProgressCountsItsOwnChunks(t *testing.T) {
	f := loadFollow{doneBefore: 640, chunkPages: 64}
	for _, c := range []struct{ readSince, want int64 }{
		{0, 640}, {10, 650}, {64, 704}, {50_000, 704}, {-3, 640},
	} {
		if got := f.progress(c.readSince); got != c.want {
			t.Errorf("%d pages read since the chunk began: progress %d, want %d", c.readSince, got, c.want)
		}
	}
}

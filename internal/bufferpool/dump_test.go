package bufferpool_test

import (
	"context"
	"io"
	"os"
	"testing"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// The list the server dumps, named from the files, holds the same pages as
// INNODB_BUFFER_PAGE_LRU, in nearly the same order, and names each index page's index as the
// server does once the files are flushed.
func TestStreamDumpAgreesWithLRUTable(t *testing.T) {
	ctx := context.Background()
	srv := sandboxtest.Flavor(t)
	db := sandboxtest.Schema(t)
	tbl := sqltext.Table(db, "t")
	// STATS_AUTO_RECALC=0: the server's background statistics would otherwise sample the
	// new table's indexes between the two reads (seconds apart on a loaded machine), moving
	// sampled pages to the LRU's head and reading others in (MySQL 9.7 once: 800 pages in
	// the dump, 799 in the table, the order agreeing on 87).
	sandboxtest.Exec(t,
		"CREATE TABLE "+tbl+" (id INT PRIMARY KEY, k INT, s VARCHAR(64), body LONGBLOB, KEY ks (s), KEY kk (k)) STATS_AUTO_RECALC=0",
		"INSERT INTO "+tbl+" SELECT (seq * 7919) MOD 40009, seq MOD 1000, LEFT(SHA2(seq, 256), 40), IF(seq MOD 400 = 0, REPEAT('b', 40000), NULL) FROM "+srv.Series(db, 1, 40000)+" ORDER BY seq",
		"FLUSH TABLES "+tbl+" FOR EXPORT", "UNLOCK TABLES",
		"SELECT COUNT(*) FROM "+tbl+" FORCE INDEX (kk) WHERE k >= 0",
		"SELECT SUM(LENGTH(body)) FROM "+tbl,
		"SELECT COUNT(*) FROM "+tbl+" FORCE INDEX (ks) WHERE s >= ''",
	)
	conn := sandboxtest.Conn(t)
	cat, err := catalog.Load(ctx, conn, catalog.Filter{Schemas: []string{db}})
	if err != nil {
		t.Fatal(err)
	}
	type named struct {
		index string
		rank  int
		old   bool
	}
	collect := func(stream func(func(bufferpool.LRUPage) error) (bufferpool.LRUStats, error)) (map[[2]uint32]named, bufferpool.LRUStats) {
		out := map[[2]uint32]named{}
		st, err := stream(func(p bufferpool.LRUPage) error {
			if p.Schema == db {
				out[[2]uint32{p.Space, p.Page}] = named{p.Index, len(out), p.Old}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out, st
	}
	// Both lists are read while nothing else runs, so they list the same pages. Each read
	// once before, unmeasured: the first reads of the dictionary they name pages by bring
	// its pages into the pool, which moves the old sublist's boundary between the two
	// lists (MySQL 9.7 in a loaded CI run: the order agreeing on all 798 pages, the old
	// flag on 576).
	collect(func(f func(bufferpool.LRUPage) error) (bufferpool.LRUStats, error) {
		return bufferpool.StreamLRU(ctx, conn, cat, f)
	})
	collect(func(f func(bufferpool.LRUPage) error) (bufferpool.LRUStats, error) {
		return bufferpool.StreamDump(ctx, conn, cat, logx.New(io.Discard, false), f)
	})
	fromTable, tst := collect(func(f func(bufferpool.LRUPage) error) (bufferpool.LRUStats, error) {
		return bufferpool.StreamLRU(ctx, conn, cat, f)
	})
	fromDump, dst := collect(func(f func(bufferpool.LRUPage) error) (bufferpool.LRUStats, error) {
		return bufferpool.StreamDump(ctx, conn, cat, logx.New(os.Stderr, false), f)
	})
	if dst.Source != bufferpool.SourceDump || tst.Source != bufferpool.SourceLRUTable {
		t.Errorf("sources %q %q", dst.Source, tst.Source)
	}
	if len(fromTable) < 500 {
		t.Fatalf("only %d pages of the table resident", len(fromTable))
	}
	var missing, misnamed, orderAgrees, oldAgrees, compared int
	for id, a := range fromTable {
		b, ok := fromDump[id]
		if !ok {
			missing++
			continue
		}
		// The server names index pages; LOB and metadata pages carry no index name there,
		// and the dump puts a clustered index's LOB pages under that index.
		if a.index != "" && b.index != a.index {
			misnamed++
		}
		compared++
		if a.old == b.old {
			oldAgrees++
		}
		if abs(a.rank-b.rank) <= len(fromTable)/100+2 {
			orderAgrees++
		}
	}
	t.Logf("%s: %d pages from the table, %d from the dump (%d unnamed); %d missing, %d misnamed, order agrees on %d, old flag on %d of %d; dump %.3f s (server %.3f s), table %.3f s",
		srv, len(fromTable), len(fromDump), dst.Unnamed, missing, misnamed, orderAgrees, oldAgrees, compared, dst.Seconds, dst.ListSeconds, tst.Seconds)
	if missing > 0 || len(fromDump) != len(fromTable) {
		t.Errorf("the dump lists %d pages, the LRU table %d; %d of the table's are not in the dump", len(fromDump), len(fromTable), missing)
	}
	if misnamed > 0 {
		t.Errorf("%d index pages named differently from the server", misnamed)
	}
	// MariaDB's dump leaves out the temporary tablespace's pages and freed pages, whose
	// places in the list are unknown: each one left out moves the old sublist's start by at
	// most one page, so at most that many pages can disagree on the flag.
	omitted := int(tst.Pages - dst.Pages)
	if float64(orderAgrees) < 0.99*float64(compared) || compared-oldAgrees > max(omitted, 0)+compared/100 {
		t.Errorf("LRU order agrees on %d, old flag on %d of %d pages (the dump omits %d of the pool's %d pages)", orderAgrees, oldAgrees, compared, omitted, tst.Pages)
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

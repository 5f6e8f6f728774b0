package experiment

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/dumpfile"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

func ids(pages ...uint32) []dumpfile.PageID {
	out := make([]dumpfile.PageID, len(pages))
	for i, p := range pages {
		out[i] = dumpfile.MakePageID(5, p)
	}
	return out
}

// A pool of ten pages whose tail is evicted and read back: the tracker tells pages read
// back from pages never held, and where the read-back ones stood when the run began.
func TestTurnoverTracker(t *testing.T) {
	var tr turnoverTracker
	tr.add(0, ids(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)) // 0 most recently used, 9 the tail
	// 8 and 9 evicted for 10 and 11 (never held).
	tr.add(5, ids(10, 11, 0, 1, 2, 3, 4, 5, 6, 7))
	// 6 and 7 evicted for 9 (the first list's last tenth, read back) and 12 (never held).
	tr.add(10, ids(9, 12, 10, 11, 0, 1, 2, 3, 4, 5))
	// 10 evicted for 7 (read back: held in the first list and in the second).
	tr.add(15, ids(7, 9, 12, 11, 0, 1, 2, 3, 4, 5))
	if len(tr.turnovers) != 3 {
		t.Fatalf("%d turnovers, want 3", len(tr.turnovers))
	}
	a, b, c := tr.turnovers[0], tr.turnovers[1], tr.turnovers[2]
	check := func(name string, got PoolTurnover, from, to float64, in, back, start, out, outStart, left int) {
		t.Helper()
		if got.From != from || got.To != to || got.Pages != 10 || got.In != in || got.InBack != back || got.InStart != start ||
			got.Out != out || got.OutStart != outStart || got.StartLeft != left {
			t.Errorf("%s: %+v; want %.0f-%.0f s, in %d (back %d, of the first list %d), out %d (of the first list %d), %d of the first list left",
				name, got, from, to, in, back, start, out, outStart, left)
		}
	}
	check("first", a, 0, 5, 2, 0, 0, 2, 2, 8)
	check("second", b, 5, 10, 2, 1, 1, 2, 2, 7)
	check("third", c, 10, 15, 1, 1, 1, 1, 0, 8)
	if a.OutStartDecile[8] != 1 || a.OutStartDecile[9] != 1 {
		t.Errorf("first: evicted by decile %v, want one each of 8 and 9", a.OutStartDecile)
	}
	if b.InStartDecile[9] != 1 || b.OutStartDecile[6] != 1 || b.OutStartDecile[7] != 1 {
		t.Errorf("second: read back by decile %v, evicted %v", b.InStartDecile, b.OutStartDecile)
	}
	if c.InStartDecile[7] != 1 {
		t.Errorf("third: read back by decile %v, want page 7's (decile 7)", c.InStartDecile)
	}
}

// While another innowarm holds the server's dump file (follow's paced load, for minutes),
// the sampler reads the LRU table at once instead of waiting 30 s for the file.
func TestPoolListDoesNotWaitForABorrowedDumpFile(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	quiet := logx.New(io.Discard, true)
	fromDump, fromTable, err := poolList(ctx, conn, quiet)
	if err != nil || fromTable {
		t.Fatalf("a free dump file: from the table %v, %v", fromTable, err)
	}
	holder, err := conn.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	var got int
	if err := holder.QueryRowContext(ctx, "SELECT GET_LOCK('innowarm.dumpfile', 0)").Scan(&got); err != nil || got != 1 {
		t.Fatalf("take the dump file's lock: %d, %v", got, err)
	}
	defer holder.ExecContext(ctx, "DO RELEASE_LOCK('innowarm.dumpfile')")
	t0 := time.Now()
	list, fromTable, err := poolList(ctx, conn, quiet)
	took := time.Since(t0)
	if err != nil {
		t.Fatal(err)
	}
	if !fromTable {
		t.Fatal("the list came from the dump while another session held its lock")
	}
	// The borrow would wait 30 s for the lock: 10 s leaves a busy machine room.
	if took > 10*time.Second {
		t.Errorf("the list took %v", took)
	}
	t.Logf("dump %d pages, LRU table %d (%v)", len(fromDump), len(list), took)
	if len(list) == 0 || len(list) < len(fromDump)*9/10 {
		t.Errorf("the LRU table listed %d pages, the dump %d", len(list), len(fromDump))
	}
}

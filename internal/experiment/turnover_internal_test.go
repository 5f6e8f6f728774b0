package experiment

import (
	"testing"

	"github.com/innowarm/innowarm/internal/dumpfile"
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

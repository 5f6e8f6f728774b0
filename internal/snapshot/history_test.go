package snapshot

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/pagekey"
)

// capture builds one capture of a list, a second after the previous one: young pages at
// the head in the order given, then old ones.
func capture(h *History, young, old []uint32) {
	var pages []observed
	var lru uint32
	obj := h.objects.id(bufferpool.LRUPage{Space: 5, PageType: "INDEX", Schema: "s", Table: "t", Index: "PRIMARY"})
	for _, p := range young {
		pages = append(pages, observed{object: obj, page: p, lru: lru})
		lru++
	}
	for _, p := range old {
		pages = append(pages, observed{object: obj, page: p, lru: lru, old: true})
		lru++
	}
	h.observe(time.Date(2026, 11, 25, 6, 0, h.Captures(), 0, time.UTC), pages, &texts{})
}

func historyManifest(t *testing.T, h *History) *manifest.Manifest {
	t.Helper()
	var buf bytes.Buffer
	hdr := manifest.Header{PageSize: 16 << 10, CapturedAt: time.Now(), Captures: h.Captures()}
	w, err := manifest.NewWriter(&buf, hdr)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.write(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Read(&buf, "history")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The polluted-source case: a bulk load's leftovers (100-103) sit young at the head of the
// list and nobody touches them; the workload's pages (1-4) are read into the old sublist
// and made young when touched again; one hot page (4) is evicted before the last capture;
// a page a report read once (50) sits in the old sublist. Evictions come from the tail.
func TestHistoryRanksWhatTheWorkloadKeepsTouching(t *testing.T) {
	h := NewHistory(time.Minute)
	capture(h, []uint32{100, 101, 102, 103}, []uint32{1, 2, 50})
	capture(h, []uint32{1, 100, 101, 102, 103}, []uint32{3, 50, 4, 2})
	capture(h, []uint32{2, 3, 1, 100, 101, 102, 103}, []uint32{50})
	m := historyManifest(t, h)
	if m.Header.Captures != 3 || len(m.Entries) != 9 {
		t.Fatalf("captures %d, %d entries: %+v", m.Header.Captures, len(m.Entries), m.Entries)
	}
	rank := map[uint32]int{}
	byPage := map[uint32]manifest.Entry{}
	for i, e := range m.Entries {
		rank[e.Page], byPage[e.Page] = i, e
	}
	for _, hot := range []uint32{1, 2, 3, 4} {
		if rank[hot] > 3 {
			t.Errorf("hot page %d ranks %d: %+v", hot, rank[hot], m.Entries)
		}
	}
	if e := byPage[4]; e.Seen != 1 || e.Last != 1 {
		t.Errorf("evicted hot page: seen %d, last %d, want 1 and 1", e.Seen, e.Last)
	}
	if e := byPage[100]; e.Seen != 3 || e.Last != 0 || e.Old || e.Score*2 > byPage[4].Score*3 {
		t.Errorf("leftover %+v against the evicted hot page %+v", e, byPage[4])
	}
	// A manifest cut to a budget of four pages keeps the four hot pages.
	for _, e := range manifest.CutToBudget(m.Entries, 4) {
		if e.Page > 4 {
			t.Errorf("budget of 4 keeps page %d", e.Page)
		}
	}
}

// The polluted-source case, then the workload stops and a sidecar keeps capturing: the
// idle intervals, in a pool that has evicted, credit no page. They credited every resident
// page as in a pool that never evicted, and the bulk load's leftovers outranked the hot
// page evicted before the workload stopped (4), which a standby needs.
func TestHistoryIdleAfterEvictingCreditsNothing(t *testing.T) {
	h := NewHistory(time.Minute)
	capture(h, []uint32{100, 101, 102, 103}, []uint32{1, 2, 50})
	capture(h, []uint32{1, 100, 101, 102, 103}, []uint32{3, 50, 4, 2})
	capture(h, []uint32{2, 3, 1, 100, 101, 102, 103}, []uint32{50})
	for range 5 {
		capture(h, []uint32{2, 3, 1, 100, 101, 102, 103}, []uint32{50})
	}
	m := historyManifest(t, h)
	for _, e := range manifest.CutToBudget(m.Entries, 4) {
		if e.Page > 4 {
			t.Errorf("after idle captures, a budget of 4 keeps page %d: %+v", e.Page, m.Entries)
		}
	}
}

// In a settled pool nothing moves: the places decide, and no resident page is forgotten.
func TestHistorySettledPoolKeepsItsOrder(t *testing.T) {
	h := NewHistory(time.Minute)
	young, old := []uint32{1, 2, 3, 4, 5}, []uint32{6, 7, 8}
	for range 20 {
		capture(h, young, old)
	}
	m := historyManifest(t, h)
	if len(m.Entries) != 8 {
		t.Fatalf("%d entries, want the 8 resident pages", len(m.Entries))
	}
	for i, e := range m.Entries {
		if e.Page != uint32(i+1) {
			t.Errorf("rank %d is page %d: %+v", i, e.Page, m.Entries)
		}
	}
}

// A pool that has not evicted yet moves nothing up: the hot set (1-4), read before the
// history began, is read in place, and a report's pages (50, 51) join the list's end. The
// report's single read must not outrank the hot set (it did: a manifest cut to the hot
// set's size named the report first): pages resident longer rank first.
// Once the pool evicts (a page leaves), touches count again, and residence no more.
func TestHistoryPoolThatHasNotEvicted(t *testing.T) {
	h := NewHistory(time.Minute)
	capture(h, []uint32{1, 2, 3, 4}, nil)
	capture(h, []uint32{1, 2, 3, 4}, []uint32{50, 51})
	capture(h, []uint32{1, 2, 3, 4}, []uint32{50, 51})
	m := historyManifest(t, h)
	for _, e := range manifest.CutToBudget(m.Entries, 4) {
		if e.Page > 4 {
			t.Errorf("a budget of 4 keeps page %d: %+v", e.Page, m.Entries)
		}
	}
	// Evicting now: 51 left, 60 read from disk and 3 made young.
	capture(h, []uint32{3, 1, 2, 4}, []uint32{60, 50})
	m = historyManifest(t, h)
	if m.Entries[0].Page != 3 {
		t.Errorf("once the pool evicts, the page made young leads: %+v", m.Entries)
	}
	for _, e := range manifest.CutToBudget(m.Entries, 4) {
		if e.Page > 4 {
			t.Errorf("once the pool evicts, a budget of 4 keeps page %d: %+v", e.Page, m.Entries)
		}
	}
}

// A page no capture holds any more fades out and is forgotten.
func TestHistoryForgets(t *testing.T) {
	h := NewHistory(time.Minute)
	capture(h, []uint32{1, 2}, nil)
	for range 10 {
		capture(h, []uint32{1}, nil)
	}
	m := historyManifest(t, h)
	if len(m.Entries) != 1 || m.Entries[0].Page != 1 || m.Entries[0].Seen != 11 {
		t.Errorf("entries %+v, want page 1 alone", m.Entries)
	}
	if h.Pages() != 1 {
		t.Errorf("history holds %d pages", h.Pages())
	}
}

func TestCaptureDue(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC)
	const pool = 8192
	for _, tc := range []struct {
		name                string
		since               time.Duration
		read, readAtCapture int64
		want                captureKind
	}{
		{"first capture", -1, -1, -1, captureFile},
		{"interval up", 10 * time.Second, 100, 100, captureFile},
		{"quiet pool", 3 * time.Second, 1100, 100, captureNone},
		{"a quarter of the pool read", 3 * time.Second, 100 + pool/4, 100, captureHistory},
		{"counter unreadable", 3 * time.Second, -1, 100, captureNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			last := time.Time{}
			if tc.since >= 0 {
				last = t0.Add(-tc.since)
			}
			if got := captureDue(t0, last, 10*time.Second, tc.read, tc.readAtCapture, pool); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

// The history carries each page's newest key range, drops ranges read with other key
// columns (the index changed), and writes a range's end as the page that starts it.
func TestHistoryCarriesKeyRanges(t *testing.T) {
	h := NewHistory(time.Minute)
	obj := h.objects.id(bufferpool.LRUPage{Space: 5, PageType: "INDEX", Schema: "s", Table: "t", Index: "PRIMARY"})
	h.objects.keyCols[obj] = "id:int4"
	var txt texts
	var block textBlock
	page := func(n, lru uint32, low, high string) observed {
		r := pagekey.TextRange{LowOpen: low == "~", HighOpen: high == "~", Low: []byte(low), High: []byte(high)}
		if high == "" {
			r.High, r.HighUnknown = nil, true
		}
		k, ok := block.keyTextOf(r)
		if !ok {
			t.Fatal("text")
		}
		txt.blocks = [][]byte{block.buf}
		return observed{object: obj, page: n, lru: lru, kt: k, next: noPage}
	}
	h.observe(time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC), []observed{page(10, 0, "~", "100"), page(11, 1, "100", "200"), page(12, 2, "300", "~")}, &txt)
	// The next capture could not read page 11's range: it keeps the one it had.
	txt, block = texts{}, textBlock{}
	h.observe(time.Date(2026, 11, 25, 6, 0, 1, 0, time.UTC), []observed{{object: obj, page: 11, lru: 0, next: noPage}, page(10, 1, "~", "100"), page(12, 2, "300", "~")}, &txt)
	rng := func(low, high string) manifest.Range { return manifest.Range{Low: low, High: high} }
	m := historyManifest(t, h)
	got := map[uint32]manifest.Range{}
	for _, e := range m.Entries {
		got[e.Page] = m.RangeOf(e)
	}
	want := map[uint32]manifest.Range{10: rng("~", "@11"), 11: rng("100", "200"), 12: rng("300", "~")}
	for p, r := range want {
		if got[p] != r {
			t.Errorf("page %d: range %+v, want %+v", p, got[p], r)
		}
	}
	if m.Objects[0].KeyColumns != "id:int4" {
		t.Errorf("object %+v", m.Objects[0])
	}
	// The index changed: ranges read with the old columns are not written with the new.
	h.objects.keyCols[obj] = "id:int8"
	txt, block = texts{}, textBlock{}
	h.observe(time.Date(2026, 11, 25, 6, 0, 2, 0, time.UTC), []observed{page(12, 0, "300", "~")}, &txt)
	m = historyManifest(t, h)
	for _, e := range m.Entries {
		if r := m.RangeOf(e); r.Known() != (e.Page == 12) {
			t.Errorf("after the index changed, page %d has range %+v", e.Page, r)
		}
	}
}

package bufferpool_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/dumpfile"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// Resident reads the server's dump where it can: the same pages of the selected
// tablespaces as INNODB_BUFFER_PAGE_LRU lists, and none of the others.
func TestResidentFromTheDumpAgreesWithLRUTable(t *testing.T) {
	ctx := context.Background()
	conn, cat := warmZooOnACleanPool(t)
	if a := dumpfile.Check(ctx, conn); !a.OK {
		t.Fatalf("the test server's dump cannot be borrowed: %s", a.Reason)
	}
	spaces := map[uint32]bool{}
	var ids []string
	for _, tb := range cat.Tables {
		for _, p := range tb.Parts {
			if p.Space != 0 && len(spaces) < 6 {
				spaces[p.Space] = true
				ids = append(ids, fmt.Sprint(p.Space))
			}
		}
	}
	got, err := bufferpool.Resident(ctx, conn, spaces)
	if err != nil {
		t.Fatal(err)
	}
	want := bufferpool.PageSet{}
	rows, err := conn.DB.QueryContext(ctx, "SELECT SPACE, PAGE_NUMBER FROM "+conn.Server.BufferPageLRUTable()+" WHERE SPACE IN ("+strings.Join(ids, ",")+")")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n, missing := 0, 0
	for rows.Next() {
		var space, page uint32
		if err := rows.Scan(&space, &page); err != nil {
			t.Fatal(err)
		}
		want.Add(space, page)
		n++
		if !got.Has(space, page) {
			missing++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	extra := 0
	for space, bm := range got {
		if !spaces[space] {
			t.Errorf("space %d was not asked for", space)
		}
		for page := uint32(0); page < 1<<20; page++ {
			if bm.Has(page) && !want.Has(space, page) {
				extra++
			}
		}
	}
	t.Logf("%s: %d resident pages of %d tablespaces in the LRU table; the dump misses %d, adds %d", sandboxtest.Flavor(t), n, len(spaces), missing, extra)
	if n < 200 || missing > 0 || extra > 0 {
		t.Errorf("%d pages from the LRU table: %d missing from the dump's set, %d more in it", n, missing, extra)
	}
}

// LRUListFromTable lists the pages the server's dump lists, in the dump's order: most
// recently used first. On this idle server a background thread may touch a page between the
// two reads, so the test allows a few pages out of place, not a reversed or shuffled list.
func TestLRUListFromTableIsTheDumpsList(t *testing.T) {
	ctx := context.Background()
	conn, _ := warmZooOnACleanPool(t)
	b, err := dumpfile.Borrow(ctx, conn, logx.New(os.Stderr, true))
	if err != nil {
		t.Fatal(err)
	}
	var fromDump []dumpfile.PageID
	_, _, err = b.DumpEach(ctx, conn, logx.New(os.Stderr, true), func(p dumpfile.PageID) { fromDump = append(fromDump, p) })
	b.Return()
	if err != nil {
		t.Fatal(err)
	}
	fromTable, err := bufferpool.LRUListFromTable(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	tenth := func(list []dumpfile.PageID) map[dumpfile.PageID]int {
		at := make(map[dumpfile.PageID]int, len(list))
		for i, p := range list {
			at[p] = i * 10 / len(list)
		}
		return at
	}
	inDump, inTable := tenth(fromDump), tenth(fromTable)
	both, sameTenth := 0, 0
	for p, d := range inDump {
		if tt, ok := inTable[p]; ok {
			both++
			if tt == d {
				sameTenth++
			}
		}
	}
	t.Logf("%s: dump %d pages, LRU table %d; %d in both, %d of them in the same tenth of each list", sandboxtest.Flavor(t), len(fromDump), len(fromTable), both, sameTenth)
	if len(fromDump) < 1000 {
		t.Fatalf("the warmed pool's dump lists %d pages", len(fromDump))
	}
	if diff := len(fromDump) + len(fromTable) - 2*both; diff*100 > len(fromDump) {
		t.Errorf("the lists differ by %d pages (more than 1%% of %d): by space, only in the dump %v, only in the table %v",
			diff, len(fromDump), onlyIn(inDump, inTable), onlyIn(inTable, inDump))
	}
	if sameTenth*100 < both*95 {
		t.Errorf("only %d of %d pages in the same tenth of both lists: not the dump's order", sameTenth, both)
	}
}

// onlyIn counts, by tablespace, the pages of a that b does not hold.
func onlyIn(a, b map[dumpfile.PageID]int) map[uint32]int {
	n := map[uint32]int{}
	for p := range a {
		if _, ok := b[p]; !ok {
			n[p.Space()]++
		}
	}
	return n
}

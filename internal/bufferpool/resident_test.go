package bufferpool_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/dumpfile"
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

package pagekey_test

import (
	"context"
	"maps"
	"testing"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/pagekey"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// TestIndexRootsReadOncePerLoad: the roots a catalog load has read are what the view says,
// and are given again for that load without reading the view (a table dropped since still
// has them there), while a read without a catalog, or a new load, sees the server as it is.
func TestIndexRootsReadOncePerLoad(t *testing.T) {
	db := sandboxtest.Schema(t)
	sandboxtest.Exec(t,
		"CREATE TABLE "+sqltext.Table(db, "a")+" (id INT PRIMARY KEY, v INT, KEY kv (v)) ENGINE=InnoDB",
		"CREATE TABLE "+sqltext.Table(db, "b")+" (id INT PRIMARY KEY, w VARCHAR(10), KEY kw (w)) ENGINE=InnoDB")
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	load := func() *catalog.Catalog {
		t.Helper()
		cat, err := catalog.Load(ctx, conn, catalog.Filter{Schemas: []string{db}})
		if err != nil {
			t.Fatal(err)
		}
		if len(cat.Tables) == 0 {
			t.Fatal("no table loaded")
		}
		return cat
	}
	roots := func(cat *catalog.Catalog, spaces map[uint32]bool, why string) map[uint32]map[string]pagekey.IndexRoot {
		t.Helper()
		r, err := pagekey.IndexRoots(ctx, conn, cat, spaces)
		if err != nil {
			t.Fatalf("%s: %v", why, err)
		}
		return r
	}
	cat := load()
	spaces := cat.KnownSpaces()
	if len(spaces) != 2 {
		t.Fatalf("spaces %v, want the two tables'", spaces)
	}
	fresh := roots(nil, spaces, "without a catalog")
	for s := range spaces {
		if len(fresh[s]) != 2 {
			t.Fatalf("space %d: roots %v, want two indexes", s, fresh[s])
		}
	}
	if got := roots(cat, spaces, "the load's"); !equalRoots(got, fresh) {
		t.Errorf("the load's roots %v, the view's %v", got, fresh)
	}
	var aSpace, bSpace uint32
	for _, tb := range cat.Tables {
		switch tb.Name {
		case "a":
			aSpace = tb.Parts[0].Space
		case "b":
			bSpace = tb.Parts[0].Space
		}
	}
	sandboxtest.Exec(t, "DROP TABLE "+sqltext.Table(db, "b"))
	if got := roots(cat, spaces, "the load's, after the drop"); !equalRoots(got, fresh) {
		t.Errorf("the load read the view again: %v, want what it read first %v", got, fresh)
	}
	if got := roots(nil, spaces, "without a catalog, after the drop"); len(got[bSpace]) != 0 {
		t.Errorf("the dropped table's roots are still listed by the view: %v", got[bSpace])
	}
	again := load()
	got := roots(again, spaces, "a new load")
	if len(got[bSpace]) != 0 {
		t.Errorf("a new load after the drop gives roots %v for the dropped table", got[bSpace])
	}
	if !maps.Equal(got[aSpace], fresh[aSpace]) {
		t.Errorf("a new load gives roots %v for the table kept, the view %v", got[aSpace], fresh[aSpace])
	}
}

func equalRoots(a, b map[uint32]map[string]pagekey.IndexRoot) bool {
	return maps.EqualFunc(a, b, func(x, y map[string]pagekey.IndexRoot) bool { return maps.Equal(x, y) })
}

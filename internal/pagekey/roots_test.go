package pagekey_test

import (
	"context"
	"maps"
	"slices"
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

// The key dictionary takes the tables' record formats and their indexes' ids from the
// catalog's load, which read the whole views (on MySQL each read builds every table's
// definition): changed after the load, the table still has the load's, where a catalog
// that read nothing (a literal) reads the views again and sees the change.
func TestDictionaryReadsFormatsAndIndexesOncePerLoad(t *testing.T) {
	tbl, cat, id := loadOneTable(t, "(id INT PRIMARY KEY, v INT, w INT, KEY kv (v)) ENGINE=InnoDB ROW_FORMAT=DYNAMIC", catalog.Reads{})
	literal := &catalog.Catalog{Server: cat.Server, Tables: cat.Tables}
	dict := func(c *catalog.Catalog, why string) (string, map[string][]string) {
		t.Helper()
		format, _, _, fields, ok := dictionaryOf(t, c, why).StoredTable(id)
		if !ok {
			t.Fatalf("%s: table %d not in the dictionary", why, id)
		}
		return format, fields
	}
	loadFormat, loadFields := dict(cat, "the load's")
	viewFormat, viewFields := dict(literal, "read from the views")
	if loadFormat != "dynamic" || viewFormat != "dynamic" {
		t.Fatalf("row format %q from the load, %q from the view, want dynamic", loadFormat, viewFormat)
	}
	if !maps.EqualFunc(loadFields, viewFields, slices.Equal) {
		t.Fatalf("index fields from the load %v, from the views %v", loadFields, viewFields)
	}
	if len(loadFields["kv"]) == 0 || len(loadFields["PRIMARY"]) == 0 {
		t.Fatalf("index fields %v, want PRIMARY's and kv's", loadFields)
	}
	// An index added in place keeps the table's id; the views list it at once.
	sandboxtest.Exec(t, "ALTER TABLE "+tbl+" ADD KEY kw (w)")
	if _, fields := dict(literal, "read from the views after ADD KEY"); len(fields["kw"]) == 0 {
		t.Fatalf("the views give no fields for the new index: %v", fields)
	}
	if _, fields := dict(cat, "the load's after ADD KEY"); len(fields["kw"]) != 0 {
		t.Errorf("the load's dictionary has the index added after it (%v): it read the indexes' view again", fields["kw"])
	}
	// Another row format: the views say it (or, where the rebuild gave the table a new id,
	// nothing of this one); the load keeps what it read.
	sandboxtest.Exec(t, "ALTER TABLE "+tbl+" ROW_FORMAT=COMPACT")
	if format, _ := dict(literal, "read from the views after ROW_FORMAT=COMPACT"); format == "dynamic" {
		t.Fatalf("the views still say %q after ROW_FORMAT=COMPACT", format)
	}
	if format, _ := dict(cat, "the load's after ROW_FORMAT=COMPACT"); format != "dynamic" {
		t.Errorf("the load's dictionary says %q: it read the tables' view again", format)
	}
}

// Where InnoDB's views build every table whatever the WHERE (MySQL 8.0+), a load asked for
// the stored columns reads them beside its other reads, and the key dictionary takes them
// from it: a table dropped after the load still has them in that dictionary, while a
// catalog that read nothing (a literal) reads the view and has none. Elsewhere the
// dictionary reads them itself.
func TestDictionaryTakesStoredColumnsFromTheLoad(t *testing.T) {
	tbl, cat, id := loadOneTable(t, "(id INT PRIMARY KEY, v VARCHAR(20), w INT AS (id + 1) VIRTUAL, d DATETIME(3), KEY kv (v), KEY kw (w)) ENGINE=InnoDB", catalog.Reads{StoredColumns: true})
	literal := &catalog.Catalog{Server: cat.Server, Tables: cat.Tables}
	columns := func(c *catalog.Catalog, why string) (map[string]pagekey.StoredColumn, []string) {
		t.Helper()
		return dictionaryOf(t, c, why).StoredColumns(id)
	}
	loadCols, loadOrder := columns(cat, "the load's")
	viewCols, viewOrder := columns(literal, "read from the view")
	if !maps.Equal(loadCols, viewCols) || !slices.Equal(loadOrder, viewOrder) {
		t.Fatalf("the load's columns %v in order %v, the view's %v in order %v", loadCols, loadOrder, viewCols, viewOrder)
	}
	if len(viewCols) < 4 || !viewCols["w"].Virtual() || slices.Contains(viewOrder, "w") {
		t.Fatalf("the view's columns %v in order %v: want the four, w virtual and not stored", viewCols, viewOrder)
	}
	sandboxtest.Exec(t, "DROP TABLE "+tbl)
	if cols, _ := columns(literal, "read from the view after DROP TABLE"); len(cols) != 0 {
		t.Fatalf("the view still gives the dropped table's columns: %v", cols)
	}
	cols, _ := columns(cat, "the load's after DROP TABLE")
	switch kept := len(cols) > 0; {
	case cat.Server.InnoDBViewsBuildEveryTable() && !kept:
		t.Errorf("the load's dictionary lost the dropped table's columns: it read the columns' view again")
	case !cat.Server.InnoDBViewsBuildEveryTable() && kept:
		t.Errorf("the load's dictionary has the dropped table's columns: %s reads the view itself", cat.Server)
	}
}

// loadOneTable creates table a (DDL after its name) in a schema of its own and loads the
// schema's catalog reading r: the table, the load, and the table's InnoDB id.
func loadOneTable(t *testing.T, ddl string, r catalog.Reads) (string, *catalog.Catalog, uint64) {
	t.Helper()
	db := sandboxtest.Schema(t)
	tbl := sqltext.Table(db, "a")
	sandboxtest.Exec(t, "CREATE TABLE "+tbl+" "+ddl)
	cat, err := catalog.LoadReading(context.Background(), sandboxtest.Conn(t), catalog.Filter{Schemas: []string{db}}, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Tables) != 1 || !cat.Tables[0].Parts[0].SpaceKnown {
		t.Fatalf("loaded %d tables, want the one with its tablespace", len(cat.Tables))
	}
	return tbl, cat, cat.Tables[0].Parts[0].TableID
}

// dictionaryOf reads the key dictionary of cat's tables.
func dictionaryOf(t *testing.T, cat *catalog.Catalog, why string) *pagekey.Dictionary {
	t.Helper()
	d, err := pagekey.LoadDictionary(context.Background(), sandboxtest.Conn(t), cat)
	if err != nil {
		t.Fatalf("%s: %v", why, err)
	}
	return d
}

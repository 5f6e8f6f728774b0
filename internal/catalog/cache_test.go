package catalog_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// TestCacheReloadsOnEveryDictionaryChange: a catalog is given again only while InnoDB's
// dictionary is unchanged; each kind of change a DBA makes between two captures forces a
// new read, and what the new read says is the change.
func TestCacheReloadsOnEveryDictionaryChange(t *testing.T) {
	db := sandboxtest.Schema(t)
	q := func(name string) string { return sqltext.Table(db, name) }
	sandboxtest.Exec(t,
		"CREATE TABLE "+q("a")+" (id INT PRIMARY KEY, v INT, KEY kv (v)) ENGINE=InnoDB",
		"CREATE TABLE "+q("b")+" (id INT PRIMARY KEY, w VARCHAR(10)) ENGINE=InnoDB",
		"CREATE TABLE "+q("c")+" (id INT PRIMARY KEY) ENGINE=InnoDB")
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	f := catalog.Filter{Schemas: []string{db}}
	var cache catalog.Cache
	loads, reuses := 0, 0
	get := func(f catalog.Filter, wantLoad bool, why string) *catalog.Catalog {
		t.Helper()
		cat, err := cache.Load(ctx, conn, f)
		if err != nil {
			t.Fatalf("%s: %v", why, err)
		}
		if wantLoad {
			loads++
		} else {
			reuses++
		}
		if cache.Loads != loads || cache.Reuses != reuses {
			t.Fatalf("%s: %d loads and %d reuses, want %d and %d", why, cache.Loads, cache.Reuses, loads, reuses)
		}
		return cat
	}
	indexNames := func(cat *catalog.Catalog, table string) map[string]bool {
		out := map[string]bool{}
		for _, tb := range cat.Tables {
			if tb.Name == table {
				for _, ix := range tb.Indexes {
					out[ix.Name] = true
				}
			}
		}
		return out
	}
	fileSize := func(cat *catalog.Catalog, table string) int64 {
		for _, tb := range cat.Tables {
			if tb.Name == table {
				return tb.Parts[0].FileSize
			}
		}
		return -1
	}
	first := get(f, true, "first")
	if len(first.Tables) != 3 {
		t.Fatalf("first load: %d tables", len(first.Tables))
	}
	before := fileSize(first, "b")
	// A caller's changes to its copy do not reach the cache.
	first.Tables, first.Skipped = first.Tables[:1], nil
	if cat := get(f, false, "unchanged"); len(cat.Tables) != 3 {
		t.Errorf("unchanged: %d tables", len(cat.Tables))
	}
	// Data changes the dictionary does not see; the file sizes are read again.
	digit := "(SELECT 0 AS i UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
	sandboxtest.Exec(t, "INSERT INTO "+q("b")+" SELECT 1 + d1.i + 10 * d2.i + 100 * d3.i + 1000 * d4.i, 'xxxxxxxxxx' FROM "+
		digit+" d1, "+digit+" d2, "+digit+" d3, "+digit+" d4")
	if after := fileSize(get(f, false, "after an insert"), "b"); after <= before {
		t.Errorf("b's file: %d bytes before 10,000 rows were inserted, %d after", before, after)
	}

	sandboxtest.Exec(t, "ALTER TABLE "+q("a")+" ADD KEY kid (id, v)")
	if cat := get(f, true, "index added"); !indexNames(cat, "a")["kid"] {
		t.Errorf("index added: a's indexes %v", indexNames(cat, "a"))
	}
	sandboxtest.Exec(t, "ALTER TABLE "+q("a")+" RENAME INDEX kid TO kid2")
	if cat := get(f, true, "index renamed"); !indexNames(cat, "a")["kid2"] {
		t.Errorf("index renamed: a's indexes %v", indexNames(cat, "a"))
	}
	sandboxtest.Exec(t, "ALTER TABLE "+q("b")+" ADD COLUMN x INT")
	get(f, true, "column added (instant)")
	sandboxtest.Exec(t, "ALTER TABLE "+q("b")+" RENAME COLUMN x TO y")
	get(f, true, "column renamed")
	sandboxtest.Exec(t, "RENAME TABLE "+q("b")+" TO "+q("tmp")+", "+q("c")+" TO "+q("b")+", "+q("tmp")+" TO "+q("c"))
	if cat := get(f, true, "two tables' names swapped"); len(indexNames(cat, "b")) != 1 {
		t.Errorf("after the swap b has indexes %v, want the old c's PRIMARY alone", indexNames(cat, "b"))
	}
	sandboxtest.Exec(t, "ALTER TABLE "+q("a")+" FORCE")
	get(f, true, "table rebuilt")
	sandboxtest.Exec(t, "TRUNCATE TABLE "+q("a"))
	get(f, true, "table truncated")
	sandboxtest.Exec(t, "CREATE TABLE "+q("d")+" (id INT PRIMARY KEY) ENGINE=InnoDB")
	if cat := get(f, true, "table created"); len(cat.Tables) != 4 {
		t.Errorf("table created: %d tables", len(cat.Tables))
	}
	sandboxtest.Exec(t, "DROP TABLE "+q("d"))
	if cat := get(f, true, "table dropped"); len(cat.Tables) != 3 {
		t.Errorf("table dropped: %d tables", len(cat.Tables))
	}
	get(f, false, "unchanged again")

	// Named tables are a subset of a load of their schema; a filter with other schemas or
	// patterns loads.
	exactA := catalog.Filter{Schemas: []string{db}, Exact: []catalog.TableName{{Schema: db, Table: "a"}}}
	if cat := get(exactA, false, "a named table of the cached schema"); len(cat.Tables) != 1 || cat.Tables[0].Name != "a" {
		t.Errorf("exact a: %d tables", len(cat.Tables))
	}
	get(catalog.Filter{Schemas: []string{db, "mysql"}}, true, "another filter")

	// A cache of named tables: a name it lacks loads the union, which then covers both; the
	// whole schema is not in it.
	cache, loads, reuses = catalog.Cache{}, 0, 0
	get(exactA, true, "a named table, first")
	exactB := catalog.Filter{Schemas: []string{db}, Exact: []catalog.TableName{{Schema: db, Table: "b"}}}
	if cat := get(exactB, true, "a name the cached load lacks"); len(cat.Tables) != 1 || cat.Tables[0].Name != "b" {
		t.Errorf("exact b: %d tables", len(cat.Tables))
	}
	if cat := get(exactA, false, "a name of the union"); len(cat.Tables) != 1 || cat.Tables[0].Name != "a" {
		t.Errorf("exact a from the union: %d tables", len(cat.Tables))
	}
	if cat := get(f, true, "the schema's every table, after named ones"); len(cat.Tables) != 3 {
		t.Errorf("whole schema after named ones: %d tables", len(cat.Tables))
	}

	aged := catalog.Cache{MaxAge: 1}
	for i := range 2 {
		if _, err := aged.Load(ctx, conn, f); err != nil {
			t.Fatal(err)
		}
		if aged.Loads != i+1 {
			t.Errorf("past MaxAge: %d loads after %d calls", aged.Loads, i+1)
		}
	}
}

// TestCacheDerivedLastsOneLoad: what is built beside a cached load (the key capture's
// dictionary reads) is given again while the load is, and built again after a change.
func TestCacheDerivedLastsOneLoad(t *testing.T) {
	db := sandboxtest.Schema(t)
	sandboxtest.Exec(t, "CREATE TABLE "+sqltext.Table(db, "a")+" (id INT PRIMARY KEY) ENGINE=InnoDB")
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	f := catalog.Filter{Schemas: []string{db}}
	builds := 0
	var built *catalog.Catalog
	build := func(cat *catalog.Catalog) (any, error) { builds, built = builds+1, cat; return builds, nil }
	derive := func(c *catalog.Cache, want int, why string) {
		t.Helper()
		if v, err := c.Derived("k", nil, build); err != nil || v.(int) != want {
			t.Errorf("%s: %v, %v; want build %d", why, v, err, want)
		}
	}
	var nilCache *catalog.Cache
	derive(nilCache, 1, "no cache")
	derive(nilCache, 2, "no cache, again")
	var cache catalog.Cache
	derive(&cache, 3, "nothing loaded yet")
	load := func() {
		t.Helper()
		if _, err := cache.Load(ctx, conn, f); err != nil {
			t.Fatal(err)
		}
	}
	load()
	derive(&cache, 4, "first load")
	if built == nil || len(built.Tables) != 1 {
		t.Errorf("the build was not given the cached load: %v", built)
	}
	load()
	derive(&cache, 4, "the same load, given again")
	sandboxtest.Exec(t, "ALTER TABLE "+sqltext.Table(db, "a")+" ADD COLUMN v INT")
	load()
	derive(&cache, 5, "a new load after a change")
	if _, err := cache.Derived("other", nil, func(*catalog.Catalog) (any, error) { return nil, context.Canceled }); err == nil {
		t.Error("a failed build gave no error")
	}
	if v, err := cache.Derived("other", nil, func(*catalog.Catalog) (any, error) { return "built", nil }); err != nil || v != "built" {
		t.Errorf("after a failed build: %v, %v", v, err)
	}
}

// A load without sizes (snapshot's) counts no index in the files, reads no statistics,
// keeps the index roots for the load all the same, and is not given again to a caller that
// wants the sizes; one that does not is given either.
func TestCacheGivesNoSizesOnlyToWhoAsks(t *testing.T) {
	db := sandboxtest.Schema(t)
	tbl := sqltext.Table(db, "a")
	// Written to its file, so that the file can count it.
	sandboxtest.Exec(t, "CREATE TABLE "+tbl+" (id INT PRIMARY KEY, v INT, KEY kv (v)) ENGINE=InnoDB", "FLUSH TABLES "+tbl+" FOR EXPORT", "UNLOCK TABLES")
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	f := catalog.Filter{Schemas: []string{db}}
	var cache catalog.Cache
	load := func(r catalog.Reads, loads, reuses int, why string) *catalog.Catalog {
		t.Helper()
		cat, err := cache.LoadReading(ctx, conn, f, r)
		if err != nil {
			t.Fatal(err)
		}
		if cache.Loads != loads || cache.Reuses != reuses {
			t.Errorf("%s: %d loads and %d reuses, want %d and %d", why, cache.Loads, cache.Reuses, loads, reuses)
		}
		return cat
	}
	fromFile := func(cat *catalog.Catalog) bool {
		tb := table(t, cat, "a")
		return tb.Clustered().Sizes[tb.Parts[0].Name].FromFile
	}
	sized := func(cat *catalog.Catalog) bool {
		tb := table(t, cat, "a")
		return tb.Clustered().Sizes[tb.Parts[0].Name].Known
	}
	noSizes := catalog.Reads{NoSizes: true}
	cat := load(noSizes, 1, 0, "without sizes")
	if fromFile(cat) {
		t.Error("a load without sizes counted the clustered index in its file")
	}
	if sized(cat) {
		t.Error("a load without sizes read the index statistics")
	}
	if known, missing := cat.KnownRoots(cat.KnownSpaces()); len(missing) != 0 || len(known) != 1 {
		t.Errorf("a load without sizes kept roots %v, missing %v; want the table's", known, missing)
	}
	load(noSizes, 1, 1, "without sizes, again")
	if cat := load(catalog.Reads{}, 2, 1, "with sizes after a load without"); !fromFile(cat) || !sized(cat) {
		t.Errorf("a load with sizes: counted in the file %v, statistics read %v; want both", fromFile(cat), sized(cat))
	}
	if cat := load(noSizes, 2, 2, "without sizes after a load with"); !fromFile(cat) {
		t.Error("the cached load with sizes lost them")
	}
}

// A load without sizes asks TABLES for no CREATE_OPTIONS and tells the partitioned tables
// by InnoDB's names of their parts: each table has the same parts, spaces and indexes as a
// full load gives, for names InnoDB writes encoded (a '#' of the name itself, a partition
// name with '-') and a table whose name only looks like a part's.
func TestLoadWithoutSizesFindsEveryPart(t *testing.T) {
	db := sandboxtest.Schema(t)
	sandboxtest.Exec(t,
		"CREATE TABLE "+sqltext.Table(db, "plain")+" (id INT PRIMARY KEY, k INT, KEY k (k))",
		"CREATE TABLE "+sqltext.Table(db, "hashed")+" (id INT PRIMARY KEY, k INT, KEY k (k)) PARTITION BY HASH (id) PARTITIONS 3",
		"CREATE TABLE "+sqltext.Table(db, "hashed2")+" (id INT PRIMARY KEY)",
		"CREATE TABLE "+sqltext.Table(db, "we#ird-parted")+" (id INT, k INT, PRIMARY KEY (id, k)) PARTITION BY RANGE (id) SUBPARTITION BY HASH (k) SUBPARTITIONS 2"+
			" (PARTITION p0 VALUES LESS THAN (10), PARTITION `P-1` VALUES LESS THAN MAXVALUE)",
		"CREATE TABLE "+sqltext.Table(db, "a#P#b")+" (id INT PRIMARY KEY)",
		"CREATE TABLE "+sqltext.Table(db, "cost$")+" (id INT PRIMARY KEY) PARTITION BY KEY (id) PARTITIONS 2")
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	f := catalog.Filter{Schemas: []string{db}}
	full, err := catalog.Load(ctx, conn, f)
	if err != nil {
		t.Fatal(err)
	}
	bare, err := catalog.LoadReading(ctx, conn, f, catalog.Reads{NoSizes: true})
	if err != nil {
		t.Fatal(err)
	}
	type part struct {
		Name, Partition, Subpartition, StatsName string
		Space                                    uint32
		SpaceKnown                               bool
		TableID                                  uint64
	}
	shape := func(cat *catalog.Catalog) map[string][]part {
		out := map[string][]part{}
		for _, tb := range cat.Tables {
			for _, p := range tb.Parts {
				out[tb.Name] = append(out[tb.Name], part{p.Name, p.Partition, p.Subpartition, p.StatsName, p.Space, p.SpaceKnown, p.TableID})
			}
			for _, ix := range tb.Indexes {
				out[tb.Name] = append(out[tb.Name], part{Name: "index " + ix.Name})
			}
		}
		return out
	}
	want, got := shape(full), shape(bare)
	for _, name := range []string{"plain", "hashed", "hashed2", "we#ird-parted", "a#P#b", "cost$"} {
		if len(want[name]) == 0 {
			t.Fatalf("the full load has no table %q", name)
		}
		if !reflect.DeepEqual(got[name], want[name]) {
			t.Errorf("%s without sizes: %+v\nwith sizes: %+v", name, got[name], want[name])
		}
		for _, p := range got[name] {
			if strings.HasPrefix(p.Name, "index ") {
				continue
			}
			if !p.SpaceKnown {
				t.Errorf("%s part %q: no tablespace", name, p.Name)
			}
		}
	}
	if n := len(want["we#ird-parted"]); n != 4+1 {
		t.Errorf("we#ird-parted has %d parts and indexes, want 4 subpartitions and PRIMARY", n)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the loads differ:\nwithout sizes %+v\nwith sizes    %+v", got, want)
	}
	for _, tb := range bare.Tables {
		if tb.DataLength != 0 || tb.Rows != 0 {
			t.Errorf("%s: a load without sizes gave rows %d, data length %d", tb.Name, tb.Rows, tb.DataLength)
		}
	}
}

// Right after a start, MariaDB knows a tablespace's size only once it has opened the table:
// every load (with its sizes or without) reads the files' sizes after its queries that open
// them, so that each part has one (a warm plans its native
// load by them: before, a load whose size reads ran beside those queries said "tablespace
// size unknown" for tables not opened yet).
func TestLoadAfterAStartKnowsEveryFileSize(t *testing.T) {
	ctx := context.Background()
	sb := sandboxtest.SecondServer(t, 64<<20)
	conn, err := sb.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	for _, q := range []string{
		"CREATE DATABASE fs",
		"CREATE TABLE fs.plain (id INT PRIMARY KEY, k INT, KEY k (k))",
		"CREATE TABLE fs.hashed (id INT PRIMARY KEY) PARTITION BY HASH (id) PARTITIONS 3",
		"CREATE TABLE fs.texts (id INT PRIMARY KEY, body TEXT, FULLTEXT KEY ft (body))",
		"INSERT INTO fs.plain VALUES (1, 1), (2, 2)",
		"INSERT INTO fs.texts VALUES (1, 'warm pages')",
	} {
		if _, err := conn.DB.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, r := range []catalog.Reads{{}, {NoSizes: true}} {
		if _, err := sb.ColdRestart(ctx); err != nil {
			t.Fatal(err)
		}
		conn.Close()
		if conn, err = sb.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		cat, err := catalog.LoadReading(ctx, conn, catalog.Filter{Schemas: []string{"fs"}}, r)
		if err != nil {
			t.Fatal(err)
		}
		if len(cat.Tables) != 3 {
			t.Fatalf("%+v: %d tables", r, len(cat.Tables))
		}
		for _, tb := range cat.Tables {
			for _, p := range tb.Parts {
				if !p.SpaceKnown || p.FileSize <= 0 {
					t.Errorf("%+v: %s part %q: space known %v, file size %d", r, tb.Name, p.Name, p.SpaceKnown, p.FileSize)
				}
			}
			// The FULLTEXT auxiliary tables are opened when the index is first used: until
			// then MariaDB knows no size of theirs, and a warm leaves them out.
			if tb.Name == "texts" && len(tb.Aux) == 0 {
				t.Errorf("%+v: texts has no FULLTEXT auxiliary table", r)
			}
		}
	}
}

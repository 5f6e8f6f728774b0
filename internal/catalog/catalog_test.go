package catalog_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

func TestMain(m *testing.M) { sandboxtest.Main(m, sandboxtest.Options{PoolSize: 64 << 20}) }

func load(t *testing.T, f catalog.Filter) *catalog.Catalog {
	t.Helper()
	cat, err := catalog.Load(context.Background(), sandboxtest.Conn(t), f)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

func table(t *testing.T, cat *catalog.Catalog, name string) *catalog.Table {
	t.Helper()
	for _, tb := range cat.Tables {
		if tb.Name == name {
			return tb
		}
	}
	t.Fatalf("table %q not in catalog", name)
	return nil
}

func index(t *testing.T, tb *catalog.Table, name string) *catalog.Index {
	t.Helper()
	for _, ix := range tb.Indexes {
		if ix.Name == name {
			return ix
		}
	}
	t.Fatalf("index %q not in %s", name, tb.Name)
	return nil
}

func cols(ix *catalog.Index) string {
	var parts []string
	for _, c := range ix.Columns {
		s := c.Name
		if c.SubPart > 0 {
			s += "(" + itoa(c.SubPart) + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ",")
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestZooCatalog(t *testing.T) {
	zoo := sandboxtest.Zoo(t)
	cat := load(t, catalog.Filter{Schemas: []string{zoo}})

	if len(cat.Tables) != len(sandboxtest.ZooInnoDBTables(t)) {
		var names []string
		for _, tb := range cat.Tables {
			names = append(names, tb.Name)
		}
		t.Errorf("tables %v, want the %d InnoDB tables", names, len(sandboxtest.ZooInnoDBTables(t)))
	}
	skipped := map[string]string{}
	for _, s := range cat.Skipped {
		skipped[s.Table] = s.Reason
	}
	if !strings.Contains(skipped[sandboxtest.ZooView], "view") || !strings.Contains(skipped[sandboxtest.ZooMyISAM], "MyISAM") {
		t.Errorf("skips: %v", skipped)
	}

	cp := table(t, cat, sandboxtest.ZooCompositePK)
	if pk := cp.Clustered(); pk == nil || pk.Name != "PRIMARY" || cols(pk) != "a,b" {
		t.Errorf("composite pk clustered: %+v", pk)
	}
	if ix := index(t, cp, "kb_c"); cols(ix) != "b,c" || ix.Unique {
		t.Errorf("kb_c: %s unique=%v", cols(ix), ix.Unique)
	}
	if ix := index(t, cp, "uc"); !ix.Unique || ix.Clustered {
		t.Errorf("uc: %+v", ix)
	}

	np := table(t, cat, sandboxtest.ZooNoPK)
	if c := np.Clustered(); c == nil || c.Name != catalog.GenClustIndex || !c.Hidden {
		t.Errorf("nopk clustered: %+v", c)
	}
	if c := table(t, cat, sandboxtest.ZooUniqueNN).Clustered(); c == nil || c.Name != "uu" {
		t.Errorf("uniq_nn clustered: %+v", c)
	}

	pre := table(t, cat, sandboxtest.ZooPrefixed)
	if cols(index(t, pre, "ks")) != "s(12)" || cols(index(t, pre, "kt")) != "t(20)" {
		t.Errorf("prefix lengths: %s %s", cols(index(t, pre, "ks")), cols(index(t, pre, "kt")))
	}

	parts := table(t, cat, sandboxtest.ZooParts)
	var names, stats []string
	for _, p := range parts.Parts {
		names = append(names, p.Name)
		stats = append(stats, p.StatsName)
	}
	srv := cat.Server
	if strings.Join(names, " ") != "p2023sp0 p2023sp1 pmaxsp0 pmaxsp1" || stats[0] != "parts"+srv.PartitionSeparator()+"p2023"+srv.SubpartitionSeparator()+"p2023sp0" {
		t.Errorf("subpartitions: %v %v", names, stats)
	}
	if len(table(t, cat, sandboxtest.ZooHashParts).Parts) != 3 {
		t.Error("hparts should have 3 partitions")
	}

	lob := table(t, cat, sandboxtest.ZooLOBs)
	var lobCols []string
	for _, c := range lob.LOBColumns() {
		lobCols = append(lobCols, c.Name)
	}
	if strings.Join(lobCols, ",") != "body,bin,small" {
		t.Errorf("LOB columns: %v", lobCols)
	}
	if len(table(t, cat, sandboxtest.ZooReserved).LOBColumns()) != 0 {
		t.Error("select has no LOB columns")
	}

	ft := table(t, cat, sandboxtest.ZooFulltext)
	if ix := index(t, ft, "fdoc"); ix.Type != "FULLTEXT" {
		t.Errorf("fdoc type %s", ix.Type)
	}
	// A FULLTEXT index keeps its words in auxiliary tables: 6 index tables and 5 others.
	if len(ft.Aux) != 11 {
		t.Errorf("ft has %d auxiliary tablespaces, want 11: %+v", len(ft.Aux), ft.Aux)
	}
	for _, a := range ft.Aux {
		if a.FileSize == 0 || a.Space == ft.Parts[0].Space {
			t.Errorf("aux %+v", a)
		}
	}
	if len(cp.Aux) != 0 {
		t.Error("a table without FULLTEXT has no auxiliary tables")
	}
	if cp.Parts[0].FileSize < 1<<20 || cp.Parts[0].TableID == 0 {
		t.Errorf("composite pk file size %d, table id %d", cp.Parts[0].FileSize, cp.Parts[0].TableID)
	}
	if ix := index(t, table(t, cat, sandboxtest.ZooSpatial), "sg"); ix.Type != "SPATIAL" {
		t.Errorf("sg type %s", ix.Type)
	}
	if ix := index(t, table(t, cat, sandboxtest.ZooIgnored), "kq"); ix.Usable {
		t.Error("IGNORED index kq reported usable")
	}
	weird := table(t, cat, sandboxtest.ZooWeird)
	if ix := index(t, weird, "in dex ü"); cols(ix) != "from" {
		t.Errorf("weird index columns %s", cols(ix))
	}

	// Sizes come from persistent statistics after ANALYZE.
	if s := cp.Clustered().Sizes[""]; !s.Known || s.LeafPages < 100 || s.Pages < s.LeafPages {
		t.Errorf("composite pk PRIMARY size: %+v", s)
	}
	if s := index(t, parts, "kv").Sizes["pmaxsp1"]; !s.Known || s.LeafPages < 1 {
		t.Errorf("subpartition index size: %+v", s)
	}
	// LOB pages are in the clustered index's allocation, and in its leaf count too (MySQL
	// always, MariaDB once the tree has more than one level): the file tells them apart.
	s := lob.Clustered().Sizes[""]
	lo, hi := lob.IndexPages(lob.Clustered(), lob.Parts[0])
	if !s.FromFile || lo != hi || lo > 2 || lob.LOBPages(lob.Parts[0]) < 100 {
		t.Errorf("lobs PRIMARY: %+v, %d-%d pages, %d LOB pages; want its one-page tree and its LOB pages counted in the file (notes: %q)", s, lo, hi, lob.LOBPages(lob.Parts[0]), cat.Notes)
	}
}

// Every part must map to the tablespace that really holds it: checked against the pages a
// scan brings into the pool, which the server attributes by name.
func TestSpacesMatchBufferPool(t *testing.T) {
	zoo := sandboxtest.Zoo(t)
	cat := load(t, catalog.Filter{Schemas: []string{zoo}})
	conn := sandboxtest.Conn(t)
	seen := map[uint32]string{}
	for _, tb := range cat.Tables {
		for _, p := range tb.Parts {
			if !p.SpaceKnown {
				t.Errorf("%s part %q: space unknown", tb.Name, p.Name)
				continue
			}
			if other, dup := seen[p.Space]; dup {
				t.Errorf("%s part %q shares space %d with %s", tb.Name, p.Name, p.Space, other)
			}
			seen[p.Space] = tb.Name + "/" + p.Name
			from := tb.Quoted()
			if p.Name != "" {
				from += " PARTITION (" + sqltext.Ident(p.Name) + ")"
			}
			sandboxtest.Exec(t, "SELECT COUNT(*) FROM "+from)
			var n int
			want := "`" + strings.ReplaceAll(zoo, "`", "``") + "`.`" + strings.ReplaceAll(tb.Name, "`", "``") + "`"
			if err := conn.DB.QueryRow("SELECT COUNT(*) FROM information_schema.INNODB_BUFFER_PAGE WHERE SPACE = ? AND TABLE_NAME LIKE CONCAT(?, '%')", p.Space, want).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				t.Errorf("%s part %q: no pool page of space %d is attributed to %s", tb.Name, p.Name, p.Space, want)
			}
		}
	}
}

func TestFilters(t *testing.T) {
	zoo := sandboxtest.Zoo(t)
	p := func(s string) catalog.Pattern {
		pp, err := catalog.ParsePattern(s)
		if err != nil {
			t.Fatal(err)
		}
		return pp
	}
	cat := load(t, catalog.Filter{Tables: []catalog.Pattern{p(escapeGlob(zoo) + ".*parts")}})
	if len(cat.Tables) != 2 {
		t.Errorf("*parts matched %d tables", len(cat.Tables))
	}
	cat = load(t, catalog.Filter{Schemas: []string{zoo}, Exclude: []catalog.Pattern{p("*parts"), p("ft")}})
	if len(cat.Tables) != len(sandboxtest.ZooInnoDBTables(t))-3 {
		t.Errorf("exclude left %d tables", len(cat.Tables))
	}
	cat = load(t, catalog.Filter{Schemas: []string{zoo}, Tables: []catalog.Pattern{p("sel?ct")}})
	if len(cat.Tables) != 1 || cat.Tables[0].Name != "select" {
		t.Errorf("sel?ct: %d tables", len(cat.Tables))
	}
	// A table named as innowarm prints it (quoted: the zoo's schema and table have
	// backticks, quotes, spaces and non-ASCII letters).
	quoted := sqltext.Table(zoo, sandboxtest.ZooWeird)
	cat = load(t, catalog.Filter{Tables: []catalog.Pattern{p(quoted)}})
	if len(cat.Tables) != 1 || cat.Tables[0].Name != sandboxtest.ZooWeird {
		t.Errorf("%s: %d tables", quoted, len(cat.Tables))
	}

	// Exact names the tables (partitioned ones too, with their partitions and indexes); a
	// name of another schema or of no table selects nothing more.
	full := load(t, catalog.Filter{Schemas: []string{zoo}})
	exact := load(t, catalog.Filter{Schemas: []string{zoo}, Exact: []catalog.TableName{{Schema: zoo, Table: "select"}, {Schema: zoo, Table: "parts"},
		{Schema: "elsewhere", Table: "lobs"}, {Schema: zoo, Table: "no_such_table"}}})
	if len(exact.Tables) != 2 {
		t.Fatalf("exact: %d tables, want select and parts", len(exact.Tables))
	}
	for _, name := range []string{"select", "parts"} {
		got, want := table(t, exact, name), table(t, full, name)
		if len(got.Parts) != len(want.Parts) || len(got.Indexes) != len(want.Indexes) || len(got.Columns) != len(want.Columns) || got.Parts[0].Space != want.Parts[0].Space {
			t.Errorf("%s named exactly: %d parts, %d indexes, %d columns, space %d; by schema %d, %d, %d, %d", name,
				len(got.Parts), len(got.Indexes), len(got.Columns), got.Parts[0].Space, len(want.Parts), len(want.Indexes), len(want.Columns), want.Parts[0].Space)
		}
	}

	for _, f := range []catalog.Filter{
		{},
		{Schemas: []string{"no_such_schema"}},
		{Tables: []catalog.Pattern{p("nosuch.t")}},
		{Tables: []catalog.Pattern{p("t*")}},
	} {
		_, err := catalog.Load(context.Background(), sandboxtest.Conn(t), f)
		if exitcode.Of(err) != exitcode.Usage {
			t.Errorf("%+v: want usage error, got %v", f, err)
		}
	}
}

func escapeGlob(s string) string {
	r := strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `.`, `\.`, `\`, `\\`)
	return r.Replace(s)
}

func TestParsePattern(t *testing.T) {
	cases := map[string][2]string{
		"db.t*":     {"db", "t*"},
		"t*":        {"", "t*"},
		`a\.b.c`:    {`a\.b`, "c"},
		"*.orders":  {"*", "orders"},
		"db.sbtest": {"db", "sbtest"},
	}
	for in, want := range cases {
		p, err := catalog.ParsePattern(in)
		if err != nil || p.Schema != want[0] || p.Table != want[1] {
			t.Errorf("ParsePattern(%q) = %+v, %v", in, p, err)
		}
	}
	p, _ := catalog.ParsePattern(`a\.b.c`)
	if !p.Matches("a.b", "c") || p.Matches("axb", "c") {
		t.Error("escaped dot")
	}
	// Quoted as innowarm prints names: the names themselves, no glob.
	for in, want := range map[string][2]string{
		"`odd db`.`we``ird.tab le#1`": {"odd db", "we`ird.tab le#1"},
		"`a.b`.c*":                    {"a.b", "c*"},
		"`x*`.`y?[1]`":                {"x*", "y?[1]"},
		"`only`":                      {"", "only"},
	} {
		p, err := catalog.ParsePattern(in)
		if err != nil || !p.Matches(want[0], want[1]) {
			t.Errorf("ParsePattern(%q) = %+v, %v: does not select %q.%q", in, p, err, want[0], want[1])
		}
	}
	if p, _ := catalog.ParsePattern("`x*`.`y`"); p.Matches("xz", "y") {
		t.Error("a quoted * is a glob")
	}
	if p, _ := catalog.ParsePattern("`a.b`.c*"); !p.Matches("a.b", "cat") || p.Matches("a", "b.cat") {
		t.Error("a quoted dot is no separator")
	}
	// Not a whole quoted name: read as before, backticks and all.
	for in, want := range map[string][2]string{"`db": {"", "`db"}, "a`b.c": {"a`b", "c"}, "`a`.`b`.`c`": {"`a`", "`b`.`c`"}} {
		if p, err := catalog.ParsePattern(in); err != nil || !p.Matches(want[0], want[1]) {
			t.Errorf("ParsePattern(%q) = %+v, %v: does not select %q.%q", in, p, err, want[0], want[1])
		}
	}
	for _, bad := range []string{"", "db.", "db.[", "["} {
		if _, err := catalog.ParsePattern(bad); err == nil {
			t.Errorf("ParsePattern(%q) accepted", bad)
		}
	}
}

func TestQuoting(t *testing.T) {
	if got := sqltext.Ident("a`b"); got != "`a``b`" {
		t.Error(got)
	}
	if got := sqltext.String("it's \\ \n"); got != `'it\'s \\ \n'` {
		t.Error(got)
	}
}

// innowarm's own mark on a schema it created (bench's and experiment's marker table, where
// the server has no schema comments) is no table to warm or inspect; a user's table of the
// same name is.
func TestOwnerMarksAreNotSelected(t *testing.T) {
	db := sandboxtest.Schema(t)
	mark := sqltext.Table(db, "innowarm_bench_owner")
	other := sqltext.Table(db, "innowarm_experiment_owner")
	sandboxtest.Exec(t,
		"CREATE TABLE "+mark+" (note VARCHAR(64)) COMMENT 'created by innowarm bench, which may drop it'",
		"CREATE TABLE "+other+" (note VARCHAR(64))",
		"CREATE TABLE "+sqltext.Table(db, "t1")+" (id INT PRIMARY KEY)")
	for _, f := range []catalog.Filter{{Schemas: []string{db}}, {All: true}} {
		cat := load(t, f)
		var names []string
		for _, tb := range cat.Tables {
			if tb.Schema == db {
				names = append(names, tb.Name)
			}
		}
		for _, s := range cat.Skipped {
			if s.Schema == db {
				names = append(names, "skipped "+s.Table)
			}
		}
		if strings.Join(names, ",") != "innowarm_experiment_owner,t1" {
			t.Errorf("%+v selects %v; want the user's tables only (innowarm_experiment_owner has no innowarm comment)", f, names)
		}
	}
}

package pagekey_test

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"github.com/innowarm/innowarm/internal/connection"
	"strconv"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/keys"
	"github.com/innowarm/innowarm/internal/pagekey"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// indexReport is what checkTable found for one index.
type indexReport struct {
	layout  *pagekey.Layout
	tree    *pagekey.Tree
	leaves  int
	records int
	deleted int
}

// opened is a table's file and dictionary, ready to decode.
type opened struct {
	table   *catalog.Table
	src     *pagekey.Source
	roots   map[string]uint32
	ids     map[string]uint64
	layouts map[string]*pagekey.Layout
	errs    map[string]error
}

// flush writes the table's pages to its file: FLUSH TABLES ... FOR EXPORT returns once
// they are (the event the test waits on, not a sleep). Purge has caught up first, and the
// table stays locked (its purge stopped) until the returned unlock, called once the test
// has read the file: a page purge changed after the flush could otherwise reach the file
// while the test reads it, and the test see a leaf and its parent of two moments.
func flush(t *testing.T, c *connection.Conn, db, table string) (unlock func()) {
	t.Helper()
	sandboxtest.WaitForPurge(t, c)
	// A connection of its own, out of c's pool: the pool's connections keep the session
	// settings (sql_mode) the test's statements ran with, which its checks rely on.
	own, err := connection.Open(context.Background(), c.Opts)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := own.DB.Conn(context.Background())
	if err != nil {
		own.Close()
		t.Fatal(err)
	}
	q := "FLUSH TABLES " + sqltext.Table(db, table) + " FOR EXPORT"
	if _, err := sess.ExecContext(context.Background(), q); err != nil {
		sess.Close()
		own.Close()
		t.Fatalf("%s: %v", q, err)
	}
	return func() {
		defer own.Close()
		defer sess.Close()
		if _, err := sess.ExecContext(context.Background(), "UNLOCK TABLES"); err != nil {
			t.Errorf("UNLOCK TABLES: %v", err)
		}
	}
}

// open loads the table's catalog entry, dictionary, file and index roots.
func open(t *testing.T, c *connection.Conn, db, table string) *opened {
	t.Helper()
	ctx := context.Background()
	conn := c
	cat, err := catalog.Load(ctx, conn, catalog.Filter{Schemas: []string{db}})
	if err != nil {
		t.Fatal(err)
	}
	var tbl *catalog.Table
	for _, x := range cat.Tables {
		if x.Name == table {
			tbl = x
		}
	}
	if tbl == nil || len(tbl.Parts) != 1 || !tbl.Parts[0].SpaceKnown {
		t.Fatalf("table %s.%s not in the catalog with one known tablespace", db, table)
	}
	part := tbl.Parts[0]
	dict, err := pagekey.LoadDictionary(ctx, conn, cat)
	if err != nil {
		t.Fatal(err)
	}
	files, err := catalog.TablespaceFiles(ctx, conn, map[uint32]bool{part.Space: true})
	if err != nil || files[part.Space] == "" {
		t.Fatalf("no file for space %d: %v", part.Space, err)
	}
	src, err := pagekey.OpenSource(files[part.Space], conn.Server.PageSize)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	o := &opened{table: tbl, src: src, roots: map[string]uint32{}, ids: map[string]uint64{}}
	rows, err := conn.DB.QueryContext(ctx, conn.Server.IndexRootsQuery()+" WHERE SPACE = ?", part.Space)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, table uint64
		var name string
		var space uint32
		var root sql.NullInt64
		if err := rows.Scan(&id, &name, &space, &root, &table); err != nil {
			t.Fatal(err)
		}
		o.roots[name], o.ids[name] = uint32(root.Int64), id
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	clust := tbl.Clustered()
	o.layouts, o.errs = dict.Layouts(tbl, part, src, o.roots[clust.Name])
	return o
}

// checkTable decodes every record of every index of the table from its file and compares
// them, in order, with what the server returns for the same index in the same order; the
// tree's page ranges must agree with the leaves' first keys.
func checkTable(t *testing.T, c *connection.Conn, db, table string) map[string]indexReport {
	t.Helper()
	defer flush(t, c, db, table)()
	o := open(t, c, db, table)
	for name, err := range o.errs {
		t.Errorf("%s.%s index %s: %v", db, table, name, err)
	}
	out := map[string]indexReport{}
	for _, ix := range o.table.Indexes {
		l := o.layouts[ix.Name]
		if l == nil {
			continue
		}
		r := checkIndex(t, c, db, o, ix, l)
		out[ix.Name] = r
	}
	return out
}

func checkIndex(t *testing.T, c *connection.Conn, db string, o *opened, ix *catalog.Index, l *pagekey.Layout) indexReport {
	t.Helper()
	rep := indexReport{layout: l}
	tree, err := pagekey.ReadTree(o.src, l, o.ids[ix.Name], o.roots[ix.Name])
	if err != nil {
		t.Fatalf("index %s: read the tree: %v", ix.Name, err)
	}
	rep.tree = tree
	var got []keys.Key
	var prevHigh keys.Key
	for i, n := range tree.Leaves {
		p, err := o.src.Page(n)
		if err != nil {
			t.Fatal(err)
		}
		if p.IndexID() != o.ids[ix.Name] || p.Level() != 0 {
			t.Fatalf("index %s: leaf %d is page of index %d level %d", ix.Name, n, p.IndexID(), p.Level())
		}
		recs, err := l.Records(p)
		if err != nil {
			t.Fatalf("index %s: %v", ix.Name, err)
		}
		span := tree.Spans[n]
		first, ok, err := l.FirstKey(p)
		if err != nil || !ok && len(tree.Leaves) > 1 {
			t.Fatalf("index %s leaf %d: first key %v, %v", ix.Name, n, ok, err)
		}
		if ok && !keyEqual(recs[0].Key, first) {
			t.Errorf("index %s leaf %d: FirstKey %v, first record %v", ix.Name, n, first, recs[0].Key)
		}
		// A leaf's range starts at its node pointer's key, which is its first key when the
		// page was made; purge may have removed that record since (InnoDB does not update a
		// leaf's node pointer then), so the first key is at or after it. Ranges meet.
		switch {
		case i == 0 && span.Low != nil:
			t.Errorf("index %s: the first leaf's range starts at %v, not the index's start", ix.Name, span.Low)
		case i > 0 && !keyEqual(span.Low, prevHigh):
			t.Errorf("index %s leaf %d: its range starts at %v, the previous one's ends at %v", ix.Name, n, span.Low, prevHigh)
		case i > 0 && ok && compareKeys(t, c, l, span.Low, first) > 0:
			t.Errorf("index %s leaf %d: its range starts at %v, after its first record %v", ix.Name, n, span.Low, first)
		}
		if len(recs) > 0 && span.High != nil && compareKeys(t, c, l, recs[len(recs)-1].Key, span.High) >= 0 {
			t.Errorf("index %s leaf %d: its last record %v is not below the range's end %v", ix.Name, n, recs[len(recs)-1].Key, span.High)
		}
		if i+1 < len(tree.Leaves) && span.Next != tree.Leaves[i+1] {
			t.Errorf("index %s leaf %d: its right neighbour is %d, the tree's next leaf %d", ix.Name, n, span.Next, tree.Leaves[i+1])
		}
		if i == len(tree.Leaves)-1 && (span.High != nil || span.HighUnknown) {
			t.Errorf("index %s: the last leaf's range ends at %v (unknown %v), not the index's end", ix.Name, span.High, span.HighUnknown)
		}
		prevHigh = span.High
		for _, r := range recs {
			if r.Deleted {
				rep.deleted++ // delete-marked, not purged yet: no row
				continue
			}
			got = append(got, r.Key)
		}
	}
	rep.leaves, rep.records = len(tree.Leaves), len(got)
	compareRanges(t, o, ix, l, tree)
	compareWithServer(t, c, db, o.table, ix, l, got)
	findByLiterals(t, c, o.table, ix, l, got)
	return rep
}

// findByLiterals looks rows up by keys written as keys.Literal writes them: every sampled
// key must find its row, whatever its types, NULLs and charsets.
func findByLiterals(t *testing.T, c *connection.Conn, tbl *catalog.Table, ix *catalog.Index, l *pagekey.Layout, got []keys.Key) {
	t.Helper()
	ctx := context.Background()
	sess, err := c.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if _, err := sess.ExecContext(ctx, "SET time_zone = '"+keys.SessionTimeZone+"'"); err != nil {
		t.Fatal(err)
	}
	// The temporal rows were written under sql_mode '' (zero dates), whose literals a strict
	// session refuses (MySQL: Error 1525): set here, not left to which of the pool's
	// connections this one is (the one that wrote them was, before the dictionary's reads
	// gave theirs back in another order).
	if _, err := sess.ExecContext(ctx, "SET sql_mode = ''"); err != nil {
		t.Fatal(err)
	}
	step := max(len(got)/50, 1)
	for i := 0; i < len(got); i += step {
		var conds []string
		for fi, col := range l.Columns {
			if col.Type.Kind == keys.RowID {
				continue
			}
			lit, err := keys.Literal(col.Type, got[i][fi])
			if err != nil {
				t.Fatalf("literal of %s: %v", col.Name, err)
			}
			expr := sqltext.Ident(col.Name)
			if col.Type.Prefix > 0 {
				expr = fmt.Sprintf("LEFT(%s, %d)", expr, col.Type.Prefix)
			}
			conds = append(conds, expr+" <=> "+lit)
		}
		if len(conds) == 0 {
			return
		}
		q := "SELECT COUNT(*) FROM " + tbl.Quoted() + " WHERE " + strings.Join(conds, " AND ")
		var n int
		if err := sess.QueryRowContext(ctx, q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if n == 0 {
			t.Errorf("index %s: no row found by %s", ix.Name, q)
		}
	}
}

func keyEqual(a, b keys.Key) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Null != b[i].Null || a[i].I != b[i].I || a[i].U != b[i].U || a[i].F != b[i].F || a[i].Micro != b[i].Micro || string(a[i].Bytes) != string(b[i].Bytes) {
			return false
		}
	}
	return true
}

// serverExpr renders a key field on the server the way render does in Go.
func serverExpr(c keys.Column) string {
	col := sqltext.Ident(c.Name)
	switch c.Type.Kind {
	case keys.Int, keys.Uint, keys.Decimal, keys.Date, keys.Time:
		return "CAST(" + col + " AS CHAR)"
	case keys.Year, keys.Enum, keys.Set, keys.Bit:
		return "CAST(" + col + "+0 AS CHAR)"
	case keys.Float:
		return "CAST(" + col + " AS DOUBLE)"
	case keys.Double:
		return col
	case keys.Datetime:
		return "REPLACE(CAST(" + col + " AS CHAR), ' ', 'T')"
	case keys.Timestamp:
		return "CONCAT(REPLACE(CAST(" + col + " AS CHAR), ' ', 'T'), 'Z')"
	}
	if c.Type.Prefix > 0 {
		col = fmt.Sprintf("LEFT(%s, %d)", col, c.Type.Prefix)
	}
	return "HEX(" + col + ")"
}

// render is a decoded value as serverExpr renders it.
func render(t *testing.T, c keys.Column, v keys.Value) string {
	if v.Null {
		return "NULL"
	}
	switch c.Type.Kind {
	case keys.Float, keys.Double:
		return strconv.FormatFloat(v.F, 'g', -1, 64)
	case keys.Char, keys.Varchar, keys.Binary, keys.Varbinary:
		return strings.ToUpper(hex.EncodeToString(v.Bytes))
	}
	b, err := keys.AppendValue(nil, c.Type, v)
	if err != nil {
		t.Fatalf("render %s: %v", c.Name, err)
	}
	return string(b)
}

// compareWithServer reads the index's key fields in index order from the server and
// compares them with the decoded keys, field by field (the hidden row id, which SQL does
// not show, is left out).
func compareWithServer(t *testing.T, c *connection.Conn, db string, tbl *catalog.Table, ix *catalog.Index, l *pagekey.Layout, got []keys.Key) {
	t.Helper()
	var exprs, order []string
	var cols []keys.Column
	for _, c := range l.Columns {
		if c.Type.Kind == keys.RowID {
			continue
		}
		cols = append(cols, c)
		exprs = append(exprs, serverExpr(c))
		o := sqltext.Ident(c.Name)
		if c.Type.Prefix > 0 {
			o = fmt.Sprintf("LEFT(%s, %d)", o, c.Type.Prefix)
		}
		if c.Desc {
			o += " DESC"
		}
		order = append(order, o)
	}
	if len(cols) == 0 {
		// GEN_CLUST_INDEX: the row ids rise, one per row.
		var n int
		if err := c.DB.QueryRow("SELECT COUNT(*) FROM " + tbl.Quoted()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if len(got) != n {
			t.Errorf("index %s: %d records decoded, the table has %d rows", ix.Name, len(got), n)
		}
		for i := 1; i < len(got); i++ {
			if got[i][0].U <= got[i-1][0].U {
				t.Fatalf("index %s: row ids do not rise: %d after %d", ix.Name, got[i][0].U, got[i-1][0].U)
			}
		}
		return
	}
	force := ""
	if !ix.Hidden {
		force = " FORCE INDEX (" + sqltext.Ident(ix.Name) + ")"
	}
	q := "SELECT " + strings.Join(exprs, ", ") + " FROM " + tbl.Quoted() + force + " ORDER BY " + strings.Join(order, ", ")
	ctx := context.Background()
	sess, err := c.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if _, err := sess.ExecContext(ctx, "SET time_zone = '"+keys.SessionTimeZone+"'"); err != nil {
		t.Fatal(err)
	}
	rows, err := sess.QueryContext(ctx, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	n, bad := 0, 0
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		if n >= len(got) {
			n++
			continue
		}
		// got's fields are the layout's, rowid included; walk them alongside.
		k, j := got[n], 0
		for fi, c := range l.Columns {
			if c.Type.Kind == keys.RowID {
				continue
			}
			want := "NULL"
			if vals[j].Valid {
				want = vals[j].String
				if c.Type.Kind == keys.Float || c.Type.Kind == keys.Double {
					f, _ := strconv.ParseFloat(want, 64)
					want = strconv.FormatFloat(f, 'g', -1, 64)
				}
			}
			if have := render(t, c, k[fi]); have != want && bad < 10 {
				bad++
				t.Errorf("index %s row %d field %s (%s): decoded %s, the server says %s", ix.Name, n, c.Name, c.Type, have, want)
			}
			j++
		}
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(got) {
		t.Errorf("index %s: %d records decoded, the server returns %d rows", ix.Name, len(got), n)
	}
}

// compareKeys orders two keys as the index does: in Go where the types allow, else on the
// server, with each key written as keys.Literal writes it.
func compareKeys(t *testing.T, c *connection.Conn, l *pagekey.Layout, a, b keys.Key) int {
	t.Helper()
	if c, err := keys.CompareKeys(l.Columns, a, b); err == nil {
		return c
	}
	for i := 0; i < len(a) && i < len(b); i++ {
		col := l.Columns[i]
		dir := 1
		if col.Desc {
			dir = -1
		}
		switch {
		case a[i].Null && b[i].Null:
			continue
		case a[i].Null:
			return -dir
		case b[i].Null:
			return dir
		}
		if cmp, err := keys.Compare(col.Type, a[i], b[i]); err == nil {
			if cmp != 0 {
				return dir * cmp
			}
			continue
		}
		la, err1 := keys.Literal(col.Type, a[i])
		lb, err2 := keys.Literal(col.Type, b[i])
		if err1 != nil || err2 != nil {
			t.Fatalf("literals: %v %v", err1, err2)
		}
		coll := " COLLATE " + col.Type.Collation
		var cmp int
		q := "SELECT CASE WHEN " + la + coll + " < " + lb + coll + " THEN -1 WHEN " + la + coll + " = " + lb + coll + " THEN 0 ELSE 1 END"
		if err := c.DB.QueryRow(q).Scan(&cmp); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if cmp != 0 {
			return dir * cmp
		}
	}
	return len(a) - len(b)
}

// compareRanges: Ranges gives every page the range ReadTree gives it, as text, and with
// HighFromNext leaves out exactly the ends a wanted right neighbour starts.
func compareRanges(t *testing.T, o *opened, ix *catalog.Index, l *pagekey.Layout, tree *pagekey.Tree) {
	t.Helper()
	text := func(k keys.Key) string {
		b, err := keys.AppendKey(nil, l.Columns, k)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, every := range []uint32{1, 3} {
		want := func(p uint32) bool { return p%every == 0 }
		seen := 0
		_, err := pagekey.Ranges(o.src, l, o.ids[ix.Name], o.roots[ix.Name], pagekey.RangeOptions{Fields: len(l.Columns), Want: want, HighFromNext: every > 1},
			func(page uint32, r pagekey.TextRange) {
				seen++
				s, ok := tree.Spans[page]
				if !ok {
					t.Errorf("index %s: Ranges gives page %d, the tree has no such page", ix.Name, page)
					return
				}
				if r.LowOpen != (s.Low == nil) || !r.LowOpen && string(r.Low) != text(s.Low) {
					t.Errorf("index %s page %d: low %q (open %v), the tree's %v", ix.Name, page, r.Low, r.LowOpen, s.Low)
				}
				fromNext := every > 1 && r.Next != pagekey.NoPage && want(r.Next)
				switch {
				case fromNext && r.High != nil:
					t.Errorf("index %s page %d: high written though its neighbour %d is wanted", ix.Name, page, r.Next)
				case !fromNext && (r.HighOpen != (s.High == nil && !s.HighUnknown) || s.High != nil && string(r.High) != text(s.High)):
					t.Errorf("index %s page %d: high %q (open %v), the tree's %v", ix.Name, page, r.High, r.HighOpen, s.High)
				}
				if s.Level == 0 && r.Next != s.Next && r.Next != pagekey.NoPage {
					t.Errorf("index %s page %d: next %d, the tree's %d", ix.Name, page, r.Next, s.Next)
				}
			})
		if err != nil {
			t.Fatalf("index %s: Ranges: %v", ix.Name, err)
		}
		n := 0
		for p := range tree.Spans {
			if want(p) {
				n++
			}
		}
		if seen != n {
			t.Errorf("index %s: Ranges gave %d pages, the tree has %d wanted", ix.Name, seen, n)
		}
	}
	// What a snapshot's key capture costs, by counts: Ranges reads each non-leaf page once
	// (as ReadTree does), and writes the ranges of every page into buffers it reuses: its
	// allocations are per non-leaf page read, never per page it gives a range (the leaves,
	// a hundred and more per non-leaf page).
	ranges := 0
	var read int
	allocs := testing.AllocsPerRun(3, func() {
		ranges = 0
		var err error
		read, err = pagekey.Ranges(o.src, l, o.ids[ix.Name], o.roots[ix.Name], pagekey.RangeOptions{Fields: len(l.Columns), Want: func(uint32) bool { return true }, HighFromNext: true},
			func(uint32, pagekey.TextRange) { ranges++ })
		if err != nil {
			t.Fatalf("index %s: Ranges: %v", ix.Name, err)
		}
	})
	if read != tree.Read {
		t.Errorf("index %s: Ranges read %d pages, the tree has %d non-leaf pages and its root", ix.Name, read, tree.Read)
	}
	if bound := float64(maxAllocsPerTreePage*read + maxAllocsPerRanges); allocs > bound {
		t.Errorf("index %s: Ranges allocated %.0f times for %d ranges from %d pages read, more than %.0f", ix.Name, allocs, ranges, read, bound)
	}
	t.Logf("index %s: %d ranges, %d pages read, %.0f allocations", ix.Name, ranges, read, allocs)
}

// The bounds on Ranges' allocations: a few per page read (the pages above level 1 are
// kept, with their keys, for the level below), and a few per call.
const (
	maxAllocsPerTreePage = 16
	maxAllocsPerRanges   = 64
)

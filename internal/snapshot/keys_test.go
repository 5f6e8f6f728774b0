package snapshot_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/keys"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/pagekey"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/snapshot"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// TestSnapshotCapturesKeyRanges: a snapshot of a fully resident table grown by random-order
// inserts names, for every leaf page of both its indexes, the key range that holds exactly
// the page's rows: counted on the server with the manifest's keys as literals, each leaf's
// range holds as many rows as the page on disk has records, and the leaves' ranges add up
// to the table. With the server's dump and with INNODB_BUFFER_PAGE_LRU as the page list.
func TestSnapshotCapturesKeyRanges(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	srv := conn.Server
	db := sandboxtest.Schema(t)
	tbl := sqltext.Table(db, "t")
	sandboxtest.Exec(t,
		"CREATE TABLE "+tbl+" (id INT NOT NULL PRIMARY KEY, k VARCHAR(30) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, pad CHAR(100) NOT NULL DEFAULT '', KEY kk (k))",
		"INSERT INTO "+tbl+" (id, k) SELECT (seq * 7919) % 40009, CONCAT('k-', (seq * 104729) % 40009, '-ü') FROM "+srv.Series(db, 1, 40000)+" ORDER BY seq",
		"FLUSH TABLES "+tbl+" FOR EXPORT", "UNLOCK TABLES",
		"SELECT COUNT(*) FROM "+tbl+" FORCE INDEX (PRIMARY) WHERE pad = ''",
		"SELECT COUNT(*) FROM "+tbl+" FORCE INDEX (kk) WHERE k >= ''")
	var rows int64
	if err := conn.DB.QueryRow("SELECT COUNT(*) FROM " + tbl).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	src := openTable(t, conn, db, "t")
	for _, list := range []string{"dump", "lru-table"} {
		t.Run(list, func(t *testing.T) {
			path := filepath.Join(sandboxtest.Dir(t), "keys.manifest")
			res, err := snapshot.Capture(ctx, conn, snapshot.Options{Path: path, ToolVersion: "test", PageList: list, Filter: catalog.Filter{Schemas: []string{db}}})
			if err != nil {
				t.Fatal(err)
			}
			k := res.Keys
			t.Logf("%s: %+v", list, k)
			if k.Note != "" || k.Indexes != 2 || k.Keyed < k.Pages*95/100 || k.TreePages > k.Keyed/10+4 {
				t.Errorf("key capture: %+v", k)
			}
			m, err := manifest.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if m.Header.KeyedEntries != k.Keyed {
				t.Errorf("manifest has %d keyed entries, the capture says %d", m.Header.KeyedEntries, k.Keyed)
			}
			for _, index := range []string{"PRIMARY", "kk"} {
				leaves, inRanges := checkRanges(t, conn, m, tbl, index, src)
				if inRanges != rows {
					t.Errorf("index %s: its %d leaf pages' ranges hold %d rows, the table %d", index, leaves, inRanges, rows)
				}
			}
		})
	}
	// Pages split since the last write have no parent on disk pointing to them: they are
	// read themselves (when written at all) or carried without a key, and counted.
	sandboxtest.Exec(t, "INSERT INTO "+tbl+" (id, k) SELECT 40009 + (seq * 7919) % 20011, CONCAT('j-', (seq * 104729) % 20011) FROM "+srv.Series(db, 1, 20000)+" ORDER BY seq")
	for _, list := range []string{"dump", "lru-table"} {
		res, err := snapshot.Capture(ctx, conn, snapshot.Options{Path: filepath.Join(sandboxtest.Dir(t), "unflushed.manifest"), ToolVersion: "test", PageList: list, Filter: catalog.Filter{Schemas: []string{db}}})
		if err != nil {
			t.Fatal(err)
		}
		k := res.Keys
		t.Logf("%s after unflushed inserts: %+v", list, k)
		if k.Keyed+k.Keyless != k.Pages || k.Keyed < k.Pages/2 || k.KeyedAlone > k.ReadAlone || k.ReadAlone > k.Keyless+k.KeyedAlone {
			t.Errorf("%s: key capture after unflushed inserts: %+v", list, k)
		}
	}
}

// openTable opens the table's tablespace file.
func openTable(t *testing.T, conn *connection.Conn, db, table string) *pagekey.Source {
	t.Helper()
	var space uint32
	q := "SELECT SPACE FROM " + conn.Server.TablesTable() + " WHERE NAME = ?"
	if err := conn.DB.QueryRow(q, db+"/"+table).Scan(&space); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	files, err := catalog.TablespaceFiles(context.Background(), conn, map[uint32]bool{space: true})
	if err != nil {
		t.Fatal(err)
	}
	src, err := pagekey.OpenSource(files[space], conn.Server.PageSize)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

// checkRanges counts, for each leaf page of the index with a range in the manifest, the
// rows the server finds in the range, which must be the page's records; it returns the
// leaves and the rows counted.
func checkRanges(t *testing.T, conn *connection.Conn, m *manifest.Manifest, tbl, index string, src *pagekey.Source) (int, int64) {
	t.Helper()
	var total int64
	leaves := 0
	lows := map[uint32]string{} // page -> its Low, for "@N"
	for _, e := range m.Entries {
		lows[e.Page] = m.RangeOf(e).Low
	}
	for _, e := range m.Entries {
		o := m.Objects[e.Object]
		r := m.RangeOf(e)
		if o.Index != index || !r.Known() {
			continue
		}
		cols, err := o.Columns()
		if err != nil || len(cols) == 0 {
			t.Fatalf("object %s: columns %q: %v", o, o.KeyColumns, err)
		}
		p, err := src.Page(e.Page)
		if err != nil {
			t.Fatal(err)
		}
		if p.Level() != 0 {
			continue
		}
		leaves++
		var conds []string
		cond := func(tok, op string) {
			b, err := manifest.ParseBound(tok)
			if err != nil {
				t.Fatal(err)
			}
			if b.Kind == manifest.BoundPage {
				b, _ = manifest.ParseBound(lows[b.Page])
			}
			switch b.Kind {
			case manifest.BoundUnknown:
				t.Fatalf("page %d: bound %q unknown", e.Page, tok)
			case manifest.BoundKey:
				k, err := keys.ParseKey(cols, []byte(b.Key))
				if err != nil {
					t.Fatalf("page %d: key %q: %v", e.Page, b.Key, err)
				}
				var names, lits []string
				for i, v := range k {
					lit, err := keys.Literal(cols[i].Type, v)
					if err != nil {
						t.Fatal(err)
					}
					names, lits = append(names, sqltext.Ident(cols[i].Name)), append(lits, lit)
				}
				conds = append(conds, fmt.Sprintf("(%s) %s (%s)", strings.Join(names, ", "), op, strings.Join(lits, ", ")))
			}
		}
		cond(r.Low, ">=")
		cond(r.High, "<")
		q := "SELECT COUNT(*) FROM " + tbl + " FORCE INDEX (" + sqltext.Ident(index) + ")"
		if len(conds) > 0 {
			q += " WHERE " + strings.Join(conds, " AND ")
		}
		var n int64
		if err := conn.DB.QueryRow(q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if n != int64(p.Records()) {
			t.Errorf("index %s page %d: %d rows in its range, %d records on the page (%s)", index, e.Page, n, p.Records(), q)
		}
		total += n
	}
	if leaves < 10 {
		t.Errorf("index %s: only %d leaf pages with ranges", index, leaves)
	}
	return leaves, total
}

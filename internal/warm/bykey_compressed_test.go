package warm_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/pagekey"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/snapshot"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/warm"
)

// TestWarmByKeyOnACompressedCopy is TestWarmByKeyOnALogicalCopy's scenario on a
// ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8 table: its file holds 8 KiB zlib pages, which
// the snapshot's key capture and the tree path inflate to read their keys. The snapshot
// of the skewed workload carries key ranges; on the logical copy, warm --from by key (auto:
// the tree path; sql: range scans) leaves the first pass at most a tenth of a cold pass's
// misses above a hot pass, while by page number it does not.
func TestWarmByKeyOnACompressedCopy(t *testing.T) {
	ctx := context.Background()
	const rows, step = 60000, 400
	db := sandboxtest.Schema(t)
	conn := sandboxtest.Conn(t)
	cold := func() {
		t.Helper()
		if _, err := sandboxtest.Server(t).ColdRestart(ctx); err != nil {
			t.Fatal(err)
		}
		conn = sandboxtest.Reconnect(t)
	}
	exec := func(stmts ...string) {
		t.Helper()
		for _, q := range stmts {
			if _, err := conn.DB.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	tbl := sqltext.Table(db, "t")
	// The pad is half hex digits: pages that compress, but not so far that a 16 KiB page's
	// rows always fit 8 KiB, so that the load also splits pages on compression failure and
	// leaves modification logs behind, as a real table's pages have. CRC32: MySQL 9.7
	// refuses MD5 and SHA1 here. latin1: the same rows per page on every flavor.
	hexes := make([]string, 12)
	for i := range hexes {
		hexes[i] = fmt.Sprintf("HEX(CRC32(seq + %d))", i*(rows+1))
	}
	exec(
		"CREATE TABLE "+tbl+" (id INT NOT NULL PRIMARY KEY, k INT NOT NULL, pad CHAR(200) CHARACTER SET latin1 NOT NULL DEFAULT '', KEY kk (k)) ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8",
		fmt.Sprintf("INSERT INTO %s (id, k, pad) SELECT (seq * 7919) %% %d, (seq * 104729) %% %d, CONCAT(%s) FROM %s ORDER BY seq",
			tbl, rows+1, rows+1, strings.Join(hexes, ", "), conn.Server.Series(db, 1, int64(rows))),
		// Written to its file before the restart: the capture reads the pages on disk.
		"FLUSH TABLES "+tbl+" FOR EXPORT", "UNLOCK TABLES")
	var ops, opsOK int64
	if err := conn.DB.QueryRowContext(ctx, "SELECT COMPRESS_OPS, COMPRESS_OPS_OK FROM information_schema.INNODB_CMP WHERE PAGE_SIZE = 8192").Scan(&ops, &opsOK); err != nil {
		t.Fatal(err)
	}
	t.Logf("8 KiB pages compressed since the server started: %d, of which %d failed (a split)", ops, ops-opsOK)
	hot := func() {
		t.Helper()
		exec(
			fmt.Sprintf("SELECT SUM(LENGTH(pad)) FROM %s FORCE INDEX (PRIMARY) WHERE id IN (%s)", tbl, inList(0, rows, step)),
			fmt.Sprintf("SELECT SUM(LENGTH(pad)) FROM %s FORCE INDEX (kk) WHERE k IN (%s)", tbl, inList(step/2, rows, step)))
	}
	measure := func() int64 {
		t.Helper()
		before := poolReads(t, conn)
		hot()
		return poolReads(t, conn) - before
	}

	cold()
	hot()
	path := filepath.Join(sandboxtest.Dir(t), "hot.manifest")
	res, err := snapshot.Capture(ctx, conn, snapshot.Options{Path: path, ToolVersion: "test", Filter: catalog.Filter{Schemas: []string{db}}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	// Every captured page of either index was written before the workload read it: each
	// has a range, from its parent or read alone.
	perIndex := map[string][2]int{} // keyed, all
	for _, e := range m.Entries {
		o := m.Objects[e.Object]
		if o.Table != "t" || o.Index == "" {
			continue
		}
		n := perIndex[o.Index]
		if m.RangeOf(e).Known() {
			n[0]++
		}
		n[1]++
		perIndex[o.Index] = n
	}
	t.Logf("snapshot: %d entries, %d keyed; per index (keyed, all): %v; keys: %+v", m.Header.Entries, m.Header.KeyedEntries, perIndex, res.Keys)
	for _, ix := range []string{"PRIMARY", "kk"} {
		if n := perIndex[ix]; n[1] == 0 || n[0] < n[1]*9/10 {
			t.Errorf("the snapshot's pages of the compressed table's index %s: %d of %d carry key ranges (skipped: %v)", ix, n[0], n[1], res.Keys.Skipped)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// The logical copy: the same rows in key order, denser pages under other numbers.
	replaceByLogicalCopy(t, conn, db, tbl)
	// The file the tree path reads holds 8 KiB pages: a server that silently made the
	// copy DYNAMIC (its strict mode off) would leave nothing compressed to test.
	cat, err := catalog.Load(ctx, conn, catalog.Filter{Schemas: []string{db}})
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Tables) != 1 || len(cat.Tables[0].Parts) != 1 || !cat.Tables[0].Parts[0].SpaceKnown {
		t.Fatalf("the copy's catalog: %+v", cat.Tables)
	}
	space := cat.Tables[0].Parts[0].Space
	files, err := catalog.TablespaceFiles(ctx, conn, map[uint32]bool{space: true})
	if err != nil {
		t.Fatal(err)
	}
	src, err := pagekey.OpenSource(files[space], conn.Server.PageSize)
	if err != nil {
		t.Fatal(err)
	}
	zipped, physical := src.Compressed()
	t.Logf("the copy's file: %d pages of %d bytes", src.Pages, physical)
	src.Close()
	if !zipped || physical != 8192 {
		t.Fatalf("the copy's file %s holds %d-byte pages (compressed %v), want 8 KiB compressed ones", files[space], physical, zipped)
	}

	cold()
	coldMisses := measure()
	hotMisses := measure()
	bound := hotMisses + coldMisses/10
	warmFrom := func(byKey string) *warm.Outcome {
		t.Helper()
		out := warmByKey(t, conn, m, byKey, false)
		for _, sk := range out.Result.Skipped {
			t.Errorf("--by-key %s: skipped %s: %s", byKey, sk.Index, sk.Reason)
		}
		return out
	}

	cold()
	warmFrom(warm.ByKeyPages)
	byNumber := measure()
	t.Logf("misses cold %d, hot %d, bound %d; after warm by page number %d", coldMisses, hotMisses, bound, byNumber)
	if byNumber <= bound {
		t.Errorf("by page number the pass missed %d pages, within the bound %d: the test does not tell the paths apart", byNumber, bound)
	}
	for _, mode := range []struct{ byKey, want string }{{warm.ByKeyAuto, warm.PathTree}, {warm.ByKeySQL, warm.PathSQL}} {
		cold()
		out := warmFrom(mode.byKey)
		indexes := 0
		for _, ip := range out.Manifest.Paths {
			if ip.Kind != warm.KindIndex {
				continue
			}
			indexes++
			if ip.Path != mode.want || (ip.Statements == 0 && ip.TreePages == 0) {
				t.Errorf("--by-key %s: %s takes path %s with %d statements and %d tree pages (%s), want %s",
					mode.byKey, ip.Index, ip.Path, ip.Statements, ip.TreePages, ip.Reason, mode.want)
			}
		}
		if indexes != 2 {
			t.Errorf("--by-key %s: %d indexes in the plan's paths, want 2: %+v", mode.byKey, indexes, out.Manifest.Paths)
		}
		byKey := measure()
		t.Logf("--by-key %s (path %s): misses after the warm %d (bound %d); %d statements, %d pages read in the run",
			mode.byKey, mode.want, byKey, bound, out.Result.Units, out.Result.PagesRead)
		if byKey > bound {
			t.Errorf("after warm --by-key %s (path %s) the pass missed %d pages, more than %d (hot pass %d + a tenth of the cold pass's %d)",
				mode.byKey, mode.want, byKey, bound, hotMisses, coldMisses)
		}
		if out.Result.PagesRead > 3*m.Header.Entries+64 {
			t.Errorf("--by-key %s: read %d pages for a manifest of %d", mode.byKey, out.Result.PagesRead, m.Header.Entries)
		}
	}
}

package warm_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/snapshot"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/warm"
)

// TestWarmByKeyOnALogicalCopy: a table grown by random-order inserts, read by a skewed
// workload (scattered hot rows by primary key, others through the secondary index), is
// snapshot with its keys; then replaced by a logical copy of itself (rows inserted in key
// order: denser pages, other page numbers), and later rebuilt (ALTER TABLE ... FORCE).
// After a cold restart and warm --from the snapshot, the workload's first pass misses at
// most its hot pass's misses plus a tenth of a cold pass's: by key (auto chooses the sql
// path there, and pages on the original), while by page number it does not.
// auto takes the tree path there (integer keys compare in Go); --by-key sql the range scans.
func TestWarmByKeyOnALogicalCopy(t *testing.T) {
	byKeyScenario(t, 60000, 400, 0, false, sandboxtest.Conn(t), coldRestarter(t), func(manifestPath string) {
		// The command line names each index's path and why, in the dry run's text and JSON.
		t.Helper()
		r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"warm", "--from", manifestPath, "--dry-run"}, sandboxtest.Sock(t)...)...)
		// The tree path's ranges are pages by number: the summary counted them again as
		// "key ranges by SQL" where no index went by SQL.
		if r.Code != 0 || !strings.Contains(r.Stdout, "not a page-for-page copy") || !strings.Contains(r.Stdout, "this server's own B-tree") ||
			!strings.Contains(r.Stdout, "key ranges found in this server's B-trees among them), 0 key ranges by range scans") {
			t.Errorf("warm --from --dry-run: exit %d:\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		r = sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"warm", "--from", manifestPath, "--dry-run", "--by-key", "sql"}, sandboxtest.Sock(t)...)...)
		if r.Code != 0 || !strings.Contains(r.Stdout, "key ranges (path sql)") || !strings.Contains(r.Stdout, "asked for (--by-key sql)") {
			t.Errorf("warm --from --dry-run --by-key sql: exit %d:\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		r = sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"warm", "--from", manifestPath, "--dry-run", "--json", "--by-key", "pages"}, sandboxtest.Sock(t)...)...)
		var doc struct {
			Plan struct {
				Paths []warm.IndexPath `json:"index_paths"`
			} `json:"plan"`
		}
		sandboxtest.JSON(t, []byte(r.Stdout), &doc)
		for _, ip := range doc.Plan.Paths {
			if ip.Kind == warm.KindIndex && (ip.Path != warm.PathPages || !strings.Contains(ip.Reason, "--by-key pages")) {
				t.Errorf("--by-key pages --json: %+v", ip)
			}
		}
		if len(doc.Plan.Paths) == 0 || r.Code != 0 {
			t.Errorf("--by-key pages --json: exit %d, no index_paths:\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"warm", "--from", manifestPath, "--by-key", "btree"}, sandboxtest.Sock(t)...)...); r.Code != 2 {
			t.Errorf("--by-key btree: exit %d, want 2 (usage): %s", r.Code, r.Stderr)
		}
	})
}

// TestWarmByKeyDescending: the same with descending keys (PRIMARY KEY (id DESC), KEY (k
// DESC), both servers' order since MariaDB 10.8 and MySQL 8.0): a page's range runs from its
// greater key to its lesser, the secondary index's appended id descends too. Read as
// ascending, the sql path's ranges were empty and the tree path found other leaves.
func TestWarmByKeyDescending(t *testing.T) {
	byKeyScenario(t, 60000, 400, 0, true, sandboxtest.Conn(t), coldRestarter(t), nil)
}

// TestMeasureWarmByKey is the scenario of TestWarmByKeyOnALogicalCopy at a scale where the
// table does not fit the pool (INNOWARM_MEASURE_BYKEY=ROWS: 600000 rows of about 215 bytes,
// a 128 MiB pool), INNOWARM_MEASURE_ROUNDS rounds (3), on a server of its own; it also
// measures the same server after a restart, warmed by its page numbers.
// Not part of the suite: minutes on a loaded machine.
func TestMeasureWarmByKey(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("INNOWARM_MEASURE_BYKEY"))
	if n <= 0 {
		t.Skip("INNOWARM_MEASURE_BYKEY=ROWS measures warm by key at that scale")
	}
	ctx := context.Background()
	sb := sandboxtest.SecondServer(t, 128<<20)
	conn, err := sb.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	rounds := 3
	if r, err := strconv.Atoi(os.Getenv("INNOWARM_MEASURE_ROUNDS")); err == nil && r > 0 {
		rounds = r
	}
	// INNOWARM_MEASURE_DESC=1: both keys descending, as TestWarmByKeyDescending.
	byKeyScenario(t, n, 400, rounds, os.Getenv("INNOWARM_MEASURE_DESC") != "", conn, func() *connection.Conn {
		t.Helper()
		conn.Close()
		if _, err := sb.ColdRestart(ctx); err != nil {
			t.Fatal(err)
		}
		if conn, err = sb.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		return conn
	}, nil)
}

// byKeyScenario: a primary grown by random-order inserts (rows rows), a skewed workload
// (every step-th row by primary key, as many others through the secondary index), its
// snapshot, then the logical copy and the rebuild, each measured rounds times. rounds 0
// is one round with fewer restarts (a MySQL restart takes 10-15 s): the cold pass is the
// original's, before its snapshot, the hot pass the second after the warm, the page
// numbers are tried on the logical copy only, and the rebuild is warmed by auto alone.
// byKeyScenario runs the scenario; desc makes both keys descending, and then leaves the
// rebuilt table out (its check is the same code with other pages).
func byKeyScenario(t *testing.T, rows, step, rounds int, desc bool, conn *connection.Conn, cold func() *connection.Conn, cli func(manifestPath string)) {
	ctx := context.Background()
	srv := conn.Server
	db := "bykey"
	if _, err := conn.DB.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+sqltext.Ident(db)); err != nil {
		t.Fatal(err)
	}
	tbl := sqltext.Table(db, "t")
	exec := func(conn *connection.Conn, stmts ...string) {
		t.Helper()
		for _, q := range stmts {
			if _, err := conn.DB.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	keyDDL := "PRIMARY KEY (id), KEY kk (k)"
	if desc {
		keyDDL = "PRIMARY KEY (id DESC), KEY kk (k DESC)"
	}
	// latin1: the same rows per page on every flavor.
	exec(conn,
		"DROP TABLE IF EXISTS "+tbl,
		"CREATE TABLE "+tbl+" (id INT NOT NULL, k INT NOT NULL, pad CHAR(200) CHARACTER SET latin1 NOT NULL DEFAULT '', "+keyDDL+")",
		fmt.Sprintf("INSERT INTO %s (id, k) SELECT (seq * 7919) %% %d, (seq * 104729) %% %d FROM %s ORDER BY seq", tbl, rows+1, rows+1, srv.Series(db, 1, int64(rows))))
	hot := func(conn *connection.Conn) {
		t.Helper()
		exec(conn,
			fmt.Sprintf("SELECT SUM(LENGTH(pad)) FROM %s FORCE INDEX (PRIMARY) WHERE id IN (%s)", tbl, inList(0, rows, step)),
			fmt.Sprintf("SELECT SUM(LENGTH(pad)) FROM %s FORCE INDEX (kk) WHERE k IN (%s)", tbl, inList(step/2, rows, step)))
	}
	type pass struct {
		misses  int64
		seconds float64
	}
	measure := func(conn *connection.Conn) pass {
		t.Helper()
		before := poolReads(t, conn)
		t0 := time.Now()
		hot(conn)
		return pass{poolReads(t, conn) - before, time.Since(t0).Seconds()}
	}
	conn = cold()
	originalCold := measure(conn)
	m, path := mostlyKeyedSnapshot(t, conn, db, "hot.manifest")
	for _, o := range m.Objects {
		if o.Index == "kk" && o.KeyColumns != map[bool]string{false: "k:int4,id:int4", true: "k:int4:desc,id:int4:desc"}[desc] {
			t.Errorf("index kk's key columns %q", o.KeyColumns)
		}
	}
	if want := map[bool]int{false: 3, true: 4}[desc]; m.Header.FormatVersion != want {
		t.Errorf("format version %d, want %d", m.Header.FormatVersion, want)
	}
	// On the original, auto takes the page numbers: the sampled pages hold the keys.
	for ix, ip := range indexPaths(warmByKey(t, conn, m, warm.ByKeyAuto, true)) {
		if ip.Path != warm.PathPages {
			t.Errorf("on the original, %s takes path %s (%s), want pages", ix, ip.Path, ip.Reason)
		}
	}
	if rounds > 0 {
		// Measured only: the same server after a restart, warmed by auto (its page numbers).
		conn = cold()
		warmByKey(t, conn, m, warm.ByKeyAuto, false)
		after := measure(conn)
		hotPass := measure(conn)
		t.Logf("same server (%d rows, manifest %d pages): misses cold %d (%.3f s), after warm auto (pages) %d (%.3f s), hot %d (%.3f s)",
			rows, m.Header.Entries, originalCold.misses, originalCold.seconds, after.misses, after.seconds, hotPass.misses, hotPass.seconds)
	}

	replaceByLogicalCopy(t, conn, db, tbl)
	if cli != nil {
		cli(path)
	}
	check := func(what string) {
		t.Helper()
		lean := rounds == 0
		for round := 1; round <= max(rounds, 1); round++ {
			coldPass, hotPass := originalCold, pass{}
			if !lean {
				conn = cold()
				coldPass = measure(conn)
				hotPass = measure(conn)
			}
			byNumber := pass{misses: -1}
			if !lean || what == "logical copy" {
				conn = cold()
				warmByKey(t, conn, m, warm.ByKeyPages, false)
				byNumber = measure(conn)
			}
			modes := []struct{ byKey, want string }{{warm.ByKeyAuto, warm.PathTree}, {warm.ByKeySQL, warm.PathSQL}}
			if lean && what != "logical copy" {
				modes = modes[:1]
			}
			for _, mode := range modes {
				conn = cold()
				t0 := time.Now()
				out := warmByKey(t, conn, m, mode.byKey, false)
				warmSeconds := time.Since(t0).Seconds()
				for ix, ip := range indexPaths(out) {
					if ip.Path != mode.want || (ip.Statements == 0 && ip.TreePages == 0) {
						t.Errorf("%s --by-key %s: %s takes path %s with %d statements and %d tree pages (%s), want %s", what, mode.byKey, ix, ip.Path, ip.Statements, ip.TreePages, ip.Reason, mode.want)
					}
				}
				if mode.byKey == warm.ByKeyAuto {
					// inspect --manifest and its readiness gate count what warm loaded: the
					// pages of this copy's trees that hold the manifest's keys, not the
					// source's page numbers, which name other rows here.
					mc, err := warm.MeasureManifest(ctx, conn, m)
					if err != nil {
						t.Fatal(err)
					}
					if mc.Coverage < 0.95 || len(mc.Measured.Pages) == 0 || mc.Uncounted != 0 {
						t.Errorf("%s: inspect --manifest after warm --from by tree counts %.1f%% resident (%d of %d pages counted, %d uncounted), want 95%%+",
							what, 100*mc.Coverage, mc.Resident, len(mc.Measured.Pages), mc.Uncounted)
					}
					if lean {
						// The suite's own server: the readiness gate of the README's recipe.
						r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"inspect", "--manifest", path, "--wait-coverage", "95%", "--timeout", "20s"}, sandboxtest.Sock(t)...)...)
						if r.Code != 0 {
							t.Errorf("%s: inspect --manifest --wait-coverage 95%% after warm --from by tree: exit %d\n%s%s", what, r.Code, r.Stdout, r.Stderr)
						}
					}
				}
				byKey := measure(conn)
				if lean {
					hotPass = measure(conn)
				}
				bound := hotPass.misses + coldPass.misses/10
				res := out.Result
				for _, sk := range res.Skipped {
					t.Errorf("%s: skipped %s: %s", what, sk.Index, sk.Reason)
				}
				t.Logf("%s round %d (%d rows, manifest %d pages): misses cold %d (%.3f s), hot %d (%.3f s), after warm by number %d (%.3f s), by key (path %s) %d (%.3f s; bound %d); warm %.2f s: %d statements, %d pages read in the run",
					what, round, rows, m.Header.Entries, coldPass.misses, coldPass.seconds, hotPass.misses, hotPass.seconds, byNumber.misses, byNumber.seconds,
					mode.want, byKey.misses, byKey.seconds, bound, warmSeconds, res.Units, res.PagesRead)
				if byKey.misses > bound {
					t.Errorf("%s: after warm by key (path %s) the pass missed %d pages, more than %d (hot pass %d + a tenth of the cold pass's %d)", what, mode.want, byKey.misses, bound, hotPass.misses, coldPass.misses)
				}
				if res.PagesRead > 3*m.Header.Entries+64 {
					t.Errorf("%s: path %s read %d pages for a manifest of %d", what, mode.want, res.PagesRead, m.Header.Entries)
				}
				if what == "logical copy" && byNumber.misses <= bound {
					t.Errorf("%s: by page number the pass missed %d pages, within the bound %d: the test does not tell the paths apart", what, byNumber.misses, bound)
				}
			}
		}
	}
	check("logical copy")
	if !desc {
		exec(conn, "ALTER TABLE "+tbl+" FORCE")
		check("rebuilt")
	}
	exec(conn, "DROP DATABASE "+sqltext.Ident(db))
}

// inList is from, from+step, ... below to, comma-separated.
func inList(from, to, step int) string {
	var b strings.Builder
	for v := from; v < to; v += step {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, v)
	}
	return b.String()
}

func poolReads(t *testing.T, conn *connection.Conn) int64 {
	t.Helper()
	var name string
	var n int64
	if err := conn.DB.QueryRow("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_reads'").Scan(&name, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestWarmByKeySkipsAnIgnoredIndex: an index the manifest has ranges for, ignored for the
// optimizer here (MariaDB's IGNORED, MySQL's INVISIBLE: a DBA trying its removal on a
// replica), takes no key path: FORCE INDEX cannot name it (MySQL's error 1176 failed the
// warm's range scans), and queries here do not read it. The rest is warmed.
func TestWarmByKeySkipsAnIgnoredIndex(t *testing.T) {
	conn := sandboxtest.Conn(t)
	db := sandboxtest.Schema(t)
	tbl := sqltext.Table(db, "ig")
	sandboxtest.Exec(t,
		"CREATE TABLE "+tbl+" (id INT NOT NULL PRIMARY KEY, k INT NOT NULL, pad CHAR(200) NOT NULL DEFAULT '', KEY kk (k))",
		fmt.Sprintf("INSERT INTO %s (id, k) SELECT seq, (seq * 7919) %% 20011 FROM %s ORDER BY seq", tbl, conn.Server.Series(db, 1, 20000)),
		"ANALYZE TABLE "+tbl,
		// Written to its file, where snapshot reads the key ranges (MySQL's export also
		// drops the table's pages from the pool: the reads come after it).
		"FLUSH TABLES "+tbl+" FOR EXPORT", "UNLOCK TABLES",
		"SELECT COUNT(*) FROM "+tbl+" FORCE INDEX (kk) WHERE k > 0",
		"SELECT COUNT(*) FROM "+tbl+" FORCE INDEX (PRIMARY) WHERE pad = ''")
	m := keyedSnapshot(t, conn, db, "ig.manifest")
	hidden := "IGNORED"
	if !conn.Server.IsMariaDB() {
		hidden = "INVISIBLE"
	}
	sandboxtest.Exec(t, "ALTER TABLE "+tbl+" ALTER INDEX kk "+hidden)
	out := warmByKey(t, conn, m, warm.ByKeySQL, false)
	paths := indexPaths(out)
	if ip := paths["kk"]; ip.Path != warm.PathNone || !strings.Contains(ip.Reason, "ignored") {
		t.Errorf("kk %s: path %s (%s), want none, saying why", hidden, ip.Path, ip.Reason)
	}
	if ip := paths["PRIMARY"]; ip.Path != warm.PathSQL || ip.Statements == 0 {
		t.Errorf("PRIMARY: path %s with %d statements (%s), want sql", ip.Path, ip.Statements, ip.Reason)
	}
	if out.Result.UnitsFailed > 0 || len(out.Result.Errors) > 0 {
		t.Errorf("%d units failed: %v", out.Result.UnitsFailed, out.Result.Errors)
	}
}

// keyedSnapshot captures schema db's pages with their key ranges into a file named name
// and reads it back; it fails the test when no page got a range.
func keyedSnapshot(t *testing.T, conn *connection.Conn, db, name string) *manifest.Manifest {
	t.Helper()
	return keyedSnapshotAt(t, conn, db, filepath.Join(sandboxtest.Dir(t), name))
}

// keyedSnapshotAt is keyedSnapshot into path.
func keyedSnapshotAt(t *testing.T, conn *connection.Conn, db, path string) *manifest.Manifest {
	t.Helper()
	if _, err := snapshot.Capture(context.Background(), conn, snapshot.Options{Path: path, ToolVersion: "test", Filter: catalog.Filter{Schemas: []string{db}}}); err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.KeyedEntries == 0 {
		t.Fatalf("the snapshot has no keyed entries of %d", m.Header.Entries)
	}
	return m
}

// coldRestarter restarts the test's server cold and returns the new connection.
func coldRestarter(t *testing.T) func() *connection.Conn {
	return func() *connection.Conn {
		t.Helper()
		if _, err := sandboxtest.Server(t).ColdRestart(context.Background()); err != nil {
			t.Fatal(err)
		}
		return sandboxtest.Reconnect(t)
	}
}

// warmByKey runs warm --from m on conn with --by-key byKey (a dry run: only the plan).
func warmByKey(t *testing.T, conn *connection.Conn, m *manifest.Manifest, byKey string, dryRun bool) *warm.Outcome {
	t.Helper()
	req := warm.Request{Manifest: m, Method: warm.MethodAuto, DryRun: dryRun, Run: quiet(),
		Plan: warm.Options{Order: "small-first", SplitPages: warm.DefaultSplitPages, ByKey: byKey}}
	// For TestMeasureWarmByKey's comparison: the tables left closed after a native load.
	req.Run.KeepTablesClosed = os.Getenv("INNOWARM_MEASURE_KEEP_CLOSED") != ""
	if err := req.Validate(); err != nil {
		t.Fatal(err)
	}
	out, err := warm.Execute(context.Background(), conn, req, func(string, string) {})
	if err != nil {
		t.Fatalf("%s: warm --from --by-key %s: %v", conn.Server, byKey, err)
	}
	return out
}

// indexPaths is the path each index of a warm's plan took, by index name.
func indexPaths(out *warm.Outcome) map[string]warm.IndexPath {
	got := map[string]warm.IndexPath{}
	for _, ip := range out.Manifest.Paths {
		if ip.Kind == warm.KindIndex {
			got[ip.Index] = ip
		}
	}
	return got
}

// replaceByLogicalCopy replaces db's table tbl (quoted) by a copy of itself made as a
// logical restore makes it: the same rows inserted in key order (denser pages, other page
// numbers) under the same name, with a restore's statistics, which the server recalculates
// in the background within seconds of a load (a restart sooner keeps the empty table's,
// and the optimizer would scan the index from its start for a range: the plan then says
// so), and written to its file, where the tree path reads it (a table not written yet
// takes the sql path, and says why).
func replaceByLogicalCopy(t *testing.T, conn *connection.Conn, db, tbl string) {
	t.Helper()
	cp := sqltext.Table(db, "t_copy")
	for _, q := range []string{
		"CREATE TABLE " + cp + " LIKE " + tbl,
		"INSERT INTO " + cp + " SELECT * FROM " + tbl + " ORDER BY id",
		"RENAME TABLE " + tbl + " TO " + sqltext.Table(db, "t_orig") + ", " + cp + " TO " + tbl,
		"DROP TABLE " + sqltext.Table(db, "t_orig"),
		"ANALYZE TABLE " + tbl,
		"FLUSH TABLES " + tbl + " FOR EXPORT", "UNLOCK TABLES",
	} {
		if _, err := conn.DB.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// mostlyKeyedSnapshot is keyedSnapshot where most entries must carry key ranges; it also
// returns the manifest's path.
func mostlyKeyedSnapshot(t *testing.T, conn *connection.Conn, db, name string) (*manifest.Manifest, string) {
	t.Helper()
	path := filepath.Join(sandboxtest.Dir(t), name)
	m := keyedSnapshotAt(t, conn, db, path)
	if m.Header.KeyedEntries < m.Header.Entries/2 {
		t.Fatalf("the snapshot has %d keyed entries of %d", m.Header.KeyedEntries, m.Header.Entries)
	}
	return m, path
}

package warm_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/follow"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sandbox"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/warm"
)

// TestMeasureWarmByKeyAcrossFlavors is byKeyScenario's logical copy with the primary on one
// flavor and the replica on the other (INNOWARM_MEASURE_CROSSFLAVOR=ROWS; 128 MiB pools;
// INNOWARM_MEASURE_ROUNDS rounds, 3): MariaDB 10.11 -> MySQL 9.7 and back
// (INNOWARM_CROSSFLAVOR_PAIRS="mariadb-10.11>mysql-9.7,mysql-9.7>mariadb-10.11" by
// default). The primary is grown by random-order inserts and read by the skewed workload,
// then snapshot with its keys; the replica gets the same table by its DDL and the rows
// streamed through the client in key order (what a dump's restore does), is cold-restarted
// and warmed from the primary's manifest (auto: the tree path; then --by-key sql), then by
// one round of follow from the live primary (its pool holding the workload's pages again:
// auto, the tree path; then with --method scan, innowarm off the replica's host: the sql
// path), and each time the workload's first pass must miss at most its hot pass's misses
// plus a tenth of its cold pass's. Not part of the suite: two servers and many restarts,
// minutes.
func TestMeasureWarmByKeyAcrossFlavors(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("INNOWARM_MEASURE_CROSSFLAVOR"))
	if n <= 0 {
		t.Skip("INNOWARM_MEASURE_CROSSFLAVOR=ROWS measures warm by key from one flavor to the other")
	}
	rounds := 3
	if r, err := strconv.Atoi(os.Getenv("INNOWARM_MEASURE_ROUNDS")); err == nil && r > 0 {
		rounds = r
	}
	pairs := "mariadb-10.11>mysql-9.7,mysql-9.7>mariadb-10.11"
	if p := os.Getenv("INNOWARM_CROSSFLAVOR_PAIRS"); p != "" {
		pairs = p
	}
	for _, pair := range strings.Split(pairs, ",") {
		from, to, ok := strings.Cut(strings.TrimSpace(pair), ">")
		if !ok {
			t.Fatalf("INNOWARM_CROSSFLAVOR_PAIRS: %q is not FROM>TO", pair)
		}
		t.Run(from+"_to_"+to, func(t *testing.T) { crossFlavorScenario(t, from, to, n, 400, rounds) })
	}
}

func crossFlavorScenario(t *testing.T, from, to string, rows, step, rounds int) {
	ctx := context.Background()
	connect := func(sb *sandbox.Sandbox) *connection.Conn {
		t.Helper()
		conn, err := sb.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	primarySB := sandboxtest.ServerOf(t, from, 128<<20)
	primary := connect(primarySB)
	replicaSB := sandboxtest.ServerOf(t, to, 128<<20)
	replica := connect(replicaSB)
	t.Logf("primary %s, replica %s", primary.Server, replica.Server)

	db := "crossflavor"
	tbl := sqltext.Table(db, "t")
	exec := func(conn *connection.Conn, stmts ...string) {
		t.Helper()
		for _, q := range stmts {
			if _, err := conn.DB.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %s: %v", conn.Server, q, err)
			}
		}
	}
	// byKeyScenario's table; latin1: the same rows per page on every flavor.
	ddl := "CREATE TABLE " + tbl + " (id INT NOT NULL PRIMARY KEY, k INT NOT NULL, pad CHAR(200) CHARACTER SET latin1 NOT NULL DEFAULT '', KEY kk (k))"
	for _, c := range []*connection.Conn{primary, replica} {
		exec(c, "CREATE DATABASE IF NOT EXISTS "+sqltext.Ident(db), "DROP TABLE IF EXISTS "+tbl, ddl)
	}
	exec(primary, fmt.Sprintf("INSERT INTO %s (id, k) SELECT (seq * 7919) %% %d, (seq * 104729) %% %d FROM %s ORDER BY seq",
		tbl, rows+1, rows+1, primary.Server.Series(db, 1, int64(rows))))

	workload := func(conn *connection.Conn) {
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
		workload(conn)
		return pass{poolReads(t, conn) - before, time.Since(t0).Seconds()}
	}
	coldRestart := func(sb *sandbox.Sandbox, conn **connection.Conn) {
		t.Helper()
		(*conn).Close()
		if _, err := sb.ColdRestart(ctx); err != nil {
			t.Fatal(err)
		}
		*conn = connect(sb)
	}

	// The primary: a cold pass of the workload, then its snapshot.
	coldRestart(primarySB, &primary)
	primaryCold := measure(primary)
	m, _ := mostlyKeyedSnapshot(t, primary, db, "primary.manifest")

	// The logical copy: the rows streamed from the primary in key order, in multi-row
	// INSERTs of 1,000 (as a dump's restore writes them), then the restore's statistics
	// and the table written to its file (see byKeyScenario).
	t0 := time.Now()
	copyRows(t, primary, replica, tbl, 1000)
	exec(replica, "ANALYZE TABLE "+tbl, "FLUSH TABLES "+tbl+" FOR EXPORT", "UNLOCK TABLES")
	t.Logf("copied %d rows from %s to %s in %.1f s; the primary's cold pass missed %d pages (%.3f s), its manifest has %d pages (%d keyed)",
		rows, primary.Server, replica.Server, time.Since(t0).Seconds(), primaryCold.misses, primaryCold.seconds, m.Header.Entries, m.Header.KeyedEntries)

	// The copy read the whole table through the primary's pool: a cold restart and a pass
	// of the workload give it back the hot set follow captures from it each round.
	coldRestart(primarySB, &primary)
	measure(primary)

	warmFrom := func(byKey string) *warm.Outcome {
		t.Helper()
		return warmByKey(t, replica, m, byKey, false)
	}
	// followRound runs one round of follow from the primary to the replica, method auto or
	// scan, and returns its status and each index's path in its words.
	followRound := func(method string) (follow.Status, []string) {
		t.Helper()
		var st follow.Status
		o := follow.Options{Source: primarySB.ConnOptions(), Target: replicaSB.ConnOptions(), Interval: time.Second, Rounds: 1,
			Method: method, Filter: catalog.Filter{Schemas: []string{db}}, Log: logx.New(os.Stderr, false)}
		if err := follow.Run(ctx, o, nil, func(s follow.Status) { st = s }); err != nil {
			t.Fatalf("follow --method %s: %v", method, err)
		}
		if !st.OK {
			t.Fatalf("follow --method %s: the round failed on the %s: %s", method, st.Side, st.Error)
		}
		var paths []string
		for p, n := range st.Paths {
			paths = append(paths, fmt.Sprintf("%s %d", p, n))
		}
		return st, paths
	}
	for round := 1; round <= rounds; round++ {
		coldRestart(replicaSB, &replica)
		coldPass := measure(replica)
		hotPass := measure(replica)
		bound := hotPass.misses + coldPass.misses/10
		byNumber := pass{misses: -1}
		if round == 1 {
			coldRestart(replicaSB, &replica)
			warmFrom(warm.ByKeyPages)
			byNumber = measure(replica)
		}
		for _, mode := range []struct{ byKey, want string }{{warm.ByKeyAuto, warm.PathTree}, {warm.ByKeySQL, warm.PathSQL}} {
			coldRestart(replicaSB, &replica)
			t0 := time.Now()
			out := warmFrom(mode.byKey)
			warmSeconds := time.Since(t0).Seconds()
			var reasons []string
			for _, ip := range out.Manifest.Paths {
				if ip.Kind != warm.KindIndex {
					continue
				}
				reasons = append(reasons, fmt.Sprintf("%s: %s (%s)", ip.Index, ip.Path, ip.Reason))
				if ip.Path != mode.want || (ip.Statements == 0 && ip.TreePages == 0) {
					t.Errorf("--by-key %s: %s takes path %s with %d statements and %d tree pages (%s), want %s", mode.byKey, ip.Index, ip.Path, ip.Statements, ip.TreePages, ip.Reason, mode.want)
				}
			}
			for _, sk := range out.Result.Skipped {
				t.Errorf("--by-key %s: skipped %s: %s", mode.byKey, sk.Index, sk.Reason)
			}
			// Reads the load issued may still be under way when it reports its end: the
			// pass then waits for them without counting a miss.
			st, err := replica.GlobalStatus(ctx, "Innodb_data_pending_reads", "Innodb_pages_read")
			if err != nil {
				t.Fatal(err)
			}
			warmed := measure(replica)
			after, err := replica.GlobalStatus(ctx, "Innodb_pages_read")
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("after the warm: %d reads pending; %d pages read during the first pass", st["innodb_data_pending_reads"], after["innodb_pages_read"]-st["innodb_pages_read"])
			// The pass again, in the same restart: what the first pass's seconds would be
			// without its first-pass costs that are not reads (none are misses here).
			again := measure(replica)
			t.Logf("%s -> %s round %d (%d rows, manifest %d pages): misses cold %d (%.3f s), hot %d (%.3f s), after warm by number %d (%.3f s), by key (path %s) %d (%.3f s, %.2fx the hot pass; again %d, %.3f s; bound %d); warm %.2f s: %d statements, %d pages read; %s",
				primary.Server, replica.Server, round, rows, m.Header.Entries, coldPass.misses, coldPass.seconds, hotPass.misses, hotPass.seconds,
				byNumber.misses, byNumber.seconds, mode.want, warmed.misses, warmed.seconds, warmed.seconds/max(hotPass.seconds, 1e-9), again.misses, again.seconds, bound,
				warmSeconds, out.Result.Units, out.Result.PagesRead, strings.Join(reasons, "; "))
			if warmed.misses > bound {
				t.Errorf("after warm by key (path %s) the pass missed %d pages, more than %d (hot pass %d + a tenth of the cold pass's %d)", mode.want, warmed.misses, bound, hotPass.misses, coldPass.misses)
			}
			if out.Result.PagesRead > 3*m.Header.Entries+64 {
				t.Errorf("path %s read %d pages for a manifest of %d", mode.want, out.Result.PagesRead, m.Header.Entries)
			}
		}
		for _, mode := range []struct{ method, want string }{{warm.MethodAuto, warm.PathTree}, {warm.MethodScan, warm.PathSQL}} {
			coldRestart(replicaSB, &replica)
			st, paths := followRound(mode.method)
			if st.Paths[mode.want] == 0 {
				t.Errorf("follow --method %s: indexes by path %v, want %s", mode.method, st.Paths, mode.want)
			}
			warmed := measure(replica)
			t.Logf("%s -> %s round %d: follow --method %s, one round (capture %.2f s, load %.2f s; hot set %d pages, %d read by key range, %d loaded, coverage %.1f%%; paths %s): first pass missed %d (%.3f s, %.2fx the hot pass; bound %d)",
				primary.Server, replica.Server, round, mode.method, st.CaptureSeconds, st.LoadSeconds, st.HotSetPages, st.KeyRanges, st.Loaded, 100*st.Coverage,
				strings.Join(paths, ", "), warmed.misses, warmed.seconds, warmed.seconds/max(hotPass.seconds, 1e-9), bound)
			if warmed.misses > bound {
				t.Errorf("after a round of follow --method %s the pass missed %d pages, more than %d (hot pass %d + a tenth of the cold pass's %d)", mode.method, warmed.misses, bound, hotPass.misses, coldPass.misses)
			}
		}
	}
}

// copyRows copies table's rows (id, k, pad) from one server to another in key order,
// batch rows an INSERT, streaming: a logical copy, as a dump and its restore make.
func copyRows(t *testing.T, from, to *connection.Conn, table string, batch int) {
	t.Helper()
	ctx := context.Background()
	rs, err := from.DB.QueryContext(ctx, "SELECT id, k, pad FROM "+table+" ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var (
		args []any
		n    int
	)
	flush := func() {
		t.Helper()
		if n == 0 {
			return
		}
		q := "INSERT INTO " + table + " (id, k, pad) VALUES " + strings.TrimSuffix(strings.Repeat("(?,?,?),", n), ",")
		if _, err := to.DB.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("copy to %s: %v", to.Server, err)
		}
		args, n = args[:0], 0
	}
	for rs.Next() {
		var id, k int64
		var pad string
		if err := rs.Scan(&id, &k, &pad); err != nil {
			t.Fatal(err)
		}
		args, n = append(args, id, k, pad), n+1
		if n == batch {
			flush()
		}
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	flush()
}

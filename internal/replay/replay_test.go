package replay_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/replay"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

func q(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

// workload is what the sandbox's application does while the server logs it: reads in two
// schemas, and every kind of statement a replay must not run.
type workload struct {
	schemaA, schemaB string
	outfile          string
	reads            int            // read-only statements in the logs
	reasons          map[string]int // skip reasons the logs must give
	tables           []string       // for CHECKSUM TABLE
}

// runWorkload creates the schemas, then runs the workload with the slow and general logs on,
// and returns their paths.
func runWorkload(t *testing.T) (*workload, string, string) {
	t.Helper()
	ctx := context.Background()
	w := &workload{schemaA: sandboxtest.Schema(t), schemaB: "replay b`q 'ü'", reasons: map[string]int{}}
	A, B := q(w.schemaA), q(w.schemaB)
	sandboxtest.Exec(t, "DROP DATABASE IF EXISTS "+B, "CREATE DATABASE "+B)
	t.Cleanup(func() { sandboxtest.Exec(t, "DROP DATABASE IF EXISTS "+B) })
	sandboxtest.Exec(t,
		"CREATE TABLE "+A+".orders (id INT PRIMARY KEY, customer_id INT NOT NULL, note CHAR(200), KEY k_customer (customer_id))",
		"INSERT INTO "+A+".orders SELECT seq, seq MOD 1000, REPEAT('n', 200) FROM "+sandboxtest.Flavor(t).Series(w.schemaA, 1, 30000)+" ORDER BY seq",
		"CREATE TABLE "+A+".a_only (id INT PRIMARY KEY)",
		"INSERT INTO "+A+".a_only VALUES (1), (2)",
		"CREATE TABLE "+A+".counter (n INT)",
		"INSERT INTO "+A+".counter VALUES (0)",
		"CREATE FUNCTION "+A+".bump() RETURNS INT MODIFIES SQL DATA BEGIN UPDATE counter SET n = n + 1; RETURN 1; END",
		"CREATE TABLE "+B+".items (id INT PRIMARY KEY, pad CHAR(200))",
		"INSERT INTO "+B+".items SELECT seq, REPEAT('p', 200) FROM "+sandboxtest.Flavor(t).Series(w.schemaB, 1, 20000)+" ORDER BY seq",
		"CREATE TABLE "+B+".b_only (id INT PRIMARY KEY)",
		"INSERT INTO "+B+".b_only VALUES (1)",
	)
	w.tables = []string{A + ".orders", A + ".a_only", A + ".counter", B + ".items", B + ".b_only"}
	dir := sandboxtest.Dir(t)
	slow, general := filepath.Join(dir, "slow.log"), filepath.Join(dir, "general.log")
	w.outfile = filepath.Join(dir, "out.txt")
	// MySQL writes files only under secure_file_priv (the sandbox's own files directory).
	var filesDir string
	if err := sandboxtest.Conn(t).DB.QueryRow("SELECT COALESCE(@@secure_file_priv, '')").Scan(&filesDir); err != nil {
		t.Fatal(err)
	}
	if filesDir != "" {
		w.outfile = filepath.Join(filesDir, "replay-out.txt")
		os.Remove(w.outfile)
	}

	// The application's connection is open before the logs start: what the driver and
	// innowarm's flavor detection send at connect time stays out of them.
	app, err := connection.Open(ctx, sandboxtest.Server(t).ConnOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	c1, err := app.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	c2, err := app.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()

	sandboxtest.Exec(t, fmt.Sprintf("SET GLOBAL log_output = 'FILE', slow_query_log_file = '%s', general_log_file = '%s', long_query_time = 0, slow_query_log = ON, general_log = ON", slow, general))
	defer sandboxtest.Exec(t, "SET GLOBAL slow_query_log = OFF, general_log = OFF, long_query_time = 10")

	run := func(c *sql.Conn, reason, stmt string) {
		t.Helper()
		if _, err := c.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("workload %q: %v", stmt, err)
		}
		if reason == "" {
			w.reads++
		} else if reason != "-" {
			w.reasons[reason]++
		}
	}
	// Sessions copy long_query_time (and on MariaDB slow_query_log) when they connect.
	sessionLogs := "SET SESSION long_query_time = 0"
	if app.Server.IsMariaDB() {
		sessionLogs += ", slow_query_log = ON"
	}
	run(c1, "not a SELECT: SET", sessionLogs)
	run(c1, "-", "USE "+A)
	run(c1, "", "SELECT COUNT(*) FROM orders WHERE customer_id BETWEEN 1 AND 300")
	run(c1, "", "SELECT note FROM orders WHERE id = 17")
	run(c1, "", "SELECT SUM(LENGTH(note)) FROM orders")
	run(c1, "", "SELECT * FROM a_only")
	run(c1, "", "SELECT o.id,\n       o.note\n  FROM orders o\n WHERE o.note <> 'x;\n# y'\n LIMIT 5")
	run(c1, "not a SELECT: INSERT", "INSERT INTO counter VALUES (100)")
	run(c1, "not a SELECT: UPDATE", "UPDATE orders SET note = 'changed' WHERE id = 1")
	run(c1, "not a SELECT: DELETE", "DELETE FROM orders WHERE id = 2")
	run(c1, "not a SELECT: REPLACE", "REPLACE INTO a_only VALUES (1)")
	run(c1, replay.ReasonLockingRead, "SELECT * FROM orders WHERE id = 3 FOR UPDATE")
	run(c1, replay.ReasonLockingRead, "SELECT * FROM orders WHERE id = 3 LOCK IN SHARE MODE")
	run(c1, replay.ReasonLockingRead, "SELECT id FROM orders WHERE id = 5 /*!FOR UPDATE*/")
	run(c1, replay.ReasonInto, "SELECT note INTO @n FROM orders WHERE id = 4")
	run(c1, replay.ReasonInto, fmt.Sprintf("SELECT id FROM orders WHERE id < 3 INTO OUTFILE '%s'", w.outfile))
	run(c1, "denied function GET_LOCK: takes a named lock", "SELECT GET_LOCK('innowarm-test', 0)")
	run(c1, "denied function RELEASE_LOCK: releases a named lock", "SELECT RELEASE_LOCK('innowarm-test')")
	run(c1, replay.ReasonStoredFunction, "SELECT bump()")
	run(c1, replay.ReasonStoredFunction, "SELECT "+A+".bump()")
	run(c1, "denied function SLEEP: waits", "SELECT SLEEP(0)")
	run(c1, "-", "USE "+B)
	run(c1, "", "SELECT COUNT(*) FROM items")
	run(c1, "", "SELECT * FROM b_only")
	run(c1, "", "SELECT pad FROM items WHERE id IN (1, 2, 3)")
	run(c1, "", "SELECT pad FROM items WHERE id IN (4, 5)")
	run(c2, "not a SELECT: SET", sessionLogs)
	last := "SELECT COUNT(*) FROM " + A + ".orders"
	run(c2, "", last) // no schema
	// The server answers a statement before it writes it to the slow log; turning the log
	// off right away can lose the last one.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile(slow); strings.Contains(string(b), last) || time.Now().After(deadline) {
			break
		}
	}
	if err := os.Remove(w.outfile); err != nil {
		t.Fatal(err)
	}
	return w, slow, general
}

func quietOptions() replay.Options {
	return replay.Options{Concurrency: 3, Timeout: time.Minute, ProgressEvery: -1}
}

func replayFile(t *testing.T, conn *connection.Conn, path string, o replay.Options) *replay.Result {
	t.Helper()
	src, _, err := replay.OpenFile(path, replay.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	res, err := replay.Run(context.Background(), conn, src, o)
	if err != nil {
		t.Fatalf("replay %s: %v (result %+v)", filepath.Base(path), err, res)
	}
	return res
}

func checkResult(t *testing.T, name string, res *replay.Result, w *workload) {
	t.Helper()
	if res.Run != int64(w.reads) || res.Errors != 0 || res.Selected != res.Run || res.Runnable != res.Run {
		t.Errorf("%s: %d run, %d selected, %d runnable, %d errors %v; want %d reads, no error", name, res.Run, res.Selected, res.Runnable, res.Errors, res.ErrorSamples, w.reads)
	}
	for reason, n := range w.reasons {
		if res.Skipped[reason] < int64(n) {
			t.Errorf("%s: skipped for %q: %d, want %d (skipped: %v)", name, reason, res.Skipped[reason], n, res.Skipped)
		}
	}
	if res.Read != res.Runnable+res.SkippedTotal {
		t.Errorf("%s: %d read != %d runnable + %d skipped", name, res.Read, res.Runnable, res.SkippedTotal)
	}
}

// TestReplayOfServerLogs replays the slow and general logs the sandbox wrote: reads run
// (each in its schema: the tables a_only and b_only exist only in theirs), every write-ish
// statement is skipped with its reason, and the data is unchanged.
func TestReplayOfServerLogs(t *testing.T) {
	ctx := context.Background()
	w, slow, general := runWorkload(t)
	before := sandboxtest.Checksums(t, w.tables...)

	if _, err := sandboxtest.Server(t).ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	conn := sandboxtest.Reconnect(t)
	res := replayFile(t, conn, slow, quietOptions())
	checkResult(t, "slow log", res, w)
	if res.PagesLoaded <= 0 || res.PoolAfter.PagesData <= res.PoolBefore.PagesData {
		t.Errorf("slow log after a cold restart: %d pages loaded, data pages %d → %d", res.PagesLoaded, res.PoolBefore.PagesData, res.PoolAfter.PagesData)
	}

	// The server saw each read in its original schema.
	rows, err := conn.DB.Query("SELECT CURRENT_SCHEMA, SQL_TEXT FROM performance_schema.events_statements_history_long WHERE SQL_TEXT LIKE '%innowarm:replay%' AND SQL_TEXT NOT LIKE '%performance_schema%'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := map[string]string{}
	for rows.Next() {
		var schema sql.NullString
		var text string
		if err := rows.Scan(&schema, &text); err != nil {
			t.Fatal(err)
		}
		for _, table := range []string{"a_only", "b_only", "items", "orders"} {
			if strings.Contains(text, "FROM "+table) {
				seen[table] = schema.String
			}
		}
		// (MySQL's slow log cannot tell a statement of no schema from one in the last schema
		// it named: flavor.SlowLogNamesSchema.)
		if strings.Contains(text, "FROM "+q(w.schemaA)+".orders") && schema.String != "" && conn.Server.SlowLogNamesSchema() {
			t.Errorf("%q ran in %q, want no schema", text, schema.String)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if seen["a_only"] != w.schemaA || seen["orders"] != w.schemaA || seen["b_only"] != w.schemaB || seen["items"] != w.schemaB {
		t.Errorf("schemas the reads ran in: %q", seen)
	}

	res = replayFile(t, conn, general, quietOptions())
	checkResult(t, "general log", res, w)

	after := sandboxtest.Checksums(t, w.tables...)
	if before != after {
		t.Errorf("the replays changed data:\nbefore %s\nafter  %s", before, after)
	}
	if _, err := os.Stat(w.outfile); !os.IsNotExist(err) {
		t.Errorf("the replay wrote %s again", w.outfile)
	}

	// --dedupe runs one of the two IN-list reads of items; --sample is repeatable; --limit
	// stops the reading.
	o := quietOptions()
	o.Dedupe = true
	res = replayFile(t, conn, general, o)
	if res.Duplicates != 1 || res.Run != int64(w.reads-1) {
		t.Errorf("dedupe: %d duplicates, %d run", res.Duplicates, res.Run)
	}
	o = quietOptions()
	o.DryRun, o.Sample, o.Seed = true, 0.5, 7
	r1 := replayFile(t, conn, general, o)
	r2 := replayFile(t, conn, general, o)
	if r1.Selected != r2.Selected || r1.Selected+r1.SampledOut != r1.Runnable || r1.Run != 0 || r1.SampledOut == 0 {
		t.Errorf("sample: %d+%d of %d, then %d; %d run in a dry run", r1.Selected, r1.SampledOut, r1.Runnable, r2.Selected, r1.Run)
	}
	o = quietOptions()
	o.Limit = 3
	res = replayFile(t, conn, general, o)
	if res.Selected != 3 || res.Run != 3 || !res.LimitReached {
		t.Errorf("limit: %d selected, %d run, reached %v", res.Selected, res.Run, res.LimitReached)
	}
}

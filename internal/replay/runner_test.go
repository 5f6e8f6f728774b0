package replay_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/flavor"
	"github.com/innowarm/innowarm/internal/replay"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

func sqlFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(sandboxtest.Dir(t), "statements.sql")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// heavy is a slow statement: the server generates rows for minutes (seq + 0: a plain
// SUM(seq) MariaDB's sequence engine would answer without generating them).
func heavy(t *testing.T) string {
	return "SELECT SUM(seq + 0) FROM " + sandboxtest.Flavor(t).Series("", 1, 50000000000)
}

// TestStatementErrors: a statement that fails, hits the time limit or names a schema that
// does not exist is counted, and the replay goes on.
func TestStatementErrors(t *testing.T) {
	schema := sandboxtest.Schema(t)
	conn := sandboxtest.Conn(t)
	p := sqlFile(t, heavy(t)+";\nSELECT * FROM no_such_table;\nSELECT 1;\nUSE no_such_db;\nSELECT 2;\nUSE "+q(schema)+";\nSELECT 3;\n")
	o := quietOptions()
	o.Timeout, o.DefaultSchema, o.Concurrency = 300*time.Millisecond, schema, 2
	t0 := time.Now()
	res := replayFile(t, conn, p, o)
	if res.Run != 2 || res.Errors != 3 || res.TimedOut != 1 || len(res.ErrorSamples) != 3 {
		t.Errorf("%d run, %d errors (%d at the time limit): %q", res.Run, res.Errors, res.TimedOut, res.ErrorSamples)
	}
	if d := time.Since(t0); d > 30*time.Second {
		t.Errorf("the time limit did not stop the statement: %s", d)
	}
	for _, want := range []string{"line 1: SELECT SUM(seq + 0) FROM ", "no_such_table", "no_such_db"} {
		if !strings.Contains(strings.Join(res.ErrorSamples, "\n"), want) {
			t.Errorf("errors lack %q: %q", want, res.ErrorSamples)
		}
	}
	slow := false
	for _, e := range res.ErrorSamples {
		slow = slow || strings.HasPrefix(e, "line 1: SELECT SUM(seq + 0) FROM ") && strings.HasSuffix(e, ": stopped at the time limit (300ms)")
	}
	if !slow {
		t.Errorf("the slow statement's error: %q", res.ErrorSamples)
	}

	src, _, err := replay.OpenFile(sqlFile(t, "SELECT * FROM no_such_table;"), replay.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	res, err = replay.Run(context.Background(), conn, src, o)
	if err == nil || !strings.Contains(err.Error(), "all 1 statements failed") || res.Errors != 1 {
		t.Errorf("all failed: %v, %+v", err, res)
	}
}

// The error samples, and the "first" failure a replay where every statement failed names,
// are the first in the source, whatever order the sessions finished them in: before, a
// slow first statement that failed last was left out, and the one-line error named
// another statement than the summary's first line.
func TestErrorSamplesInSourceOrder(t *testing.T) {
	conn := sandboxtest.Conn(t)
	body := heavy(t) + ";\n"
	for i := 2; i <= 8; i++ {
		body += fmt.Sprintf("SELECT * FROM no_such_table_%d;\n", i)
	}
	o := quietOptions()
	o.Timeout, o.Concurrency, o.MaxErrorSamples = 300*time.Millisecond, 2, 3
	o.DefaultSchema = sandboxtest.Schema(t)
	src, _, err := replay.OpenFile(sqlFile(t, body), replay.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	res, err := replay.Run(context.Background(), conn, src, o)
	if err == nil || !strings.Contains(err.Error(), "all 8 statements failed; first: line 1: SELECT SUM(seq + 0)") {
		t.Errorf("want the first statement of the source named: %v", err)
	}
	if len(res.ErrorSamples) != 3 || !strings.HasPrefix(res.ErrorSamples[0], "line 1: ") ||
		!strings.HasPrefix(res.ErrorSamples[1], "line 2: ") || !strings.HasPrefix(res.ErrorSamples[2], "line 3: ") {
		t.Errorf("want the samples of lines 1, 2 and 3 in order: %q", res.ErrorSamples)
	}

	// A syntax error's message quotes the statement's end: on one line, without the tag
	// innowarm appends.
	src3, _, err := replay.OpenFile(sqlFile(t, "SELECT broken syntax here FROM;\n"), replay.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer src3.Close()
	o.MaxErrorSamples = 3
	res, _ = replay.Run(context.Background(), conn, src3, o)
	if len(res.ErrorSamples) != 1 || strings.Contains(res.ErrorSamples[0], "\n") || strings.Contains(res.ErrorSamples[0], replay.Tag) {
		t.Errorf("a syntax error's sample: %q", res.ErrorSamples)
	}

	// A dry run with Options.Selected lists what would run, in the source's order.
	src2, _, err := replay.OpenFile(sqlFile(t, "SELECT 1;\nUPDATE t SET a = 1;\nSELECT 2;\n"), replay.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer src2.Close()
	var lines []int
	o.DryRun, o.Selected = true, func(st replay.Statement) { lines = append(lines, st.Line) }
	if _, err := replay.Run(context.Background(), conn, src2, o); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(lines) != "[1 3]" {
		t.Errorf("a dry run would run lines %v, want [1 3]", lines)
	}
}

func replayCtx(ctx context.Context, t *testing.T, conn *connection.Conn, body string, o replay.Options) (*replay.Result, error) {
	t.Helper()
	src, _, err := replay.OpenFile(sqlFile(t, body), replay.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	return replay.Run(ctx, conn, src, o)
}

// tagged lists the replay's statements running on the server.
func tagged(conn *connection.Conn) []int64 {
	// The replay's own status reads carry the tag too; only replayed statements count.
	rows, err := conn.DB.Query("SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE '%innowarm:replay%' AND INFO NOT LIKE '%PROCESSLIST%' AND INFO NOT LIKE 'SHOW %'")
	if err != nil {
		return nil
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if rows.Scan(&id) == nil {
			ids = append(ids, id)
		}
	}
	if rows.Err() != nil {
		return nil
	}
	return ids
}

// waitFor polls cond for up to 30 s; it may run in a goroutine of its own.
func waitFor(cond func() bool) bool {
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// TestInterruptKillsStatements: a cancel stops the replay at once, and no statement goes on
// running on the server.
func TestInterruptKillsStatements(t *testing.T) {
	schema := sandboxtest.Schema(t)
	conn := sandboxtest.Conn(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := quietOptions()
	o.Timeout, o.DefaultSchema = 0, schema
	started := make(chan bool, 1)
	go func() {
		started <- waitFor(func() bool { return len(tagged(conn)) == 2 })
		cancel()
	}()
	res, err := replayCtx(ctx, t, conn, heavy(t)+";\n"+heavy(t)+";\n", o)
	cancelled := time.Now()
	if !<-started {
		t.Fatal("the statements did not start")
	}
	if !errors.Is(err, context.Canceled) || !res.Interrupted {
		t.Fatalf("interrupted replay: %v, %+v", err, res)
	}
	if !waitFor(func() bool { return len(tagged(conn)) == 0 }) {
		t.Fatal("the statements go on running on the server")
	}
	if d := time.Since(cancelled); d > 20*time.Second {
		t.Errorf("stopping took %s", d)
	}
}

// TestLostConnectionStops: a connection that dies stops the replay with an error naming the
// statement, instead of failing every statement after it.
func TestLostConnectionStops(t *testing.T) {
	schema := sandboxtest.Schema(t)
	conn := sandboxtest.Conn(t)
	o := quietOptions()
	o.Timeout, o.DefaultSchema, o.Concurrency = 0, schema, 1
	killed := make(chan error, 1)
	go func() {
		var ids []int64
		if !waitFor(func() bool { ids = tagged(conn); return len(ids) == 1 }) {
			killed <- errors.New("the statement did not start")
			return
		}
		_, err := conn.DB.Exec("KILL CONNECTION " + strconv.FormatInt(ids[0], 10))
		killed <- err
	}()
	res, err := replayCtx(context.Background(), t, conn, heavy(t)+";\nSELECT 1;\nSELECT 2;\n", o)
	if kerr := <-killed; kerr != nil {
		t.Fatal(kerr)
	}
	if err == nil || !strings.Contains(err.Error(), "replay stopped: the connection failed at line 1: SELECT SUM") || res.Run != 0 || exitcode.Of(err) != exitcode.Runtime {
		t.Fatalf("lost connection: %v, %+v", err, res)
	}
}

// TestPerfSchema replays the statements performance_schema kept, and says what to enable
// when it keeps none.
func TestPerfSchema(t *testing.T) {
	ctx := context.Background()
	schema := sandboxtest.Schema(t)
	sandboxtest.Exec(t,
		"CREATE TABLE "+q(schema)+".ps_only (id INT PRIMARY KEY)",
		"INSERT INTO "+q(schema)+".ps_only VALUES (1), (2)",
		// MySQL leaves this consumer off by default; the test's sandboxes turn it on.
		"UPDATE performance_schema.setup_consumers SET ENABLED = 'YES' WHERE NAME = 'events_statements_history_long'",
		"TRUNCATE TABLE performance_schema.events_statements_history_long",
	)
	// MySQL 8+ reads the digest summary first (a sample statement per digest): it must hold
	// this test's statements only.
	srv := sandboxtest.Flavor(t)
	wantTable := "performance_schema.events_statements_history_long"
	if srv.DigestSampleText() {
		sandboxtest.Exec(t, "TRUNCATE TABLE performance_schema.events_statements_summary_by_digest")
		wantTable = "performance_schema.events_statements_summary_by_digest"
	}
	// The application is a client of its own: innowarm's sessions are left out of a replay.
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User = "unix", sandboxtest.Server(t).Socket, "root"
	app, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	c, err := app.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"USE " + q(schema), "SELECT * FROM ps_only WHERE id = 1", "SELECT COUNT(*) FROM ps_only", "UPDATE ps_only SET id = id WHERE id = 0"} {
		if _, err := c.ExecContext(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	app.Close()
	// innowarm's own session, its statement untagged (as its dictionary and catalog reads
	// are): the history tables name its thread, whose setup statement gives it away.
	own, err := connection.Open(ctx, sandboxtest.Server(t).ConnOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := own.DB.ExecContext(ctx, "SELECT id FROM "+q(schema)+".ps_only WHERE id > 1"); err != nil {
		t.Fatal(err)
	}
	own.Close()

	conn := sandboxtest.Conn(t)
	src, info, err := replay.OpenPerfSchema(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	if info.Table != wantTable || info.Capacity < 100 || info.Rows < 3 {
		t.Errorf("performance_schema source: %+v", info)
	}
	res, err := replay.Run(ctx, conn, src, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if res.Run < 2 || res.Errors != 0 || res.Skipped["not a SELECT: UPDATE"] != 1 {
		t.Errorf("replay of performance_schema: %d run, %d errors %q, skipped %v", res.Run, res.Errors, res.ErrorSamples, res.Skipped)
	}
	if !srv.DigestSampleText() && (info.Own < 2 || res.Skipped[replay.ReasonOwn] != int64(info.Own) || res.Run != 2) {
		t.Errorf("innowarm's own session in %s: %d own rows, skipped %v, %d run (want the application's 2)", info.Table, info.Own, res.Skipped, res.Run)
	}
	// A second read leaves out the replay's own statements.
	src, info2, err := replay.OpenPerfSchema(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	src.Close()
	if mine := info2.Rows - info2.Own; mine > info.Rows-info.Own+10 || info2.Own <= info.Own {
		t.Errorf("the replay's own statements were read back: %+v, then %+v", info, info2)
	}

	sandboxtest.Exec(t, "UPDATE performance_schema.setup_consumers SET ENABLED = 'NO' WHERE NAME LIKE 'events_statements_history%' OR NAME = 'statements_digest'")
	defer sandboxtest.Exec(t, "UPDATE performance_schema.setup_consumers SET ENABLED = 'YES' WHERE NAME IN ('events_statements_history_long', 'statements_digest')")
	_, _, err = replay.OpenPerfSchema(ctx, conn)
	if exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("disabled consumers: %v", err)
	}
	// The error names what to enable for the flavor's best source.
	wants := []string{"consumer events_statements_history_long is disabled", "UPDATE performance_schema.setup_consumers SET ENABLED = 'YES' WHERE NAME IN ('events_statements_history_long')", "--performance-schema-consumer-events-statements-history-long=ON", "no runnable sample per digest"}
	if srv.DigestSampleText() {
		wants = []string{"consumer statements_digest is disabled", "UPDATE performance_schema.setup_consumers SET ENABLED = 'YES' WHERE NAME IN ('statements_digest')", "--performance-schema-consumer-statements-digest=ON"}
	}
	for _, want := range wants {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error is not one line: %v", err)
	}
}

func probe(t *testing.T, version, comment string) flavor.Server {
	t.Helper()
	s, err := flavor.FromProbe(flavor.Probe{Version: version, VersionComment: comment, Variables: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestChoosePerfSchema covers servers the sandbox cannot run: MySQL 8 keeps a sample
// statement per digest.
func TestChoosePerfSchema(t *testing.T) {
	mysql8 := probe(t, "8.0.36", "MySQL Community Server - GPL")
	mysql57 := probe(t, "5.7.44-log", "MySQL Community Server (GPL)")
	mariadb := probe(t, "10.11.19-MariaDB", "Debian 12")
	all := map[string]bool{"global_instrumentation": true, "thread_instrumentation": true, "statements_digest": true,
		"events_statements_current": true, "events_statements_history": true, "events_statements_history_long": true}
	without := func(names ...string) map[string]bool {
		m := map[string]bool{}
		for k, v := range all {
			m[k] = v
		}
		for _, n := range names {
			m[n] = false
		}
		return m
	}
	cases := []struct {
		srv       flavor.Server
		st        replay.PerfSchemaState
		table     string
		errSubstr []string
	}{
		{mysql8, replay.PerfSchemaState{On: true, Consumers: all}, "events_statements_summary_by_digest", nil},
		{mysql8, replay.PerfSchemaState{On: true, Consumers: without("statements_digest")}, "events_statements_history_long", nil},
		{mysql8, replay.PerfSchemaState{On: true, Consumers: without("statements_digest", "events_statements_history_long")}, "events_statements_history", nil},
		{mysql8, replay.PerfSchemaState{On: true, Consumers: without("statements_digest", "events_statements_history_long", "events_statements_history")}, "",
			[]string{"consumer statements_digest is disabled", "--performance-schema-consumer-statements-digest=ON"}},
		{mysql8, replay.PerfSchemaState{}, "", []string{"performance_schema is OFF on MySQL 8.0.36", "--performance-schema=ON"}},
		{mysql8, replay.PerfSchemaState{On: true, Consumers: all, Instruments: map[string]bool{"statement/sql/select": false}}, "",
			[]string{"setup_instruments SET ENABLED = 'YES'"}},
		{mysql57, replay.PerfSchemaState{On: true, Consumers: all}, "events_statements_history_long", nil},
		{mariadb, replay.PerfSchemaState{On: true, Consumers: all}, "events_statements_history_long", nil},
		{mariadb, replay.PerfSchemaState{On: true, Consumers: without("events_statements_current", "events_statements_history_long", "events_statements_history")}, "",
			[]string{"consumers events_statements_current, events_statements_history_long are disabled", "no runnable sample per digest"}},
		{mariadb, replay.PerfSchemaState{}, "", []string{"performance_schema is OFF on MariaDB", "--performance-schema-consumer-events-statements-history-long=ON"}},
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%d %s", i, c.srv), func(t *testing.T) {
			src, err := replay.ChoosePerfSchema(c.srv, c.st)
			if c.table != "" {
				if err != nil || src.Table != c.table {
					t.Errorf("case %d (%s): %s, %v; want %s", i, c.srv, src.Table, err, c.table)
				}
				return
			}
			if err == nil || exitcode.Of(err) != exitcode.Usage {
				t.Errorf("case %d (%s): %v, want a usage error", i, c.srv, err)
				return
			}
			for _, s := range c.errSubstr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("case %d (%s): error lacks %q: %v", i, c.srv, s, err)
				}
			}
		})
	}
}

// TestDamagedSource: a gzip file cut short is an input error (exit 2), after the statements
// before the damage ran.
func TestDamagedSource(t *testing.T) {
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(zw, "SELECT %d;\n", i)
	}
	zw.Close()
	p := filepath.Join(sandboxtest.Dir(t), "cut.sql.gz")
	if err := os.WriteFile(p, z.Bytes()[:z.Len()/2], 0o644); err != nil {
		t.Fatal(err)
	}
	src, _, err := replay.OpenFile(p, replay.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	res, err := replay.Run(context.Background(), sandboxtest.Conn(t), src, quietOptions())
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "damaged") || res.Run == 0 {
		t.Errorf("cut gzip: %v (exit %d), %d run", err, exitcode.Of(err), res.Run)
	}
}

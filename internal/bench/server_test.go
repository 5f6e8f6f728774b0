package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

func runBench(t *testing.T, args ...string) sandboxtest.Result {
	t.Helper()
	return sandboxtest.CLI(t, sandboxtest.Run{}, append(append([]string{"bench"}, sandboxtest.Sock(t)...), args...)...)
}

func mustBench(t *testing.T, args ...string) sandboxtest.Result {
	t.Helper()
	res := runBench(t, args...)
	if res.Code != 0 {
		t.Fatalf("innowarm bench %v: exit %d: %s", args, res.Code, res.Stderr)
	}
	return res
}

func benchJSON(t *testing.T, args ...string) Report {
	t.Helper()
	res := mustBench(t, append(args, "--json")...)
	var rep Report
	sandboxtest.JSON(t, []byte(res.Stdout), &rep)
	return rep
}

// block is one mysqlslap result block: its "label: value" lines.
type block map[string]string

var blockLine = regexp.MustCompile(`^\t([^:]+): (.*)$`)

func blocks(out string) []block {
	var bs []block
	var cur block
	for _, l := range strings.Split(out, "\n") {
		switch {
		case l == "Benchmark":
			cur = block{}
			bs = append(bs, cur)
		case l == "":
			cur = nil
		case cur != nil:
			if m := blockLine.FindStringSubmatch(l); m != nil {
				cur[m[1]] = m[2]
			} else if strings.HasPrefix(l, "\tRunning for engine ") {
				cur["engine"] = strings.TrimPrefix(l, "\tRunning for engine ")
			}
		}
	}
	return bs
}

func schemaExists(t *testing.T, name string) bool {
	t.Helper()
	var n int
	if err := sandboxtest.Conn(t).DB.QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

func tableExists(t *testing.T, schema, table string) bool {
	t.Helper()
	var n int
	if err := sandboxtest.Conn(t).DB.QueryRow("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", schema, table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// TestSeedQueryFile is the 2017 benchmark's command line: 20k unique-key lookups from a file
// of `select ... where random_str = "...";` lines, split at --delimiter ";".
func TestSeedQueryFile(t *testing.T) {
	schema := sandboxtest.Schema(t)
	srv := sandboxtest.Flavor(t)
	sandboxtest.Exec(t,
		"CREATE TABLE `"+schema+"`.test_data (id INT AUTO_INCREMENT PRIMARY KEY, random_str VARCHAR(255), random_str2 VARCHAR(255))",
		"INSERT INTO `"+schema+"`.test_data (random_str, random_str2) SELECT "+srv.Hex32("CONCAT(seq, RAND())")+", "+srv.Hex32("RAND()")+" FROM "+srv.Series(schema, 1, 20000)+" ORDER BY seq",
		"ALTER TABLE `"+schema+"`.test_data ADD INDEX (random_str)")
	rows, err := sandboxtest.Conn(t).DB.Query("SELECT random_str FROM `" + schema + "`.test_data")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b bytes.Buffer
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "select * from test_data where random_str = \"%s\";\n", s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(sandboxtest.Dir(t), "benchmark_query_20000_rows.sql")
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	res := mustBench(t, "--create-schema="+schema, "--delimiter=;", "--query="+file, "--concurrency=1", "--iterations=1")
	bs := blocks(res.Stdout)
	if len(bs) != 1 {
		t.Fatalf("want one block:\n%s", res.Stdout)
	}
	for k, want := range map[string]string{
		"Number of clients running queries":    "1",
		"Average number of queries per client": "20000",
	} {
		t.Run(k, func(t *testing.T) {
			if bs[0][k] != want {
				t.Errorf("%s: %q, want %q", k, bs[0][k], want)
			}
		})
	}
	for _, k := range []string{"Average number of seconds to run all queries", "Minimum number of seconds to run all queries", "Maximum number of seconds to run all queries"} {
		if !regexp.MustCompile(`^\d+\.\d{3} seconds$`).MatchString(bs[0][k]) {
			t.Errorf("%s: %q is not mysqlslap's format", k, bs[0][k])
		}
	}
	if !strings.HasPrefix(bs[0]["Queries"], "20000 in ") || !strings.HasSuffix(bs[0]["Queries"], ", 0 errors") {
		t.Errorf("Queries: %q", bs[0]["Queries"])
	}
	if !strings.Contains(res.Stdout, "not in the query latency") {
		t.Error("the output does not say that connection set-up is outside the query latency")
	}
	// An existing schema innowarm did not create: it ran there and left it alone.
	if !tableExists(t, schema, "test_data") {
		t.Error("the existing schema lost its table")
	}
}

func TestConcurrencyListOneBlockPerLevel(t *testing.T) {
	res := mustBench(t, "--query=SELECT 1", "--concurrency=1,3,5", "--number-of-queries=30", "--iterations=2")
	bs := blocks(res.Stdout)
	if len(bs) != 3 {
		t.Fatalf("want 3 blocks:\n%s", res.Stdout)
	}
	for i, want := range [][2]string{{"1", "30"}, {"3", "10"}, {"5", "6"}} {
		if bs[i]["Number of clients running queries"] != want[0] || bs[i]["Average number of queries per client"] != want[1] {
			t.Errorf("block %d: %v", i+1, bs[i])
		}
		if !strings.HasPrefix(bs[i]["Queries"], "60 in ") { // 30 queries x 2 iterations
			t.Errorf("block %d: Queries %q", i+1, bs[i]["Queries"])
		}
		if !strings.HasPrefix(bs[i]["Connection set-up"], fmt.Sprintf("%d connections", 2*atoi(want[0]))) {
			t.Errorf("block %d: Connection set-up %q", i+1, bs[i]["Connection set-up"])
		}
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

func TestSleepLatency(t *testing.T) {
	rep := benchJSON(t, "--query=SELECT SLEEP(0.01)", "--concurrency=4", "--number-of-queries=200")
	l := rep.Runs[0]
	if l.Queries != 200 || l.Errors != 0 || l.Latency.Count != 200 {
		t.Fatalf("queries %d errors %d recorded %d", l.Queries, l.Errors, l.Latency.Count)
	}
	// A busy machine only adds to the 10 ms (a scheduler slice here and there); the upper
	// bound catches a unit or a clock read wrong, not a slow host.
	if l.Latency.P50 < 9.9 || l.Latency.P50 > 50 {
		t.Errorf("p50 %.3f ms, want about 10 ms", l.Latency.P50)
	}
	if l.Latency.Min < 9.9 {
		t.Errorf("min %.3f ms is below the 10 ms SLEEP", l.Latency.Min)
	}
	// 50 queries of 10 ms or more per client: 0.5 s of querying at least, connections
	// excluded, and 4 clients at once: about a quarter of the queries' summed latency,
	// however slow each was (one client at a time would take all of it).
	sum := l.Latency.Mean * float64(l.Latency.Count) / 1000
	if l.QuerySeconds < 0.5 || l.QPS > 400 || l.QuerySeconds > sum/2 {
		t.Errorf("%.3f s of querying, %.0f QPS, for %.3f s of summed latency", l.QuerySeconds, l.QPS, sum)
	}
	if math.Abs(l.QPS*l.QuerySeconds-200) > 1 {
		t.Errorf("%.0f QPS over %.3f s is not 200 queries", l.QPS, l.QuerySeconds)
	}
	if l.Connections != 4 || l.Connect.Count != 4 {
		t.Errorf("%d connections timed", l.Connections)
	}
}

func TestSchemaSafety(t *testing.T) {
	t.Run("existing schema: read runs there and is never dropped", func(t *testing.T) {
		s := sandboxtest.Schema(t)
		sandboxtest.Exec(t, "CREATE TABLE `"+s+"`.keep (a INT)")
		mustBench(t, "--create-schema="+s, "--query=SELECT COUNT(*) FROM keep", "--number-of-queries=5")
		if !tableExists(t, s, "keep") {
			t.Error("the schema or its table was dropped")
		}
		// auto-generated read load: t1 is created, used and dropped; the rest stays.
		mustBench(t, "--create-schema="+s, "-a", "--auto-generate-sql-load-type=read", "--number-of-queries=5")
		if !tableExists(t, s, "keep") || tableExists(t, s, "t1") {
			t.Error("after the read load: keep must stay, t1 must be gone")
		}
	})
	t.Run("existing schema: writing loads refuse without the flag", func(t *testing.T) {
		s := sandboxtest.Schema(t)
		for _, args := range [][]string{
			{"-a"}, {"-a", "--auto-generate-sql-load-type=write"},
			{"-a", "--auto-generate-sql-load-type=update", "--auto-generate-sql-add-autoincrement"},
			{"--query=INSERT INTO x VALUES (1)"}, {"--create=CREATE TABLE y (a INT)", "--query=SELECT 1"},
			// Writes behind a read-only first word.
			{"--query=select 1; delete from x where id=3"}, {"--query=/*!50000 delete from x where id=3 */"},
			{"--pre-query=set @a=(select 1); delete from x", "--query=SELECT 1"},
		} {
			res := runBench(t, append([]string{"--create-schema=" + s}, args...)...)
			if res.Code != 2 || !strings.Contains(res.Stderr, "--allow-writes-in-existing-schema") {
				t.Errorf("%v: exit %d: %s", args, res.Code, res.Stderr)
			}
		}
		mustBench(t, "--create-schema="+s, "-a", "--auto-generate-sql-load-type=write", "--number-of-queries=10", "--allow-writes-in-existing-schema")
		if !schemaExists(t, s) || tableExists(t, s, "t1") {
			t.Error("with --allow-writes-in-existing-schema: the schema must stay and t1 must be gone")
		}
	})
	t.Run("existing table t1 is never touched", func(t *testing.T) {
		s := sandboxtest.Schema(t)
		sandboxtest.Exec(t, "CREATE TABLE `"+s+"`.t1 (a INT)", "INSERT INTO `"+s+"`.t1 VALUES (42)")
		res := runBench(t, "--create-schema="+s, "-a", "--auto-generate-sql-load-type=read", "--allow-writes-in-existing-schema")
		if res.Code != 2 || !strings.Contains(res.Stderr, "t1") {
			t.Errorf("exit %d: %s", res.Code, res.Stderr)
		}
		var a int
		sandboxtest.Conn(t).DB.QueryRow("SELECT a FROM `" + s + "`.t1").Scan(&a)
		if a != 42 {
			t.Error("t1 was changed")
		}
	})
	t.Run("own schema: created, dropped; kept with --no-drop, then reused and cleaned up", func(t *testing.T) {
		s := "bench_own_" + strconv.Itoa(os.Getpid())
		mustBench(t, "--create-schema="+s, "-a", "--number-of-queries=10")
		if schemaExists(t, s) {
			t.Fatal("the schema innowarm created was not dropped")
		}
		mustBench(t, "--create-schema="+s, "-a", "--number-of-queries=10", "--no-drop")
		if !tableExists(t, s, "t1") {
			t.Fatal("--no-drop: the schema is gone")
		}
		// A later run recognises it as innowarm's: a writing load is allowed, and it drops it.
		mustBench(t, "--create-schema="+s, "-a", "--auto-generate-sql-load-type=write", "--number-of-queries=10")
		if schemaExists(t, s) {
			t.Fatal("innowarm's own schema was not dropped by the next run")
		}
		mustBench(t, "--create-schema="+s, "-a", "--number-of-queries=10", "--no-drop")
		res := sandboxtest.CLI(t, sandboxtest.Run{}, append(append([]string{"bench", "cleanup"}, sandboxtest.Sock(t)...), "--create-schema="+s)...)
		if res.Code != 0 || schemaExists(t, s) {
			t.Fatalf("cleanup: exit %d: %s %s", res.Code, res.Stdout, res.Stderr)
		}
	})
	t.Run("cleanup refuses a schema innowarm did not create", func(t *testing.T) {
		s := sandboxtest.Schema(t)
		res := sandboxtest.CLI(t, sandboxtest.Run{}, append(append([]string{"bench", "cleanup"}, sandboxtest.Sock(t)...), "--create-schema="+s)...)
		if res.Code != 2 || !schemaExists(t, s) {
			t.Errorf("exit %d, schema exists %v: %s", res.Code, schemaExists(t, s), res.Stderr)
		}
	})
	t.Run("the marker table stands in for schema comments", func(t *testing.T) {
		c := sandboxtest.Conn(t)
		s := &schemas{db: c.DB, srv: c.Server, markerTable: true}
		name := "bench_marker_" + strconv.Itoa(os.Getpid())
		sess, err := c.NewSession(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		if err := s.CreateOwned(context.Background(), sess, name); err != nil {
			t.Fatal(err)
		}
		st, err := s.State(context.Background(), name)
		if err != nil || !st.Exists || !st.Owned || !tableExists(t, name, ownerTable) {
			t.Fatalf("state %+v %v", st, err)
		}
		if err := s.DropOwned(context.Background(), sess, name); err != nil || schemaExists(t, name) {
			t.Fatalf("drop: %v", err)
		}
	})
}

// TestBadInputOneLineErrors: input mistakes end with one line on stderr and exit 2.
func TestBadInputOneLineErrors(t *testing.T) {
	dir := sandboxtest.Dir(t)
	empty := filepath.Join(dir, "empty.sql")
	os.WriteFile(empty, []byte("\n"), 0o644)
	cases := map[string][]string{
		"does not exist":       {"--query=" + filepath.Join(dir, "missing.sql")},
		"is empty":             {"--query=" + empty},
		"at least 1":           {"--query=SELECT 1", "--concurrency=0"},
		"load-type":            {"-a", "--auto-generate-sql-load-type=readonly"},
		"cannot be combined":   {"-a", "--query=SELECT 1"},
		"nothing to run":       {},
		"not a number":         {"--query=SELECT 1", "--concurrency=1,x"},
		"unknown flag":         {"--query=SELECT 1", "--concurency=3"},
		"--dist":               {"--workload=point-select", "--dist=gauss"},
		"sbtest tables":        {"--workload=point-select", "--create-schema=mysql"},
		"needs a primary key":  {"-a", "--auto-generate-sql-load-type=key"},
		"--only-print applies": {"--workload=point-select", "--only-print"},
	}
	for want, args := range cases {
		res := runBench(t, args...)
		lines := strings.Split(strings.TrimSpace(res.Stderr), "\n")
		if res.Code != 2 || len(lines) != 1 || !strings.Contains(res.Stderr, want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line about %q", args, res.Code, res.Stderr, want)
		}
	}
}

func TestFailedQueryStopsOrIsCounted(t *testing.T) {
	s := sandboxtest.Schema(t)
	res := runBench(t, "--create-schema="+s, "--query=SELECT * FROM no_such_table", "--concurrency=2")
	if res.Code != 1 {
		t.Fatalf("exit %d, want 1: %s", res.Code, res.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(res.Stderr), "\n")
	last := lines[len(lines)-1]
	if !strings.Contains(last, "SELECT * FROM no_such_table") || !strings.Contains(last, "1146") || !strings.Contains(last, "doesn't exist") {
		t.Errorf("the error line lacks the SQL or the server's message: %q", last)
	}
	if strings.Contains(res.Stdout, "Benchmark") {
		t.Error("a failed run printed a result block")
	}

	rep := benchJSON(t, "--create-schema="+s, "--query=SELECT 1;SELECT * FROM no_such_table", "--delimiter=;", "--concurrency=2", "--number-of-queries=20", "--ignore-errors")
	l := rep.Runs[0]
	if l.Queries != 10 || l.Errors != 10 {
		t.Errorf("--ignore-errors: %d queries, %d errors; want 10 and 10", l.Queries, l.Errors)
	}
	var counted int64
	for k, v := range l.ErrorCounts {
		if !strings.HasPrefix(k, "1146 ") {
			t.Errorf("error key %q", k)
		}
		counted += v
	}
	if counted != 10 {
		t.Errorf("error counts %v", l.ErrorCounts)
	}
}

// TestInterruptStopsQueriesOnServer: Ctrl-C ends the run with 130 and no statement of it
// keeps running on the server.
func TestInterruptStopsQueriesOnServer(t *testing.T) {
	s := sandboxtest.Schema(t)
	cmd := exec.Command(sandboxtest.Binary(t), append(append([]string{"bench"}, sandboxtest.Sock(t)...), "--create-schema="+s, "--query=SELECT SLEEP(60)", "--concurrency=3")...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + sandboxtest.Dir(t)}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	running := func() int {
		var n int
		sandboxtest.Conn(t).DB.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO = 'SELECT SLEEP(60)'").Scan(&n)
		return n
	}
	deadline := time.Now().Add(20 * time.Second)
	for running() < 3 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the 3 clients never started: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("3 statements running after %s", time.Since(deadline.Add(-20*time.Second)))
	t0 := time.Now()
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d (%v), want 130: %s", code, err, stderr.String())
	}
	// The statements would sleep 60 s: 10 s tells a stop from a wait however busy the host.
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("stopping took %s", d)
	}
	// A killed statement's text may show a moment after its client got the error.
	for deadline := time.Now().Add(10 * time.Second); running() != 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if n := running(); n != 0 {
		t.Errorf("%d statements still run on the server 10 s after innowarm stopped", n)
	}
}

func TestReportIntervalCSVAndHistogram(t *testing.T) {
	res := mustBench(t, "--query=SELECT SLEEP(0.005)", "--concurrency=2", "--time=1s", "--report-interval=200ms", "--histogram")
	// A ticker drops the ticks its reader is too late for: on a busy machine a 1 s run
	// reports fewer intervals of 200 ms (one did, in CI), never more than fit in it.
	lines := regexp.MustCompile(`(?m)^\[ +[0-9.]+s \] clients 2  qps [0-9.]+  p95 [0-9.]+ ms  errors 0$`).FindAllString(res.Stdout, -1)
	if len(lines) < 1 || len(lines) > 6 {
		t.Errorf("%d interval lines:\n%s", len(lines), res.Stdout)
	}
	if !strings.Contains(res.Stdout, "Latency histogram (2 clients") || !regexp.MustCompile(`(?m)^ +5\.\d+ \|\*+ +\d+$`).MatchString(res.Stdout) {
		t.Errorf("no histogram with the 5 ms bucket:\n%s", res.Stdout)
	}
	rep := benchJSON(t, "--query=SELECT 1", "--concurrency=2", "--time=600ms", "--report-interval=100ms")
	l := rep.Runs[0]
	// However many there are (late ticks are dropped: 3 of 100 ms in a 600 ms run, once
	// in CI), the intervals follow one another from the start, each where the last ended.
	if len(l.Intervals) < 1 || len(l.Intervals) > 7 {
		t.Fatalf("%d intervals in JSON, want 1 to 7 in 600 ms of 100 ms intervals", len(l.Intervals))
	}
	end := 0.0
	for _, iv := range l.Intervals {
		if d := iv.Elapsed - iv.Seconds - end; d < -0.001 || d > 0.001 {
			t.Errorf("interval %+v starts %.4f s after the one before ended", iv, d)
		}
		end = iv.Elapsed
	}
	// An interval may end with no query done on a busy machine (both clients descheduled
	// for its 100 ms: one did, in CI); the run as a whole must have served them.
	var sum int64
	served := 0
	for _, iv := range l.Intervals {
		sum += iv.Queries
		if iv.Clients != 2 || iv.Seconds <= 0 || iv.QPS < 0 || (iv.Queries > 0) != (iv.QPS > 0) {
			t.Errorf("interval %+v", iv)
		}
		if iv.Queries > 0 {
			served++
		}
	}
	if served == 0 {
		t.Errorf("no interval served a query: %+v", l.Intervals)
	}
	// A stub shorter than half an interval at the end gets no interval of its own (as in
	// sysbench); its queries count only in the run's total.
	// (TestShortTailIntervalIsNotReported checks that rule without a clock.)
	if sum > l.Queries {
		t.Errorf("intervals add up to %d queries, more than the run's %d", sum, l.Queries)
	}

	csv := filepath.Join(sandboxtest.Dir(t), "out.csv")
	for i := 0; i < 2; i++ {
		res := mustBench(t, "--query=SELECT 1", "--concurrency=1,2", "--number-of-queries=10", "--csv="+csv)
		if res.Stdout != "" {
			t.Errorf("--csv=FILE printed to stdout: %q", res.Stdout)
		}
	}
	b, _ := os.ReadFile(csv)
	want := regexp.MustCompile(`^,mixed,\d+\.\d{3},\d+\.\d{3},\d+\.\d{3},(1,10|2,5)$`)
	got := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(got) != 4 { // appended, as mysqlslap does
		t.Fatalf("csv file:\n%s", b)
	}
	for _, l := range got {
		if !want.MatchString(l) {
			t.Errorf("csv line %q", l)
		}
	}
	res = mustBench(t, "--query=SELECT 1", "--number-of-queries=3", "--csv")
	if !regexp.MustCompile(`^,mixed,\d+\.\d{3},\d+\.\d{3},\d+\.\d{3},1,3\n$`).MatchString(res.Stdout) {
		t.Errorf("--csv to stdout: %q", res.Stdout)
	}
}

func TestCommitAndDetach(t *testing.T) {
	s := sandboxtest.Schema(t)
	sandboxtest.Exec(t, "CREATE TABLE `"+s+"`.c (a INT) ENGINE=InnoDB")
	rep := benchJSON(t, "--create-schema="+s, "--query=INSERT INTO c VALUES (1)", "--allow-writes-in-existing-schema",
		"--concurrency=2", "--number-of-queries=20", "--commit=3", "--detach=4")
	l := rep.Runs[0]
	// 10 queries per client, a new connection before queries 5 and 9.
	if l.Queries != 20 || l.Reconnects != 4 || l.Connections != 6 {
		t.Errorf("queries %d, reconnects %d, connections %d", l.Queries, l.Reconnects, l.Connections)
	}
	var n int
	sandboxtest.Conn(t).DB.QueryRow("SELECT COUNT(*) FROM `" + s + "`.c").Scan(&n)
	// Per client: COMMIT after statements 3, 6 and 9 and at the end; the reconnects before
	// statements 5 and 9 drop statements 4, 7 and 8, uncommitted, as mysqlslap's do.
	if n != 14 {
		t.Errorf("%d rows committed", n)
	}
}

func TestPrepareAndWorkloads(t *testing.T) {
	ctx := context.Background()
	c := sandboxtest.Conn(t)
	s := "bench_sb_" + strconv.Itoa(os.Getpid())
	log := logx.New(&bytes.Buffer{}, true)
	rep, err := Prepare(ctx, c, PrepareOptions{Schema: s, Tables: 2, Rows: 3000, Threads: 2}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer Cleanup(ctx, c, s)
	if !rep.CreatedSchema || len(rep.Tables) != 2 {
		t.Fatalf("%+v", rep)
	}
	var cols string
	c.DB.QueryRow("SELECT GROUP_CONCAT(CONCAT(COLUMN_NAME, ' ', COLUMN_TYPE) ORDER BY ORDINAL_POSITION) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'sbtest2'", s).Scan(&cols)
	// MySQL 8.0.19+ prints integer types without a display width.
	if strings.ReplaceAll(cols, "int(11)", "int") != "id int,k int,c char(120),pad char(60)" {
		t.Errorf("columns %q", cols)
	}
	var idx string
	c.DB.QueryRow("SELECT GROUP_CONCAT(DISTINCT INDEX_NAME ORDER BY BINARY INDEX_NAME) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'sbtest1'", s).Scan(&idx)
	if idx != "PRIMARY,k_1" {
		t.Errorf("indexes %q", idx)
	}
	var n, lo, hi, badC int64
	c.DB.QueryRow("SELECT COUNT(*), MIN(id), MAX(id), SUM(c NOT RLIKE '^([0-9]{11}-){9}[0-9]{11}$' OR pad NOT RLIKE '^([0-9]{11}-){4}[0-9]{11}$' OR k < 1 OR k > 3000) FROM `"+s+"`.sbtest1").Scan(&n, &lo, &hi, &badC)
	if n != 3000 || lo != 1 || hi != 3000 || badC != 0 {
		t.Errorf("rows %d ids %d..%d, %d rows not shaped like sysbench's", n, lo, hi, badC)
	}

	// The client-side load (servers without the Sequence engine) makes the same table.
	s2 := s + "_client"
	if _, err := Prepare(ctx, c, PrepareOptions{Schema: s2, Tables: 1, Rows: 2500, MarkerTable: true, ClientLoad: true}, log); err != nil {
		t.Fatal(err)
	}
	defer Cleanup(ctx, c, s2)
	c.DB.QueryRow("SELECT COUNT(*), MIN(id), MAX(id), SUM(c NOT RLIKE '^([0-9]{11}-){9}[0-9]{11}$') FROM `"+s2+"`.sbtest1").Scan(&n, &lo, &hi, &badC)
	if n != 2500 || lo != 1 || hi != 2500 || badC != 0 {
		t.Errorf("client-side load: rows %d ids %d..%d, %d bad", n, lo, hi, badC)
	}

	// Preparing again: the schema is innowarm's, so it is made afresh.
	if rep, err := Prepare(ctx, c, PrepareOptions{Schema: s2, Tables: 1, Rows: 100}, log); err != nil || !rep.CreatedSchema {
		t.Fatalf("prepare again: %+v %v", rep, err)
	}
	// Someone else's schema is refused.
	other := sandboxtest.Schema(t)
	if _, err := Prepare(ctx, c, PrepareOptions{Schema: other, Tables: 1, Rows: 10}, log); err == nil || !strings.Contains(err.Error(), "--allow-writes-in-existing-schema") {
		t.Errorf("prepare in a foreign schema: %v", err)
	}

	// Workloads, counted in events.
	point := benchJSON(t, "--create-schema="+s, "--workload=point-select", "--concurrency=3", "--events=600", "--dist=zipf:1.1")
	if l := point.Runs[0]; l.Events != 600 || l.Queries != 600 || l.Errors != 0 || len(point.Tables) != 2 || point.Rows[0] != 3000 {
		t.Errorf("point-select: events %d queries %d, tables %v rows %v", l.Events, l.Queries, point.Tables, point.Rows)
	}
	ro := benchJSON(t, "--create-schema="+s, "--workload=read-only", "--concurrency=2", "--events=40", "--tables=1")
	if l := ro.Runs[0]; l.Events != 40 || l.Queries != 40*16 || l.Errors != 0 || len(ro.Tables) != 1 {
		t.Errorf("read-only: events %d queries %d tables %v", l.Events, l.Queries, ro.Tables)
	}
	// Open loop: the events start on their schedule, so 60 of them at 100/s take at least
	// (60 - 3 clients' first events) / 100 s however fast the server answers; a closed loop
	// is not held to it.
	open := benchJSON(t, "--create-schema="+s, "--workload=point-select", "--concurrency=3", "--events=60", "--rate=100")
	if l := open.Runs[0]; l.Events != 60 || l.Errors != 0 || l.MaxSeconds < 0.57 || open.Rate != 100 {
		t.Errorf("point-select at --rate 100: events %d errors %d in %.3f s (want >= 0.57 s), rate %g", l.Events, l.Errors, l.MaxSeconds, open.Rate)
	}
	for _, args := range [][]string{{"--workload=point-select", "--rate=-1"}, {"--workload=point-select", "--rate=10", "--io=loop"}, {"--query=SELECT 1", "--rate=10"}} {
		if res := runBench(t, append([]string{"--create-schema=" + s, "--events=10"}, args...)...); res.Code != 2 || strings.Count(strings.TrimSpace(res.Stderr), "\n") != 0 || !strings.Contains(res.Stderr, "rate") {
			t.Errorf("%v: exit %d, want 2 and one line naming --rate: %s", args, res.Code, res.Stderr)
		}
	}
	hot := mustBench(t, "--create-schema="+s, "--workload=hot-rows", "--hot-rows=50", "--dist=hotset:10:90", "--concurrency=2", "--time=300ms")
	if bs := blocks(hot.Stdout); len(bs) != 1 || !strings.Contains(bs[0]["Events"], "hot-rows, hotset:10:90 keys") {
		t.Errorf("hot-rows:\n%s", hot.Stdout)
	}
	// --tables beyond what exists
	if res := runBench(t, "--create-schema="+s, "--workload=point-select", "--tables=3", "--events=10"); res.Code != 2 || !strings.Contains(res.Stderr, "sbtest3") {
		t.Errorf("--tables 3: exit %d %s", res.Code, res.Stderr)
	}
}

func TestPrepareCLI(t *testing.T) {
	s := "bench_cli_" + strconv.Itoa(os.Getpid())
	res := sandboxtest.CLI(t, sandboxtest.Run{}, append(append([]string{"bench", "prepare"}, sandboxtest.Sock(t)...), "--create-schema="+s, "--rows=500", "--tables=1", "--json")...)
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	var rep PrepareReport
	if err := json.Unmarshal([]byte(res.Stdout), &rep); err != nil || rep.Rows != 500 || len(rep.Tables) != 1 {
		t.Fatalf("%v %s", err, res.Stdout)
	}
	res = sandboxtest.CLI(t, sandboxtest.Run{}, append(append([]string{"bench", "cleanup"}, sandboxtest.Sock(t)...), "--create-schema="+s)...)
	if res.Code != 0 || schemaExists(t, s) {
		t.Errorf("cleanup: exit %d %s", res.Code, res.Stderr)
	}
}

// TestIOModesAgree: the event loop, a thread per client and the network poller run the
// same programs: the same statements, counted the same way.
func TestIOModesAgree(t *testing.T) {
	s := sandboxtest.Schema(t)
	sandboxtest.Exec(t,
		"CREATE TABLE `"+s+"`.wide (id INT PRIMARY KEY, v VARCHAR(200))",
		"INSERT INTO `"+s+"`.wide SELECT seq, REPEAT('x', 200) FROM "+sandboxtest.Flavor(t).Series(s, 1, 5000)+" ORDER BY seq",
		"CREATE TABLE `"+s+"`.c (a INT) ENGINE=InnoDB")
	ctx := context.Background()
	c := sandboxtest.Conn(t)
	if _, err := Prepare(ctx, c, PrepareOptions{Schema: s + "_sb", Tables: 1, Rows: 2000}, logx.New(&bytes.Buffer{}, true)); err != nil {
		t.Fatal(err)
	}
	defer Cleanup(ctx, c, s+"_sb")
	count := func() int {
		var n int
		c.DB.QueryRow("SELECT COUNT(*) FROM `" + s + "`.c").Scan(&n)
		return n
	}
	for _, io := range []string{IOAuto, IOLoop, IOBlocking, IODriver, IONetpoll} {
		before := count()
		// A big result (1 MB), two statements in one request, an empty result, a write,
		// commits every 2 statements: 4 statements per pass, 3 passes per client.
		q := "SELECT * FROM wide\nSELECT 1; SELECT 2 FROM DUAL WHERE 0\nINSERT INTO c VALUES (1)\nSELECT id FROM wide WHERE id < 0"
		l := benchJSON(t, "--io="+io, "--create-schema="+s, "--allow-writes-in-existing-schema", "--query="+q,
			"--concurrency=3", "--number-of-queries=36", "--commit=2").Runs[0]
		if l.Queries != 36 || l.Errors != 0 || l.QueriesPerClient != 12 {
			t.Errorf("io=%s: queries %d errors %d per client %d", io, l.Queries, l.Errors, l.QueriesPerClient)
		}
		if n := count() - before; n != 9 {
			t.Errorf("io=%s: %d rows inserted and committed, want 9", io, n)
		}
		ro := benchJSON(t, "--io="+io, "--create-schema="+s+"_sb", "--workload=read-only", "--concurrency=4", "--events=20").Runs[0]
		if ro.Events != 20 || ro.Queries != 20*16 || ro.Errors != 0 {
			t.Errorf("io=%s: read-only events %d queries %d errors %d", io, ro.Events, ro.Queries, ro.Errors)
		}
		// No client file is ever sent: LOAD DATA LOCAL fails on the client's side.
		res := runBench(t, "--io="+io, "--create-schema="+s, "--allow-writes-in-existing-schema", "--ignore-errors",
			"--query=LOAD DATA LOCAL INFILE '/etc/hostname' INTO TABLE c", "--number-of-queries=2")
		if res.Code != 1 || !strings.Contains(res.Stderr, "LOAD DATA LOCAL INFILE '/etc/hostname'") {
			t.Errorf("io=%s: LOCAL INFILE: exit %d: %s", io, res.Code, res.Stderr)
		}
		// A failing statement stops the run with the server's message.
		res = runBench(t, "--io="+io, "--create-schema="+s, "--query=SELECT nope FROM wide")
		if res.Code != 1 || !strings.Contains(res.Stderr, "Unknown column 'nope'") {
			t.Errorf("io=%s: exit %d: %s", io, res.Code, res.Stderr)
		}
	}
}

// TestRunInProcess drives Run directly (not through the binary), so that `go test -race`
// checks the clients, the interval reporter and the monitor.
func TestRunInProcess(t *testing.T) {
	s := sandboxtest.Schema(t)
	for _, io := range []string{IOAuto, IOLoop, IOBlocking, IODriver, IONetpoll} {
		o := Defaults()
		o.Schema, o.Query, o.ConcurrencySpec, o.Time, o.ReportInterval, o.IOMode = s, "SELECT SLEEP(0.002)", "3,5", 300*time.Millisecond, 50*time.Millisecond, io
		p, err := NewPlan(o)
		if err != nil {
			t.Fatal(err)
		}
		var out, ivs bytes.Buffer
		rep, err := Run(context.Background(), p, Env{Admin: sandboxtest.Conn(t), Sink: &Sink{Out: &out, Intervals: &ivs}, Log: logx.New(&bytes.Buffer{}, true)})
		if err != nil {
			t.Fatalf("io=%s: %v", io, err)
		}
		// Queries: at least one per client (a loaded machine ran 89 in 0.3 s where an idle
		// one runs 500: the count is the machine's, the run's shape is the test's).
		if len(rep.Runs) != 2 || rep.Runs[1].Clients != 5 || rep.Runs[1].Queries < 5 || len(blocks(out.String())) != 2 || !strings.Contains(ivs.String(), "clients 5") {
			t.Errorf("io=%s: %d runs, output:\n%s%s", io, len(rep.Runs), out.String(), ivs.String())
		}
		// One client fails: the others' statements are killed on the server, the run ends.
		o.Query, o.Time, o.ReportInterval = "SELECT IF(CONNECTION_ID() % 2 = 0, SLEEP(30), (SELECT 1 UNION SELECT 2))", 0, 0
		o.ConcurrencySpec = "4"
		p, _ = NewPlan(o)
		t0 := time.Now()
		_, err = Run(context.Background(), p, Env{Admin: sandboxtest.Conn(t), Sink: &Sink{}, Log: logx.New(&bytes.Buffer{}, true)})
		if err == nil || !strings.Contains(err.Error(), "1242") {
			t.Errorf("io=%s: %v", io, err)
		}
		if d := time.Since(t0); d > 10*time.Second {
			t.Errorf("io=%s: stopping took %s", io, d)
		}
	}
}

// read-write, sysbench's oltp_read_write transaction: 20 statements each, the rows changed
// and the table kept at its size (each DELETE's row is inserted back), and only in a schema
// innowarm prepared unless told otherwise.
func TestReadWriteWorkload(t *testing.T) {
	ctx := context.Background()
	c := sandboxtest.Conn(t)
	s := "bench_rw_" + strconv.Itoa(os.Getpid())
	if _, err := Prepare(ctx, c, PrepareOptions{Schema: s, Tables: 1, Rows: 2000, Threads: 1}, logx.New(&bytes.Buffer{}, true)); err != nil {
		t.Fatal(err)
	}
	defer Cleanup(ctx, c, s)
	tbl := sqltext.Table(s, "sbtest1")
	state := func() (rows, sumK int64, sumC string) {
		t.Helper()
		if err := c.DB.QueryRow("SELECT COUNT(*), SUM(k), CONCAT(SUM(CRC32(c)), '/', SUM(CRC32(pad))) FROM "+tbl).Scan(&rows, &sumK, &sumC); err != nil {
			t.Fatal(err)
		}
		return rows, sumK, sumC
	}
	rows0, k0, c0 := state()
	rw := benchJSON(t, "--create-schema="+s, "--workload=read-write", "--concurrency=3", "--events=60", "--ignore-errors")
	l := rw.Runs[0]
	// A deadlock between two clients' writes rolls one transaction back: as sysbench does,
	// the client rolls back and runs the event again, which counts once, when it commits;
	// the failed attempt's statements and its error still count.
	if l.Events != 60 || l.Queries+l.Errors < 60*20 || l.Errors == 0 && l.Queries != 60*20 {
		t.Errorf("read-write: %d transactions, %d queries + %d errors, want 60 and at least 1,200", l.Events, l.Queries, l.Errors)
	}
	rows1, k1, c1 := state()
	if rows1 != rows0 {
		t.Errorf("read-write changed the table's size: %d rows, was %d", rows1, rows0)
	}
	if k1 == k0 || c1 == c0 {
		t.Errorf("read-write wrote nothing: SUM(k) %d -> %d, c %s -> %s", k0, k1, c0, c1)
	}
	// Eight clients on ten rows deadlock often. Without --ignore-errors the run still ends
	// well (deadlocks and lock waits are retried, as sysbench's defaults), every event
	// commits once, the DELETE and its INSERT back stay in one transaction (the table keeps
	// its ten rows; before, the INSERT of a row whose DELETE a deadlock had undone failed
	// on its key), and nothing but those errors is counted.
	tiny := s + "_tiny"
	if _, err := Prepare(ctx, c, PrepareOptions{Schema: tiny, Tables: 1, Rows: 10, Threads: 1}, logx.New(&bytes.Buffer{}, true)); err != nil {
		t.Fatal(err)
	}
	defer Cleanup(ctx, c, tiny)
	hot := benchJSON(t, "--create-schema="+tiny, "--workload=read-write", "--concurrency=8", "--events=200").Runs[0]
	if hot.Events != 200 {
		t.Errorf("read-write on 10 rows: %d transactions, want 200", hot.Events)
	}
	for k := range hot.ErrorCounts {
		if !strings.HasPrefix(k, "1213 ") && !strings.HasPrefix(k, "1205 ") && !strings.HasPrefix(k, "1020 ") {
			t.Errorf("read-write on 10 rows: an error other than a deadlock or a lock wait: %s", k)
		}
	}
	var tinyRows int64
	if err := c.DB.QueryRow("SELECT COUNT(*) FROM " + sqltext.Table(tiny, "sbtest1")).Scan(&tinyRows); err != nil || tinyRows != 10 {
		t.Errorf("read-write on 10 rows left %d rows (%v), want 10", tinyRows, err)
	}
	t.Logf("read-write on 10 rows, 8 clients: %d queries, %d errors %v", hot.Queries, hot.Errors, hot.ErrorCounts)

	text := mustBench(t, "--create-schema="+s, "--workload=read-write", "--concurrency=2", "--events=10")
	if bs := blocks(text.Stdout); len(bs) != 1 || !strings.HasPrefix(bs[0]["Transactions"], "10,") {
		t.Errorf("read-write's report:\n%s", text.Stdout)
	}

	// A schema innowarm did not make: refused, one line, exit 2.
	other := sandboxtest.Schema(t)
	sandboxtest.Exec(t, fmt.Sprintf(sbCreate, sqltext.Table(other, "sbtest1"), "InnoDB"), "INSERT INTO "+sqltext.Table(other, "sbtest1")+" (k, c, pad) VALUES (1, 'a', 'b')")
	res := runBench(t, "--create-schema="+other, "--workload=read-write", "--events=5")
	if res.Code != 2 || strings.Count(strings.TrimSpace(res.Stderr), "\n") != 0 || !strings.Contains(res.Stderr, "read-write writes") {
		t.Errorf("read-write in a foreign schema: exit %d: %s", res.Code, res.Stderr)
	}
	var n int64
	if err := c.DB.QueryRow("SELECT COUNT(*) FROM " + sqltext.Table(other, "sbtest1")).Scan(&n); err != nil || n != 1 {
		t.Errorf("the foreign table has %d rows after the refused run (%v), want 1", n, err)
	}
}

// An interrupted prepare drops the schema it created: before, a quarter-loaded sbtest1
// without its index stayed, and the next bench ran on it without a word.
func TestInterruptedPrepareDropsWhatItCreated(t *testing.T) {
	c := sandboxtest.Conn(t)
	s := "bench_cut_" + strconv.Itoa(os.Getpid())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Prepare(ctx, c, PrepareOptions{Schema: s, Tables: 2, Rows: 1_000_000, Threads: 1}, logx.New(&bytes.Buffer{}, true))
		done <- err
	}()
	// Cancel once rows are going in.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var n int
		if err := c.DB.QueryRow("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'sbtest1'", s).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("prepare ended before its first table was seen: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("prepare's first table never appeared")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("prepare of 2 x 1,000,000 rows finished before its interrupt")
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("prepare did not stop after its interrupt")
	}
	var n int
	if err := c.DB.QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", s).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		Cleanup(context.Background(), c, s)
		t.Errorf("the interrupted prepare left its schema %s", s)
	}
}

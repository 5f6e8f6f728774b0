package warm_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/warm"
)

// zooArgs warms the zoo by scans (the method these tests are about; auto would pick the
// native loader, since the tests run on the server's host as root).
func zooArgs(t *testing.T, extra ...string) []string {
	return append(append([]string{"warm", "--method", "scan"}, sandboxtest.Sock(t)...), append([]string{"-D", sandboxtest.Zoo(t)}, extra...)...)
}

func TestDryRunPlanJSON(t *testing.T) {
	coldConn(t)
	r := sandboxtest.CLI(t, sandboxtest.Run{}, zooArgs(t, "--dry-run", "--json", "--verbose", "--lob")...)
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	var out struct {
		Plan struct {
			Units []struct {
				Target    string `json:"target"`
				Statement string `json:"statement"`
				EstPages  int64  `json:"estimated_pages"`
			} `json:"units"`
			Budget   int64 `json:"budget_pages"`
			NewPages int64 `json:"new_pages"`
			Pool     int64 `json:"pool_pages"`
			Skipped  []struct {
				Table, Index, Reason string
			} `json:"skipped"`
		} `json:"plan"`
	}
	sandboxtest.JSON(t, []byte(r.Stdout), &out)
	if len(out.Plan.Units) < 30 || out.Plan.Budget == 0 || out.Plan.NewPages == 0 || out.Plan.Pool == 0 {
		t.Errorf("plan: %d units, budget %d, new %d", len(out.Plan.Units), out.Plan.Budget, out.Plan.NewPages)
	}
	// The server's own statement time limit: MariaDB's SET STATEMENT max_statement_time,
	// MySQL's MAX_EXECUTION_TIME hint.
	limit := "max_statement_time"
	if !sandboxtest.Flavor(t).IsMariaDB() {
		limit = "MAX_EXECUTION_TIME("
	}
	for _, u := range out.Plan.Units {
		if !strings.Contains(u.Statement, "/* innowarm:warm */") || !strings.Contains(u.Statement, limit) {
			t.Errorf("statement %q lacks the tag or the time limit", u.Statement)
		}
	}
	if len(out.Plan.Skipped) < 5 {
		t.Errorf("skipped: %+v", out.Plan.Skipped)
	}
	// A dry run reads no data: only key-range descents touch a few pages.
	r = sandboxtest.CLI(t, sandboxtest.Run{}, zooArgs(t, "--dry-run")...)
	for _, want := range []string{"plan:", "budget", "skipped:", "FULLTEXT", "SPATIAL", "view", "MyISAM"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("dry-run output lacks %q:\n%s", want, r.Stdout)
		}
	}
}

func TestWarmCommandOutputAndLogLines(t *testing.T) {
	coldConn(t)
	// Progress lines come every --progress-interval; the zoo warms in well under the 5 s default.
	r := sandboxtest.CLI(t, sandboxtest.Run{}, zooArgs(t, "--json", "--progress-interval", "20ms")...)
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	var out struct {
		Result struct {
			Units, UnitsDone int
			Targets          []struct {
				Table         string  `json:"table"`
				CoverageAfter float64 `json:"coverage_after"`
			} `json:"targets"`
			PagesRead int64   `json:"pages_read"`
			MBps      float64 `json:"mb_per_s"`
		} `json:"result"`
	}
	sandboxtest.JSON(t, []byte(r.Stdout), &out)
	if out.Result.PagesRead == 0 || len(out.Result.Targets) < 30 {
		t.Errorf("result: %+v", out.Result)
	}
	for _, want := range []string{"START WARMUP FOR DB", "START WARMUP FOR TABLE: ", "SUCCESS WARMUP FOR TABLE: ", "SUCCESS WARMUP FOR DB", "warm progress"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	// Human output: a table and a summary line.
	coldConn(t)
	r = sandboxtest.CLI(t, sandboxtest.Run{}, zooArgs(t, "--tables", "*.composite*", "-q")...)
	if r.Code != 0 || !strings.Contains(r.Stdout, "warm (scan):") || !strings.Contains(r.Stdout, "→ 100.0%") || r.Stderr != "" {
		t.Errorf("human output (exit %d):\n%s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
	}
}

func TestWarmBadInput(t *testing.T) {
	sock := sandboxtest.Sock(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"warm"}, "choose what to warm"},
		{[]string{"warm", "-D", "no_such_db"}, "unknown database"},
		{[]string{"warm", "-D", "mysql", "--budget", "lots"}, "--budget"},
		{[]string{"warm", "-D", "mysql", "--order", "random"}, "--order"},
		{[]string{"warm", "-D", "mysql", "--parallel", "-1"}, "--parallel"},
		{[]string{"warm", "--tables", "t*"}, "names no schema"},
		{[]string{"warm", "--tables", "db.["}, "--tables"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			r := sandboxtest.CLI(t, sandboxtest.Run{}, append(c.args, sock...)...)
			if r.Code != 2 || !strings.Contains(r.Stderr, c.want) || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
				t.Errorf("%v: exit %d, stderr %q (want one line with %q)", c.args, r.Code, r.Stderr, c.want)
			}
		})
	}
}

// A user with SELECT and PROCESS can warm; without PROCESS the message names the grant.
func TestLeastPrivilege(t *testing.T) {
	zoo := sandboxtest.Zoo(t)
	sb := sandboxtest.Server(t)
	sandboxtest.Exec(t,
		"CREATE USER IF NOT EXISTS 'warmer'@'localhost' IDENTIFIED BY 'w-pass'",
		"GRANT SELECT ON "+sqltext.Ident(zoo)+".* TO 'warmer'@'localhost'",
		"GRANT PROCESS ON *.* TO 'warmer'@'localhost'",
		"CREATE USER IF NOT EXISTS 'noproc'@'localhost' IDENTIFIED BY 'n-pass'",
		"GRANT SELECT ON "+sqltext.Ident(zoo)+".* TO 'noproc'@'localhost'")
	coldConn(t)
	// auto falls back to scans: the native loader needs SUPER.
	r := sandboxtest.CLI(t, sandboxtest.Run{Env: []string{"MYSQL_PWD=w-pass"}}, "warm", "--no-defaults", "-S", sb.Socket, "-u", "warmer", "-D", zoo)
	if r.Code != 0 || !strings.Contains(r.Stdout, " units in ") || !strings.Contains(r.Stdout, "SUPER") {
		t.Errorf("SELECT+PROCESS user: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	// On the database host the sizes the statistics would give are counted in the files,
	// MySQL's partitions too (their index roots from the table's SDI: MySQL lists no index
	// of a partitioned table in INNODB_INDEXES), so no size is estimated and the run says
	// none is.
	if strings.Contains(r.Stdout, "innodb_index_stats") {
		t.Errorf("the least-privilege run notes estimated sizes where the files count them all:\n%s", r.Stdout)
	}
	r = sandboxtest.CLI(t, sandboxtest.Run{Env: []string{"MYSQL_PWD=w-pass"}}, "warm", "--no-defaults", "-S", sb.Socket, "-u", "warmer", "-D", zoo, "--method", "native")
	if r.Code != 2 || !strings.Contains(r.Stderr, "SUPER") {
		t.Errorf("--method native without SUPER: exit %d, %q", r.Code, r.Stderr)
	}
	r = sandboxtest.CLI(t, sandboxtest.Run{Env: []string{"MYSQL_PWD=n-pass"}}, "warm", "--no-defaults", "-S", sb.Socket, "-u", "noproc", "-D", zoo)
	if r.Code != 2 || !strings.Contains(r.Stderr, "PROCESS") || !strings.Contains(r.Stderr, "GRANT") {
		t.Errorf("user without PROCESS: exit %d, %q", r.Code, r.Stderr)
	}
}

// Ctrl-C stops the warm at once, kills every statement it started on the server, restores
// the variable it changed, and exits 130. A table lock holds the statements waiting, so they
// are surely running when the signal comes: here the planning ones. The statements would
// wait 120 s for the lock: an exit within stopBound (a small fraction of that, and far above
// what a busy 2-core machine needs: a second idle) shows the warm did not wait for them.
func TestInterruptStopsEverything(t *testing.T) {
	zoo := sandboxtest.Zoo(t)
	conn := coldConn(t)
	defer lockTable(t, conn, zoo, sandboxtest.ZooCompositePK)()

	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		cmd := exec.Command(sandboxtest.Binary(t), zooArgs(t, "--tables", "*.composite*", "--make-young", "--lock-wait-timeout", "120s")...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitForStatements(t, 1)
		t0 := time.Now()
		cmd.Process.Signal(sig)
		err := cmd.Wait()
		took := time.Since(t0)
		code := -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		t.Logf("%s: exit %d after %s", sig, code, took)
		if code != 130 || took > stopBound {
			t.Errorf("%s: exit %d after %s (want 130 within %s, long before the statements' 120 s lock wait); stderr: %s", sig, code, took, stopBound, stderr.String())
		}
		if n := gone(t); n != 0 {
			t.Errorf("%s: %d innowarm statements still in the processlist a second after the exit, e.g. %s", sig, n, lastProcesslist)
		}
	}
}

// The same for statements of the run itself: the plan is made while the table is free, then
// the table is locked, so the scan statements wait when the run is cancelled.
func TestCancelDuringRun(t *testing.T) {
	ctx := context.Background()
	zoo := sandboxtest.Zoo(t)
	conn := coldConn(t)
	cat, err := catalog.Load(ctx, conn, catalog.Filter{Schemas: []string{zoo}, Tables: []catalog.Pattern{{Table: sandboxtest.ZooCompositePK}}})
	if err != nil {
		t.Fatal(err)
	}
	pl, err := warm.BuildPlan(ctx, conn, cat, warm.Options{Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer lockTable(t, conn, zoo, sandboxtest.ZooCompositePK)()
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	o := quiet()
	o.Catalog, o.MakeYoung, o.LockWaitTimeout = cat, true, 2*time.Minute
	go func() {
		_, err := warm.Run(runCtx, conn, pl, o)
		done <- err
	}()
	waitForStatements(t, 2)
	t0 := time.Now()
	cancel()
	select {
	case err := <-done:
		if err == nil || runCtx.Err() == nil {
			t.Errorf("run returned %v", err)
		}
	case <-time.After(stopBound):
		t.Fatalf("run did not stop within %s of the cancel (its statements wait 2 min for the lock)", stopBound)
	}
	t.Logf("stopped %s after the cancel", time.Since(t0))
	conn.Close() // waits for the KILL QUERY statements to be sent
	conn = sandboxtest.Reconnect(t)
	if n := gone(t); n != 0 {
		t.Errorf("%d innowarm statements still in the processlist a second after the cancel, e.g. %s", n, lastProcesslist)
	}
	var obt int
	conn.DB.QueryRow("SELECT @@GLOBAL.innodb_old_blocks_time").Scan(&obt)
	if obt != 1000 {
		t.Errorf("innodb_old_blocks_time = %d, not restored after the cancel", obt)
	}
}

func countStatements(t *testing.T) int { return countStatementsIn(t, "") }

// countStatementsIn counts innowarm's statements in the processlist, in one state if given.
func countStatementsIn(t *testing.T, state string) int {
	t.Helper()
	rows, err := sandboxtest.Conn(t).DB.Query("SELECT ID, COMMAND, COALESCE(STATE, ''), TIME, INFO FROM information_schema.PROCESSLIST WHERE INFO LIKE '%innowarm:%' AND ID <> CONNECTION_ID() AND (? = '' OR STATE = ?)", state, state)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id, tm int64
		var cmd, state, info string
		rows.Scan(&id, &cmd, &state, &tm, &info)
		lastProcesslist = fmt.Sprintf("%d %s %q %ds: %.120s", id, cmd, state, tm, info)
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

var lastProcesslist string

// stopBound is how long a stop may take in these tests: what they tell apart is "stopped on
// the signal" from "waited for its statements", which wait minutes on a lock.
const stopBound = 10 * time.Second

// gone waits (briefly: a killed statement takes a moment to end; the statements themselves
// would wait minutes on the lock) until no innowarm statement is in the processlist, and
// reports how many remain.
func gone(t *testing.T) int {
	t.Helper()
	deadline := time.Now().Add(stopBound)
	for {
		n := countStatements(t)
		if n == 0 || time.Now().After(deadline) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitForStatements waits until n innowarm statements wait on the table lock.
func waitForStatements(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for countStatementsIn(t, "Waiting for table metadata lock") < n {
		if time.Now().After(deadline) {
			t.Fatal("innowarm's statements never showed up in the processlist")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// --until-coverage ends a run as soon as the plan is resident enough, even with units left:
// here a unit of a locked table, which would otherwise wait.
func TestUntilCoverageStopsTheRun(t *testing.T) {
	ctx := context.Background()
	zoo := sandboxtest.Zoo(t)
	conn := coldConn(t)
	cat, err := catalog.Load(ctx, conn, catalog.Filter{Schemas: []string{zoo}})
	if err != nil {
		t.Fatal(err)
	}
	pl, err := warm.BuildPlan(ctx, conn, cat, warm.Options{Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer lockTable(t, conn, zoo, sandboxtest.ZooCompositePK)()
	o := quiet()
	o.Catalog, o.LockWaitTimeout = cat, time.Minute
	o.Until = warm.Until{Want: 0.05, Measure: func(ctx context.Context) (float64, string, error) { return warm.PlanCoverage(ctx, conn, cat, pl) }}
	t0 := time.Now()
	res, err := warm.Run(ctx, conn, pl, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped == "" || res.UnitsCancel == 0 || !res.Complete() || time.Since(t0) > 20*time.Second {
		t.Errorf("run: stopped %q, %d units stopped, %d/%d done, %s", res.Stopped, res.UnitsCancel, res.UnitsDone, res.Units, time.Since(t0))
	}
	if n := gone(t); n != 0 {
		t.Errorf("%d statements left after the goal stopped the run: %s", n, lastProcesslist)
	}
}

// A table locked while the warm plans is skipped with the reason; the rest is warmed.
func TestLockedTableIsSkipped(t *testing.T) {
	zoo := sandboxtest.Zoo(t)
	conn := coldConn(t)
	defer lockTable(t, conn, zoo, sandboxtest.ZooCompositePK)()
	r := sandboxtest.CLI(t, sandboxtest.Run{}, zooArgs(t, "--tables", "*.composite*,*.nopk", "--lock-wait-timeout", "1s", "-q")...)
	if r.Code != 0 || !strings.Contains(r.Stdout, "is locked") || !strings.Contains(r.Stdout, "`nopk`") {
		t.Errorf("exit %d:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
}

// lockTable holds LOCK TABLES ... WRITE on a table from a connection of its own, so that
// every statement innowarm sends to it waits on its metadata lock; it returns the unlock.
func lockTable(t *testing.T, conn *connection.Conn, schema, table string) func() {
	t.Helper()
	ctx := context.Background()
	locker, err := conn.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := locker.ExecContext(ctx, "LOCK TABLES "+sqltext.Table(schema, table)+" WRITE"); err != nil {
		locker.Close()
		t.Fatal(err)
	}
	return func() {
		locker.ExecContext(ctx, "UNLOCK TABLES")
		locker.Close()
	}
}

// busy keeps n sessions running SELECT SLEEP (each one counts in Threads_running) until
// a session that is not ours has been connected for hold — the warm under test — so the
// load overlaps the warm however slowly the machine starts the binary. The returned func
// ends the load if it still runs and waits for the sleepers to end.
func busy(t *testing.T, conn *connection.Conn, n int, hold time.Duration) func() {
	t.Helper()
	ctx := context.Background()
	// one session of ours polls, held before the sleepers start so theirs are all new
	poll, err := conn.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{}, n)
	for i := 0; i < n; i++ {
		go func() {
			conn.DB.ExecContext(ctx, "SELECT SLEEP(60)")
			done <- struct{}{}
		}()
	}
	sleepers := func() (ids []int64) {
		rows, err := poll.QueryContext(ctx, "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO = 'SELECT SLEEP(60)'")
		if err != nil {
			return nil
		}
		defer rows.Close()
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
	deadline := time.Now().Add(10 * time.Second)
	var ids []int64
	for len(ids) < n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		ids = sleepers()
	}
	if len(ids) < n {
		t.Fatalf("only %d of %d sleeping sessions started", len(ids), n)
	}
	maxOurs := slices.Max(ids)
	stop, release := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stop)
		limit := time.Now().Add(60 * time.Second)
		for time.Now().Before(limit) {
			var others int
			poll.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID > ? AND ID <> CONNECTION_ID() AND COMMAND <> 'Daemon'", maxOurs).Scan(&others)
			if others > 0 {
				select {
				case <-time.After(hold):
				case <-release:
				}
				break
			}
			select {
			case <-time.After(50 * time.Millisecond):
			case <-release:
				limit = time.Now()
			}
		}
		for _, id := range ids {
			poll.ExecContext(ctx, fmt.Sprintf("KILL QUERY %d", id))
		}
		poll.Close()
	}()
	return func() {
		close(release)
		<-stop
		for i := 0; i < n; i++ {
			<-done
		}
	}
}

// --max-load holds the warm back while the server is busy and lets it go after; a
// --critical-load stops it with one line and exit 1.
func TestPacingThroughWarm(t *testing.T) {
	sandboxtest.Zoo(t)
	conn := coldConn(t)
	// The load ends 6 s after the warm connects: its catalog and plan (the governor starts
	// after them) may take a few seconds of a busy machine, and it must then pause 1 s or
	// more.
	wait := busy(t, conn, 4, 6*time.Second)
	t0 := time.Now()
	r := sandboxtest.CLI(t, sandboxtest.Run{}, zooArgs(t, "--max-load", "Threads_running=2", "--json", "-q")...)
	took := time.Since(t0)
	wait()
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	var out struct {
		Result struct {
			UnitsDone int `json:"units_done"`
			Units     int `json:"units"`
			Pacing    struct {
				Pauses        int     `json:"pauses"`
				PausedSeconds float64 `json:"paused_seconds"`
			} `json:"pacing"`
		} `json:"result"`
	}
	sandboxtest.JSON(t, []byte(r.Stdout), &out)
	res := out.Result
	if res.UnitsDone != res.Units || res.Pacing.Pauses == 0 || res.Pacing.PausedSeconds < 1 || took < 2*time.Second {
		t.Errorf("paced warm: %d/%d units, %d pauses, %.1f s paused, took %s", res.UnitsDone, res.Units, res.Pacing.Pauses, res.Pacing.PausedSeconds, took)
	}

	conn = coldConn(t)
	// The load lasts until the warm has stopped, so that it is critical whenever the
	// governor looks.
	wait = busy(t, conn, 4, time.Minute)
	r = sandboxtest.CLI(t, sandboxtest.Run{}, zooArgs(t, "--critical-load", "Threads_running=2", "-q")...)
	wait()
	if r.Code != 1 || !strings.Contains(r.Stderr, "critical") || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
		t.Errorf("critical load: exit %d, %q", r.Code, r.Stderr)
	}
	r = sandboxtest.CLI(t, sandboxtest.Run{}, zooArgs(t, "--max-load", "No_such_status=3")...)
	if r.Code != 2 || !strings.Contains(r.Stderr, "No_such_status") {
		t.Errorf("unknown status variable: exit %d, %q", r.Code, r.Stderr)
	}
}

// A warm that loads nothing because every index was skipped for a reason that leaves pages
// cold exits 1 with one line saying why; one that skips only what has no pages in the pool
// (another engine) succeeds.
func TestWarmThatSkipsEverythingFails(t *testing.T) {
	db := sandboxtest.Schema(t)
	locked := sqltext.Table(db, "locked")
	sandboxtest.Exec(t,
		"CREATE TABLE "+locked+" (id INT PRIMARY KEY, k INT, KEY k (k))",
		"INSERT INTO "+locked+" SELECT seq, seq MOD 100 FROM "+sandboxtest.Flavor(t).Series(db, 1, 20000)+" ORDER BY seq",
		"ANALYZE TABLE "+locked,
		"CREATE TABLE "+sqltext.Table(db, "other_engine")+" (id INT PRIMARY KEY) ENGINE=MyISAM",
	)
	// A cold pool (nothing already resident), and another session holding the table's
	// metadata lock: every statement on it would wait.
	conn := coldConn(t)
	holder, err := conn.DB.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(context.Background(), "LOCK TABLES "+locked+" WRITE"); err != nil {
		t.Fatal(err)
	}
	defer holder.ExecContext(context.Background(), "UNLOCK TABLES")
	args := append(append([]string{"warm", "--method", "scan", "--lock-wait-timeout", "1s"}, sandboxtest.Sock(t)...), "--tables", db+".locked")
	r := sandboxtest.CLI(t, sandboxtest.Run{}, args...)
	lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
	if r.Code != 1 || !strings.Contains(lines[len(lines)-1], "nothing to warm: every index was skipped") || strings.Contains(r.Stdout, "warmed") {
		t.Errorf("every index locked: exit %d\nstdout %s\nstderr %s", r.Code, r.Stdout, r.Stderr)
	}
	// A selection of no InnoDB table is a selection that matches nothing in the pool (it
	// said "every tablespace of the selection was already resident", exit 0).
	args = append(append([]string{"warm", "--method", "scan"}, sandboxtest.Sock(t)...), "--tables", db+".other_engine")
	if r := sandboxtest.CLI(t, sandboxtest.Run{}, args...); r.Code != 2 || !strings.Contains(r.Stderr, "matches no InnoDB table") || !strings.Contains(r.Stderr, "engine MyISAM") {
		t.Errorf("only a MyISAM table: exit %d, %s", r.Code, r.Stderr)
	}
}

// --parallel 0 means the default, as the help says; a negative count is refused.
func TestParallelZeroIsTheDefault(t *testing.T) {
	coldConn(t)
	r := sandboxtest.CLI(t, sandboxtest.Run{}, zooArgs(t, "--dry-run", "--json", "--parallel", "0")...)
	var out struct {
		Plan struct {
			Parallel int `json:"parallel"`
		} `json:"plan"`
	}
	sandboxtest.JSON(t, []byte(r.Stdout), &out)
	if r.Code != 0 || out.Plan.Parallel < 1 {
		t.Errorf("--parallel 0: exit %d, parallel %d: %s", r.Code, out.Plan.Parallel, r.Stderr)
	}
	if r := sandboxtest.CLI(t, sandboxtest.Run{}, zooArgs(t, "--dry-run", "--parallel", "-1")...); r.Code != 2 {
		t.Errorf("--parallel -1: exit %d, want 2", r.Code)
	}
	if r := sandboxtest.CLI(t, sandboxtest.Run{}, "warm", "--help"); !strings.Contains(r.Stdout, "0: the default") {
		t.Errorf("the help does not say what --parallel 0 means")
	}
}

// The flavors issue's target, on the server the tests run against: after a cold restart,
// `warm -D zoo` with the default method and with --method scan leaves every B-tree index of
// the zoo (secondary, prefix, composite, no primary key, partitioned, LOB, oddly named) at
// least 95% resident, counted against the pages InnoDB's own loader finds in the files, and
// the data unchanged.
func TestZooTargetEveryIndexResident(t *testing.T) {
	want := truth(t)
	var tables []string
	for _, tb := range sandboxtest.ZooInnoDBTables(t) {
		tables = append(tables, sqltext.Table(sandboxtest.Zoo(t), tb))
	}
	checksum := func() string { return sandboxtest.Checksums(t, tables...) }
	before := checksum()
	for _, method := range []string{"default", "scan"} {
		t.Run(method, func(t *testing.T) {
			conn := coldConn(t)
			args := append(append([]string{"warm", "-q"}, sandboxtest.Sock(t)...), "-D", sandboxtest.Zoo(t))
			if method != "default" {
				args = append(args, "--method", method)
			}
			r := sandboxtest.CLI(t, sandboxtest.Run{}, args...)
			if r.Code != 0 {
				t.Fatalf("warm (%s): exit %d: %s", method, r.Code, r.Stderr)
			}
			cat := zooCatalog(t, conn)
			got := residency(t, conn, cat)
			worst, worstName, n := 2.0, "", 0
			for _, tb := range cat.Tables {
				for _, p := range tb.Parts {
					for _, ix := range tb.Indexes {
						if ix.Type == "FULLTEXT" || ix.Type == "SPATIAL" || (!ix.Usable && method == "scan") {
							continue // no index scan reads these (the plan says so); the native loader does
						}
						k := key{tb.Name, p.Name, ix.Name}
						w := want[k].Resident
						if w == 0 {
							continue
						}
						n++
						share := float64(got[k].Resident) / float64(w)
						if share < worst {
							worst, worstName = share, fmt.Sprintf("%s %s %s (%d of %d pages)", tb.Name, p.Name, ix.Name, got[k].Resident, w)
						}
						if share < 0.95 {
							t.Errorf("%s: %s %s %s: %d of the %d pages InnoDB's loader finds are resident (%.1f%%)", method, tb.Name, p.Name, ix.Name, got[k].Resident, w, 100*share)
						}
					}
				}
			}
			t.Logf("%s, warm %s: %d indexes, the least resident %.1f%%: %s", sandboxtest.Flavor(t), method, n, 100*min(worst, 1), worstName)
			if t.Failed() {
				t.Logf("the warm said:\n%s", r.Stdout)
			}
			if n < 25 {
				t.Errorf("only %d indexes measured", n)
			}
			if after := checksum(); after != before {
				t.Errorf("data changed by the warm: %s\nthen %s", before, after)
			}
		})
	}
}

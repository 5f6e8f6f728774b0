package agent_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/agent"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/pacing"
	"github.com/innowarm/innowarm/internal/progress"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/snapshot"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/warm"
)

// scanWarm is a warm request by scans at a capped rate: slow enough for a test to see it
// warming, measure after measure.
func scanWarm(rate int64) *warm.Request {
	return &warm.Request{Method: warm.MethodScan,
		Plan: warm.Options{Order: "small-first", Parallel: 2, SplitPages: warm.DefaultSplitPages, LockWaitTimeout: 5 * time.Second},
		Run:  warm.RunOptions{StatementTimeout: time.Minute, LockWaitTimeout: 5 * time.Second, Pacing: pacing.Config{MaxRate: rate}, Progress: progress.Config{}},
	}
}

// The state machine on a server of the test's own: starting while the server is down, then
// warming (the warm at start, its progress in /ready, the weight following the coverage),
// ready; a killed server is down at the next answer; its next run warms again.
func TestLifecycle(t *testing.T) {
	sb, conn := secondServer(t, "life", 120_000)
	if _, err := sb.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	ag := startAgent(t, agent.Options{Conn: conn, Filter: catalog.Filter{Schemas: []string{"life"}}, Warm: scanWarm(4 << 20),
		AgentCheckListen: "127.0.0.1:0", MinWeight: 1})

	// Starting: the server has never answered.
	st := ag.waitState(t, "starting", 30*time.Second, func(s agent.Status) bool { return s.State == agent.Starting && s.Server.Error != "" })
	if code, body := ag.ready(t); code != http.StatusServiceUnavailable || body.Ready || body.Coverage != nil {
		t.Fatalf("/ready while starting: %d %+v", code, body)
	}
	if a := ask(t, ag.check); !hasPrefix(a, "down #") {
		t.Fatalf("agent check while starting: %q", a)
	}
	if st.Warm.State != agent.WarmPending {
		t.Fatalf("warm before the server answers: %+v", st.Warm)
	}

	// Warming: the warm runs at the server's start and /ready follows it.
	if _, err := sb.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	st = ag.waitState(t, "warming with the warm half-way", 60*time.Second, func(s agent.Status) bool {
		return s.State == agent.Warming && s.Warm.State == agent.WarmRunning && s.Warm.DonePages > 0 && s.Coverage.Coverage > 0.1
	})
	code, body := ag.ready(t)
	if code != http.StatusServiceUnavailable || body.State != agent.Warming || body.Coverage == nil || body.Threshold != 0.95 || body.Warm.Progress <= 0 {
		t.Fatalf("/ready while warming: %d %+v", code, body)
	}
	if a := ask(t, ag.check); !hasPrefix(a, "") || !strings.HasSuffix(strings.TrimSpace(a), "% up") || a == "100% up\n" {
		t.Fatalf("agent check while warming: %q (%s)", a, describe(st))
	}

	// Ready.
	st = ag.waitState(t, "ready", 120*time.Second, inState(agent.Ready))
	code, body = ag.ready(t)
	if code != http.StatusOK || !body.Ready || body.Weight != 100 || body.Coverage == nil || *body.Coverage < 0.95 {
		t.Fatalf("/ready once ready: %d %+v", code, body)
	}
	if a := ask(t, ag.check); a != "100% up\n" {
		t.Fatalf("agent check once ready: %q", a)
	}
	st = ag.waitState(t, "warm done", 60*time.Second, func(s agent.Status) bool { return s.Warm.State == agent.WarmDone })
	if st.Warm.Method != warm.MethodScan || st.Warm.Loaded <= 0 || st.ReadyAfter <= 0 {
		t.Fatalf("after the warm: %+v, ready after %.1f s", st.Warm, st.ReadyAfter)
	}
	// Ready, a measure costs a status read: no more counts.
	counts := st.Coverage.Counts
	time.Sleep(1 * time.Second)
	if st = ag.status(t); st.Coverage.Counts != counts {
		t.Errorf("counted %d more times while ready and idle", st.Coverage.Counts-counts)
	}

	// Killed: the next answer says down, without waiting for the next measure (answers
	// share a successful ping for 100 ms: the one before the kill is past that).
	sb.Kill()
	time.Sleep(150 * time.Millisecond)
	if a := ask(t, ag.check); !hasPrefix(a, "down #") {
		t.Fatalf("agent check right after the kill: %q", a)
	}
	if code, body := ag.ready(t); code != http.StatusServiceUnavailable || body.State != agent.Down {
		t.Fatalf("/ready right after the kill: %d %+v", code, body)
	}

	// The next run warms again.
	if _, err := sb.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	runs := st.Server.Runs
	st = ag.waitState(t, "ready again", 120*time.Second, func(s agent.Status) bool {
		return s.State == agent.Ready && s.Server.Runs > runs
	})
	st = ag.waitState(t, "second warm done", 60*time.Second, func(s agent.Status) bool { return s.Warm.State == agent.WarmDone })
	if st.Warm.Loaded <= 0 {
		t.Errorf("second run's warm loaded nothing: %+v", st.Warm)
	}
	if err := ag.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
}

// A warm that fails is reported in /status, and the agent keeps measuring and serving:
// the server becomes ready when something else warms it.
func TestWarmFailureKeepsServing(t *testing.T) {
	_, conn := secondServer(t, "fails", 60_000)
	req := scanWarm(0)
	// The agent's own connections exceed this at once: the warm stops at its first check.
	req.Run.Pacing = pacing.Config{Critical: []pacing.Bound{{Name: "Threads_connected", Limit: 1}}}
	ag := startAgent(t, agent.Options{Conn: conn, Filter: catalog.Filter{Schemas: []string{"fails"}}, Warm: req})
	st := ag.waitState(t, "warm failed", 60*time.Second, func(s agent.Status) bool { return s.Warm.State == agent.WarmFailed })
	if !strings.Contains(st.Warm.Error, "Threads_connected") || st.State != agent.Warming {
		t.Fatalf("after the failed warm: %s; warm %+v", describe(st), st.Warm)
	}
	if code, _ := ag.ready(t); code != http.StatusServiceUnavailable {
		t.Fatalf("/ready after a failed warm: %d", code)
	}
	// Something else warms the table: the agent, still measuring, turns ready.
	db, err := connection.Open(context.Background(), conn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.DB.Exec("SELECT COUNT(*) FROM fails.wide"); err != nil {
		t.Fatal(err)
	}
	st = ag.waitState(t, "ready after an outside warm", 60*time.Second, inState(agent.Ready))
	if st.Warm.State != agent.WarmFailed {
		t.Errorf("the failed warm is no longer reported: %+v", st.Warm)
	}
	if err := ag.stop(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// The sidecar's loop: with no manifest yet there is nothing to restore (ready at once), and
// snapshots start once ready; the next server run warms from the latest one (natively:
// counts then read INNODB_BUFFER_PAGE_LRU while the load holds the dump file) and is ready
// when its pages are back.
func TestManifestWarmAndSnapshotLoop(t *testing.T) {
	sb, conn := secondServer(t, "loop", 60_000)
	db, err := connection.Open(context.Background(), conn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.DB.Exec("SELECT COUNT(*) FROM " + sqltext.Table("loop", "wide")); err != nil {
		t.Fatal(err)
	}
	db.Close()
	m := filepath.Join(sandboxtest.Dir(t), "hot.manifest")
	req := scanWarm(0)
	req.Method = warm.MethodAuto
	ag := startAgent(t, agent.Options{Conn: conn, Manifest: m, Warm: req, SnapshotTo: m, SnapshotEvery: time.Second,
		Snapshot: snapshot.Options{PageList: snapshot.PageListAuto}})
	st := ag.waitState(t, "ready without a manifest", 60*time.Second, inState(agent.Ready))
	if !strings.Contains(st.ReadyNote, "no manifest") || st.Warm.State != agent.WarmSkipped {
		t.Fatalf("first run: %s, warm %+v", describe(st), st.Warm)
	}
	st = ag.waitState(t, "a snapshot", 60*time.Second, func(s agent.Status) bool { return s.Snapshot != nil && s.Snapshot.Captures >= 1 })
	if st.Snapshot.LastPages < 1000 {
		t.Fatalf("snapshot of %d pages; the table is resident", st.Snapshot.LastPages)
	}
	if _, err := os.Stat(m); err != nil {
		t.Fatal(err)
	}

	// The next run: cold, warmed from the manifest.
	runs := st.Server.Runs
	if _, err := sb.Restart(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	st = ag.waitState(t, "ready in the next run", 120*time.Second, func(s agent.Status) bool {
		return s.State == agent.Ready && s.Server.Runs > runs
	})
	st = ag.waitState(t, "its warm done", 60*time.Second, func(s agent.Status) bool { return s.Warm.State == agent.WarmDone })
	if st.Warm.Loaded < 1000 || st.Coverage.Total < 1000 || !strings.HasPrefix(st.Coverage.Target, "manifest ") {
		t.Fatalf("second run: %s; warm %+v; coverage %+v", describe(st), st.Warm, st.Coverage)
	}
	t.Logf("second run: warm %s in %.2f s, %d pages; ready %.1f s after the server started", st.Warm.Method, st.Warm.Seconds, st.Warm.Loaded, st.ReadyAfter)
	readyAt := time.Now().UTC()
	ag.waitState(t, "snapshots again", 60*time.Second, func(s agent.Status) bool {
		return s.Snapshot.Running && s.Snapshot.LastAt != nil && s.Snapshot.LastAt.After(readyAt)
	})
}

// A server that stalls past the answers' ping (SIGSTOP) is reported down at once; when it
// answers again in the same run it is ready again, without a new warm. The stall breaks
// the answers' connection, and a run within its first seconds cannot be told from a quick
// restart by its start: the answers said "down: the server restarted (up 2 s)" after the
// monitor had found the same run ready (a CI run). Every run is taken as young here, so
// that case is the one tested, whatever the machine's speed.
func TestStalledServerIsDownThenReadyAgain(t *testing.T) {
	sb, conn := secondServer(t, "stall", 20_000)
	readTable(t, conn, "stall", "wide")
	t.Cleanup(agent.TreatEveryRunAsYoung()) // before startAgent: restored after it stops
	ag := startAgent(t, agent.Options{Conn: conn, Filter: catalog.Filter{Schemas: []string{"stall"}}, AgentCheckListen: "127.0.0.1:0"})
	st := ag.waitState(t, "ready", 60*time.Second, inState(agent.Ready))
	runs := st.Server.Runs
	pid := sb.Status(context.Background()).Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	defer func() {
		if stopped {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}()
	time.Sleep(150 * time.Millisecond) // past the shared ping
	if a := ask(t, ag.check); !hasPrefix(a, "down #") {
		t.Fatalf("agent check while the server is stopped: %q", a)
	}
	_ = syscall.Kill(pid, syscall.SIGCONT)
	stopped = false
	st = ag.waitState(t, "ready again", 60*time.Second, inState(agent.Ready))
	if !st.Server.Up || st.Weight != 100 || st.Server.Runs != runs {
		t.Fatalf("after the stall: %s, server %+v, weight %d", describe(st), st.Server, st.Weight)
	}
	if a := ask(t, ag.check); a != "100% up\n" {
		t.Fatalf("agent check after the stall: %q", a)
	}
}

// A check that finds the agent not connected (the server restarted, the monitor not yet
// back) makes the monitor reconnect at once: with a minute between measures, the server
// back after a restart is seen at the next checks, not a minute later.
func TestCheckReconnectsWithoutWaitingForTheInterval(t *testing.T) {
	sb, conn := secondServer(t, "stall", 20_000)
	// Ready at the first measure: with a minute between measures, a server that needs a
	// second one to be ready would not be within the test's minute.
	readTable(t, conn, "stall", "wide")
	ag := startAgent(t, agent.Options{Conn: conn, Filter: catalog.Filter{Schemas: []string{"stall"}}, AgentCheckListen: "127.0.0.1:0",
		Interval: time.Minute, ReadyCoverage: 0.0001})
	st := ag.waitState(t, "ready", 60*time.Second, inState(agent.Ready))
	runs := st.Server.Runs
	sb.Kill()
	time.Sleep(150 * time.Millisecond) // past the shared ping
	if a := ask(t, ag.check); !hasPrefix(a, "down #") {
		t.Fatalf("agent check right after the kill: %q", a)
	}
	// The monitor, poked by that answer, finds the connection broken and the server gone.
	ag.waitState(t, "down, not connected", 30*time.Second, func(s agent.Status) bool { return s.State == agent.Down && !s.Server.Up })
	if _, err := sb.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		a := ask(t, ag.check)
		if st := ag.status(t); st.Server.Runs > runs && st.Server.Up {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("checks for 30 s after the restart (the interval is a minute) never got the agent to reconnect: last answer %q, %s", a, describe(ag.status(t)))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A manifest that cannot be read is reported (warming, with the reason) and read again
// later: once it is good the server is ready.
func TestUnreadableManifestIsRetried(t *testing.T) {
	_, conn := secondServer(t, "unread", 20_000)
	m := filepath.Join(sandboxtest.Dir(t), "hot.manifest")
	if err := os.WriteFile(m, []byte("not a manifest\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ag := startAgent(t, agent.Options{Conn: conn, Manifest: m, MinWeight: 20, AgentCheckListen: "127.0.0.1:0"})
	st := ag.waitState(t, "the bad manifest reported", 60*time.Second, func(s agent.Status) bool { return s.Coverage.Error != "" })
	if st.State != agent.Warming || !strings.Contains(st.ReadyNote, "cannot read the target") {
		t.Fatalf("with a bad manifest: %s; coverage %+v", describe(st), st.Coverage)
	}
	// Warming takes the floor's share of the traffic, measured or not: a fleet restarted
	// at once with its object store down answered 0% up everywhere.
	if a := ask(t, ag.check); st.Weight != 20 || a != "20% up\n" {
		t.Fatalf("warming, the coverage unknown: weight %d, agent check %q: want --min-weight's 20%%", st.Weight, a)
	}
	if code, _ := ag.ready(t); code != http.StatusServiceUnavailable {
		t.Fatalf("/ready with a bad manifest: %d", code)
	}
	db, err := connection.Open(context.Background(), conn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.DB.Exec("SELECT COUNT(*) FROM " + sqltext.Table("unread", "wide")); err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.Capture(context.Background(), db, snapshot.Options{Path: m + ".new", Filter: catalog.Filter{Schemas: []string{"unread"}}}); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(m+".new", m); err != nil {
		t.Fatal(err)
	}
	st = ag.waitState(t, "ready once the manifest is good", 60*time.Second, inState(agent.Ready))
	if st.Coverage.Total < 100 || st.Coverage.Error != "" {
		t.Fatalf("after the fix: %s; coverage %+v", describe(st), st.Coverage)
	}
}

// Captures that cannot replace the manifest (its directory does not exist here; a bucket
// that does not exist, wrong credentials) show in the status, not only in the log.
func TestSnapshotFailuresShow(t *testing.T) {
	_, conn := secondServer(t, "snapfail", 5_000)
	dir := filepath.Join(sandboxtest.Dir(t), "gone")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ag := startAgent(t, agent.Options{Conn: conn, Warm: scanWarm(0), SnapshotTo: filepath.Join(dir, "hot.manifest"), SnapshotEvery: time.Second, Filter: catalog.Filter{Schemas: []string{"snapfail"}}})
	if err := os.RemoveAll(dir); err != nil { // checked at the start; gone since
		t.Fatal(err)
	}
	st := ag.waitState(t, "a failed capture reported", 60*time.Second, func(s agent.Status) bool { return s.Snapshot != nil && s.Snapshot.Failures >= 1 })
	if !strings.Contains(st.Snapshot.Error, "capture failed") {
		t.Fatalf("snapshot status %+v", *st.Snapshot)
	}
}

// readTable reads a table whole on the server conn names, so that its pages are resident.
func readTable(t *testing.T, conn connection.Options, schema, table string) {
	t.Helper()
	db, err := connection.Open(context.Background(), conn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.DB.Exec("SELECT COUNT(*) FROM " + sqltext.Table(schema, table)); err != nil {
		t.Fatal(err)
	}
}

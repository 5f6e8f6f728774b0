package follow_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/follow"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/metrics"
	"github.com/innowarm/innowarm/internal/sandbox"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

func TestMain(m *testing.M) { sandboxtest.Main(m, sandboxtest.Options{PoolSize: 64 << 20}) }

// createData builds the same two tables on a server; extra first makes the target's
// tablespace ids differ from the source's.
func createData(t *testing.T, conn *connection.Conn, extraFirst bool) {
	t.Helper()
	ctx := context.Background()
	srv := conn.Server
	stmts := []string{"DROP DATABASE IF EXISTS fw", "CREATE DATABASE fw"}
	if extraFirst {
		stmts = append(stmts, "CREATE TABLE fw.extra (id INT PRIMARY KEY)")
	}
	stmts = append(stmts,
		"CREATE TABLE fw.hot (id INT PRIMARY KEY, k INT, pad CHAR(200), KEY k (k))",
		"INSERT INTO fw.hot SELECT seq, seq MOD 997, REPEAT('h', 200) FROM "+srv.Series("fw", 1, 30000)+" ORDER BY seq",
		"CREATE TABLE fw.cold (id INT PRIMARY KEY, pad CHAR(200))",
		"INSERT INTO fw.cold SELECT seq, REPEAT('c', 200) FROM "+srv.Series("fw", 1, 30000)+" ORDER BY seq",
	)
	for _, q := range stmts {
		if _, err := conn.DB.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// followedPair gives a source whose hot set is the hot table, read after a cold restart, and
// a cold target with the same tables under other tablespace ids; read scans a table of
// the source.
func followedPair(t *testing.T) (source, target *sandbox.Sandbox, read func(table string)) {
	t.Helper()
	ctx := context.Background()
	source = sandboxtest.Server(t)
	createData(t, sandboxtest.Conn(t), false)
	target = sandboxtest.SecondServer(t, 64<<20)
	tgtConn, err := target.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tgtConn.Close()
	createData(t, tgtConn, true)
	if _, err := source.ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	srcConn := sandboxtest.Reconnect(t)
	read = func(table string) {
		t.Helper()
		if _, err := srcConn.DB.ExecContext(ctx, "SELECT SUM(LENGTH(pad)) FROM "+sqltext.Table("fw", table)+" FORCE INDEX (PRIMARY)"); err != nil {
			t.Fatal(err)
		}
	}
	read("hot")
	if _, err := target.ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	return source, target, read
}

// follow brings the source's hot set into the target's pool and says so: in its status, and
// in its Prometheus metrics.
func TestFollowLoadsTheSourceHotSet(t *testing.T) {
	ctx := context.Background()
	source, target, _ := followedPair(t)
	promFile := filepath.Join(sandboxtest.Dir(t), "follow.prom")
	exp, err := metrics.New("127.0.0.1:0", promFile)
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Close()
	m := follow.NewMetrics(exp.Registry)
	var statuses []follow.Status
	o := follow.Options{Source: source.ConnOptions(), Target: target.ConnOptions(), Interval: time.Second, Rounds: 2,
		Filter: catalog.Filter{Schemas: []string{"fw"}}, Log: logx.New(os.Stderr, false)}
	if err := follow.Run(ctx, o, m, func(s follow.Status) {
		statuses = append(statuses, s)
		if err := exp.Flush(); err != nil {
			t.Error(err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if len(statuses) != 2 {
		t.Fatalf("%d rounds reported, want 2", len(statuses))
	}
	first, second := statuses[0], statuses[1]
	t.Logf("round 1: %+v", first)
	t.Logf("round 2: %+v", second)
	if !first.OK || first.HotSetPages < 300 || first.CoverageBefore == nil || *first.CoverageBefore > 0.5 || first.Coverage < 0.95 || first.Loaded < 300 {
		t.Errorf("round 1: want a hot set of 300+ pages brought from cold to 95%%+: %+v", first)
	}
	if !second.OK || second.Coverage < 0.95 || second.CoverageBefore == nil || *second.CoverageBefore < 0.95 || second.Loaded > first.Loaded/10 {
		t.Errorf("round 2: want the hot set still resident and little to load: %+v", second)
	}
	families, err := exp.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, mt := range f.GetMetric() {
			switch {
			case mt.GetGauge() != nil:
				got[f.GetName()] = mt.GetGauge().GetValue()
			case mt.GetCounter() != nil && len(mt.GetLabel()) == 0:
				got[f.GetName()] = mt.GetCounter().GetValue()
			case mt.GetCounter() != nil:
				got[f.GetName()+"{"+mt.GetLabel()[0].GetValue()+"}"] = mt.GetCounter().GetValue()
			}
		}
	}
	if _, ok := got["innowarm_follow_hot_set_cut_pages"]; !ok || got["innowarm_follow_hot_set_cut_pages"] != float64(second.CutPages) || got["innowarm_follow_target_server_pages"] != float64(second.ServerPages) {
		t.Errorf("metrics: the hot set's cut and the server's own pages are not the last round's (%d, %d): %v", second.CutPages, second.ServerPages, got)
	}
	if got["innowarm_follow_coverage_ratio"] < 0.95 || got["innowarm_follow_rounds_total{ok}"] != 2 || got["innowarm_follow_hot_set_pages"] < 300 {
		t.Errorf("metrics: %v", got)
	}
	raw, err := os.ReadFile(promFile)
	if err != nil || !strings.Contains(string(raw), "# TYPE innowarm_follow_coverage_ratio gauge") {
		t.Errorf("metrics file: %v\n%s", err, raw)
	}
}

// A target that is not there: every round reports it and follow goes on, backing off; with
// Rounds, a last round that failed is a runtime failure (exit 1), not a wrong input: a
// socket that does not exist yet is a server that is not up yet.
func TestFollowSurvivesAMissingTarget(t *testing.T) {
	ctx := context.Background()
	source := sandboxtest.Server(t)
	o := follow.Options{Source: source.ConnOptions(), Target: connection.ForSocket(filepath.Join(sandboxtest.Dir(t), "none.sock"), "root", ""),
		Interval: 2 * time.Second, Rounds: 3, Log: logx.New(os.Stderr, false)}
	reg := prometheus.NewRegistry()
	var statuses []follow.Status
	t0 := time.Now()
	err := follow.Run(ctx, o, follow.NewMetrics(reg), func(s follow.Status) { statuses = append(statuses, s) })
	if exitcode.Of(err) != exitcode.Runtime || !strings.Contains(fmt.Sprint(err), "round 3 of 3 failed: target: ") {
		t.Errorf("three failed rounds ended with %v (exit %d), want a runtime failure naming the last round", err, exitcode.Of(err))
	}
	if len(statuses) != 3 {
		t.Fatalf("%d rounds, want 3", len(statuses))
	}
	for _, s := range statuses {
		if s.OK || s.Side != "target" || s.Error == "" {
			t.Errorf("round %d: %+v; want a target failure", s.Round, s)
		}
	}
	// Backoff of 1 s then 2 s between the three rounds.
	if el := time.Since(t0); el < 2500*time.Millisecond || el > 20*time.Second {
		t.Errorf("three failing rounds took %s; want the 1 s + 2 s backoff", el)
	}
}

// SIGTERM (the context's end) stops follow with nil, between or during rounds.
func TestFollowStopsWithItsContext(t *testing.T) {
	source := sandboxtest.Server(t)
	ctx, cancel := context.WithCancel(context.Background())
	// A target not there: the rounds fail and follow waits between them.
	o := follow.Options{Source: source.ConnOptions(), Target: connection.ForSocket(filepath.Join(sandboxtest.Dir(t), "none.sock"), "root", ""),
		Interval: time.Hour, Log: logx.New(os.Stderr, false)}
	done := make(chan error, 1)
	go func() { done <- follow.Run(ctx, o, nil, func(follow.Status) {}) }()
	time.Sleep(500 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("follow ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("follow did not stop within 10 s of its context's end")
	}
}

// A source whose workload shifts reads its new hot set from disk: the next round starts
// then, not at the end of the interval, and brings the new pages over.
func TestFollowStartsEarlyWhenTheSourceShifts(t *testing.T) {
	ctx := context.Background()
	source, target, read := followedPair(t)
	// 4,096-page pools: a sixteenth is 256 pages; the cold table has about 480.
	const interval = 30 * time.Second
	o := follow.Options{Source: source.ConnOptions(), Target: target.ConnOptions(), Interval: interval, Rounds: 2,
		Filter: catalog.Filter{Schemas: []string{"fw"}}, Log: logx.New(os.Stderr, false)}
	var statuses []follow.Status
	t0 := time.Now()
	err := follow.Run(ctx, o, nil, func(s follow.Status) {
		statuses = append(statuses, s)
		if len(statuses) == 1 {
			read("cold") // the shift, right after the first round
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(t0)
	if len(statuses) != 2 {
		t.Fatalf("%d rounds, want 2", len(statuses))
	}
	first, second := statuses[0], statuses[1]
	t.Logf("round 1: %+v", first)
	t.Logf("round 2 after %s: %+v", took.Round(time.Millisecond), second)
	// Early is the event: the round began because the source read, not because the
	// interval was up (a bound on the run's seconds failed beside busy test passes).
	if first.Early || !second.Early || second.EarlyReads < 256 {
		t.Errorf("want the second round early, before the %s interval, after 256+ pages read: took %s, %+v", interval, took, second)
	}
	if !second.OK || second.HotSetPages < first.HotSetPages+400 || second.Loaded < 400 || second.Coverage < 0.95 {
		t.Errorf("want the cold table's pages in the second round's hot set and loaded: %+v", second)
	}
}

// The same server on both sides, through its socket or its TCP port, is refused before any
// round is reported: it would report 100% resident forever. So is a wrong password (no
// retry fixes it), at once, whatever Rounds says.
func TestFollowRefusesWhatNoRetryFixes(t *testing.T) {
	ctx := context.Background()
	source := sandboxtest.Server(t)
	bad := source.ConnOptions()
	bad.User, bad.Password = "follow_pw", "wrong"
	sandboxtest.Exec(t, "CREATE USER IF NOT EXISTS 'follow_pw'@'localhost' IDENTIFIED BY 'right'")
	for _, c := range []struct {
		name   string
		target connection.Options
		rounds int
		want   string
	}{
		{"same socket", source.ConnOptions(), 0, "source and target are the same server (" + sandboxtest.Flavor(t).Identity() + "): follow needs a standby"},
		{"socket and TCP", connection.ForTCP("127.0.0.1", source.Port, "root", ""), 3, "source and target are the same server"},
		{"wrong target password", bad, 0, `target: access denied for user "follow_pw"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := follow.Options{Source: source.ConnOptions(), Target: c.target, Interval: time.Hour, Rounds: c.rounds, Log: logx.New(os.Stderr, false)}
			done := make(chan error, 1)
			reported := 0
			go func() { done <- follow.Run(ctx, o, nil, func(follow.Status) { reported++ }) }()
			select {
			case err := <-done:
				if exitcode.Of(err) != exitcode.Usage || !strings.Contains(fmt.Sprint(err), c.want) || reported != 0 {
					t.Errorf("ended with %v (exit %d) after %d reported rounds; want exit 2, %q, none reported", err, exitcode.Of(err), reported, c.want)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("follow still running after 60 s")
			}
		})
	}
}

// A selection the target lacks entirely (a schema only the source has) is exit 2 before any
// round succeeds, as warm --from's: before, each round "succeeded" with a hot set of 0
// pages, 0.0% resident, and only --json said every page was dropped.
func TestFollowRefusesATargetWithNoneOfTheHotSet(t *testing.T) {
	ctx := context.Background()
	source := sandboxtest.Server(t)
	sandboxtest.Exec(t, "DROP DATABASE IF EXISTS fonly", "CREATE DATABASE fonly",
		"CREATE TABLE fonly.t (id INT PRIMARY KEY, pad CHAR(100))",
		"INSERT INTO fonly.t SELECT seq, 'x' FROM "+sandboxtest.Flavor(t).Series("fonly", 1, 5000)+" ORDER BY seq",
		"SELECT COUNT(*) FROM fonly.t")
	t.Cleanup(func() { sandboxtest.Exec(t, "DROP DATABASE IF EXISTS fonly") })
	target := sandboxtest.SecondServer(t, 0)
	o := follow.Options{Source: source.ConnOptions(), Target: target.ConnOptions(), Interval: time.Hour, Rounds: 2,
		Filter: catalog.Filter{Schemas: []string{"fonly"}}, Log: logx.New(os.Stderr, false)}
	reported := 0
	err := follow.Run(ctx, o, nil, func(follow.Status) { reported++ })
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(fmt.Sprint(err), "target: it has none of the source's") || reported != 0 {
		t.Errorf("ended with %v (exit %d) after %d reported rounds; want exit 2 naming the target, none reported", err, exitcode.Of(err), reported)
	}
}

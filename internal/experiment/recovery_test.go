package experiment_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/experiment"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// TestRecoveryEvents runs the cold and the innowarm-snapshot scenarios for a few seconds on
// tiny data and checks what noise cannot flip: every scenario ran, its curve starts on the
// clock of the server's first answer, the warm started with the server and read pages, the
// hot level and the snapshot were taken, and the report has its chart.
func TestRecoveryEvents(t *testing.T) {
	sb := sandboxtest.Server(t)
	loadWas := sb.LoadAtStartup
	const duration = 2 * time.Second
	res, err := experiment.Recovery(context.Background(), target(t), experiment.RecoveryOptions{
		Schema: "exp_recovery", Rows: 30_000, Clients: 4, Dist: "pareto", Duration: duration, HotDuration: 2 * time.Second,
		Rounds: 1, Scenarios: []string{experiment.RecoverySnapshot, experiment.RecoveryFailover}, Dir: sandboxtest.Dir(t), Progress: quiet(),
		PoolPagesEvery: time.Second,
	})
	defer sandboxtest.Reconnect(t)
	if err != nil {
		t.Fatal(err)
	}
	if sb.LoadAtStartup != loadWas {
		t.Errorf("the sandbox's load at startup was left %v", sb.LoadAtStartup)
	}
	if len(res.Scenarios) != 3 || res.Scenarios[0].ID != experiment.RecoveryCold || res.Scenarios[1].ID != experiment.RecoverySnapshot || res.Scenarios[2].ID != experiment.RecoveryFailover {
		t.Fatalf("scenarios %+v", res.Scenarios)
	}
	if res.HotQPS <= 0 {
		t.Errorf("hot level %v", res.HotQPS)
	}
	if res.Manifest == nil || res.HotSet < 1 || res.HotBytes != res.HotSet*int64(res.PageSize) {
		t.Errorf("hot set: %d pages, %d bytes, manifest %v", res.HotSet, res.HotBytes, res.Manifest)
	}
	for _, s := range res.Scenarios {
		if s.Skipped != "" || len(s.Runs) != 1 {
			t.Fatalf("%s: skipped %q, %d runs", s.ID, s.Skipped, len(s.Runs))
		}
		run := s.Runs[0]
		if len(run.Curve) == 0 {
			t.Fatalf("%s: no curve", s.ID)
		}
		// The clock starts when the server answered: the traffic's first second starts at or
		// after it, and the curve ends near the duration after it.
		first, last := run.Curve[0], run.Curve[len(run.Curve)-1]
		if start := first.T - first.Len; start < 0 || start > duration.Seconds() {
			t.Errorf("%s: the traffic started %.2f s after the server answered", s.ID, start)
		}
		if last.T < duration.Seconds()-0.5 {
			t.Errorf("%s: the curve ends at %.2f s, the traffic ran %s", s.ID, last.T, duration)
		}
		// The window ends at the duration (an interval most of which lies in it is its last;
		// a busy machine stretches an interval); the traffic's further seconds are the run's
		// hot level.
		if last.T-last.Len/2 > duration.Seconds() || run.HotLevel.QPS <= 0 || run.HotLevel.Seconds < 1 || run.HotLevel.PoolPages < 1 {
			t.Errorf("%s: window ends at %.2f s, hot level %+v", s.ID, last.T, run.HotLevel)
		}
		if run.Metrics.Window != last.T || run.Metrics.WorstP95 <= 0 {
			t.Errorf("%s: metrics %+v", s.ID, run.Metrics)
		}
		if len(run.Pool) == 0 {
			t.Errorf("%s: the pool was not sampled", s.ID)
		}
		for i := 1; i < len(run.Pool); i++ {
			if run.Pool[i].Misses < run.Pool[i-1].Misses {
				t.Errorf("%s: the pool's missed pages went down, %+v then %+v", s.ID, run.Pool[i-1], run.Pool[i])
				break
			}
		}
	}
	// A cold pool under traffic reads what the queries miss.
	if cold := res.Scenario(experiment.RecoveryCold).Runs[0].Pool; len(cold) == 0 || cold[len(cold)-1].Misses < 1 {
		t.Errorf("the cold run's pool samples count no missed pages: %+v", cold)
	} else {
		// Every missed page is a data-file read of the server's, and its process read at
		// least those pages' bytes (the sandbox runs on this host).
		last := cold[len(cold)-1]
		if last.Reads < last.Misses || last.ServerReadBytes < last.Misses*int64(res.PageSize) {
			t.Errorf("the cold run's last sample: %d missed pages, %d data reads, %d bytes read by the server", last.Misses, last.Reads, last.ServerReadBytes)
		}
		for i, p := range cold {
			if p.Free < 0 || p.Pending < 0 || p.Running < 1 || p.CgroupReads < -1 || p.ReadAhead < 0 {
				t.Errorf("a cold run's pool sample: %+v", p)
				break
			}
			// The data directory's block device (none on a file system without one: -1
			// throughout) completed the server's reads, every process's, so far.
			if (p.DeviceReads < 0) != (cold[0].DeviceReads < 0) || p.DeviceInFlight < -1 || i > 0 && p.DeviceReads < cold[i-1].DeviceReads {
				t.Errorf("a cold run's device counters: %+v after %+v", p, cold[max(i-1, 0)])
				break
			}
		}
		if last.DeviceReads == 0 {
			t.Errorf("the cold run's data directory's device completed no read while the server missed %d pages", last.Misses)
		}
	}
	checkTurnover(t, res)
	w := res.Scenario(experiment.RecoverySnapshot).Runs[0].Warm
	// It may read nothing itself: the traffic, arriving as it starts, can read this small
	// table's pages first (a loaded CI run on MySQL 9.7: 69 of 414 pages left to request,
	// all of them resident before the paced loader got to them).
	if w == nil || w.Error != "" || w.PagesRead < 1 && !strings.Contains(w.Detail, "→ 100.0%") {
		t.Fatalf("the warm from the snapshot: %+v", w)
	}
	// It waited for the server and began about when the server answered, beside the traffic.
	if w.Start < -1 || w.Start > duration.Seconds() {
		t.Errorf("the warm began %.2f s after the server answered", w.Start)
	}
	if res.Scenario(experiment.RecoveryCold).Runs[0].Warm != nil {
		t.Errorf("the cold run has a warm")
	}
	// The promoted standby: follow kept it (a round ended well and loaded pages) before the
	// traffic moved to it, and the primary came back for what follows.
	fo := res.Scenario(experiment.RecoveryFailover).Runs[0].Follow
	if fo == nil || fo.Rounds < 1 || fo.Loaded < 1 || fo.Coverage <= 0 {
		t.Fatalf("follow before the failover: %+v", fo)
	}
	// Follow was not told of the failover: it ran on through the standby's window, its
	// captures failing on the stopped primary (or, at least, its round in flight ending).
	if fo.FailoverAt < fo.Seconds || fo.FailedAfter+len(fo.RoundLog)-fo.Rounds-fo.Failed < 1 {
		t.Errorf("follow after the failover at %.2f s (it kept the standby %.2f s before): %d captures failed, rounds %+v", fo.FailoverAt, fo.Seconds, fo.FailedAfter, fo.RoundLog)
	}
	// The primary it followed had served the scenario before it (its window and hot
	// level): not restarted for the standby's copy in between, as the first round's was.
	if prev := duration + 2*time.Second; fo.PrimaryUptime < prev.Seconds() {
		t.Errorf("the primary was up %.0f s when follow started, less than the %s of traffic the scenario before it served", fo.PrimaryUptime, prev)
	}
	if _, err := sandboxtest.Server(t).Connect(context.Background()); err != nil {
		t.Errorf("the primary is not back after the failover: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(sandboxtest.Dir(t), "standby")); len(entries) != 0 {
		t.Errorf("the standby's directory was left with %d entries", len(entries))
	}
	checkReport(t, res, "recovery-curve")
}

// TestRecoveryFailoverFromUnsettledPrimary: with UnsettledPrimary the primary restarts cold
// as follow starts, so follow copies a hot set still forming: the primary was just up when
// follow started (not the cold scenario's traffic before it), its own traffic missed pages
// until it failed, follow still ended a round before the failover, and the report says so.
func TestRecoveryFailoverFromUnsettledPrimary(t *testing.T) {
	const duration, hot = 2 * time.Second, 2 * time.Second
	res, err := experiment.Recovery(context.Background(), target(t), experiment.RecoveryOptions{
		Schema: "exp_recovery_unsettled", Rows: 20_000, Clients: 4, Dist: "pareto", Duration: duration, HotDuration: hot,
		Rounds: 1, Scenarios: []string{experiment.RecoveryFailover}, UnsettledPrimary: 2 * time.Second,
		Dir: sandboxtest.Dir(t), Progress: quiet(),
	})
	defer sandboxtest.Reconnect(t)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Scenario(experiment.RecoveryFailover)
	if s == nil || len(s.Runs) != 1 || s.Runs[0].Follow == nil {
		t.Fatalf("scenarios %+v", res.Scenarios)
	}
	fo := s.Runs[0].Follow
	// Without the restart the primary would have been up through the cold scenario's
	// traffic (its window and hot level) at least. A restarted one is up for its start-up
	// only, which a busy machine stretches (6 s in one make test): the bound allows the
	// cold scenario's own restart time for it.
	cold := res.Scenario(experiment.RecoveryCold)
	if cold == nil || len(cold.Runs) != 1 || cold.Runs[0].Restart == nil {
		t.Fatalf("no cold run before the failover: %+v", res.Scenarios)
	}
	if before := (duration + hot).Seconds() + cold.Runs[0].Restart.Seconds; fo.PrimaryUptime >= before {
		t.Errorf("the primary was up %.0f s when follow started: not restarted (the cold run before served %s after a %.1f s restart)",
			fo.PrimaryUptime, duration+hot, cold.Runs[0].Restart.Seconds)
	}
	if fo.PrimaryPoolPages < 1 || fo.PrimaryMisses < 1 {
		t.Errorf("the restarted primary's pool when it failed: %d pages, %d missed since follow started", fo.PrimaryPoolPages, fo.PrimaryMisses)
	}
	if fo.Rounds < 1 || fo.Loaded < 1 {
		t.Errorf("follow before the failover: %+v", fo)
	}
	if res.Params.UnsettledPrimary != 2 || !strings.Contains(res.Markdown(), "Failover from an unsettled primary") {
		t.Errorf("the report does not say the primary was unsettled: params %+v", res.Params)
	}
	if _, err := sandboxtest.Server(t).Connect(context.Background()); err != nil {
		t.Errorf("the primary is not back after the failover: %v", err)
	}
}

// TestRecoveryOpenLoop: with --rate 50% the experiment first measures the hot throughput
// closed loop, then restarts under traffic that arrives at half of it whatever the
// server's speed: the traffic never runs ahead of its schedule, and each run reports when
// its p95 settled and how many queries were slower than 10x the hot p95. One of the four
// clients writes (read-write transactions) beside the point selects, and each run says what
// it did.
func TestRecoveryOpenLoop(t *testing.T) {
	const duration = 2 * time.Second
	res, err := experiment.Recovery(context.Background(), target(t), experiment.RecoveryOptions{
		Schema: "exp_recovery_open", Rows: 20_000, Clients: 4, Dist: "pareto", Duration: duration, HotDuration: 2 * time.Second,
		Rounds: 1, Scenarios: []string{}, RateOfHot: 0.5, WriteClients: 1, Dir: sandboxtest.Dir(t), Progress: quiet(),
	})
	defer sandboxtest.Reconnect(t)
	if err != nil {
		t.Fatal(err)
	}
	p := res.Params
	if p.CalibratedQPS <= 0 || p.Rate != 0.5*p.CalibratedQPS || !strings.HasPrefix(p.Traffic, "open loop") {
		t.Fatalf("rate %.1f of a calibrated %.1f qps (%s)", p.Rate, p.CalibratedQPS, p.Traffic)
	}
	if len(res.Scenarios) != 1 || len(res.Scenarios[0].Runs) != 1 {
		t.Fatalf("scenarios %+v", res.Scenarios)
	}
	run := res.Scenarios[0].Runs[0]
	if len(run.Curve) == 0 {
		t.Fatal("no curve")
	}
	// Open loop: by the end of the window at most the schedule's queries ran (plus each
	// client's first, and the intervals' rounding).
	var served float64
	for _, pt := range run.Curve {
		served += pt.QPS * pt.Len
	}
	last := run.Curve[len(run.Curve)-1]
	if limit := p.Rate*last.T*1.05 + 4 + 1; served > limit {
		t.Errorf("%.0f queries by %.2f s at %.1f/s: more than the schedule's %.0f", served, last.T, p.Rate, limit)
	}
	m := run.Metrics
	if run.HotLevel.P95 <= 0 || m.SlowMs != 10*run.HotLevel.P95 || m.Slow < 0 || (m.P95Settled != -1 && (m.P95Settled < 0 || m.P95Settled > m.Window)) {
		t.Errorf("open-loop metrics %+v (hot p95 %.3f ms)", m, run.HotLevel.P95)
	}
	var sum int64
	for _, pt := range run.Curve {
		sum += pt.Slow
	}
	if sum != m.Slow {
		t.Errorf("the curve's slow queries add up to %d, the metrics say %d", sum, m.Slow)
	}
	if w := run.Writes; w == nil || w.Clients != 1 || w.Transactions < 1 || w.TPS <= 0 || !strings.Contains(p.Traffic, "1 clients of read-write") {
		t.Errorf("the write client: %+v; traffic %q", w, p.Traffic)
	}
	tbl := res.Table()
	if h := tbl.Header; h[len(h)-2] != "queries > 10× hot p95" || h[len(h)-1] != "write tps (deadlocks)" || len(tbl.Rows[0]) != len(h) {
		t.Errorf("table header %v, row %v", h, tbl.Rows[0])
	}
}

func TestValidateUnsettledPrimary(t *testing.T) {
	base := experiment.RecoveryOptions{Rows: 1000, Clients: 2, Dist: "pareto", Duration: 2 * time.Second, HotDuration: 2 * time.Second, Rounds: 1}
	for _, c := range []struct {
		unsettled time.Duration
		scenarios []string
		ok        bool
	}{
		{0, nil, true},
		{30 * time.Second, nil, true},
		{30 * time.Second, []string{experiment.RecoveryFailover}, true},
		{30 * time.Second, []string{experiment.RecoveryInnoDB100}, false},
		{500 * time.Millisecond, nil, false},
		{-time.Second, nil, false},
	} {
		o := base
		o.UnsettledPrimary, o.Scenarios = c.unsettled, c.scenarios
		if err := experiment.ValidateRecovery(o); (err == nil) != c.ok {
			t.Errorf("unsettled %s, scenarios %v: error %v, want ok=%v", c.unsettled, c.scenarios, err, c.ok)
		}
	}
}

// checkTurnover checks the pool's lists taken every second (--pool-pages-every) in the cold
// and failover runs: each list is the one before it less what left plus what came in, a
// cold pool gains the pages its traffic reads, and the standby starts from follow's pages.
func checkTurnover(t *testing.T, res *experiment.RecoveryResult) {
	t.Helper()
	if got := res.Scenario(experiment.RecoverySnapshot).Runs[0].Turnover; got != nil {
		t.Errorf("the warm's run took lists of the pool beside its native load: %+v", got)
	}
	for _, id := range []string{experiment.RecoveryCold, experiment.RecoveryFailover} {
		tv := res.Scenario(id).Runs[0].Turnover
		// A list is a dump of the pool: on a busy machine one may take most of the 4 s.
		if len(tv) < 1 {
			t.Errorf("%s: no turnover in 4 s of traffic, lists every second", id)
			continue
		}
		in := 0
		for i, x := range tv {
			in += x.In
			decIn, decOut := 0, 0
			for d := range 10 {
				decIn += x.InStartDecile[d]
				decOut += x.OutStartDecile[d]
			}
			if x.To <= x.From || x.InBack > x.In || x.InStart > x.InBack || decIn != x.InStart || x.OutStart > x.Out || decOut != x.OutStart || x.StartLeft > x.Pages {
				t.Errorf("%s: turnover %+v", id, x)
			}
			if i > 0 && (x.From != tv[i-1].To || x.Pages != tv[i-1].Pages-x.Out+x.In) {
				t.Errorf("%s: %d pages then %+v: not the list before it less what left plus what came in", id, tv[i-1].Pages, x)
			}
		}
		t.Logf("%s: %d lists of the pool a second apart, %d pages came in, the last list %d pages (%d of the first)", id, len(tv)+1, in, tv[len(tv)-1].Pages, tv[len(tv)-1].StartLeft)
		switch id {
		case experiment.RecoveryCold:
			if in < 1 {
				t.Errorf("cold: no page came into the pool under traffic: %+v", tv)
			}
		case experiment.RecoveryFailover:
			if tv[0].StartLeft < 1 {
				t.Errorf("failover: the standby held none of follow's pages after a second: %+v", tv[0])
			}
		}
	}
}

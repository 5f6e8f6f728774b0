package follow_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/follow"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/pacing"
	"github.com/innowarm/innowarm/internal/sandbox"
)

// clientTraffic runs point statements on sb from trafficClients clients, each about 200 a
// second on an idle machine, until the returned func is called; it returns how many ran.
// It returns once trafficClients*20 have run, so that a look at the target finds the traffic
// running however late a busy machine starts the clients. Several clients, because follow
// counts a target as serving at 20 statements a second over a look of 0.3 s: one client ran
// 47 a second beside two busy test passes, and a machine a few times slower would take it
// for idle.
func clientTraffic(t *testing.T, sb *sandbox.Sandbox) func() int64 {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := sb.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int64
	var wg sync.WaitGroup
	for range trafficClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				var one int
				if err := conn.DB.QueryRowContext(ctx, "SELECT 1").Scan(&one); err == nil {
					ran.Add(1)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	stop := func() int64 {
		cancel()
		wg.Wait()
		conn.Close()
		return ran.Load()
	}
	for deadline := time.Now().Add(time.Minute); ran.Load() < trafficClients*20; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("the %d clients ran %d statements in a minute", trafficClients, ran.Load())
		}
	}
	return stop
}

const trafficClients = 4

// waitForOldBlocksRaised waits until innodb_old_blocks_pct is raised above its default, as
// a load into an idle pool does (warm.RunOptions.ReplaceStale), with SHOW statements only.
func waitForOldBlocksRaised(t *testing.T, conn *connection.Conn, limit time.Duration) bool {
	t.Helper()
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var v int
		if err := conn.DB.QueryRow("SHOW GLOBAL VARIABLES LIKE 'innodb_old_blocks_pct'").Scan(new(string), &v); err != nil {
			t.Fatal(err)
		}
		if v > 37 {
			return true
		}
	}
	return false
}

// waitForPagesRead waits until sb has read n pages from disk since the call. It reads SHOW
// statements only: bufferpool.ReadTotals's SELECT @@... would count as client traffic.
func waitForPagesRead(t *testing.T, conn *connection.Conn, n int64, limit time.Duration) bool {
	t.Helper()
	ctx := context.Background()
	read := func() int64 {
		st, err := conn.GlobalStatus(ctx, "Innodb_buffer_pool_reads", "Innodb_buffer_pool_read_ahead")
		if err != nil {
			t.Fatal(err)
		}
		return st["innodb_buffer_pool_reads"] + st["innodb_buffer_pool_read_ahead"]
	}
	start := read()
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if read()-start >= n {
			return true
		}
	}
	return false
}

// A standby promoted while follow loads it: the load, planned for an idle pool, stops once
// the target serves traffic, and the rest of the round's pages go hottest first under the
// pacing for traffic. The load is held to 1 MB/s (64 pages a second) so that the traffic
// starts while it runs, whatever the machine's speed.
func TestFollowReplansWhenTheTargetGetsTraffic(t *testing.T) {
	ctx := context.Background()
	source, target, _ := followedPair(t)
	tgtConn, err := target.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tgtConn.Close()
	var logs strings.Builder // written by follow's goroutine until Run returns
	o := follow.Options{Source: source.ConnOptions(), Target: target.ConnOptions(), Interval: time.Second, Rounds: 1,
		Filter: catalog.Filter{Schemas: []string{"fw"}}, Log: logx.New(&logs, false), Method: "native",
		Pacing: pacing.Config{MaxRate: 1 << 20}, PacingChosen: true}
	var switches atomic.Int32
	pct := watchOldBlocksPct(t, tgtConn)
	o.OnSwitch = func(s follow.Status) {
		if s.TrafficArrived >= 20 {
			switches.Add(1)
			pct.mark()
		}
	}
	var statuses []follow.Status
	done := make(chan error, 1)
	go func() { done <- follow.Run(ctx, o, nil, func(s follow.Status) { statuses = append(statuses, s) }) }()
	// The hot table is about 400 pages: 6 s at 1 MB/s. Traffic starts after 100 of them,
	// counted from the load's start (the old sublist raised for it): what the server reads
	// before, opening the tables for the round's dictionary queries, is not the load's.
	if !waitForOldBlocksRaised(t, tgtConn, 60*time.Second) {
		t.Fatal("the target's old sublist was not raised for a load within 60 s of follow's start")
	}
	if !waitForPagesRead(t, tgtConn, 100, 60*time.Second) {
		t.Fatal("the target read no 100 pages within 60 s of the load's start")
	}
	stopTraffic := clientTraffic(t, target)
	err = <-done
	ran := stopTraffic()
	if err != nil {
		t.Fatal(err)
	}
	os.Stderr.WriteString(logs.String())
	if len(statuses) != 1 {
		t.Fatalf("%d rounds, want 1", len(statuses))
	}
	s := statuses[0]
	t.Logf("round: %+v; %d client statements ran", s, ran)
	if !s.OK {
		t.Fatalf("round failed: %+v", s)
	}
	if s.TargetTraffic >= 20 {
		t.Errorf("the target ran %.0f statements/s as the round began; want it idle", s.TargetTraffic)
	}
	if s.TrafficArrived < 20 || s.TrafficArrivedAfter <= 0 || s.Pacing != "as asked" {
		t.Errorf("want the load stopped for the traffic (20+ statements/s) and the rest paced as asked: %+v", s)
	}
	if s.LoadedBeforeTraffic < 100 || s.LoadedBeforeTraffic >= s.HotSetPages-50 {
		t.Errorf("want the traffic to arrive mid-load: %d of %d pages loaded before it", s.LoadedBeforeTraffic, s.HotSetPages)
	}
	if s.Coverage < 0.95 || s.Loaded < s.HotSetPages*9/10 {
		t.Errorf("want the rest of the hot set loaded after the switch: coverage %.3f, %d of %d pages loaded", s.Coverage, s.Loaded, s.HotSetPages)
	}
	if n := switches.Load(); n != 1 {
		t.Errorf("OnSwitch was called %d times with the traffic's rate, want once", n)
	}
	if !strings.Contains(logs.String(), "the target began serving") {
		t.Errorf("no log line says the load switched:\n%s", logs.String())
	}
	// The load for the idle target raised the old sublist; the rest, under traffic, keeps
	// the server's own LRU policy.
	before, after := pct.stop()
	if !slices.Contains(before, 95) {
		t.Errorf("innodb_old_blocks_pct before the switch: %v, want 95 seen while the idle target loaded", before)
	}
	if len(after) == 0 || slices.Max(after) != 37 || slices.Min(after) != 37 {
		t.Errorf("innodb_old_blocks_pct after the switch: %v, want the server's 37 throughout", after)
	}
}

// oldBlocksPct records a target's innodb_old_blocks_pct, before and after a mark.
type oldBlocksPct struct {
	mu            sync.Mutex
	marked        bool
	before, after []int
	quit          chan struct{}
	done          chan struct{}
}

// watchOldBlocksPct polls the variable every 20 ms with SHOW statements only: a SELECT
// would count as the target's client traffic.
func watchOldBlocksPct(t *testing.T, conn *connection.Conn) *oldBlocksPct {
	w := &oldBlocksPct{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			var v int
			if err := conn.DB.QueryRow("SHOW GLOBAL VARIABLES LIKE 'innodb_old_blocks_pct'").Scan(new(string), &v); err == nil {
				w.mu.Lock()
				if w.marked {
					w.after = append(w.after, v)
				} else {
					w.before = append(w.before, v)
				}
				w.mu.Unlock()
			}
			select {
			case <-w.quit:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() {
		select {
		case <-w.done:
		default:
			close(w.quit)
			<-w.done
		}
	})
	return w
}

func (w *oldBlocksPct) mark() {
	w.mu.Lock()
	w.marked = true
	w.mu.Unlock()
}

// stop ends the watch and returns what it saw before and after the mark.
func (w *oldBlocksPct) stop() (before, after []int) {
	close(w.quit)
	<-w.done
	return w.before, w.after
}

// A target that serves traffic as the round begins is loaded under --nice when no pacing
// was asked for, and says so.
func TestFollowPacesATargetThatServesTraffic(t *testing.T) {
	ctx := context.Background()
	source, target, _ := followedPair(t)
	stopTraffic := clientTraffic(t, target)
	defer stopTraffic()
	o := follow.Options{Source: source.ConnOptions(), Target: target.ConnOptions(), Interval: time.Second, Rounds: 1,
		Filter: catalog.Filter{Schemas: []string{"fw"}}, Log: logx.New(os.Stderr, false)}
	var statuses []follow.Status
	tgtConn, err := target.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tgtConn.Close()
	pct := watchOldBlocksPct(t, tgtConn)
	pct.mark()
	if err := follow.Run(ctx, o, nil, func(s follow.Status) { statuses = append(statuses, s) }); err != nil {
		t.Fatal(err)
	}
	if _, seen := pct.stop(); len(seen) == 0 || slices.Max(seen) != 37 {
		t.Errorf("innodb_old_blocks_pct while follow loaded a target serving traffic: %v, want the server's 37 throughout", seen)
	}
	if len(statuses) != 1 {
		t.Fatalf("%d rounds, want 1", len(statuses))
	}
	s := statuses[0]
	t.Logf("round: %+v", s)
	if !s.OK || s.TargetTraffic < 20 || s.Pacing != "--nice: the target serves traffic" || s.TrafficArrived != 0 {
		t.Errorf("want a round paced by --nice for the traffic it saw: %+v", s)
	}
	if s.Coverage < 0.95 {
		t.Errorf("want the hot set loaded under --nice: coverage %.3f", s.Coverage)
	}
}

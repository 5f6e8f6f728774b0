package pacing_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/pacing"
	"github.com/innowarm/innowarm/internal/progress"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/warm"
)

// The pool is smaller than the max-rate test's table, so its scans keep reading the disk.
func TestMain(m *testing.M) { sandboxtest.Main(m, sandboxtest.Options{PoolSize: 32 << 20}) }

func TestParseBounds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"", ""},
		{"  ", ""},
		{"Threads_running=25", "Threads_running=25"},
		{"Threads_running=25,Innodb_row_lock_current_waits=5", "Threads_running=25 Innodb_row_lock_current_waits=5"},
		{" Threads_running : 25 , Threads_connected=1.5 ", "Threads_running=25 Threads_connected=1.5"},
		{"Threads_running", "Threads_running (+20%)"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			bs, err := pacing.ParseBounds(tc.in)
			if err != nil {
				t.Errorf("%q: %v", tc.in, err)
				return
			}
			var got []string
			for _, b := range bs {
				got = append(got, b.String())
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("%q: %q, want %q", tc.in, strings.Join(got, " "), tc.want)
			}
		})
	}
	for _, tc := range []struct{ in, mention string }{
		{"Threads_running=abc", `"Threads_running=abc"`},
		{"Threads_running=-1", "must be a number >= 0"},
		{"Threads_running=25,", "empty part"},
		{"Threads running=25", `"Threads running"`},
		{"=25", `""`},
		{"Threads_running=1,threads_RUNNING=2", "given twice"},
		{"x';DROP TABLE t;--=1", "not a status variable name"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, err := pacing.ParseBounds(tc.in)
			if err == nil {
				t.Errorf("%q: no error", tc.in)
				return
			}
			if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("%q: %v (exit %d), want a usage error mentioning %s", tc.in, err, exitcode.Of(err), tc.mention)
			}
		})
	}
}

func TestNewChecksVariables(t *testing.T) {
	conn := sandboxtest.Conn(t)
	ctx := context.Background()
	for _, tc := range []struct {
		cfg     pacing.Config
		mention string
	}{
		{pacing.Config{MaxLoad: []pacing.Bound{{Name: "Threads_running", Limit: 5}, {Name: "No_such_status", Limit: 1}}}, "max load No_such_status=1: no status variable No_such_status"},
		{pacing.Config{Critical: []pacing.Bound{{Name: "Innodb_buffer_pool_dump_status", Limit: 1}}}, "not a number"},
	} {
		t.Run(tc.mention, func(t *testing.T) {
			g, err := pacing.New(ctx, conn, tc.cfg)
			if err == nil {
				g.Close()
			}
			for what, err := range map[string]error{"New": err, "Check": pacing.Check(ctx, conn, tc.cfg)} {
				if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), tc.mention) {
					t.Errorf("%s(%+v): %v, want a usage error mentioning %q", what, tc.cfg, err, tc.mention)
				}
			}
		})
	}
	// No pacing asked: a nil governor that never holds back.
	g, err := pacing.New(ctx, conn, pacing.Config{Workers: 4})
	if err != nil || g != nil {
		t.Fatalf("New without pacing: %v, %v", g, err)
	}
	if err := g.Acquire(ctx, 0); err != nil || g.Status() != "" {
		t.Errorf("nil governor: %v %q", err, g.Status())
	}
	g.Release(0)
	g.Close()
	if err := pacing.Check(ctx, conn, pacing.Config{MaxLoad: []pacing.Bound{{Name: "threads_RUNNING", Limit: 5}}, MaxRate: 1 << 20}); err != nil {
		t.Errorf("Check of good bounds: %v", err)
	}
	// Names are case-insensitive, as the server's are; a bare name is relative.
	g = governor(t, conn, pacing.Config{MaxLoad: []pacing.Bound{{Name: "THREADS_RUNNING", Relative: true}}})
	if err := acquireWithin(g, 0, time.Second); err != nil {
		t.Errorf("idle server, relative bound: %v (%s)", err, g.Status())
	}
}

// governor starts one for the test and closes it at the end.
func governor(t *testing.T, conn *connection.Conn, cfg pacing.Config) *pacing.Governor {
	t.Helper()
	// An earlier test's killed statements may still be ending: start from a quiet server.
	awaitQuiet(t, conn)
	g, err := pacing.New(context.Background(), conn, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

// load keeps n sessions running stmt until the returned stop is called.
func load(t *testing.T, conn *connection.Conn, n int, stmt string) (stop func()) {
	t.Helper()
	return loadArgs(t, conn, n, stmt, func(int, int) []any { return nil })
}

// loadArgs is load with the arguments of session w's i-th statement.
func loadArgs(t *testing.T, conn *connection.Conn, n int, stmt string, args func(w, i int) []any) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var failed atomic.Value // the first error of the load's own statements
	for i := 0; i < n; i++ {
		s, err := conn.NewSession(ctx)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			defer s.Close()
			for j := 0; ctx.Err() == nil; j++ {
				var v any
				if err := s.QueryRow(ctx, stmt, args(w, j), &v); err != nil && ctx.Err() == nil {
					failed.CompareAndSwap(nil, err)
				}
			}
		}(i)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			// A load whose statement fails (a function the server lacks) is no load.
			if err, _ := failed.Load().(error); err != nil && !strings.Contains(err.Error(), "interrupted") {
				t.Errorf("the test's load %q failed: %v", stmt, err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return cond()
}

// eventWait bounds the waits for an event (statements running, a sample taken) only
// against a hang: on an idle machine each takes well under a second.
const eventWait = 2 * time.Minute

// awaitRunning waits until n sessions run stmt on the server.
func awaitRunning(t *testing.T, conn *connection.Conn, n int, stmt string) {
	t.Helper()
	if !waitFor(eventWait, func() bool {
		var running int
		conn.DB.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO = ?", stmt).Scan(&running)
		return running >= n
	}) {
		t.Fatalf("%d sessions running %q never showed in the processlist", n, stmt)
	}
}

// awaitSamples waits until the governor has read the server's status n more times: after
// an event on the server, the second sample surely started after it (the first may have
// been in flight).
func awaitSamples(t *testing.T, g *pacing.Governor, n int) {
	t.Helper()
	from := g.Stats().Samples
	if !waitFor(eventWait, func() bool { return g.Stats().Samples >= from+n }) {
		t.Fatalf("the governor took no %d samples (%d so far)", n, g.Stats().Samples-from)
	}
}

// withinSamples says whether cond holds before the governor has read the server's status n
// more times: a bound on the governor's decisions in its own steps, which a busy machine
// stretches as it stretches the decisions.
func withinSamples(g *pacing.Governor, n int, cond func() bool) bool {
	from := g.Stats().Samples
	waitFor(eventWait, func() bool { return cond() || g.Stats().Samples >= from+n })
	return cond()
}

// everySample calls each with the governor's stats after each of its next n samples (or
// fewer, on a busy machine, when samples come faster than this polls) until each says
// done, and says whether it did.
func everySample(g *pacing.Governor, n int, each func(pacing.Stats) bool) bool {
	from := g.Stats().Samples
	last, done := from, false
	waitFor(eventWait, func() bool {
		if st := g.Stats(); st.Samples > last {
			last = st.Samples
			done = each(st)
		}
		return done || last >= from+n
	})
	return done
}

// quantile is the q-quantile of xs (nearest rank).
func quantile(xs []float64, q float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// awaitQuiet waits until no statement but the test's own and the server's daemons runs
// (MySQL's event scheduler is ON by default and counts in Threads_running; MariaDB's is
// OFF).
func awaitQuiet(t *testing.T, conn *connection.Conn) {
	t.Helper()
	var daemons int
	if err := conn.DB.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND = 'Daemon'").Scan(&daemons); err != nil {
		t.Fatal(err)
	}
	if !waitFor(eventWait, func() bool {
		var name string
		var running int
		conn.DB.QueryRow("SHOW GLOBAL STATUS LIKE 'Threads_running'").Scan(&name, &running)
		return running <= 1+daemons
	}) {
		t.Fatalf("the sandbox never went quiet (Threads_running > 1 + %d daemons)", daemons)
	}
}

func acquireWithin(g *pacing.Governor, worker int, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return g.Acquire(ctx, worker)
}

// TestMaxLoadPausesAndResumes: sessions sleeping in SELECT SLEEP() hold Threads_running
// above the bound; Acquire blocks and Status says why; when they end, a waiting Acquire
// returns at the first sample that sees the server quiet. The test counts samples, not
// seconds: a busy machine delays both the load's end and the samples.
func TestMaxLoadPausesAndResumes(t *testing.T) {
	conn := sandboxtest.Conn(t)
	g := governor(t, conn, pacing.Config{MaxLoad: []pacing.Bound{{Name: "Threads_running", Limit: 3}}, Workers: 2})
	if err := acquireWithin(g, 0, eventWait); err != nil {
		t.Fatalf("idle server: Acquire: %v (%s)", err, g.Status())
	}
	g.Release(0)

	const sleep = "SELECT SLEEP(60)"
	stop := load(t, conn, 6, sleep)
	awaitRunning(t, conn, 6, sleep)
	awaitSamples(t, g, 2)
	st := g.Status()
	if !strings.HasPrefix(st, "Threads_running=") || !strings.HasSuffix(st, "> 3") {
		t.Fatalf("6 sleeping sessions, bound Threads_running=3: status %q, want Threads_running=N > 3", st)
	}
	if err := acquireWithin(g, 0, 1500*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire while over the bound: %v, want it to block", err)
	}

	resumedAt := make(chan int, 1) // the governor's sample count when Acquire returned
	go func() {
		if err := acquireWithin(g, 1, eventWait); err != nil {
			t.Errorf("Acquire after the load ended: %v", err)
		}
		resumedAt <- g.Stats().Samples
	}()
	stop()
	awaitQuiet(t, conn)
	quietAt := g.Stats().Samples
	// The sample after quietAt may have read the status before the load's end; the one
	// after that cannot have (a third: Stats read after the wake-up, late on a busy machine).
	if at := <-resumedAt; at > quietAt+3 {
		t.Errorf("resumed at sample %d, %d samples after the server was quiet; want the first sample that saw it quiet", at, at-quietAt)
	}
	if s := g.Stats(); s.Pauses < 1 || s.PausedSeconds <= 0 {
		t.Errorf("stats %+v: no pause recorded", s)
	}
}

// TestOwnSessionsDoNotCount: the warm's busy sessions are running threads, but they must
// not pause the warm itself.
func TestOwnSessionsDoNotCount(t *testing.T) {
	conn := sandboxtest.Conn(t)
	g := governor(t, conn, pacing.Config{MaxLoad: []pacing.Bound{{Name: "Threads_running", Limit: 1}}, Workers: 3})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	const ownSleep = "SELECT SLEEP(60)"
	for w := 0; w < 3; w++ {
		if err := acquireWithin(g, w, eventWait); err != nil {
			t.Fatalf("worker %d: %v (%s)", w, err, g.Status())
		}
		s, err := conn.NewSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			defer s.Close()
			var v any
			_ = s.QueryRow(ctx, ownSleep, nil, &v) // ended by cancel
			g.Release(w)
		}(w)
	}
	awaitRunning(t, conn, 3, ownSleep)
	awaitSamples(t, g, 2)
	st, stats := g.Status(), g.Stats()
	cancel()
	wg.Wait()
	if stats.MostOwnSessions != 3 {
		t.Fatalf("no sample saw the three warm sessions busy (%d samples, at most %d busy): the test proved nothing", stats.Samples, stats.MostOwnSessions)
	}
	if st != "" || stats.Pauses != 0 {
		t.Errorf("three busy warm sessions under Threads_running=1: status %q, %d pauses; want none", st, stats.Pauses)
	}
	// The same load from sessions that are not the warm's does count.
	const foreignSleep = "SELECT SLEEP(61)"
	defer load(t, conn, 3, foreignSleep)()
	awaitRunning(t, conn, 3, foreignSleep)
	awaitSamples(t, g, 2)
	if g.Status() == "" {
		t.Errorf("three foreign sessions busy under Threads_running=1: the governor did not pause")
	}
}

func TestCriticalLoadStops(t *testing.T) {
	conn := sandboxtest.Conn(t)
	g := governor(t, conn, pacing.Config{
		MaxLoad:  []pacing.Bound{{Name: "Threads_running", Limit: 20}},
		Critical: []pacing.Bound{{Name: "Threads_running", Limit: 2}},
		Workers:  2,
	})
	const sleep = "SELECT SLEEP(60)"
	load(t, conn, 5, sleep)
	awaitRunning(t, conn, 5, sleep)
	awaitSamples(t, g, 2)
	err := acquireWithin(g, 0, eventWait)
	if !errors.Is(err, pacing.ErrCritical) || !strings.Contains(err.Error(), "Threads_running=") {
		t.Fatalf("Acquire under critical load: %v, want ErrCritical naming Threads_running", err)
	}
	select {
	case <-g.Tripped():
	default:
		t.Error("Tripped() not closed")
	}
	if !errors.Is(g.Err(), pacing.ErrCritical) || !strings.Contains(g.Status(), "critical") {
		t.Errorf("Err %v, Status %q", g.Err(), g.Status())
	}
	// It stays tripped: the caller stops.
	if err := acquireWithin(g, 1, eventWait); !errors.Is(err, pacing.ErrCritical) {
		t.Errorf("second Acquire: %v", err)
	}
}

func pagesRead(t *testing.T, conn *connection.Conn) int64 {
	t.Helper()
	var name string
	var n int64
	if err := conn.DB.QueryRow("SHOW GLOBAL STATUS LIKE 'Innodb_pages_read'").Scan(&name, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMaxRateCapsReads: two workers scan a table twice the size of the pool in small key
// ranges as fast as the governor lets them; the server's read rate over a few seconds
// must stay near the cap.
func TestMaxRateCapsReads(t *testing.T) {
	conn := sandboxtest.Conn(t)
	ctx := context.Background()
	db := sandboxtest.Schema(t)
	tbl := bigTable(t, db, "big")
	const rows, chunk = bigRows, 3000 // ~50 pages per unit
	const capRate = 8 << 20
	g := governor(t, conn, pacing.Config{MaxRate: capRate, Workers: 2})

	runCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	before, t0 := pagesRead(t, conn), time.Now()
	var mu sync.Mutex
	next, units := 0, 0
	var wg sync.WaitGroup
	sawStatus := make(chan string, 1)
	for w := 0; w < 2; w++ {
		s, err := conn.NewSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			defer s.Close()
			for {
				if err := g.Acquire(runCtx, w); err != nil {
					return
				}
				if st := g.Status(); st != "" {
					select {
					case sawStatus <- st:
					default:
					}
				}
				mu.Lock()
				lo := next
				next = (next + chunk) % rows
				units++
				mu.Unlock()
				var n int64
				_ = s.QueryRow(runCtx, "SELECT COUNT(*) FROM "+tbl+" FORCE INDEX (PRIMARY) WHERE id BETWEEN ? AND ?", []any{lo + 1, lo + chunk}, &n)
				g.Release(w)
			}
		}(w)
	}
	wg.Wait()
	secs := time.Since(t0).Seconds()
	got := float64((pagesRead(t, conn)-before)*int64(conn.Server.PageSize)) / secs
	t.Logf("%d units, %.1f MB/s read over %.1f s with a cap of %.1f MB/s; governor saw %.1f MB/s", units, got/1e6, secs, float64(capRate)/1e6, g.Stats().ServerReadMBps)
	// The cap is the promise: a busy machine only reads slower. The rate reaches the cap
	// only if the machine could read faster, which the governor's holding units back in
	// (nearly) every sample interval shows.
	if got > 1.3*capRate {
		t.Errorf("read %.1f MB/s, want at most +30%% over the cap %.1f MB/s", got/1e6, float64(capRate)/1e6)
	}
	if st := g.Stats(); st.RateLimitSeconds >= 0.8*secs && got < 0.6*capRate {
		t.Errorf("read %.1f MB/s while units waited for the cap %.1f of %.1f s, want at least 60%% of the cap %.1f MB/s", got/1e6, st.RateLimitSeconds, secs, float64(capRate)/1e6)
	} else if got < 0.6*capRate {
		t.Logf("the machine read only %.1f MB/s: units waited for the cap %.1f of %.1f s", got/1e6, st.RateLimitSeconds, secs)
	}
	// A machine that could not read at the cap never reached it, and need not say so.
	couldReach := got >= 0.95*capRate
	select {
	case st := <-sawStatus:
		if !strings.Contains(st, "rate 8 MiB/s reached") {
			t.Errorf("status %q, want the rate named", st)
		}
	default:
		if couldReach {
			t.Error("Status never said the rate was reached")
		}
	}
	if g.Stats().RateLimitSeconds <= 0 && couldReach {
		t.Errorf("stats %+v: no rate-limited time", g.Stats())
	}
}

// TestNiceYieldsToLoad: a CPU-burning load inflates the probe and Threads_running; --nice
// lowers the warm's rate to its floor, and raises it again once the load is gone.
func TestNiceYieldsToLoad(t *testing.T) {
	conn := sandboxtest.Conn(t)
	g := governor(t, conn, pacing.Config{Nice: true, Workers: 2, Interval: 250 * time.Millisecond})
	start := g.Stats().NiceRate
	if start <= 0 {
		t.Fatalf("no --nice rate: %+v", g.Stats())
	}
	// Four running statements are distress whatever the machine's speed (Threads_running above
	// its baseline + 2): the rate halves every other interval, 8 to 1 MiB/s in about 6.
	const burn = "SELECT BENCHMARK(1000000000, SHA2('innowarm', 256))"
	stop := load(t, conn, 4, burn)
	awaitRunning(t, conn, 4, burn)
	if !withinSamples(g, 40, func() bool { return g.Stats().NiceRate <= 1<<20 }) {
		t.Fatalf("under a CPU load: rate still %d B/s (status %q)", g.Stats().NiceRate, g.Status())
	}
	if st := g.Status(); !strings.HasPrefix(st, "nice: up to 1 MiB/s") || !strings.Contains(st, "before the warm") {
		t.Errorf("status under load %q, want the nice rate and why", st)
	}
	stop()
	awaitQuiet(t, conn)
	// Calm intervals add 1 MiB/s each: 1 to 3 MiB/s in two, once the machine is calm again.
	if !withinSamples(g, 80, func() bool { return g.Stats().NiceRate >= 3<<20 }) {
		t.Errorf("after the load: rate still %d B/s (status %q)", g.Stats().NiceRate, g.Status())
		rows, _ := conn.DB.Query("SELECT ID, COMMAND, TIME, STATE, INFO FROM information_schema.PROCESSLIST")
		for rows.Next() {
			var id, tm any
			var c, st, info *string
			rows.Scan(&id, &c, &tm, &st, &info)
			t.Logf("%v %v %v %v %v", id, deref(c), tm, deref(st), deref(info))
		}
	}
	if s := g.Stats(); s.NiceMinRate > 1<<20 || s.ProbeBaselineMs <= 0 {
		t.Errorf("stats %+v", s)
	}
}

// TestNiceYieldsToQueuedReads: closed-loop clients whose point selects wait on a throttled
// disk keep Threads_running and the probe where they were while the server's own loader
// queues a pool's worth of reads in front of theirs: only the time reads wait shows it.
// --nice must cut to its floor and say why.
func TestNiceYieldsToQueuedReads(t *testing.T) {
	sb := sandboxtest.Server(t)
	conn := sandboxtest.Conn(t)
	if !conn.Server.LoadQueuesReads() {
		t.Skipf("%s's loader waits for each read: it queues nothing ahead of the clients' reads", conn.Server)
	}
	ctx := context.Background()
	db := sandboxtest.Schema(t)
	tbl := bigTable(t, db, "queued") // twice the pool: the clients keep missing
	// The server's dump of a pool full of the table, loaded after a cold restart: a
	// pool's worth of reads the loader submits at once.
	sandboxtest.Exec(t, "SELECT COUNT(*) FROM "+tbl+" FORCE INDEX (PRIMARY) WHERE pad <> ''")
	sandboxtest.DumpPool(t)
	if _, err := sb.ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	conn = sandboxtest.Reconnect(t)
	unthrottle := sandboxtest.ThrottleReads(t, sb.Status(ctx).Pid, sb.Datadir, 4<<20) // 256 pages/s
	defer unthrottle()
	// Ids spread by a multiplicative hash: each select reads a page of its own.
	loadArgs(t, conn, 4, "SELECT pad FROM "+tbl+" WHERE id = ?", func(w, i int) []any {
		return []any{1 + ((w*1_000_003+i)*2654435761)%bigRows}
	})
	g := governor(t, conn, pacing.Config{Nice: true, Workers: 1, Interval: 250 * time.Millisecond})
	// The clients alone: their reads' wait, and the rate it allows. On a quiet disk the rate
	// climbs past its start; other tests' servers on the same disk (go test runs packages
	// side by side, and make test the flavors' passes) can make these reads wait 1.5x their
	// best for half a minute, which --nice rightly yields to (a make test run failed so when
	// this test required the climb). So the climb is waited for but not required: what is
	// required is that the loader's queue shows as a wait far above the clients' own, and
	// that --nice, where it was above its floor, cuts to it. The clients' own wait is taken
	// over at least 8 samples.
	var alone []float64
	climbed := everySample(g, 60, func(st pacing.Stats) bool {
		if st.ReadWaitMs >= 0 {
			alone = append(alone, st.ReadWaitMs)
		}
		return st.NiceRate > 8<<20 && len(alone) >= 8
	})
	if st := g.Stats(); len(alone) == 0 || st.ReadWaitBaselineMs <= 0 {
		t.Fatalf("no read wait measured with 4 clients waiting on the disk: %+v", st)
	}
	ownWait := quantile(alone, 0.9)
	before := g.Stats().NiceRate
	if !climbed {
		t.Logf("the clients' reads held the rate at %d B/s (status %q): the disk was shared, the cut to the floor is not shown by this run", before, g.Status())
	}
	sandboxtest.Exec(t, "SET GLOBAL innodb_buffer_pool_load_now = ON")
	var queuedWait float64
	everySample(g, 40, func(st pacing.Stats) bool {
		queuedWait = max(queuedWait, st.ReadWaitMs)
		return queuedWait >= 3*ownWait && st.NiceRate <= 1<<20
	})
	// A pool's worth of reads queued ahead of theirs at 256 pages/s makes the clients' reads
	// wait seconds, against milliseconds alone.
	if queuedWait < 3*ownWait {
		var name, load string
		_ = conn.DB.QueryRow("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_load_status'").Scan(&name, &load)
		t.Errorf("with the loader's reads queued ahead of the clients': reads waited at most %.2f ms, their own wait was %.2f ms (90th percentile): the queue does not show (load status %q, %+v)", queuedWait, ownWait, load, g.Stats())
	}
	if st := g.Stats(); before > 1<<20 && st.NiceRate > 1<<20 {
		t.Fatalf("with the loader's reads queued ahead of the clients': rate still %d B/s (status %q, %+v)", st.NiceRate, g.Status(), st)
	}
	if st := g.Status(); !strings.Contains(st, "reads wait") {
		t.Errorf("status %q does not say the reads wait", st)
	}
	t.Logf("read wait alone %.2f ms (90th percentile of %d samples, best %.2f ms), with the loader's queue up to %.2f ms; rate %d -> %d B/s",
		ownWait, len(alone), g.Stats().ReadWaitBaselineMs, queuedWait, before, g.Stats().NiceRate)
	// No growth is asserted after the load: the clients' own wait then moves with their hits
	// (the load brought half the table in) by more than --nice's tight bound tolerates, and
	// growth on calm intervals is TestNiceController's.
	awaitStatus(t, conn, "Innodb_buffer_pool_load_status", "completed")
}

// bigRows is the rows of bigTable.
const bigRows = 1 << 18

// bigTable creates db.name with ids 1..bigRows and about 64 MB (rows of ~260 bytes): twice
// the pool.
func bigTable(t *testing.T, db, name string) string {
	t.Helper()
	tbl := sqltext.Table(db, name)
	sandboxtest.Exec(t, "CREATE TABLE "+tbl+" (id INT PRIMARY KEY, pad CHAR(250) NOT NULL) CHARSET latin1",
		"INSERT INTO "+tbl+" VALUES (1, REPEAT('x', 250))")
	for n := 1; n < bigRows; n *= 2 {
		sandboxtest.Exec(t, fmt.Sprintf("INSERT INTO %s SELECT id + %d, pad FROM %s", tbl, n, tbl))
	}
	return tbl
}

// awaitStatus waits until a status variable's value contains want.
func awaitStatus(t *testing.T, conn *connection.Conn, name, want string) {
	t.Helper()
	var v string
	if !waitFor(2*time.Minute, func() bool {
		conn.DB.QueryRow("SHOW GLOBAL STATUS LIKE ?", name).Scan(new(string), &v)
		return strings.Contains(v, want)
	}) {
		t.Fatalf("%s: %q, still without %q", name, v, want)
	}
}

func deref(p *string) string {
	if p == nil {
		return "NULL"
	}
	return *p
}

// A warm that loads natively in small paced chunks takes a steady share of a disk at its
// limit: the clients' reads in flight and the server's completions stay as they were,
// while the clients' share of the completions shrinks. The governor must see it from the
// reads the warm says it had the server read, and hold the warm near its floor.
func TestNiceYieldsToASteadyShare(t *testing.T) {
	sb := sandboxtest.Server(t)
	conn := sandboxtest.Conn(t)
	ctx := context.Background()
	db := sandboxtest.Schema(t)
	tbl := bigTable(t, db, "share") // twice the pool: the clients keep missing
	var space uint32
	var pages int64
	if err := conn.DB.QueryRow("SELECT SPACE, FILE_SIZE DIV @@innodb_page_size FROM "+conn.Server.TablespacesTable()+" WHERE NAME = ?", db+"/share").Scan(&space, &pages); err != nil {
		t.Fatal(err)
	}
	list := make([]warm.PageID, 0, pages)
	for p := uint32(3); int64(p) < pages; p++ {
		list = append(list, warm.MakePageID(space, p))
	}
	if _, err := sb.ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	conn = sandboxtest.Reconnect(t)
	unthrottle := sandboxtest.ThrottleReads(t, sb.Status(ctx).Pid, sb.Datadir, 4<<20) // 256 pages/s
	defer unthrottle()
	stop := loadArgs(t, conn, 4, "SELECT pad FROM "+tbl+" WHERE id = ?", func(w, i int) []any {
		return []any{1 + ((w*1_000_003+i)*2654435761)%bigRows}
	})
	defer stop()
	g := governor(t, conn, pacing.Config{Nice: true, Workers: 1, Interval: 250 * time.Millisecond})
	if !withinSamples(g, 40, func() bool { return g.Stats().ReadWaitBaselineMs > 0 }) {
		t.Fatalf("no read wait measured with 4 clients waiting on the disk: %+v", g.Stats())
	}
	before := g.Stats().NiceRate
	t0 := time.Now()
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := warm.LoadNativePaced(wctx, conn, [][]warm.PageID{list}, progress.Config{Quiet: true}, logx.New(io.Discard, true), warm.Until{}, g, 64)
		done <- err
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("the paced load: %v", err)
		}
	}()
	// Where the loader queues its reads, the warm waits for a chunk's reads to leave the
	// queue before the next: never more than one chunk ahead of the clients' reads.
	mostQueued := int64(0)
	queued := func() {
		var all, sync int64
		if conn.DB.QueryRow("SELECT (SELECT SUM(PENDING_READS) FROM information_schema.INNODB_BUFFER_POOL_STATS), (SELECT VARIABLE_VALUE FROM "+conn.Server.GlobalStatusTable()+" WHERE VARIABLE_NAME = 'INNODB_DATA_PENDING_READS')").Scan(&all, &sync) == nil {
			mostQueued = max(mostQueued, all-sync)
		}
	}
	floor := int64(1 << 20)
	if !withinSamples(g, 80, func() bool {
		queued()
		return g.Stats().NiceRate <= floor && g.Stats().OwnReadPages > 0
	}) {
		t.Fatalf("the warm's share of the disk left the rate at %d B/s (%d before the warm; status %q, %+v)", g.Stats().NiceRate, before, g.Status(), g.Stats())
	}
	for i := 0; i < 100; i++ {
		queued()
		time.Sleep(20 * time.Millisecond)
	}
	if conn.Server.LoadQueuesReads() && mostQueued > 64+16 {
		t.Errorf("up to %d reads queued beyond the clients' own: more than a 64-page chunk", mostQueued)
	}
	// What the warm says it read is bounded by its chunks and by what the server read.
	if st := g.Stats(); st.OwnReadPages > pages || float64(st.OwnReadPages)*16384 > st.ServerReadMBps*1e6*time.Since(t0).Seconds()*1.5 {
		t.Errorf("the warm says it read %d pages of a %d-page table, the server %.1f MB/s for %s", st.OwnReadPages, pages, st.ServerReadMBps, time.Since(t0))
	}
}

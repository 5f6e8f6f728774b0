package benchsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/sandbox"
)

// The warm scenario (issue 3): a full warm of a table of >= 1 GB after a cold restart, by
// innowarm (scans, and the native loader) against the 2017 tool's approach (one connection,
// one COUNT(*) ... FORCE INDEX per index, in turn) and InnoDB's own dump/load of the same
// pages (dump_pct=100, load_now, timed to "load completed"). Throughput = the table's bytes
// over the time to get them resident. Rounds alternate the methods; medians are compared.
func init() {
	Register(Scenario{
		Name:  "warm",
		Issue: 3,
		About: "full warm of a >= 1 GB table: innowarm scan and native vs one-connection COUNT(*) scans and InnoDB dump/load",
		Run:   runWarmBench,
	})
	Register(Scenario{
		Name:  "warmfrom",
		Issue: 5,
		About: "skewed workload on data >= 4x the pool: first pass after warm --from a snapshot vs hot, cold, scans and InnoDB dump/load at 25% and 100%",
		Run:   runWarmFromBench,
	})
}

// server is a sandbox prepared for a scenario, with the helpers the scenarios share.
type server struct {
	sb   *sandbox.Sandbox
	conn *connection.Conn
	env  Env
	sock []string
}

func startServer(ctx context.Context, env Env, pool int64) (*server, error) {
	sb, _, err := sandbox.Up(ctx, sandbox.Config{Dir: filepath.Join(env.OutDir, "sandbox"), PoolSize: pool, DieWithParent: true, Flavor: os.Getenv(sandbox.FlavorEnv)})
	if err != nil {
		return nil, err
	}
	s := &server{sb: sb, env: env, sock: []string{"--no-defaults", "-S", sb.Socket, "-u", "root"}}
	if s.conn, err = sb.Connect(ctx); err != nil {
		sb.Kill()
		return nil, err
	}
	return s, nil
}

func (s *server) close() {
	if s.conn != nil {
		s.conn.Close()
	}
	s.sb.Kill()
	os.RemoveAll(s.sb.Dir)
}

func (s *server) cold(ctx context.Context) error {
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
	if _, err := s.sb.ColdRestart(ctx); err != nil {
		return err
	}
	var err error
	s.conn, err = s.sb.Connect(ctx)
	return err
}

// restart restarts the server with a pool of the given size and reconnects.
func (s *server) restart(ctx context.Context, pool int64) error {
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
	if _, err := s.sb.Restart(ctx, pool); err != nil {
		return err
	}
	var err error
	s.conn, err = s.sb.Connect(ctx)
	return err
}

func (s *server) status(ctx context.Context, name string) string {
	var n, v string
	_ = s.conn.DB.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE ?", name).Scan(&n, &v)
	return v
}

func (s *server) counter(ctx context.Context, name string) int64 {
	n, _ := strconv.ParseInt(s.status(ctx, name), 10, 64)
	return n
}

func (s *server) exec(ctx context.Context, qs ...string) error {
	for _, q := range qs {
		if _, err := s.conn.DB.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// dump has the server write its own dump file at pct and returns a copy of it.
func (s *server) dump(ctx context.Context, pct int, dest string) (int, error) {
	if err := s.exec(ctx, fmt.Sprintf("SET GLOBAL innodb_buffer_pool_dump_pct = %d", pct), "SET GLOBAL innodb_buffer_pool_dump_now = ON"); err != nil {
		return 0, err
	}
	deadline := time.Now().Add(5 * time.Minute)
	for !strings.Contains(s.status(ctx, "Innodb_buffer_pool_dump_status"), "completed") {
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("dump did not complete")
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return 0, err
		}
	}
	b, err := os.ReadFile(filepath.Join(s.sb.Datadir, "ib_buffer_pool"))
	if err != nil {
		return 0, err
	}
	return strings.Count(string(b), "\n"), os.WriteFile(dest, b, 0o644)
}

// load puts a saved dump file in place and times InnoDB's own load of it to completion.
func (s *server) load(ctx context.Context, file string) (float64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(s.sb.Datadir, "ib_buffer_pool"), b, 0o644); err != nil {
		return 0, err
	}
	before := s.status(ctx, "Innodb_buffer_pool_load_status")
	t0 := time.Now()
	if err := s.exec(ctx, "SET GLOBAL innodb_buffer_pool_load_now = ON"); err != nil {
		return 0, err
	}
	for {
		st := s.status(ctx, "Innodb_buffer_pool_load_status")
		if strings.Contains(st, "completed") && (st != before || time.Since(t0) > 2*time.Second) {
			return time.Since(t0).Seconds(), nil
		}
		if strings.Contains(st, "aborted") {
			return 0, fmt.Errorf("load: %s", st)
		}
		if time.Since(t0) > 10*time.Minute {
			return 0, fmt.Errorf("load did not complete: %s", st)
		}
		if err := sleepCtx(ctx, 10*time.Millisecond); err != nil {
			return 0, err
		}
	}
}

// sleepCtx waits d, or less when ctx ends (Ctrl-C stops a run at once).
func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// measured is a timed run of a process, with its peak memory.
type measured struct {
	seconds float64
	cpu     float64 // user + system seconds of innowarm itself
	rssMB   float64
	stdout  string
}

func (s *server) innowarm(ctx context.Context, args ...string) (measured, error) {
	cmd := exec.CommandContext(ctx, s.env.Bin, append(args, s.sock...)...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	t0 := time.Now()
	err := cmd.Run()
	m := measured{seconds: time.Since(t0).Seconds(), stdout: out.String()}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.rssMB = float64(ru.Maxrss) / 1024
	}
	m.cpu = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	if err != nil {
		return m, fmt.Errorf("innowarm %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return m, nil
}

type warmScale struct {
	rows     int64 // sbtest1
	agedRows int64 // aged.orders
	pool     int64
	rounds   int
}

// warmTable is one table the warm scenario measures, with the statements of the 2017
// tool's approach: one COUNT(*) ... FORCE INDEX per index, in turn, on one connection.
type warmTable struct {
	label, schema, table string
	about                string
	oldTool              []string
}

// The two layouts a warm meets. sbtest1 is bulk-loaded with its secondary key added after
// the load: every index's pages are in key order, so one scan is sequential and InnoDB's
// linear read-ahead does the reading. aged.orders grows the way a live table does: rows
// arrive in random key order (a hash or UUID primary key) and its secondary indexes are
// maintained on every insert, so leaf pages are scattered and a scan waits on one random
// read after another: the case the issue's one-connection figures (150-335 MB/s) describe.
var warmTables = []warmTable{
	{label: "sbtest1", schema: "sbtest", table: "sbtest1", about: "bulk-loaded, pages in key order",
		oldTool: []string{"SELECT COUNT(*) FROM sbtest.sbtest1 FORCE INDEX (PRIMARY)", "SELECT COUNT(*) FROM sbtest.sbtest1 FORCE INDEX (k_1)"}},
	{label: "aged", schema: "aged", table: "orders", about: "random-order inserts, indexes maintained: pages scattered",
		oldTool: []string{"SELECT COUNT(*) FROM aged.orders FORCE INDEX (PRIMARY)", "SELECT COUNT(*) FROM aged.orders FORCE INDEX (customer_id)", "SELECT COUNT(*) FROM aged.orders FORCE INDEX (created)"}},
}

// createAgedTable builds aged.orders: rows in random primary-key order (the key is the MD5
// of a sequence number), both secondary indexes in place during the load, in batches.
func (s *server) createAgedTable(ctx context.Context, rows int64) error {
	if err := s.exec(ctx, "CREATE DATABASE aged",
		"CREATE TABLE aged.orders (id BINARY(16) PRIMARY KEY, customer_id INT NOT NULL, created DATETIME NOT NULL, "+
			"status TINYINT NOT NULL, note CHAR(100) NOT NULL, KEY (customer_id), KEY (created)) ENGINE=InnoDB"); err != nil {
		return err
	}
	const batch = 100_000
	for lo := int64(1); lo <= rows; lo += batch {
		hi := min(lo+batch-1, rows)
		srv := s.conn.Server
		if err := s.exec(ctx, fmt.Sprintf("INSERT INTO aged.orders SELECT UNHEX(%s), FLOOR(RAND()*200000), "+
			"'2020-01-01' + INTERVAL FLOOR(RAND()*150000000) SECOND, seq %% 5, %s FROM %s", srv.Hex32("seq"), srv.Hex32("RAND()"), srv.Series("aged", lo, hi))); err != nil {
			return err
		}
	}
	return nil
}

// warmTimes are one table's measured runs, one entry per round.
type warmTimes struct {
	old, innodb, scan, scanRead, native, scanRSS, nativeRSS []float64
}

func runWarmBench(ctx context.Context, env Env) (Result, error) {
	var res Result
	sc := warmScale{rows: 4_500_000, agedRows: 3_400_000, pool: 2 << 30, rounds: 3}
	if env.Quick() {
		sc = warmScale{rows: 500_000, agedRows: 400_000, pool: 512 << 20, rounds: 1}
	}
	s, err := startServer(ctx, env, sc.pool)
	if err != nil {
		return res, err
	}
	defer s.close()
	env.Log.Infof("warm: bench prepare --rows %d (sysbench sbtest1)", sc.rows)
	if _, err := s.innowarm(ctx, "bench", "prepare", "--rows", strconv.FormatInt(sc.rows, 10), "--tables", "1", "--create-schema", "sbtest"); err != nil {
		return res, err
	}
	env.Log.Infof("warm: aged.orders, %d rows inserted in random key order with both secondary indexes in place", sc.agedRows)
	t0 := time.Now()
	if err := s.createAgedTable(ctx, sc.agedRows); err != nil {
		return res, err
	}
	res.AddMetric("aged.orders build", time.Since(t0).Seconds(), "s")
	for _, wt := range warmTables {
		if err := runWarmTable(ctx, env, s, sc, wt, &res); err != nil {
			return res, fmt.Errorf("%s: %w", wt.label, err)
		}
	}
	res.Notes = append(res.Notes,
		fmt.Sprintf("pool %d MiB, O_DIRECT, cold restart before every run; %d round(s) per table, the order of the methods alternating; medians", sc.pool>>20, sc.rounds),
		"throughput is the pages resident after a full scan x 16 KiB over each method's time; InnoDB's load is timed from load_now to 'load completed', innowarm's as the whole command: connect, catalog, plan (EXPLAIN, key ranges), read, and the residency report",
		"innowarm warm's default method is auto: native on the server's host (innowarm can write the datadir) except where scans outrun the server's loader (MySQL), scan on a remote or managed server; the rounds time both methods explicitly, the default's ratios use the method auto picked (timed once before the rounds)",
		"the old tool's approach: one connection, SELECT COUNT(*) ... FORCE INDEX for each index in turn")
	return res, nil
}

// warmSummary is what the warm scenarios read from warm --json.
type warmSummary struct {
	Method  string  `json:"method"`
	Seconds float64 `json:"seconds"`
	Native  struct {
		Seconds float64 `json:"seconds"` // the server's load, for native loads
	} `json:"native"`
}

func warmResult(stdout string) warmSummary {
	var out struct {
		Result warmSummary `json:"result"`
	}
	_ = json.Unmarshal([]byte(stdout), &out)
	return out.Result
}

// runWarmTable measures one table: its full-scan page set, InnoDB's dump of it, then rounds
// of the four methods, each after a cold restart.
func runWarmTable(ctx context.Context, env Env, s *server, sc warmScale, wt warmTable, res *Result) error {
	var fileBytes int64
	if fi, err := os.Stat(filepath.Join(s.sb.Datadir, wt.schema, wt.table+".ibd")); err == nil {
		fileBytes = fi.Size()
	}
	// InnoDB's dump of exactly the table's pages: everything resident, dump_pct=100.
	if err := s.cold(ctx); err != nil {
		return err
	}
	if err := s.exec(ctx, wt.oldTool...); err != nil {
		return err
	}
	dumpFile := filepath.Join(env.OutDir, "ib_buffer_pool."+wt.label)
	dumped, err := s.dump(ctx, 100, dumpFile)
	if err != nil {
		return err
	}
	tablePages := s.counter(ctx, "Innodb_buffer_pool_pages_data")
	tableBytes := tablePages * 16384

	var t warmTimes
	warmArgs := func(method string) []string {
		return []string{"warm", "-D", wt.schema, "--tables", wt.schema + "." + wt.table, "--method", method, "--json", "-q"}
	}
	// What warm does by default (auto) on this server: the rounds time scan and native
	// explicitly, and the default's figures are those of the method auto picks.
	if err := s.cold(ctx); err != nil {
		return err
	}
	m, err := s.innowarm(ctx, warmArgs("auto")...)
	if err != nil {
		return err
	}
	auto := warmResult(m.stdout).Method
	if auto != "scan" && auto != "native" {
		return fmt.Errorf("warm --method auto chose %q", auto)
	}
	for round := 0; round < sc.rounds; round++ {
		steps := []func() error{
			func() error { // (a) the 2017 tool's approach: one connection, one index after the other
				if err := s.cold(ctx); err != nil {
					return err
				}
				t0 := time.Now()
				if err := s.exec(ctx, wt.oldTool...); err != nil {
					return err
				}
				t.old = append(t.old, time.Since(t0).Seconds())
				return nil
			},
			func() error { // (b) InnoDB's own load of the same pages
				if err := s.cold(ctx); err != nil {
					return err
				}
				secs, err := s.load(ctx, dumpFile)
				t.innodb = append(t.innodb, secs)
				return err
			},
			func() error { // innowarm, scans
				if err := s.cold(ctx); err != nil {
					return err
				}
				m, err := s.innowarm(ctx, warmArgs("scan")...)
				if err != nil {
					return err
				}
				t.scan, t.scanRSS, t.scanRead = append(t.scan, m.seconds), append(t.scanRSS, m.rssMB), append(t.scanRead, warmResult(m.stdout).Seconds)
				return nil
			},
			func() error { // innowarm, the server's own loader with the page list innowarm builds
				if err := s.cold(ctx); err != nil {
					return err
				}
				m, err := s.innowarm(ctx, warmArgs("native")...)
				t.native, t.nativeRSS = append(t.native, m.seconds), append(t.nativeRSS, m.rssMB)
				return err
			},
		}
		// Alternate the order between rounds, so that no method always runs on a fresher disk.
		if round%2 == 1 {
			slices.Reverse(steps)
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return err
			}
		}
		env.Log.Infof("warm %s: round %d: old tool %.2f s, InnoDB load %.2f s, innowarm scan %.2f s, innowarm native %.2f s",
			wt.label, round+1, t.old[round], t.innodb[round], t.scan[round], t.native[round])
	}
	mbps := func(secs float64) float64 { return float64(tableBytes) / 1e6 / secs }
	old, innodb, scan, native := lowerMedian(t.old), lowerMedian(t.innodb), lowerMedian(t.scan), lowerMedian(t.native)
	byDefault := native
	if auto == "scan" {
		byDefault = scan
	}
	l := wt.label + ": "
	res.AddMetric(l+"table file", float64(fileBytes)/1e6, "MB")
	res.AddMetric(l+"pages resident after a full scan (the bytes each method must load)", float64(tablePages), "pages")
	res.AddMetric(l+"old tool (one connection, COUNT(*) per index) seconds", old, "s")
	res.AddMetric(l+"InnoDB dump/load (pct 100, load_now to completed) seconds", innodb, "s")
	res.AddMetric(l+"innowarm warm --method scan, whole command, seconds", scan, "s")
	res.AddMetric(l+"innowarm warm --method scan, reading phase, seconds", lowerMedian(t.scanRead), "s")
	res.AddMetric(l+"innowarm warm --method native, whole command, seconds", native, "s")
	res.AddMetric(l+"old tool throughput", mbps(old), "MB/s")
	res.AddMetric(l+"InnoDB dump/load throughput", mbps(innodb), "MB/s")
	res.AddMetric(l+"innowarm scan throughput (whole command)", mbps(scan), "MB/s")
	res.AddMetric(l+"innowarm native throughput (whole command)", mbps(native), "MB/s")
	res.AddMetric(l+"innowarm scan peak RSS", lowerMedian(t.scanRSS), "MB")
	res.AddMetric(l+"innowarm native peak RSS", lowerMedian(t.nativeRSS), "MB")
	res.AddRatio(l+"throughput innowarm warm (default: auto = "+auto+") / InnoDB dump-load", innodb/byDefault, ">= 0.9")
	res.AddRatio(l+"throughput innowarm warm (default: auto = "+auto+") / one-connection scans", old/byDefault, ">= 2.5")
	res.AddRatio(l+"throughput innowarm native / InnoDB dump-load", innodb/native, "")
	res.AddRatio(l+"throughput innowarm scan / InnoDB dump-load", innodb/scan, ">= 0.8")
	res.AddRatio(l+"throughput innowarm scan / one-connection scans", old/scan, ">= 2.5")
	res.AddRatio(l+"innowarm peak RSS MB (max of scan, native) / 64 MB", max(lowerMedian(t.scanRSS), lowerMedian(t.nativeRSS))/64, "<= 1.0")
	res.Notes = append(res.Notes, fmt.Sprintf("%s: %s.%s, %s (%s); InnoDB's dump of the fully scanned table lists %d pages, %d resident",
		wt.label, wt.schema, wt.table, wt.about, humanMB(fileBytes), dumped, tablePages))
	return nil
}

func humanMB(b int64) string { return fmt.Sprintf("%.0f MB", float64(b)/1e6) }

// pass is one timed run of the skewed workload.
type pass struct {
	seconds, qps, p95 float64
	misses            int64
}

func (s *server) pass(ctx context.Context, events int, dist string) (pass, error) {
	before := s.counter(ctx, "Innodb_buffer_pool_reads")
	m, err := s.innowarm(ctx, "bench", "--create-schema", "sbtest", "--workload", "point-select", "--dist", dist,
		"--events", strconv.Itoa(events), "--concurrency", "1", "--json")
	if err != nil {
		return pass{}, err
	}
	var out struct {
		Runs []struct {
			QuerySeconds float64 `json:"query_seconds"`
			QPS          float64 `json:"qps"`
			Latency      struct {
				P95 float64 `json:"p95_ms"`
			} `json:"latency"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(m.stdout), &out); err != nil || len(out.Runs) == 0 {
		return pass{}, fmt.Errorf("bench output: %w", err)
	}
	r := out.Runs[0]
	return pass{seconds: r.QuerySeconds, qps: r.QPS, p95: r.Latency.P95, misses: s.counter(ctx, "Innodb_buffer_pool_reads") - before}, nil
}

func runWarmFromBench(ctx context.Context, env Env) (Result, error) {
	var res Result
	rows, pool, events, warmup, dist, rounds := int64(4_500_000), int64(256<<20), 20_000, 200_000, "pareto:0.2", 3
	if env.Quick() {
		rows, pool, events, warmup, rounds = 600_000, 64<<20, 5_000, 40_000, 1
	}
	s, err := startServer(ctx, env, pool)
	if err != nil {
		return res, err
	}
	defer s.close()
	env.Log.Infof("warmfrom: bench prepare --rows %d; pool %d MiB", rows, pool>>20)
	if _, err := s.innowarm(ctx, "bench", "prepare", "--rows", strconv.FormatInt(rows, 10), "--tables", "1", "--create-schema", "sbtest"); err != nil {
		return res, err
	}
	if fi, err := os.Stat(filepath.Join(s.sb.Datadir, "sbtest", "sbtest1.ibd")); err == nil {
		res.AddMetric("data / pool", float64(fi.Size())/float64(pool), "x")
	}
	// Hot: the workload until the pool holds its hot set, then a measured pass; again in
	// every round, since each round's ratios are taken against its own hot pass.
	hotPass := func() (pass, error) {
		if err := s.cold(ctx); err != nil {
			return pass{}, err
		}
		if _, err := s.pass(ctx, warmup, dist); err != nil {
			return pass{}, err
		}
		return s.pass(ctx, events, dist)
	}
	hot, err := hotPass()
	if err != nil {
		return res, err
	}
	dir := env.OutDir
	manifestPath := filepath.Join(dir, "hot.manifest")
	snap, err := s.innowarm(ctx, "snapshot", "-o", manifestPath, "--json")
	if err != nil {
		return res, err
	}
	var snapRes struct {
		Entries     int64   `json:"entries"`
		Seconds     float64 `json:"seconds"`
		ReadSeconds float64 `json:"read_seconds"`
	}
	_ = json.Unmarshal([]byte(snap.stdout), &snapRes)
	dump25, dump100 := filepath.Join(dir, "ib_buffer_pool.25"), filepath.Join(dir, "ib_buffer_pool.100")
	if _, err := s.dump(ctx, 25, dump25); err != nil {
		return res, err
	}
	pages100, err := s.dump(ctx, 100, dump100)
	if err != nil {
		return res, err
	}

	// Each scenario's per-round figures; prep returns the whole warm's seconds and, for a
	// native load, the server's own load time.
	type scenario struct {
		name                        string
		prep                        func() (whole, serverLoad float64, err error)
		seconds, misses, p95, ratio []float64
		warm, serverLoad            []float64
	}
	warmFrom := func(args ...string) func() (float64, float64, error) {
		return func() (float64, float64, error) {
			m, err := s.innowarm(ctx, append([]string{"warm", "--json", "-q"}, args...)...)
			return m.seconds, warmResult(m.stdout).Native.Seconds, err
		}
	}
	innodbLoad := func(file string) func() (float64, float64, error) {
		return func() (float64, float64, error) {
			secs, err := s.load(ctx, file)
			return secs, secs, err
		}
	}
	scenarios := []*scenario{
		{name: "cold", prep: func() (float64, float64, error) { return 0, 0, nil }},
		{name: "innowarm warm --from (native)", prep: warmFrom("--from", manifestPath, "--method", "native")},
		{name: "innowarm warm --from (scan)", prep: warmFrom("--from", manifestPath, "--method", "scan")},
		{name: "innowarm full-scan warm", prep: warmFrom("-D", "sbtest", "--method", "scan")},
		{name: "InnoDB dump/load pct 25", prep: innodbLoad(dump25)},
		{name: "InnoDB dump/load pct 100", prep: innodbLoad(dump100)},
	}
	var hots, hotMisses []float64
	for round := 0; round < rounds; round++ {
		if round > 0 {
			if hot, err = hotPass(); err != nil {
				return res, err
			}
		}
		hots, hotMisses = append(hots, hot.seconds), append(hotMisses, float64(hot.misses))
		order := slices.Clone(scenarios)
		// Alternate the order between rounds, so that no scenario always runs on a fresher disk.
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, sc := range order {
			if err := s.cold(ctx); err != nil {
				return res, err
			}
			whole, serverLoad, err := sc.prep()
			if err != nil {
				return res, fmt.Errorf("%s: %w", sc.name, err)
			}
			first, err := s.pass(ctx, events, dist)
			if err != nil {
				return res, err
			}
			sc.warm, sc.serverLoad = append(sc.warm, whole), append(sc.serverLoad, serverLoad)
			sc.seconds, sc.misses, sc.p95 = append(sc.seconds, first.seconds), append(sc.misses, float64(first.misses)), append(sc.p95, first.p95)
			sc.ratio = append(sc.ratio, first.seconds/hot.seconds)
			env.Log.Infof("warmfrom: round %d: %s: warm %.2f s, first pass %.2f s (%d misses); hot %.2f s", round+1, sc.name, whole, first.seconds, first.misses, hot.seconds)
		}
	}
	res.AddMetric("hot pass", lowerMedian(hots), "s")
	res.AddMetric("hot pass misses", lowerMedian(hotMisses), "reads")
	res.AddMetric("snapshot pages", float64(snapRes.Entries), "pages")
	res.AddMetric("snapshot seconds (page list read)", snapRes.ReadSeconds, "s")
	res.AddMetric("snapshot seconds (whole capture)", snapRes.Seconds, "s")
	for _, sc := range scenarios {
		res.AddMetric("first pass after "+sc.name, lowerMedian(sc.seconds), "s")
		res.AddMetric("first pass misses after "+sc.name, lowerMedian(sc.misses), "reads")
		res.AddMetric("p95 first pass after "+sc.name, lowerMedian(sc.p95), "ms")
		if w := lowerMedian(sc.warm); w > 0 {
			res.AddMetric("warm time, "+sc.name, w, "s")
		}
		target := ""
		if sc.name == "innowarm warm --from (native)" {
			target = "<= 1.1"
		}
		res.AddRatio("first pass / hot pass, "+sc.name, lowerMedian(sc.ratio), target)
	}
	// Native warm-from throughput against InnoDB's own load of the same pages (the pct-100
	// dump holds the pages the manifest names), per round, then the median.
	fromNative, innodb := scenarios[1], scenarios[5]
	var whole, server []float64
	for i := range fromNative.warm {
		whole = append(whole, innodb.warm[i]/fromNative.warm[i])
		if fromNative.serverLoad[i] > 0 {
			server = append(server, innodb.serverLoad[i]/fromNative.serverLoad[i])
		}
	}
	res.AddRatio("load throughput innowarm --from native / InnoDB load_now (same pages, whole command)", lowerMedian(whole), ">= 0.9")
	res.AddRatio("load throughput innowarm --from native / InnoDB load_now (same pages, the server's load phase of each)", lowerMedian(server), "")
	res.Notes = append(res.Notes,
		fmt.Sprintf("workload: innowarm bench --workload point-select --dist %s --concurrency 1; warm-up %d events, measured passes %d events; pool %d MiB, %d rows", dist, warmup, events, pool>>20, rows),
		fmt.Sprintf("%d round(s), each with its own hot pass, the scenarios' order alternating; figures are medians, ratios the median of the rounds' ratios", rounds),
		fmt.Sprintf("the manifest holds %d pages, InnoDB's pct-100 dump %d", snapRes.Entries, pages100),
		"the 'cold' scenario's warm time is 0; innowarm's warm times are the whole command (connecting, reading and resolving the manifest, the residency report); InnoDB's are load_now to 'load completed'")
	return res, nil
}

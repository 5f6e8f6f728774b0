package benchsuite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/innowarm/innowarm/internal/flavor"
	"github.com/innowarm/innowarm/internal/sandbox"
)

// The load scenario (issue 4): innowarm bench against the load generators DBAs use, on the
// same server in the same run. Query file: the 2017 benchmark's 20k unique-key lookups on
// the seed table, innowarm bench vs mariadb-slap, same command line. Point selects: innowarm
// bench --workload point-select vs sysbench oltp_point_select on the same sbtest table,
// uniform keys. Rounds alternate between the tools and the medians are compared, because
// the machine is shared and noisy.
func init() {
	Register(Scenario{
		Name:  "load",
		Issue: 4,
		About: "innowarm bench QPS vs mariadb-slap (query file) and sysbench oltp_point_select, concurrency 1/8/32",
		Run:   runLoad,
	})
}

type loadScale struct {
	seedRows     int64         // rows of test_data
	lookups      int           // statements in the query file
	slapQueries  int           // --number-of-queries per mysqlslap-style run
	sbRows       int64         // rows of sbtest1
	sbTime       time.Duration // length of a point-select run
	rounds       int           // alternating rounds per tool and level
	levels       []int
	poolSize     int64
	warmupPoints time.Duration
}

func loadScaleFor(env Env) loadScale {
	if env.Quick() {
		return loadScale{seedRows: 200_000, lookups: 20_000, slapQueries: 20_000, sbRows: 100_000, sbTime: 3 * time.Second,
			rounds: 1, levels: []int{1, 8, 32}, poolSize: 512 << 20, warmupPoints: 2 * time.Second}
	}
	return loadScale{seedRows: 2_000_000, lookups: 20_000, slapQueries: 60_000, sbRows: 1_000_000, sbTime: 6 * time.Second,
		rounds: 5, levels: []int{1, 8, 32}, poolSize: 1 << 30, warmupPoints: 5 * time.Second}
}

// toolRun is one run of one tool: queries per second and the client's CPU.
type toolRun struct {
	qps     float64
	queries float64
	cpu     float64 // user + system seconds of the client process
}

func (t toolRun) cpuPer10k() float64 {
	if t.queries == 0 {
		return 0
	}
	return t.cpu / t.queries * 10000
}

func runLoad(ctx context.Context, env Env) (Result, error) {
	var res Result
	sc := loadScaleFor(env)
	flavorName := os.Getenv(sandbox.FlavorEnv)
	slap, slapName, err := slapPeer(flavorName)
	if err != nil {
		return res, err
	}
	// Debian 12's sysbench speaks MariaDB's client library: it is the point-select peer on
	// MariaDB; on MySQL the scenario compares with MySQL's own mysqlslap only.
	var sysbench string
	if !isMySQLFlavor(flavorName) {
		if sysbench, err = findTool("sysbench"); err != nil {
			return res, err
		}
	} else {
		res.Notes = append(res.Notes, "on "+flavorName+" the peer is MySQL's own mysqlslap (from the flavor's Debian packages); the sysbench point-select comparison runs on MariaDB")
	}
	sb, _, err := sandbox.Up(ctx, sandbox.Config{Dir: filepath.Join(env.OutDir, "sandbox"), PoolSize: sc.poolSize, DieWithParent: true, Flavor: flavorName})
	if err != nil {
		return res, err
	}
	defer func() {
		sb.Kill()
		os.RemoveAll(sb.Dir)
	}()
	conn, err := sb.Connect(ctx)
	if err != nil {
		return res, err
	}
	defer conn.Close()
	sock := []string{"--no-defaults", "-S", sb.Socket, "-u", "root"}

	// The seed table and the query file of the 2017 benchmark.
	env.Log.Infof("load: building test_data (%d rows) and a file of %d lookups", sc.seedRows, sc.lookups)
	t0 := time.Now()
	for _, q := range []string{
		"CREATE DATABASE seed",
		"CREATE TABLE seed.test_data (id INT AUTO_INCREMENT PRIMARY KEY, random_str VARCHAR(255), random_str2 VARCHAR(255)) ENGINE=InnoDB",
		fmt.Sprintf("INSERT INTO seed.test_data (random_str, random_str2) SELECT %s, %s FROM %s", conn.Server.Hex32("CONCAT(seq, RAND())"), conn.Server.Hex32("CONCAT(RAND(), seq)"), conn.Server.Series("seed", 1, sc.seedRows)),
		"ALTER TABLE seed.test_data ADD INDEX (random_str)",
	} {
		if _, err := conn.DB.ExecContext(ctx, q); err != nil {
			return res, fmt.Errorf("%s: %w", q, err)
		}
	}
	res.AddMetric("seed table build", time.Since(t0).Seconds(), "s")
	queryFile := filepath.Join(env.OutDir, "benchmark_query_20000_rows.sql")
	if err := writeLookups(ctx, conn.DB, sc, queryFile); err != nil {
		return res, err
	}

	// sysbench's table, made by innowarm bench prepare.
	env.Log.Infof("load: innowarm bench prepare --rows %d", sc.sbRows)
	t0 = time.Now()
	if out, err := run(ctx, env.Bin, append([]string{"bench", "prepare", "--rows", strconv.FormatInt(sc.sbRows, 10), "--tables", "1", "--create-schema", "sbtest"}, sock...)...); err != nil {
		return res, fmt.Errorf("bench prepare: %w: %s", err, out.stderr)
	}
	prep := time.Since(t0).Seconds()
	res.AddMetric("bench prepare rows/s (sbtest1)", float64(sc.sbRows)/prep, "rows/s")

	// Warm-up: every page the runs touch is in the pool before the first measurement.
	for _, q := range []string{
		"SELECT COUNT(*) FROM seed.test_data FORCE INDEX (PRIMARY)",
		"SELECT COUNT(*) FROM seed.test_data FORCE INDEX (random_str)",
		"SELECT COUNT(*) FROM sbtest.sbtest1 FORCE INDEX (PRIMARY)",
	} {
		if sysbench == "" && strings.Contains(q, "sbtest") {
			continue
		}
		if _, err := conn.DB.ExecContext(ctx, q); err != nil {
			return res, fmt.Errorf("%s: %w", q, err)
		}
	}

	slapArgs := func(c int) []string {
		return []string{"--create-schema=seed", "--delimiter=;", "--query=" + queryFile, "--concurrency=" + strconv.Itoa(c),
			"--number-of-queries=" + strconv.Itoa(sc.slapQueries), "--iterations=1"}
	}
	sbArgs := func(c int) []string {
		return []string{"oltp_point_select", "--mysql-socket=" + sb.Socket, "--mysql-user=root", "--mysql-db=sbtest", "--tables=1",
			"--table-size=" + strconv.FormatInt(sc.sbRows, 10), "--rand-type=uniform", "--threads=" + strconv.Itoa(c),
			"--time=" + strconv.Itoa(int(sc.sbTime.Seconds())), "--report-interval=0", "run"}
	}
	iwPointArgs := func(c int, d time.Duration) []string {
		return append([]string{"bench", "--create-schema=sbtest", "--workload=point-select", "--dist=uniform",
			"--concurrency=" + strconv.Itoa(c), "--time=" + d.String(), "--json"}, sock...)
	}
	// Unmeasured first runs of each client, so no tool pays for first touches.
	if _, err := run(ctx, env.Bin, append(append([]string{"bench"}, sock...), slapArgs(8)...)...); err != nil {
		return res, fmt.Errorf("warm-up: %w", err)
	}
	if sysbench != "" {
		if _, err := run(ctx, env.Bin, iwPointArgs(8, sc.warmupPoints)...); err != nil {
			return res, fmt.Errorf("warm-up: %w", err)
		}
	}

	res.Notes = append(res.Notes,
		fmt.Sprintf("query file: innowarm bench and %s with the same arguments: %s (QPS = queries / mysqlslap's 'Average number of seconds to run all queries', connection set-up included for both)", slapName, strings.Join(slapArgs(8), " ")),
		fmt.Sprintf("point selects: sysbench %s vs innowarm bench --workload point-select --dist uniform --time %s on the same sbtest1 (%d rows)", strings.Join(sbArgs(8)[:1], " ")+" --rand-type=uniform", sc.sbTime, sc.sbRows),
		fmt.Sprintf("%d round(s) per level, each running both tools back to back (alternating which goes first); ratio = median of the rounds' ratios, QPS and CPU figures = the median run; client CPU = user+system seconds of the client process (rusage)", sc.rounds))

	for _, c := range sc.levels {
		var iw, ref, iwp, sbr []toolRun
		for round := 0; round < sc.rounds; round++ {
			first := round%2 == 0
			for i := 0; i < 2; i++ {
				if (i == 0) == first {
					r, err := slapRun(ctx, []string{env.Bin}, append(append([]string{"bench"}, sock...), slapArgs(c)...))
					if err != nil {
						return res, fmt.Errorf("innowarm bench -c %d: %w", c, err)
					}
					iw = append(iw, r)
				} else {
					r, err := slapRun(ctx, slap, append(append([]string{}, sock...), slapArgs(c)...))
					if err != nil {
						return res, fmt.Errorf("%s -c %d: %w", slapName, c, err)
					}
					ref = append(ref, r)
				}
			}
			for i := 0; i < 2 && sysbench != ""; i++ {
				if (i == 0) == first {
					r, err := pointRun(ctx, env.Bin, iwPointArgs(c, sc.sbTime))
					if err != nil {
						return res, fmt.Errorf("innowarm bench --workload -c %d: %w", c, err)
					}
					iwp = append(iwp, r)
				} else {
					r, err := sysbenchRun(ctx, sysbench, sbArgs(c))
					if err != nil {
						return res, fmt.Errorf("sysbench --threads %d: %w", c, err)
					}
					sbr = append(sbr, r)
				}
			}
			env.Log.Infof("load: concurrency %d round %d: innowarm %.0f vs %s %.0f QPS", c, round+1, iw[len(iw)-1].qps, slapName, ref[len(ref)-1].qps)
			if sysbench != "" {
				env.Log.Infof("load: concurrency %d round %d: innowarm %.0f vs sysbench %.0f QPS (point selects)", c, round+1, iwp[len(iwp)-1].qps, sbr[len(sbr)-1].qps)
			}
		}
		a, b := medianRun(iw), medianRun(ref)
		lvl := fmt.Sprintf("c=%d", c)
		res.AddMetric("innowarm bench QPS, query file, "+lvl, a.qps, "QPS")
		res.AddMetric(slapName+" QPS, query file, "+lvl, b.qps, "QPS")
		res.AddMetric("innowarm client CPU per 10k queries, query file, "+lvl, a.cpuPer10k(), "s")
		res.AddMetric(slapName+" client CPU per 10k queries, "+lvl, b.cpuPer10k(), "s")
		res.AddRatio("QPS innowarm/"+slapName+", query file, "+lvl, pairedRatio(iw, ref), ">= 1.0")
		res.AddRatio("client CPU per query innowarm/"+slapName+", "+lvl, a.cpuPer10k()/b.cpuPer10k(), "")
		if sysbench == "" {
			continue
		}
		p, s := medianRun(iwp), medianRun(sbr)
		res.AddMetric("innowarm bench QPS, point-select, "+lvl, p.qps, "QPS")
		res.AddMetric("sysbench oltp_point_select QPS, "+lvl, s.qps, "QPS")
		res.AddMetric("innowarm client CPU per 10k queries, point-select, "+lvl, p.cpuPer10k(), "s")
		res.AddMetric("sysbench client CPU per 10k queries, "+lvl, s.cpuPer10k(), "s")
		res.AddRatio("QPS innowarm/sysbench, point-select, "+lvl, pairedRatio(iwp, sbr), ">= 0.95")
		res.AddRatio("client CPU per query innowarm/sysbench, "+lvl, p.cpuPer10k()/s.cpuPer10k(), "")
	}
	return res, nil
}

// pairedRatio is the median over the rounds of a's QPS over b's in the same round.
func pairedRatio(a, b []toolRun) float64 {
	r := make([]float64, min(len(a), len(b)))
	for i := range r {
		r[i] = a[i].qps / b[i].qps
	}
	return median(r)
}

// median picks the run with the median QPS (the lower middle one for an even count).
func medianRun(runs []toolRun) toolRun {
	s := slices.Clone(runs)
	slices.SortFunc(s, func(a, b toolRun) int {
		switch {
		case a.qps < b.qps:
			return -1
		case a.qps > b.qps:
			return 1
		}
		return 0
	})
	return s[(len(s)-1)/2]
}

// slapPeer is the mysqlslap innowarm bench is compared with: MySQL's own, from the flavor's
// root, on a MySQL flavor; the machine's mariadb-slap otherwise.
func slapPeer(flavorName string) (argv []string, name string, err error) {
	if isMySQLFlavor(flavorName) {
		d, err := sandbox.LookupDistribution(flavorName)
		if err != nil {
			return nil, "", err
		}
		r, ok := d.Installed()
		if !ok {
			return nil, "", fmt.Errorf("%s is not installed: innowarm sandbox flavors --install %s", flavorName, flavorName)
		}
		if argv = r.Tool("mysqlslap"); argv == nil {
			return nil, "", fmt.Errorf("%s has no mysqlslap", flavorName)
		}
		return argv, "mysqlslap (" + flavorName + ")", nil
	}
	p, err := findTool("mariadb-slap", "mysqlslap")
	if err != nil {
		return nil, "", err
	}
	return []string{p}, filepath.Base(p), nil
}

func isMySQLFlavor(name string) bool {
	d, err := sandbox.LookupDistribution(name)
	return name != "" && err == nil && d.Kind == flavor.MySQL
}

func findTool(names ...string) (string, error) {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not installed: scripts/ensure-deps.sh bench installs it", names[0])
}

// writeLookups writes the 2017 benchmark's query file: distinct keys of test_data, one
// `select * from test_data where random_str = "...";` per line, in a shuffled order.
func writeLookups(ctx context.Context, db *sql.DB, sc loadScale, path string) error {
	step := max(1, sc.seedRows/int64(sc.lookups))
	rows, err := db.QueryContext(ctx, fmt.Sprintf("SELECT random_str FROM seed.test_data WHERE id %% %d = 0 LIMIT %d", step, sc.lookups))
	if err != nil {
		return fmt.Errorf("pick the lookup keys: %w", err)
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return err
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(keys) != sc.lookups {
		return fmt.Errorf("found %d lookup keys, want %d", len(keys), sc.lookups)
	}
	rng := rand.New(rand.NewPCG(2017, 2))
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "select * from test_data where random_str = \"%s\";\n", k)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

type procOut struct {
	stdout, stderr string
	cpu            float64
}

func run(ctx context.Context, bin string, args ...string) (procOut, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	po := procOut{stdout: out.String(), stderr: errb.String()}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			po.cpu = float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
		}
	}
	if err != nil {
		return po, fmt.Errorf("%s: %w: %s", filepath.Base(bin), err, strings.TrimSpace(po.stderr))
	}
	return po, nil
}

var (
	slapSeconds = regexp.MustCompile(`Average number of seconds to run all queries: ([0-9.]+) seconds`)
	slapClients = regexp.MustCompile(`Number of clients running queries: (\d+)`)
	slapPer     = regexp.MustCompile(`Average number of queries per client: (\d+)`)
	sbQueries   = regexp.MustCompile(`queries:\s+(\d+)\s+\(([0-9.]+) per sec\.\)`)
)

// slapRun runs a mysqlslap-style client and reads its block: QPS is the queries over
// mysqlslap's average seconds, for innowarm and mariadb-slap alike.
func slapRun(ctx context.Context, argv []string, args []string) (toolRun, error) {
	po, err := run(ctx, argv[0], append(append([]string{}, argv[1:]...), args...)...)
	if err != nil {
		return toolRun{}, err
	}
	s, c, p := slapSeconds.FindStringSubmatch(po.stdout), slapClients.FindStringSubmatch(po.stdout), slapPer.FindStringSubmatch(po.stdout)
	if s == nil || c == nil || p == nil {
		return toolRun{}, fmt.Errorf("no mysqlslap block in the output: %q", po.stdout)
	}
	secs, _ := strconv.ParseFloat(s[1], 64)
	clients, _ := strconv.ParseFloat(c[1], 64)
	per, _ := strconv.ParseFloat(p[1], 64)
	if secs <= 0 {
		return toolRun{}, fmt.Errorf("the run took no measurable time: %q", po.stdout)
	}
	q := clients * per
	return toolRun{qps: q / secs, queries: q, cpu: po.cpu}, nil
}

func sysbenchRun(ctx context.Context, bin string, args []string) (toolRun, error) {
	po, err := run(ctx, bin, args...)
	if err != nil {
		return toolRun{}, err
	}
	m := sbQueries.FindStringSubmatch(po.stdout)
	if m == nil {
		return toolRun{}, fmt.Errorf("no queries line in sysbench's output: %q", po.stdout)
	}
	q, _ := strconv.ParseFloat(m[1], 64)
	qps, _ := strconv.ParseFloat(m[2], 64)
	return toolRun{qps: qps, queries: q, cpu: po.cpu}, nil
}

func pointRun(ctx context.Context, bin string, args []string) (toolRun, error) {
	po, err := run(ctx, bin, args...)
	if err != nil {
		return toolRun{}, err
	}
	var rep struct {
		Runs []struct {
			Queries int64   `json:"queries"`
			QPS     float64 `json:"qps"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(po.stdout), &rep); err != nil || len(rep.Runs) != 1 {
		return toolRun{}, fmt.Errorf("bad JSON from innowarm bench (%w): %q", err, po.stdout)
	}
	return toolRun{qps: rep.Runs[0].QPS, queries: float64(rep.Runs[0].Queries), cpu: po.cpu}, nil
}

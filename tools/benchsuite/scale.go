package benchsuite

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/innowarm/innowarm/internal/report"
	"github.com/innowarm/innowarm/internal/units"
)

// The scale scenario (issue 14): what innowarm's own reads cost the server as the pool
// grows. For each pool size the pool is filled with data, a small foreground workload runs
// on a resident table, and each command is timed with the server's peak memory growth and
// the foreground's queries per second during it: inspect of the whole pool and of one
// schema, snapshot of one schema and of the whole pool, a readiness probe (inspect
// --manifest --wait-coverage), a warm of a 1 GiB table into the otherwise full pool, and
// warm --from the whole pool's snapshot.
func init() {
	Register(Scenario{
		Name:  "scale",
		Issue: 14,
		About: "cost of inspect, snapshot, probes and warms against pool size (1, 4, 12 GiB): time, server RSS growth, foreground QPS",
		Run:   runScaleBench,
	})
}

// scaleCommand is one innowarm command the scenario measures at every pool size.
type scaleCommand struct {
	name string
	args func(manifest string) []string
	// repeat runs it this many times and keeps the median (cheap, noisy probes).
	repeat int
}

var scaleCommands = []scaleCommand{
	{name: "inspect (whole pool)", args: func(string) []string { return []string{"inspect", "--json"} }},
	{name: "inspect -D probe", args: func(string) []string { return []string{"inspect", "-D", "probe", "--json"} }, repeat: 3},
	{name: "snapshot -D probe", args: func(m string) []string {
		return []string{"snapshot", "-D", "probe", "-o", m + ".probe", "--json", "--observe", "0"}
	}, repeat: 3},
	// The whole pool's hot set (the manifest the probe and warm --from use): its output is
	// an entry per resident page, O(pool) by definition.
	{name: "snapshot", args: func(m string) []string { return []string{"snapshot", "-o", m, "--json", "--observe", "0"} }}, // one look: its foreground turns the pool over
	{name: "probe (--wait-coverage, 1 s)", args: func(m string) []string {
		return []string{"inspect", "--manifest", m, "--wait-coverage", "1%", "--timeout", "1s", "--interval", "1s"}
	}, repeat: 3},
	{name: "warm 1 GiB table into a full pool", args: func(string) []string {
		return []string{"warm", "--tables", "scale.sbtest1", "--budget", "100%", "--json"}
	}},
	{name: "warm --from snapshot", args: func(m string) []string { return []string{"warm", "--from", m, "--json"} }},
}

// scaleCost is one command at one pool size.
type scaleCost struct {
	Pool        int64   `json:"pool_bytes"`
	Command     string  `json:"command"`
	Seconds     float64 `json:"seconds"`
	RSSGrowthMB float64 `json:"server_rss_growth_mb"`
	RSSPctPool  float64 `json:"server_rss_growth_pct_of_pool"`
	FgQPSBefore float64 `json:"foreground_qps_before"`
	FgQPSDuring float64 `json:"foreground_qps_during"`
	PagesData   int64   `json:"pool_data_pages"`
}

func runScaleBench(ctx context.Context, env Env) (Result, error) {
	var res Result
	pools := []int64{1 << 30, 4 << 30, 12 << 30}
	rowsPerTable := int64(4_000_000) // about 0.9-1 GB per table
	if env.Quick() {
		pools = []int64{128 << 20, 512 << 20}
		rowsPerTable = 250_000
	}
	maxPool := pools[len(pools)-1]
	s, err := startServer(ctx, env, pools[0])
	if err != nil {
		return res, err
	}
	defer s.close()

	// Data: tables of ~1 GB until there is 10% more than the largest pool, and a small
	// resident schema for the foreground workload and for "inspect of one schema".
	perTable := rowsPerTable * 235 // bytes per sbtest row with its k index, measured
	tables := int(maxPool*11/10/perTable) + 2
	env.Log.Infof("scale: %d tables of %d rows (about %s) for pools up to %s", tables, rowsPerTable, units.FormatBytes(int64(tables)*perTable), units.FormatBytes(maxPool))
	t0 := time.Now()
	if _, err := s.innowarm(ctx, "bench", "prepare", "--create-schema", "scale", "--tables", strconv.Itoa(tables), "--rows", strconv.FormatInt(rowsPerTable, 10)); err != nil {
		return res, err
	}
	if _, err := s.innowarm(ctx, "bench", "prepare", "--create-schema", "probe", "--tables", "1", "--rows", "100000"); err != nil {
		return res, err
	}
	res.AddMetric("data load", time.Since(t0).Seconds(), "s")

	var costs []scaleCost
	for _, pool := range pools {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		c, err := measureScale(ctx, env, s, pool, tables)
		costs = append(costs, c...)
		if err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("pool %s: %v", units.FormatBytes(pool), err))
			env.Log.Warnf("scale: pool %s: %v", units.FormatBytes(pool), err)
		}
	}
	for _, c := range costs {
		label := fmt.Sprintf("%s @ %s", c.Command, units.FormatBytes(c.Pool))
		res.AddMetric(label+": time", c.Seconds, "s")
		res.AddMetric(label+": server RSS growth", c.RSSGrowthMB, "MB")
		if c.FgQPSBefore > 0 {
			res.AddMetric(label+": foreground QPS during / before", c.FgQPSDuring/c.FgQPSBefore, "x")
		}
	}
	// The targets: one schema's inspect and snapshot cost at the largest pool <= 2x their
	// cost at the smallest; server memory growth <= 1% of the pool for every read.
	for _, name := range []string{"inspect -D probe", "snapshot -D probe", "probe (--wait-coverage, 1 s)", "snapshot"} {
		lo, hi := findCost(costs, name, pools[0]), findCost(costs, name, maxPool)
		target := "<= 2"
		if name == "snapshot" {
			target = "" // the whole pool: it writes what the pool holds
		}
		if lo != nil && hi != nil && lo.Seconds > 0 {
			res.AddRatio(fmt.Sprintf("%s: time at %s / at %s", name, units.FormatBytes(maxPool), units.FormatBytes(pools[0])), hi.Seconds/lo.Seconds, target)
		}
	}
	worst := 0.0
	for _, c := range costs {
		if !strings.HasPrefix(c.Command, "warm") && c.RSSPctPool > worst {
			worst = c.RSSPctPool
		}
	}
	res.AddRatio("largest server RSS growth during an innowarm read, % of the pool", worst, "<= 1")
	if err := writeScaleReport(filepath.Join(env.OutDir, "report"), pools, costs); err != nil {
		res.Notes = append(res.Notes, "report: "+err.Error())
	}
	return res, nil
}

func findCost(costs []scaleCost, command string, pool int64) *scaleCost {
	for i := range costs {
		if costs[i].Command == command && costs[i].Pool == pool {
			return &costs[i]
		}
	}
	return nil
}

// measureScale restarts the server with the pool, fills it with every table but sbtest1,
// and measures each command while the foreground runs.
func measureScale(ctx context.Context, env Env, s *server, pool int64, tables int) ([]scaleCost, error) {
	env.Log.Infof("scale: pool %s", units.FormatBytes(pool))
	if err := s.restart(ctx, pool); err != nil {
		return nil, err
	}
	var fill []string
	for i := 2; i <= tables; i++ {
		fill = append(fill, fmt.Sprintf("scale.sbtest%d", i))
	}
	if _, err := s.innowarm(ctx, "warm", "--tables", strings.Join(fill, ","), "--budget", "100%"); err != nil {
		return nil, fmt.Errorf("fill the pool: %w", err)
	}
	if _, err := s.innowarm(ctx, "warm", "-D", "probe"); err != nil {
		return nil, fmt.Errorf("warm the probe schema: %w", err)
	}
	fg, err := startForeground(ctx, s, 2)
	if err != nil {
		return nil, err
	}
	defer fg.stop()
	manifest := filepath.Join(env.OutDir, fmt.Sprintf("pool-%d.manifest", pool>>20))
	var out []scaleCost
	for _, cmd := range scaleCommands {
		n := max(cmd.repeat, 1)
		var runs []scaleCost
		for i := 0; i < n; i++ {
			c, err := s.measureCost(ctx, fg, pool, cmd.name, cmd.args(manifest))
			if err != nil {
				return out, fmt.Errorf("%s: %w", cmd.name, err)
			}
			runs = append(runs, c)
		}
		out = append(out, medianCost(runs))
		env.Log.Infof("scale: pool %s: %s: %.3f s, server RSS +%.1f MB, foreground %.0f -> %.0f QPS", units.FormatBytes(pool), cmd.name, out[len(out)-1].Seconds, out[len(out)-1].RSSGrowthMB, out[len(out)-1].FgQPSBefore, out[len(out)-1].FgQPSDuring)
	}
	return out, nil
}

func medianCost(runs []scaleCost) scaleCost {
	secs := make([]float64, len(runs))
	for i, r := range runs {
		secs[i] = r.Seconds
	}
	m := lowerMedian(secs)
	for _, r := range runs {
		if r.Seconds == m {
			return r
		}
	}
	return runs[0]
}

// measureCost runs one innowarm command and samples, while it runs, the server's resident
// memory (every 10 ms) and the foreground's completed queries; the foreground's rate over
// the two seconds before is the baseline.
func (s *server) measureCost(ctx context.Context, fg *foreground, pool int64, name string, args []string) (scaleCost, error) {
	c := scaleCost{Pool: pool, Command: name, PagesData: s.counter(ctx, "Innodb_buffer_pool_pages_data")}
	q0, t0 := fg.queries.Load(), time.Now()
	select {
	case <-ctx.Done():
		return c, ctx.Err()
	case <-time.After(2 * time.Second):
	}
	c.FgQPSBefore = float64(fg.queries.Load()-q0) / time.Since(t0).Seconds()
	pid := s.sb.Status(ctx).Pid
	base := rssKB(pid)
	var peak atomic.Int64
	peak.Store(base)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if r := rssKB(pid); r > peak.Load() {
					peak.Store(r)
				}
			}
		}
	}()
	q1 := fg.queries.Load()
	m, err := s.innowarm(ctx, args...)
	close(done)
	wg.Wait()
	c.Seconds = m.seconds
	if m.seconds > 0 {
		c.FgQPSDuring = float64(fg.queries.Load()-q1) / m.seconds
	}
	c.RSSGrowthMB = float64(peak.Load()-base) / 1024
	c.RSSPctPool = 100 * c.RSSGrowthMB * (1 << 20) / float64(pool)
	// A probe that times out (exit 3) did its reads: its cost is what is measured.
	if err != nil && !strings.Contains(err.Error(), "exit status 3") {
		return c, err
	}
	return c, nil
}

func rssKB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			n, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
			return n
		}
	}
	return 0
}

// foreground is a small steady workload on the resident probe table: point selects on
// clients connections, counted.
type foreground struct {
	queries atomic.Int64
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

func startForeground(ctx context.Context, s *server, clients int) (*foreground, error) {
	fctx, cancel := context.WithCancel(ctx)
	fg := &foreground{cancel: cancel}
	db := s.conn.DB
	for i := 0; i < clients; i++ {
		conn, err := db.Conn(fctx)
		if err != nil {
			cancel()
			return nil, err
		}
		fg.wg.Add(1)
		go func(conn *sql.Conn) {
			defer fg.wg.Done()
			defer conn.Close()
			var c string
			for fctx.Err() == nil {
				if err := conn.QueryRowContext(fctx, "SELECT c FROM probe.sbtest1 WHERE id = ?", 1+rand.IntN(100000)).Scan(&c); err == nil {
					fg.queries.Add(1)
				}
			}
		}(conn)
	}
	return fg, nil
}

func (fg *foreground) stop() {
	fg.cancel()
	fg.wg.Wait()
}

// writeScaleReport draws each command's time and the server's memory growth against the
// pool size.
func writeScaleReport(dir string, pools []int64, costs []scaleCost) error {
	var timeSeries, rssSeries []report.Series
	for _, cmd := range scaleCommands {
		ts, rs := report.Series{Name: cmd.name}, report.Series{Name: cmd.name}
		for _, p := range pools {
			if c := findCost(costs, cmd.name, p); c != nil {
				gib := float64(p) / (1 << 30)
				ts.X, ts.Y = append(ts.X, gib), append(ts.Y, c.Seconds)
				rs.X, rs.Y = append(rs.X, gib), append(rs.Y, c.RSSGrowthMB)
			}
		}
		if len(ts.X) > 0 {
			timeSeries, rssSeries = append(timeSeries, ts), append(rssSeries, rs)
		}
	}
	if len(timeSeries) == 0 {
		return fmt.Errorf("nothing measured")
	}
	page := report.Page{
		Title: "innowarm: cost against pool size",
		Sections: []report.Section{{Heading: "cost against pool size", Content: []report.Block{
			report.LineChart{Name: "scale-cost", Title: "time of each command against the pool size", XLabel: "buffer pool (GiB)", YLabel: "seconds", Series: timeSeries,
				Lower: &report.LinePanel{YLabel: "server RSS growth (MB)", Series: rssSeries}},
		}}},
	}
	return report.WriteDir(dir, page, costs)
}

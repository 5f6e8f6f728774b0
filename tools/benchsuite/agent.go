package benchsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/innowarm/innowarm/internal/units"
)

// The agent scenario (issue 20): what the agent's /ready costs as the pool grows. For each
// pool size the pool is filled with data, the whole pool's hot set is captured, and an
// agent measures that manifest's coverage (the largest target a probe has: an exact count
// reads the whole pool's page list). Once it is ready, /ready is asked again and again;
// beside it, in the same run, the readiness probe of today (inspect --manifest
// --wait-coverage, a process per probe).
func init() {
	Register(Scenario{
		Name:  "agent",
		Issue: 20,
		About: "the agent's /ready and its measures against pool size (1, 4 GiB): latency of /ready, cost of a measure and of a count, beside the inspect --wait-coverage probe",
		Run:   runAgentBench,
	})
}

// agentCost is the agent at one pool size.
type agentCost struct {
	Pool           int64   `json:"pool_bytes"`
	PagesData      int64   `json:"pool_data_pages"`
	TargetPages    int64   `json:"target_pages"`
	ReadyMedianMS  float64 `json:"ready_median_ms"`
	ReadyP99MS     float64 `json:"ready_p99_ms"`
	ReadyMaxMS     float64 `json:"ready_max_ms"`
	MeasureMS      float64 `json:"measure_median_ms"`     // a measure while ready: the status read
	StatusReadMS   float64 `json:"status_read_median_ms"` // the same status read from the harness, at the same time
	CountSeconds   float64 `json:"first_count_seconds"`
	CountsReady    int64   `json:"counts_while_ready"`
	ProbeSeconds   float64 `json:"probe_median_seconds"`
	StartToReadyMS float64 `json:"agent_start_to_ready_ms"`
}

func runAgentBench(ctx context.Context, env Env) (Result, error) {
	var res Result
	// 12 GiB is left to the scale scenario's probe (the same counters, the same count): on a
	// shared 24 GiB machine a 12 GiB pool and its 13 GB of data crowd everyone else out.
	pools := []int64{1 << 30, 4 << 30}
	rowsPerTable := int64(4_000_000) // about 0.9-1 GB per table
	asks := 500
	if env.Quick() {
		pools = []int64{128 << 20, 512 << 20}
		rowsPerTable, asks = 250_000, 100
	}
	maxPool := pools[len(pools)-1]
	s, err := startServer(ctx, env, pools[0])
	if err != nil {
		return res, err
	}
	defer s.close()
	perTable := rowsPerTable * 235
	tables := int(maxPool*11/10/perTable) + 2
	env.Log.Infof("agent: %d tables of %d rows for pools up to %s", tables, rowsPerTable, units.FormatBytes(maxPool))
	if _, err := s.innowarm(ctx, "bench", "prepare", "--create-schema", "scale", "--tables", strconv.Itoa(tables), "--rows", strconv.FormatInt(rowsPerTable, 10)); err != nil {
		return res, err
	}
	var costs []agentCost
	for _, pool := range pools {
		c, err := measureAgent(ctx, env, s, pool, tables, asks)
		if err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("pool %s: %v", units.FormatBytes(pool), err))
			env.Log.Warnf("agent: pool %s: %v", units.FormatBytes(pool), err)
			continue
		}
		costs = append(costs, c)
		label := "@ " + units.FormatBytes(pool)
		res.AddMetric("agent /ready median "+label, c.ReadyMedianMS, "ms")
		res.AddMetric("agent /ready p99 "+label, c.ReadyP99MS, "ms")
		res.AddMetric("agent /ready max "+label, c.ReadyMaxMS, "ms")
		res.AddMetric("agent measure while ready, median "+label, c.MeasureMS, "ms")
		res.AddMetric("the same status read from the harness, median "+label, c.StatusReadMS, "ms")
		res.AddMetric("agent first count "+label, c.CountSeconds, "s")
		res.AddMetric("agent counts while ready "+label, float64(c.CountsReady), "")
		res.AddMetric("probe (--wait-coverage) median "+label, c.ProbeSeconds, "s")
		res.AddRatio(fmt.Sprintf("agent /ready p99 at %s, ms", units.FormatBytes(pool)), c.ReadyP99MS, "<= 30")
		if c.ProbeSeconds > 0 {
			res.AddRatio(fmt.Sprintf("agent /ready median / probe median at %s", units.FormatBytes(pool)), c.ReadyMedianMS/1000/c.ProbeSeconds, "")
		}
		env.Log.Infof("agent: pool %s (%d data pages, target %d pages): /ready median %.2f ms, p99 %.2f ms, max %.2f ms; measure %.2f ms (status read %.2f ms); first count %.3f s; probe %.3f s",
			units.FormatBytes(pool), c.PagesData, c.TargetPages, c.ReadyMedianMS, c.ReadyP99MS, c.ReadyMaxMS, c.MeasureMS, c.StatusReadMS, c.CountSeconds, c.ProbeSeconds)
	}
	if len(costs) == len(pools) && costs[0].ReadyMedianMS > 0 {
		res.AddRatio(fmt.Sprintf("agent /ready median at %s / at %s", units.FormatBytes(maxPool), units.FormatBytes(pools[0])), costs[len(costs)-1].ReadyMedianMS/costs[0].ReadyMedianMS, "<= 2")
	}
	return res, nil
}

// measureAgent fills a pool of the size, captures it, runs an agent on the capture and asks
// its /ready.
func measureAgent(ctx context.Context, env Env, s *server, pool int64, tables, asks int) (agentCost, error) {
	c := agentCost{Pool: pool}
	if err := s.restart(ctx, pool); err != nil {
		return c, err
	}
	var fill []string
	for i := 1; i <= tables; i++ {
		fill = append(fill, fmt.Sprintf("scale.sbtest%d", i))
	}
	if _, err := s.innowarm(ctx, "warm", "--tables", strings.Join(fill, ","), "--budget", "100%"); err != nil {
		return c, fmt.Errorf("fill the pool: %w", err)
	}
	manifest := filepath.Join(env.OutDir, fmt.Sprintf("agent-%d.manifest", pool>>20))
	if _, err := s.innowarm(ctx, "snapshot", "-o", manifest); err != nil {
		return c, err
	}
	c.PagesData = s.counter(ctx, "Innodb_buffer_pool_pages_data")

	var probes []float64
	for i := 0; i < 3; i++ {
		m, err := s.innowarm(ctx, "inspect", "--manifest", manifest, "--wait-coverage", "1%", "--timeout", "1s", "--interval", "1s")
		if err != nil && !strings.Contains(err.Error(), "exit status 3") {
			return c, fmt.Errorf("probe: %w", err)
		}
		probes = append(probes, m.seconds)
	}
	c.ProbeSeconds = median(probes)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return c, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := s.command(ctx, "agent", "--manifest", manifest, "--ready-coverage", "90%", "--interval", "1s", "--http-listen", addr)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return c, err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	client := &http.Client{Timeout: 10 * time.Second}
	status := func() (agentStatus, error) {
		var st agentStatus
		resp, err := client.Get("http://" + addr + "/status") //nolint:noctx // a local request
		if err != nil {
			return st, err
		}
		defer resp.Body.Close()
		return st, json.NewDecoder(resp.Body).Decode(&st)
	}
	deadline := time.Now().Add(10 * time.Minute)
	var st agentStatus
	for {
		if st, err = status(); err == nil && st.State == "ready" {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return c, fmt.Errorf("the agent was not ready within 10 minutes (state %q): %w", st.State, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.StartToReadyMS = float64(time.Since(t0).Milliseconds())
	c.CountSeconds, c.TargetPages = st.Coverage.CountSeconds, st.Coverage.Total
	counts := st.Coverage.Counts

	var lat, measures, reads []float64
	for i := 0; i < asks; i++ {
		t := time.Now()
		resp, err := client.Get("http://" + addr + "/ready") //nolint:noctx // a local request
		if err != nil {
			return c, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		lat = append(lat, float64(time.Since(t).Microseconds())/1000)
		if resp.StatusCode != http.StatusOK {
			return c, fmt.Errorf("/ready answered %d once ready", resp.StatusCode)
		}
		if i%25 == 0 {
			if st, err := status(); err == nil {
				measures = append(measures, 1000*st.Coverage.MeasureSeconds)
			}
			t := time.Now()
			if _, err := s.conn.GlobalStatus(ctx, "Innodb_pages_read", "Innodb_pages_created", "Innodb_buffer_pool_pages_data", "Uptime"); err == nil {
				reads = append(reads, float64(time.Since(t).Microseconds())/1000)
			}
			time.Sleep(100 * time.Millisecond) // spread the asks over the agent's measures
		}
	}
	c.ReadyMedianMS, c.ReadyP99MS, c.ReadyMaxMS = median(lat), quantile(lat, 0.99), quantile(lat, 1)
	c.MeasureMS, c.StatusReadMS = median(measures), median(reads)
	if st, err = status(); err == nil {
		c.CountsReady = st.Coverage.Counts - counts
	}
	return c, nil
}

// agentStatus is the part of the agent's /status the scenario reads.
type agentStatus struct {
	State    string `json:"state"`
	Coverage struct {
		Total          int64   `json:"target_pages"`
		Counts         int64   `json:"counts"`
		CountSeconds   float64 `json:"count_seconds"`
		MeasureSeconds float64 `json:"measure_seconds"`
	} `json:"coverage"`
}

package benchsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"time"
)

func init() {
	Register(Scenario{
		Name:  "recovery",
		Issue: 22,
		About: "restart to hot under live traffic: lost seconds of innowarm warm --from a snapshot (started with the server) vs cold and InnoDB's load at startup (dump_pct 25, 100)",
		Run:   runRecoveryBench,
	})
}

// recoveryScale is one size of the recovery comparison.
type recoveryScale struct {
	pool        string
	rows        int64
	duration    time.Duration
	hotDuration time.Duration
	rounds      int
}

// The full size is the issue's small fast case: data about 3x a 256 MiB pool, 8 clients,
// whose cold pool is 90% full within about 8 s. On the shared machine a hot server's seconds
// vary by 17-42%: the lost seconds' noise grows with the window (each second's) and with the
// window over the hot seconds (the level's), so the window is short and the hot level long
// (15 s and 30 s: about ±1.4 s, against ±3.6 s with 40 s and 15 s), and there are 5 rounds.
var (
	recoveryFull  = recoveryScale{pool: "256M", rows: 3_300_000, duration: 15 * time.Second, hotDuration: 30 * time.Second, rounds: 5}
	recoveryQuick = recoveryScale{pool: "32M", rows: 300_000, duration: 8 * time.Second, hotDuration: 4 * time.Second, rounds: 1}
)

// recoveryJSON is the part of 'innowarm experiment recovery --json' the bench reads.
type recoveryJSON struct {
	HotQPS    float64 `json:"hot_qps"`
	HotNoise  float64 `json:"hot_noise_cv"`
	Limit     float64 `json:"physical_limit_s"`
	HotBytes  int64   `json:"hot_set_bytes"`
	Scenarios []struct {
		ID      string `json:"id"`
		Skipped string `json:"skipped"`
		Median  struct {
			T50      float64 `json:"t50_s"`
			T95      float64 `json:"t95_s"`
			Lost     float64 `json:"lost_s"`
			WorstP95 float64 `json:"worst_p95_ms"`
			Served5  float64 `json:"served_first_5s"`
		} `json:"median"`
	} `json:"scenarios"`
	Notes []string `json:"notes"`
}

// runRecoveryBench runs the recovery experiment on a sandbox of its own (the binary makes
// it) and turns its medians into the suite's metrics and ratios.
func runRecoveryBench(ctx context.Context, env Env) (Result, error) {
	res := Result{Scenario: "recovery", Issue: 22}
	sc := recoveryFull
	if env.Quick() {
		sc = recoveryQuick
	}
	dir := filepath.Join(env.OutDir, "report")
	args := []string{"experiment", "recovery", "--json", "--quiet", "--pool-size", sc.pool, "--rows", strconv.FormatInt(sc.rows, 10),
		"--clients", "8", "--duration", sc.duration.String(), "--hot-duration", sc.hotDuration.String(), "--rounds", strconv.Itoa(sc.rounds),
		"--scenarios", "innodb-load-25,innodb-load-100,innowarm-snapshot,follow-failover", "--report-dir", dir}
	env.Log.Infof("recovery: innowarm %v", args)
	out, err := run(ctx, env.Bin, args...)
	if err != nil {
		return res, err
	}
	var rep recoveryJSON
	if err := json.Unmarshal([]byte(out.stdout), &rep); err != nil {
		return res, fmt.Errorf("read the experiment's JSON: %w", err)
	}
	lost := map[string]float64{}
	for _, s := range rep.Scenarios {
		if s.Skipped != "" {
			res.Notes = append(res.Notes, s.ID+" skipped: "+s.Skipped)
			continue
		}
		lost[s.ID] = s.Median.Lost
		res.AddMetric(s.ID+" lost", s.Median.Lost, "s")
		res.AddMetric(s.ID+" t95", s.Median.T95, "s (-1: not reached)")
		res.AddMetric(s.ID+" worst p95", s.Median.WorstP95, "ms")
		res.AddMetric(s.ID+" first 5 s", 100*s.Median.Served5, "% of hot")
	}
	res.AddMetric("hot level", rep.HotQPS, "qps")
	res.AddMetric("hot level noise", 100*rep.HotNoise, "%")
	res.AddMetric("physical limit", rep.Limit, "s")
	iw, ok := lost["innowarm-snapshot"]
	for _, base := range []string{"cold", "innodb-load-25", "innodb-load-100"} {
		b, has := lost[base]
		if !ok || !has || b <= 0 {
			continue
		}
		res.AddRatio("lost seconds innowarm-snapshot / "+base, iw/b, "<= 1")
		if fo, has := lost["follow-failover"]; has {
			res.AddRatio("lost seconds follow-failover / "+base, fo/b, "<= 1")
		}
	}
	res.Notes = append(res.Notes, fmt.Sprintf("pool %s, %d rows, 8 clients of point selects (pareto) from the moment the server answers, %s per restart, %d round(s), medians; report in %s", sc.pool, sc.rows, sc.duration, sc.rounds, dir))
	res.Notes = append(res.Notes, rep.Notes...)
	return res, nil
}

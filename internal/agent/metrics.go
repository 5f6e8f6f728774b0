package agent

import (
	"math"

	"github.com/prometheus/client_golang/prometheus"
)

// registerMetrics exposes the agent's status in the Prometheus format: every value is read
// from the status when scraped.
func registerMetrics(reg prometheus.Registerer, a *Agent) {
	gauge := func(name, help string, f func(Status) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return f(a.Status()) })
	}
	counter := func(name, help string, f func(Status) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return f(a.Status()) })
	}
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	cs := []prometheus.Collector{
		gauge("innowarm_agent_ready", "1 when the server is ready (coverage reached the threshold in this server run).", func(s Status) float64 { return b(s.Ready) }),
		gauge("innowarm_agent_server_up", "1 when the server answers.", func(s Status) float64 { return b(s.Server.Up) }),
		gauge("innowarm_agent_coverage_ratio", "Share of the target resident (lower bound), 0 to 1; NaN while unknown (not measured yet, or the server down).", func(s Status) float64 {
			if c, ok := s.currentCoverage(); ok {
				return c
			}
			return math.NaN()
		}),
		gauge("innowarm_agent_coverage_upper_ratio", "Upper bound of the share of the target resident; NaN while unknown.", func(s Status) float64 {
			if _, ok := s.currentCoverage(); ok {
				return s.Coverage.CoverageHigh
			}
			return math.NaN()
		}),
		gauge("innowarm_agent_ready_coverage_ratio", "The coverage at which the server is ready.", func(s Status) float64 { return s.Threshold }),
		gauge("innowarm_agent_target_pages", "Pages of the target (at the last count).", func(s Status) float64 { return float64(s.Coverage.Total) }),
		gauge("innowarm_agent_weight_percent", "The weight the agent check answers, percent of the configured weight.", func(s Status) float64 { return float64(s.Weight) }),
		gauge("innowarm_agent_ready_after_seconds", "Seconds from the server's start to ready in this run (0 until ready).", func(s Status) float64 { return s.ReadyAfter }),
		gauge("innowarm_agent_measure_seconds", "Time the last measure took (a status read, and the count when there was one).", func(s Status) float64 { return s.Coverage.MeasureSeconds }),
		gauge("innowarm_agent_count_seconds", "Time the last exact count of the target took.", func(s Status) float64 { return s.Coverage.CountSeconds }),
		counter("innowarm_agent_server_runs_total", "Server runs the agent followed: its restarts, plus one.", func(s Status) float64 { return float64(s.Server.Runs) }),
		counter("innowarm_agent_counts_total", "Exact counts of the target's resident pages (other measures read the page counters only).", func(s Status) float64 { return float64(s.Coverage.Counts) }),
		gauge("innowarm_agent_warm_running", "1 while the warm reads pages.", func(s Status) float64 { return b(s.Warm.State == WarmRunning) }),
		gauge("innowarm_agent_warm_failed", "1 when this server run's warm failed.", func(s Status) float64 { return b(s.Warm.State == WarmFailed) }),
		gauge("innowarm_agent_warm_progress_ratio", "Pages the warm read over the pages it plans to read.", func(s Status) float64 { return s.Warm.Progress }),
		counter("innowarm_agent_check_answers_total", "Answers to HAProxy agent checks.", func(s Status) float64 {
			if s.AgentCheck == nil {
				return 0
			}
			return float64(s.AgentCheck.Answers)
		}),
	}
	for _, st := range States {
		st := st
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "innowarm_agent_state", Help: "1 for the agent's current state.", ConstLabels: prometheus.Labels{"state": string(st)}},
			func() float64 { return b(a.Status().State == st) }))
	}
	reg.MustRegister(cs...)
}

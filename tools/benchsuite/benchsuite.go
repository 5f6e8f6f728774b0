// Package benchsuite runs innowarm's speed and memory comparisons (`make bench`): each
// scenario starts its own sandbox, runs innowarm and the peers it is compared with in the
// same run (InnoDB's native dump/load, mariadb-slap, sysbench, the 2017 tool's approach),
// and reports ratios, because the machines are shared and noisy and lone absolute times
// mean little. Benchmarks are not tests: nothing here runs under `go test`.
package benchsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/innowarm/innowarm/internal/logx"
)

// Env is what a scenario gets.
type Env struct {
	Bin    string // path to the innowarm binary under test
	OutDir string // where the scenario may write files (a subdirectory is its own)
	Scale  string // "full" (the sizes the issues ask for) or "quick" (a smoke run)
	Log    *logx.Logger
}

// Quick reports whether this is a smoke run.
func (e Env) Quick() bool { return e.Scale == "quick" }

// Metric is one measured figure.
type Metric struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

// Ratio compares innowarm with a peer measured in the same run.
type Ratio struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Target string  `json:"target"` // e.g. ">= 0.8"; empty when informative only
	Pass   *bool   `json:"pass,omitempty"`
}

// Result is one scenario's outcome.
type Result struct {
	Scenario string        `json:"scenario"`
	Issue    int           `json:"issue"`
	Seconds  float64       `json:"seconds"`
	Metrics  []Metric      `json:"metrics"`
	Ratios   []Ratio       `json:"ratios"`
	Notes    []string      `json:"notes,omitempty"`
	Error    string        `json:"error,omitempty"`
	Tables   []MarkdownRow `json:"-"`
}

// MarkdownRow is a free-form row a scenario wants in the Markdown report.
type MarkdownRow []string

// AddMetric appends a metric.
func (r *Result) AddMetric(name string, value float64, unit string) {
	r.Metrics = append(r.Metrics, Metric{Name: name, Value: value, Unit: unit})
}

// AddRatio appends a ratio; target is ">= X" or "<= X" or "" (informative).
func (r *Result) AddRatio(name string, value float64, target string) {
	ra := Ratio{Name: name, Value: value, Target: target}
	var op string
	var bound float64
	if n, _ := fmt.Sscanf(target, "%s %g", &op, &bound); n == 2 {
		pass := (op == ">=" && value >= bound) || (op == "<=" && value <= bound)
		ra.Pass = &pass
	}
	r.Ratios = append(r.Ratios, ra)
}

// Scenario is one comparison.
type Scenario struct {
	Name  string
	Issue int
	About string
	Run   func(ctx context.Context, env Env) (Result, error)
}

var scenarios []Scenario

// Register adds a scenario; each scenario lives in its own file.
func Register(s Scenario) { scenarios = append(scenarios, s) }

// Options for a suite run.
type Options struct {
	OutDir string
	Filter string
	Scale  string
	Bin    string
}

// Report is the whole run.
type Report struct {
	StartedAt time.Time         `json:"started_at"`
	Machine   map[string]string `json:"machine"`
	Scale     string            `json:"scale"`
	Results   []Result          `json:"results"`
}

// Run runs the scenarios matching o.Filter and writes results.json and results.md.
func Run(ctx context.Context, o Options) (*Report, error) {
	re, err := regexp.Compile(o.Filter)
	if err != nil {
		return nil, fmt.Errorf("-run: %w", err)
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, err
	}
	log := logx.Default()
	rep := &Report{StartedAt: time.Now().UTC(), Machine: MachineFacts(), Scale: o.Scale}
	sort.SliceStable(scenarios, func(i, j int) bool { return scenarios[i].Issue < scenarios[j].Issue })
	for _, s := range scenarios {
		if !re.MatchString(s.Name) {
			continue
		}
		log.Infof("bench %s (issue %d): %s", s.Name, s.Issue, s.About)
		env := Env{Bin: o.Bin, OutDir: filepath.Join(o.OutDir, s.Name), Scale: o.Scale, Log: log}
		_ = os.MkdirAll(env.OutDir, 0o755)
		t0 := time.Now()
		res, err := s.Run(ctx, env)
		res.Scenario, res.Issue, res.Seconds = s.Name, s.Issue, time.Since(t0).Seconds()
		if err != nil {
			res.Error = err.Error()
			log.Warnf("bench %s failed: %v", s.Name, err)
		}
		rep.Results = append(rep.Results, res)
		if err := rep.write(o.OutDir); err != nil {
			return rep, err
		}
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
	}
	return rep, rep.write(o.OutDir)
}

func (rep *Report) write(dir string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), b, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "results.md"), []byte(rep.Markdown()), 0o644)
}

// Markdown renders the ratios table and each scenario's metrics.
func (rep *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# innowarm bench — %s\n\n", rep.StartedAt.Format("2006-01-02 15:04 MST"))
	keys := make([]string, 0, len(rep.Machine))
	for k := range rep.Machine {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "- %s: %s\n", k, rep.Machine[k])
	}
	fmt.Fprintf(&b, "- scale: %s\n\n## Ratios (innowarm vs peers, same run)\n\n| scenario | ratio | value | target | pass |\n| --- | --- | ---: | --- | --- |\n", rep.Scale)
	for _, r := range rep.Results {
		for _, ra := range r.Ratios {
			pass := ""
			if ra.Pass != nil {
				pass = map[bool]string{true: "yes", false: "**no**"}[*ra.Pass]
			}
			fmt.Fprintf(&b, "| %s | %s | %.2f | %s | %s |\n", r.Scenario, ra.Name, ra.Value, ra.Target, pass)
		}
	}
	for _, r := range rep.Results {
		fmt.Fprintf(&b, "\n## %s (issue %d, %.0f s)\n\n", r.Scenario, r.Issue, r.Seconds)
		if r.Error != "" {
			fmt.Fprintf(&b, "**failed:** %s\n\n", r.Error)
		}
		if len(r.Metrics) > 0 {
			b.WriteString("| metric | value | unit |\n| --- | ---: | --- |\n")
			for _, m := range r.Metrics {
				fmt.Fprintf(&b, "| %s | %.4g | %s |\n", m.Name, m.Value, m.Unit)
			}
		}
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "\n- %s", n)
		}
		if len(r.Notes) > 0 {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// MachineFacts describes the machine the run happened on.
func MachineFacts() map[string]string {
	m := map[string]string{"cpus": fmt.Sprint(runtime.NumCPU()), "go": runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				m["cpu"] = strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "MemTotal:") {
				m["memory"] = strings.TrimSpace(strings.TrimPrefix(l, "MemTotal:"))
			}
		}
	}
	if h, err := os.Hostname(); err == nil {
		m["host"] = h
	}
	return m
}

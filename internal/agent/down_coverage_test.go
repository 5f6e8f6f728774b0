package agent_test

import (
	"context"
	"math"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/innowarm/innowarm/internal/agent"
	"github.com/innowarm/innowarm/internal/catalog"
)

// A server that stops answering has no coverage the agent knows: /ready said "down" beside
// the figure measured before the stall (coverage 1 on a server that no longer answers), and
// the coverage gauge kept it too. While down, /ready answers 503 with coverage null, and
// the gauges are NaN; once the server answers again the figure comes back.
func TestDownServerHasNoCoverage(t *testing.T) {
	sb, conn := secondServer(t, "downcov", 20_000)
	readTable(t, conn, "downcov", "wide")
	t.Cleanup(agent.TreatEveryRunAsYoung()) // a server within its first seconds, as in a CI run
	reg := prometheus.NewRegistry()
	ag := startAgent(t, agent.Options{Conn: conn, Filter: catalog.Filter{Schemas: []string{"downcov"}}, Metrics: reg})
	ag.waitState(t, "ready", 60*time.Second, inState(agent.Ready))
	if code, body := ag.ready(t); code != http.StatusOK || body.Coverage == nil {
		t.Fatalf("/ready on the warm server: %d %+v", code, body)
	}
	pid := sb.Status(context.Background()).Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	defer func() {
		if stopped {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}()
	time.Sleep(150 * time.Millisecond) // past the shared ping
	code, body := ag.ready(t)
	if code != http.StatusServiceUnavailable || body.Ready || body.State != agent.Down {
		t.Errorf("/ready while the server is stopped: %d, state %s, ready %v; want 503, down", code, body.State, body.Ready)
	}
	if body.Coverage != nil {
		t.Errorf("/ready while the server is stopped says coverage %v: want null (unknown)", *body.Coverage)
	}
	if v := gaugeValue(t, reg, "innowarm_agent_coverage_ratio"); !math.IsNaN(v) {
		t.Errorf("innowarm_agent_coverage_ratio while the server is stopped: %v, want NaN", v)
	}
	_ = syscall.Kill(pid, syscall.SIGCONT)
	stopped = false
	ag.waitState(t, "ready again", 60*time.Second, inState(agent.Ready))
	if code, body := ag.ready(t); code != http.StatusOK || body.Coverage == nil || *body.Coverage < 0.95 {
		t.Fatalf("/ready once the server answers again: %d %+v", code, body)
	}
}

func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}

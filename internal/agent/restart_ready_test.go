package agent_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/agent"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// A server restarted between two measures is cold: /ready and the agent check must not
// answer the warm run's "ready" for it. The pool behind the answers' ping reconnects to
// the new run without a word, so before the fix a probe after a quick restart got 200 and
// "100% up" until the monitor's next measure (here an hour away; by default up to 2 s).
//
// Two cases: a run measured seconds into its life, which a restart's new start tells
// apart, and one measured in its first seconds, which is taken for restarted.
func TestRestartBetweenMeasuresIsNotReady(t *testing.T) {
	t.Run("measured after 3 s", func(t *testing.T) { restartBetweenMeasures(t, 4) })
	t.Run("measured at once", func(t *testing.T) { restartBetweenMeasures(t, 0) })
}

func restartBetweenMeasures(t *testing.T, uptime int64) {
	const schema = "iw_restart_between"
	sb, copts := secondServer(t, schema, 20000)
	ctx := context.Background()
	conn, err := sb.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Warm the target by hand: the agent then finds the run ready at its first measure.
	if _, err := conn.DB.ExecContext(ctx, "SELECT COUNT(*) FROM "+sqltext.Table(schema, "wide")+" WHERE pad <> ''"); err != nil {
		t.Fatal(err)
	}
	for {
		st, err := conn.GlobalStatus(ctx, "Uptime")
		if err != nil {
			t.Fatal(err)
		}
		if st["uptime"] >= uptime {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	conn.Close()

	r := startAgent(t, agent.Options{
		Conn: copts, Filter: catalog.Filter{Schemas: []string{schema}},
		// The monitor measures only when an answer pokes it: the answers alone must tell
		// the restart.
		Interval:         time.Hour,
		AgentCheckListen: "127.0.0.1:0",
	})
	r.waitState(t, "ready on the warm server", time.Minute, inState(agent.Ready))

	if _, err := sb.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	code, body := r.ready(t)
	if code == http.StatusOK || body.Ready {
		t.Errorf("/ready after a restart the monitor has not measured yet: %d %+v; want not ready (the pool is cold)", code, body)
	}
	if ans := ask(t, r.check); hasPrefix(ans, "100%") {
		t.Errorf("agent check after the restart: %q; want no full weight for a cold server", ans)
	}
	// The answer poked the monitor: it measures the new run, which is cold.
	st := r.waitState(t, "the new run measured", time.Minute, func(st agent.Status) bool {
		return st.State == agent.Warming && st.Coverage.Known
	})
	if st.Coverage.Coverage > 0.5 {
		t.Errorf("the restarted server's coverage is %.3f; want a cold pool", st.Coverage.Coverage)
	}
	if st.Server.Runs < 2 {
		t.Errorf("server runs %d; want the restart counted as a new run", st.Server.Runs)
	}
}

package connection_test

import (
	"context"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

func TestMain(m *testing.M) { sandboxtest.Main(m, sandboxtest.Options{}) }

func setGlobal(t *testing.T, name, value string) { sandboxtest.SetGlobal(t, name, value) }

func open(t *testing.T) *connection.Conn {
	t.Helper()
	c, err := connection.Open(context.Background(), sandboxtest.Server(t).ConnOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestOwnSessionsOutliveShortWaitTimeout: a server whose wait_timeout is a second does not
// close innowarm's sessions, nor its pool's connections, while they wait between statements
// (a paced warm: "lost the connection to the server ... driver: bad connection").
func TestOwnSessionsOutliveShortWaitTimeout(t *testing.T) {
	ctx := context.Background()
	setGlobal(t, "wait_timeout", "1")
	setGlobal(t, "interactive_timeout", "1")
	c := open(t)
	sess, err := c.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var wait, netRead, netWrite int64
	if err := sess.QueryRow(ctx, "SELECT @@session.wait_timeout, @@session.net_read_timeout, @@session.net_write_timeout", nil, &wait, &netRead, &netWrite); err != nil {
		t.Fatal(err)
	}
	if wait < connection.OwnWaitTimeout || netRead < connection.OwnNetTimeout || netWrite < connection.OwnNetTimeout {
		t.Errorf("session timeouts: wait_timeout %d, net_read_timeout %d, net_write_timeout %d", wait, netRead, netWrite)
	}
	// Idle past the global wait_timeout, the session and the pool's idle connection (the
	// one Open detected the server on) still answer.
	time.Sleep(2500 * time.Millisecond)
	var one int
	if err := sess.QueryRow(ctx, "SELECT 1", nil, &one); err != nil {
		t.Errorf("session idle past the server's wait_timeout: %v", err)
	}
	if err := c.DB.QueryRowContext(ctx, "SELECT @@session.wait_timeout").Scan(&wait); err != nil || wait < connection.OwnWaitTimeout {
		t.Errorf("pool connection idle past the server's wait_timeout: wait_timeout %d, %v", wait, err)
	}
}

// TestOwnSessionsHaveNoStatementTimeLimit: a small global statement time limit (MariaDB
// max_statement_time, MySQL max_execution_time) is lifted on every connection of
// innowarm's, the first one (on which Open detects the server) included; the scans carry
// their own (flavor.WithTimeLimit).
func TestOwnSessionsHaveNoStatementTimeLimit(t *testing.T) {
	ctx := context.Background()
	name, value := "max_statement_time", "0.001"
	if !sandboxtest.Flavor(t).IsMariaDB() {
		name, value = "max_execution_time", "1"
	}
	if got := sandboxtest.Flavor(t).StatementTimeLimitVariable(); got != name {
		t.Fatalf("StatementTimeLimitVariable = %q, want %q", got, name)
	}
	setGlobal(t, name, value)
	c := open(t)
	var limit float64
	if err := c.DB.QueryRowContext(ctx, "SELECT @@session."+name).Scan(&limit); err != nil || limit != 0 {
		t.Errorf("first connection: %s = %g, %v", name, limit, err)
	}
	var sessions []*connection.Session
	for i := 0; i < 3; i++ {
		s, err := c.NewSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, s)
	}
	for i, s := range sessions {
		if err := s.QueryRow(ctx, "SELECT @@session."+name, nil, &limit); err != nil || limit != 0 {
			t.Errorf("session %d: %s = %g, %v", i, name, limit, err)
		}
		// A dictionary read that takes longer than the global limit.
		var n int64
		if err := s.QueryRow(ctx, "SELECT COUNT(*) FROM information_schema.COLUMNS", nil, &n); err != nil {
			t.Errorf("session %d: dictionary read: %v", i, err)
		}
		s.Close()
	}
}

// TestClientConfigKeepsServerSettings: Options.Config, from which bench builds its clients'
// connections (the user's workload), sets none of innowarm's session settings.
func TestClientConfigKeepsServerSettings(t *testing.T) {
	cfg, err := sandboxtest.Server(t).ConnOptions().Config()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"wait_timeout", "net_read_timeout", "net_write_timeout", "max_statement_time", "max_execution_time"} {
		if _, ok := cfg.Params[p]; ok {
			t.Errorf("Config sets %s for bench's clients", p)
		}
	}
}

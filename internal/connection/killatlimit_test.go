package connection_test

import (
	"context"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// TestKillAtTheConnectionLimit: a cancelled statement of an account at its connection limit
// (MAX_USER_CONNECTIONS 2) is still stopped on the server. Its KILL QUERY needs a connection
// of its own, which the server refused while the statement and another held the two slots:
// "could not stop statement ... Error 1226", and the statement ran on (a catalog read, a
// scan) holding its slot. The kill now tries again until a slot is free: here when the
// other statement ends, a second later.
func TestKillAtTheConnectionLimit(t *testing.T) {
	admin := sandboxtest.Conn(t)
	c := sandboxtest.LimitedUser(t, "killlim2", 2)
	ctx := context.Background()
	sess, err := c.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	other, err := c.DB.Conn(ctx) // the second slot, busy for a second, then back in the pool
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _ = other.ExecContext(ctx, "DO SLEEP(1)")
		other.Close()
	}()
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		var v int
		// BENCHMARK stops for a kill only, not for its client gone (SLEEP ends then too).
		done <- sess.QueryRow(runCtx, "SELECT BENCHMARK(100000000000, CRC32(RAND()))", nil, &v)
	}()
	// Cancel once the server runs it.
	running := func() bool {
		var n int
		if err := admin.DB.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ? AND INFO LIKE 'SELECT BENCHMARK(%'", sess.ID()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
	for deadline := time.Now().Add(30 * time.Second); !running(); time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("the statement ended before its cancel: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the statement never ran")
		}
	}
	cancel()
	<-done
	// The kill waits for the other statement's slot (a second) and has 5 s in all; the
	// statement would otherwise run for hours.
	for deadline := time.Now().Add(20 * time.Second); running(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("thread %d still runs its statement 20 s after its cancel: the KILL QUERY was refused at the connection limit", sess.ID())
		}
	}
}

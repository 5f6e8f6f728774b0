package warm_test

import (
	"context"
	"testing"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/sandbox"
)

// execAll runs each statement on conn, failing the test at the first error.
func execAll(t *testing.T, conn *connection.Conn, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := conn.DB.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// coldRestartOf returns what restarts a test's own server cold and points *conn at a new
// connection to it (the old one closed first).
func coldRestartOf(t *testing.T, sb *sandbox.Sandbox, conn **connection.Conn) func() {
	return func() {
		t.Helper()
		(*conn).Close()
		if _, err := sb.ColdRestart(context.Background()); err != nil {
			t.Fatal(err)
		}
		c, err := sb.Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		*conn = c
	}
}

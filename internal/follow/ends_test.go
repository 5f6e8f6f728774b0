package follow_test

import (
	"context"
	"testing"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/sandbox"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// onBothEnds runs the statements stmts gives for each end, the shared source (end 0) then
// target (end 1): each may fill its tables in an order of its own (a logical copy). The
// source's schema db is dropped when the test ends.
func onBothEnds(t *testing.T, target *sandbox.Sandbox, db string, stmts func(c *connection.Conn, end int) []string) {
	t.Helper()
	ctx := context.Background()
	tgtConn, err := target.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tgtConn.Close()
	t.Cleanup(func() { sandboxtest.Exec(t, "DROP DATABASE IF EXISTS "+db) })
	for end, conn := range []*connection.Conn{sandboxtest.Conn(t), tgtConn} {
		for _, q := range stmts(conn, end) {
			if _, err := conn.DB.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
}

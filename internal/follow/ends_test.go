package follow_test

import (
	"context"
	"fmt"
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

// paddedTable is the statements that make db.t anew on one end: an INT key and 200 latin1
// bytes a row (about 70 rows a page on every flavor), id (an SQL expression of seq) for seq
// from 1 to rows inserted in the order order (an expression of seq), and the table written
// out to its file.
func paddedTable(conn *connection.Conn, db, id string, rows int64, order string) []string {
	return []string{"DROP DATABASE IF EXISTS " + db, "CREATE DATABASE " + db,
		"CREATE TABLE " + db + ".t (id INT NOT NULL PRIMARY KEY, pad CHAR(200) CHARACTER SET latin1 NOT NULL DEFAULT '')",
		fmt.Sprintf("INSERT INTO %s.t (id) SELECT %s FROM %s ORDER BY %s", db, id, conn.Server.Series(db, 1, rows), order),
		"FLUSH TABLES " + db + ".t FOR EXPORT", "UNLOCK TABLES"}
}

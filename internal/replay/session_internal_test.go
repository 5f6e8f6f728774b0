package replay

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// TestSessionsAreReadOnly: whatever the classifier lets through, the server refuses writes
// in a replay session; and the sessions' settings do not leak into the pool.
func TestSessionsAreReadOnly(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	schema := sandboxtest.Schema(t)
	table := sqltext.Ident(schema) + ".w"
	sandboxtest.Exec(t, "CREATE TABLE "+table+" (id INT PRIMARY KEY)")
	w := &worker{conn: conn, o: Options{LockWaitTimeout: 2 * time.Second, Timeout: 1500 * time.Millisecond}, res: &Result{}, bad: map[string]error{}}
	s, err := w.session(ctx, schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, write := range []string{"INSERT INTO w VALUES (1)", "UPDATE w SET id = 2", "DELETE FROM w"} {
		_, err := s.Exec(ctx, write)
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1792 { // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
			t.Errorf("%s in a replay session: %v, want error 1792", write, err)
		}
	}
	// MariaDB's limit is in seconds, MySQL's max_execution_time in milliseconds.
	limitVar, want := "max_statement_time", 1.5
	if !sandboxtest.Flavor(t).IsMariaDB() {
		limitVar, want = "max_execution_time", 1500
	}
	var limit float64
	var lockWait int
	var db string
	if err := s.QueryRow(ctx, "SELECT @@session."+limitVar+", @@session.lock_wait_timeout, DATABASE()", nil, &limit, &lockWait, &db); err != nil {
		t.Fatal(err)
	}
	if limit != want || lockWait != 2 || db != schema {
		t.Errorf("session: %s %g, lock_wait_timeout %d, schema %q", limitVar, limit, lockWait, db)
	}
	w.close()
	for i := 0; i < 5; i++ {
		if _, err := conn.DB.ExecContext(ctx, "INSERT INTO "+table+" VALUES (?)", i); err != nil {
			t.Fatalf("the pool inherited a replay session: %v", err)
		}
	}
}

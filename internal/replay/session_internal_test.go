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

// A digest's sample that a replay ran is the application's statement again; innowarm's
// other tagged statements stay tagged.
func TestUnreplayed(t *testing.T) {
	for in, want := range map[string]string{
		"SELECT * FROM t WHERE id = 5\n" + Tag:               "SELECT * FROM t WHERE id = 5",
		"SELECT 1":                                           "SELECT 1",
		"SELECT @@performance_schema " + Tag:                 "SELECT @@performance_schema " + Tag,
		"SELECT /* innowarm:warm */ COUNT(*) FROM t\n" + Tag: "SELECT /* innowarm:warm */ COUNT(*) FROM t\n" + Tag,
		"SELECT /* innowarm:inspect */ SPACE FROM x":         "SELECT /* innowarm:inspect */ SPACE FROM x",
	} {
		if got := unreplayed(in); got != want {
			t.Errorf("unreplayed(%q) = %q, want %q", in, got, want)
		}
	}
}

// The first statement of innowarm's connections, as the driver writes it (its parameters in
// any order), tells its sessions apart; an application's own timeouts do not.
func TestOwnSessionSetup(t *testing.T) {
	for sql, want := range map[string]bool{
		"SET net_read_timeout = 600, net_write_timeout = 600, wait_timeout = 86400":                          true,
		"SET wait_timeout = 86400, max_execution_time = 0, net_write_timeout = 600, net_read_timeout = 600;": true,
		"SET max_statement_time = 0, wait_timeout = 86400, net_read_timeout = 600, net_write_timeout = 600":  true,
		"SET wait_timeout = 86400": false,
		"SET wait_timeout = 28800, net_read_timeout = 600, net_write_timeout = 600":          false,
		"SET wait_timeout = 86400, net_read_timeout = 30, net_write_timeout = 600":           false,
		"SELECT 'SET wait_timeout = 86400, net_read_timeout = 600, net_write_timeout = 600'": false,
		"SET sql_mode = 'A,B', wait_timeout = 86400":                                         false,
	} {
		if got := isOwnSessionSetup(sql); got != want {
			t.Errorf("isOwnSessionSetup(%q) = %v", sql, got)
		}
	}
}

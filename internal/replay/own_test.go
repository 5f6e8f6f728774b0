package replay_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/innowarm/innowarm/internal/replay"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// TestOwnSessionsInLogs: a general log and a slow log (long_query_time = 0) written while
// innowarm warmed, snapshotted and replayed on the server hold innowarm's own reads, most of
// them untagged (the dictionary, the catalog, server variables). A replay of those logs runs
// only the application's statement, and counts innowarm's as skipped.
func TestOwnSessionsInLogs(t *testing.T) {
	schema := sandboxtest.Schema(t)
	sandboxtest.Exec(t, "CREATE TABLE "+q(schema)+".t (id INT PRIMARY KEY, v INT, KEY (v))", "INSERT INTO "+q(schema)+".t VALUES (1, 1), (2, 2)")
	dir := sandboxtest.Dir(t)
	general, slow := filepath.Join(dir, "general.log"), filepath.Join(dir, "slow.log")
	setGlobalString(t, "general_log_file", general)
	setGlobalString(t, "slow_query_log_file", slow)
	sandboxtest.SetGlobal(t, "long_query_time", "0")
	sandboxtest.SetGlobal(t, "general_log", "ON")
	sandboxtest.SetGlobal(t, "slow_query_log", "ON")

	// The application: a client of its own, not one of innowarm's sessions.
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.DBName = "unix", sandboxtest.Server(t).Socket, "root", schema
	app, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	const appQuery = "SELECT v FROM t WHERE id = 2"
	var v int
	if err := app.QueryRowContext(context.Background(), appQuery).Scan(&v); err != nil {
		t.Fatal(err)
	}
	app.Close()

	sock := sandboxtest.Sock(t)
	for _, args := range [][]string{
		{"warm", "-D", schema, "--method", "scan", "-q"},
		{"snapshot", "-o", filepath.Join(dir, "m.json")},
		{"inspect", "-D", schema},
		{"warm", "--replay", sqlFile(t, "SELECT COUNT(*) FROM "+q(schema)+".t;\n"), "-q"},
	} {
		r := sandboxtest.CLI(t, sandboxtest.Run{}, append(append([]string{args[0]}, sock...), args[1:]...)...)
		if r.Code != 0 {
			t.Fatalf("%v: exit %d: %s", args, r.Code, r.Stderr)
		}
	}
	sandboxtest.Exec(t, "SET GLOBAL general_log = OFF", "SET GLOBAL slow_query_log = OFF")

	for _, file := range []string{general, slow} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			if _, err := os.Stat(file); err != nil {
				t.Fatal(err)
			}
			r := sandboxtest.CLI(t, sandboxtest.Run{}, append(append([]string{"warm"}, sock...), "--replay", file, "--dry-run", "--verbose", "--json", "-q")...)
			if r.Code != 0 {
				t.Fatalf("exit %d: %s", r.Code, r.Stderr)
			}
			var out struct {
				Replay struct {
					Selected int64            `json:"statements_selected"`
					Skipped  map[string]int64 `json:"skipped"`
				} `json:"replay"`
				Statements []struct {
					Schema string `json:"schema"`
					SQL    string `json:"sql"`
				} `json:"statements"`
			}
			sandboxtest.JSON(t, []byte(r.Stdout), &out)
			var runs []string
			for _, st := range out.Statements {
				runs = append(runs, "["+st.Schema+"] "+st.SQL)
			}
			if len(runs) != 1 || runs[0] != "["+schema+"] "+appQuery {
				t.Errorf("would run %d statements, want only the application's %q:\n%s", len(runs), appQuery, strings.Join(runs, "\n"))
			}
			// Each command's connections: their setup, their dictionary reads and more.
			if own := out.Replay.Skipped[replay.ReasonOwn]; own < 20 {
				t.Errorf("%d skipped as innowarm's own, want at least 20: %v", own, out.Replay.Skipped)
			}
		})
	}
}

// setGlobalString sets a global variable whose value is a string for the test
// (sandboxtest.SetGlobal puts values back unquoted).
func setGlobalString(t *testing.T, name, value string) {
	t.Helper()
	db := sandboxtest.Conn(t).DB
	var old string
	if err := db.QueryRow("SELECT @@global." + name).Scan(&old); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("SET GLOBAL "+name+" = ?", value); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := sandboxtest.Conn(t).DB.Exec("SET GLOBAL "+name+" = ?", old); err != nil {
			t.Errorf("put back %s = %s: %v", name, old, err)
		}
	})
}

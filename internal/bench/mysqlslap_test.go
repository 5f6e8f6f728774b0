package bench

import (
	"context"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// mariadbSlap finds the reference client; the tests need it (Debian: mariadb-client, which
// mariadb-server depends on).
func mariadbSlap(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"mariadb-slap", "mysqlslap"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("mariadb-slap is not installed: install it with 'apt-get install -y mariadb-client'")
	return ""
}

// onlyPrintCases cover every load type and the options that shape the generated SQL.
var onlyPrintCases = [][]string{
	{"-a"},
	{"-a", "--auto-generate-sql-load-type=read", "--number-of-queries=30"},
	{"-a", "--auto-generate-sql-load-type=write", "--number-of-queries=25", "--auto-generate-sql-write-number=7"},
	{"-a", "--auto-generate-sql-add-autoincrement", "--auto-generate-sql-load-type=key", "--number-int-cols=2:1", "--number-char-cols=3:1",
		"--engine=innodb,memory:max_rows=100", "--auto-generate-sql-secondary-indexes=2"},
	{"-a", "--auto-generate-sql-guid-primary", "--auto-generate-sql-load-type=update", "--number-of-queries=5", "--commit=2",
		"--iterations=2", "--pre-query=SET @a=1", "--post-query=SET @b=2"},
	{"-a", "--auto-generate-sql-add-autoincrement", "--auto-generate-sql-load-type=mixed", "--auto-generate-sql-execute-number=7",
		"--auto-generate-sql-write-number=30", "--auto-generate-sql-unique-write-number=3", "--auto-generate-sql-unique-query-number=4"},
	{"-a", "--auto-generate-sql-load-type=update", "--number-int-cols=3", "--number-char-cols=0", "--no-drop", "--create-schema=other"},
	{"--create=CREATE TABLE a (x int);INSERT INTO a VALUES (1)", "--delimiter=;", "--query=SELECT * FROM a;SELECT x FROM a",
		"--engine=innodb", "--number-of-queries=5"},
}

// TestOnlyPrintMatchesMariadbSlap: the generated SQL is mysqlslap's, byte for byte.
func TestOnlyPrintMatchesMariadbSlap(t *testing.T) {
	slap := mariadbSlap(t)
	for _, args := range onlyPrintCases {
		out, err := exec.Command(slap, append([]string{"--no-defaults", "--only-print"}, args...)...).Output()
		if err != nil {
			t.Fatalf("mariadb-slap %v: %v", args, err)
		}
		res := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"bench", "--no-defaults", "--only-print"}, args...)...)
		if res.Code != 0 {
			t.Fatalf("innowarm bench %v: exit %d: %s", args, res.Code, res.Stderr)
		}
		if res.Stdout != string(out) {
			t.Errorf("innowarm bench --only-print %v differs from mariadb-slap:\n%s", args, firstDiff(string(out), res.Stdout))
		}
	}
}

// TestOnlyPrintSeveralClients: mysqlslap's clients print concurrently; the statements are
// the same, in another order.
func TestOnlyPrintSeveralClients(t *testing.T) {
	slap := mariadbSlap(t)
	args := []string{"-a", "--auto-generate-sql-add-autoincrement", "--auto-generate-sql-load-type=key", "--concurrency=3", "--number-of-queries=10", "--commit=2"}
	out, err := exec.Command(slap, append([]string{"--no-defaults", "--only-print"}, args...)...).Output()
	if err != nil {
		t.Fatal(err)
	}
	res := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"bench", "--no-defaults", "--only-print"}, args...)...)
	want, got := strings.Split(string(out), "\n"), strings.Split(res.Stdout, "\n")
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) {
		t.Errorf("the statements differ:\n%s", firstDiff(strings.Join(want, "\n"), strings.Join(got, "\n")))
	}
}

func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return "line " + strconv.Itoa(i+1) + ":\n  mariadb-slap: " + shorten(a, 200) + "\n  innowarm:     " + shorten(b, 200)
		}
	}
	return "(same lines)"
}

var keyRe = regexp.MustCompile(`WHERE id =  '[^']*'`)

// generalLog runs fn with the general log on and returns, in order, the load phase (the
// statements on t1 of other connections) and the statements of the connections to schema
// (the clients), with primary keys blanked (they are drawn at run time).
func generalLog(t *testing.T, schema string, fn func()) (load, clientSQL []string) {
	t.Helper()
	sandboxtest.Exec(t, "SET GLOBAL log_output = 'TABLE'", "TRUNCATE mysql.general_log", "SET GLOBAL general_log = ON")
	fn()
	sandboxtest.Exec(t, "SET GLOBAL general_log = OFF")
	db := sandboxtest.Conn(t).DB
	rows, err := db.QueryContext(context.Background(), `SELECT thread_id, command_type, CONVERT(argument USING utf8mb4) FROM mysql.general_log ORDER BY event_time, thread_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	clients := map[int64]bool{}
	type ev struct {
		thread int64
		arg    string
	}
	var evs []ev
	for rows.Next() {
		var thread int64
		var cmd, arg string
		if err := rows.Scan(&thread, &cmd, &arg); err != nil {
			t.Fatal(err)
		}
		if cmd == "Connect" && strings.Contains(arg, " on "+schema+" ") {
			clients[thread] = true
		}
		if cmd == "Query" || cmd == "Execute" {
			evs = append(evs, ev{thread, arg})
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	sandboxtest.Exec(t, "TRUNCATE mysql.general_log")
	for _, e := range evs {
		q := keyRe.ReplaceAllString(strings.TrimRight(e.arg, "\x00"), "WHERE id =  'KEY'")
		switch {
		case clients[e.thread] && q != "SELECT CONNECTION_ID()":
			clientSQL = append(clientSQL, q)
		case !clients[e.thread] && (strings.Contains(q, "t1 ") || strings.Contains(q, "`t1`")):
			load = append(load, q)
		}
	}
	return load, clientSQL
}

// TestLoadTypesSendMysqlslapSQL runs each auto-generated load type with innowarm and with
// mariadb-slap against the same server and compares what the clients sent, in order.
func TestLoadTypesSendMysqlslapSQL(t *testing.T) {
	slap := mariadbSlap(t)
	sock := sandboxtest.Server(t).Socket
	for _, lt := range []string{"mixed", "read", "write", "key", "update"} {
		args := []string{"-a", "--auto-generate-sql-load-type=" + lt, "--auto-generate-sql-write-number=6",
			"--auto-generate-sql-unique-query-number=4", "--number-of-queries=9"}
		if lt == "key" || lt == "update" {
			args = append(args, "--auto-generate-sql-add-autoincrement")
		}
		refLoad, ref := generalLog(t, "slap_ref", func() {
			cmd := exec.Command(slap, append([]string{"--no-defaults", "-S", sock, "-uroot", "--create-schema=slap_ref"}, args...)...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("mariadb-slap %v: %v: %s", args, err, out)
			}
		})
		ourLoad, ours := generalLog(t, "slap_ours", func() {
			res := sandboxtest.CLI(t, sandboxtest.Run{}, append(append([]string{"bench"}, sandboxtest.Sock(t)...), append(args, "--create-schema=slap_ours")...)...)
			if res.Code != 0 {
				t.Fatalf("innowarm bench %v: exit %d: %s", args, res.Code, res.Stderr)
			}
		})
		if len(ref) != 9 {
			t.Fatalf("%s: mariadb-slap's client sent %d statements, want 9: %q", lt, len(ref), ref)
		}
		// CREATE TABLE, 5 INSERTs, then the primary keys read back for key lookups
		if n := len(refLoad); n < 6 || !strings.HasPrefix(refLoad[0], "CREATE TABLE `t1`") {
			t.Fatalf("%s: mariadb-slap's load phase: %q", lt, refLoad)
		}
		if !slices.Equal(refLoad, ourLoad) {
			t.Errorf("%s: the load phase differs:\n%s", lt, firstDiff(strings.Join(refLoad, "\n"), strings.Join(ourLoad, "\n")))
		}
		if !slices.Equal(ref, ours) {
			t.Errorf("%s: the clients' SQL differs:\n%s", lt, firstDiff(strings.Join(ref, "\n"), strings.Join(ours, "\n")))
		}
	}
	// Neither schema is left behind: both tools created them and drop them.
	var n int
	sandboxtest.Conn(t).DB.QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME IN ('slap_ref', 'slap_ours')").Scan(&n)
	if n != 0 {
		t.Errorf("%d schemas left behind", n)
	}
}

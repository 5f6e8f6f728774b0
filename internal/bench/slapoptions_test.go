package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// TestBooleanFormsMatchMariadbSlap: mariadb-slap's booleans take the mysql programs'
// forms, on the command line and in an option file: skip-X and disable-X (false),
// enable-X (true), X=ON/OFF/TRUE/FALSE/1/0, and skip-X=0 (true); the command line wins over
// the file whichever form either uses. The SQL --only-print shows (the table's columns,
// the final DROP) must be mariadb-slap's for each. Before, innowarm refused every prefixed
// form (unknown flag, or unknown option in the file) and ON/OFF (not a boolean).
func TestBooleanFormsMatchMariadbSlap(t *testing.T) {
	slap := mariadbSlap(t)
	dir := t.TempDir()
	cnf := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("[mysqlslap]\n"+body), 0o600); err != nil {
			t.Fatal(err)
		}
		return "--defaults-file=" + p
	}
	small := "--auto-generate-sql-write-number=2"
	cases := [][]string{
		{"--no-defaults", "-a", small, "--auto-generate-sql-add-autoincrement", "--skip-auto-generate-sql-add-autoincrement"},
		{"--no-defaults", "-a", small, "--enable-auto-generate-sql-guid-primary", "--auto-generate-sql-load-type=key"},
		{"--no-defaults", "-a", small, "--no-drop=ON"},
		{"--no-defaults", "-a", small, "--no-drop", "--disable-no-drop"},
		{"--no-defaults", "-a", small, "--skip-no-drop=0"},
		{"--no-defaults", "--enable-auto-generate-sql", small, "--auto-generate-sql-add-autoincrement=TRUE"},
		{cnf("a.cnf", "auto-generate-sql=TRUE\nskip-no-drop\nenable-auto-generate-sql-add-autoincrement\nengine=innodb,memory\nskip-compress\n"), small},
		{cnf("b.cnf", "auto-generate-sql\nno-drop=ON\n"), small},
		{cnf("c.cnf", "auto-generate-sql\nno-drop=ON\n"), small, "--skip-no-drop"},
		{cnf("d.cnf", "auto-generate-sql\nskip-auto-generate-sql-add-autoincrement\n"), small, "--auto-generate-sql-add-autoincrement"},
		{cnf("e.cnf", "auto-generate-sql\nauto-generate-sql-add-autoincrement=off\nloose-disable-no-drop\n"), small},
	}
	for _, args := range cases {
		// The option file argument comes first, as mariadb-slap requires.
		out, err := exec.Command(slap, append(append([]string{}, args[0], "--only-print"), args[1:]...)...).Output()
		if err != nil {
			t.Fatalf("mariadb-slap %v: %v", args, err)
		}
		res := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"bench", args[0], "--only-print"}, args[1:]...)...)
		if res.Code != 0 {
			t.Errorf("innowarm bench %v: exit %d: %s", args, res.Code, res.Stderr)
			continue
		}
		if res.Stdout != string(out) {
			t.Errorf("innowarm bench --only-print %v differs from mariadb-slap:\n%s", args, firstDiff(string(out), res.Stdout))
		}
	}
	res := sandboxtest.CLI(t, sandboxtest.Run{}, "bench", "--no-defaults", "--only-print", "-a", "--no-drop=maybe")
	if res.Code != 2 {
		t.Errorf("--no-drop=maybe: exit %d, want 2: %s", res.Code, res.Stderr)
	}
}

// TestMysqlslapEngineListInOptionFile: a [mysqlslap] group's engine= is mysqlslap's list of
// engines, for its runs. bench prepare creates its tables in the list's first engine (with
// its :option) and says so; a --workload run, to which engines do not apply, ignores it with
// a warning; a mysqlslap-style run repeats per engine, as mariadb-slap does. Before,
// prepare put the whole list in its CREATE TABLE (a syntax error near 'memory', exit 1),
// and every --workload run was refused (--engine applies to --query/--auto-generate-sql
// runs).
func TestMysqlslapEngineListInOptionFile(t *testing.T) {
	sb := sandboxtest.Server(t)
	s := sandboxtest.Schema(t) + "_sb"
	defer Cleanup(context.Background(), sandboxtest.Conn(t), s)
	dir := t.TempDir()
	cnf := filepath.Join(dir, "my.cnf")
	if err := os.WriteFile(cnf, []byte("[mysqlslap]\nsocket="+sb.Socket+"\nuser=root\nengine=Aria:ROW_FORMAT=FIXED,memory\nnumber-of-queries=20\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	flavor := sandboxtest.Conn(t).Server
	engine, option := "Aria", "FIXED"
	if !flavor.IsMariaDB() {
		// MySQL has no Aria: MyISAM takes ROW_FORMAT=FIXED too.
		if err := os.WriteFile(cnf, []byte("[mysqlslap]\nsocket="+sb.Socket+"\nuser=root\nengine=MyISAM:ROW_FORMAT=FIXED,memory\nnumber-of-queries=20\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		engine = "MyISAM"
	}
	res := sandboxtest.CLI(t, sandboxtest.Run{}, "bench", "prepare", "--defaults-file="+cnf, "--create-schema="+s, "--rows=100", "--tables=1")
	if res.Code != 0 {
		t.Fatalf("prepare with [mysqlslap] engine=...: exit %d: %s", res.Code, res.Stderr)
	}
	if !strings.Contains(res.Stderr, "prepare creates its tables in the first, "+engine) {
		t.Errorf("prepare did not say which engine of the list it used:\n%s", res.Stderr)
	}
	var gotEngine, gotFormat string
	if err := sandboxtest.Conn(t).DB.QueryRow("SELECT ENGINE, ROW_FORMAT FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'sbtest1'", s).Scan(&gotEngine, &gotFormat); err != nil {
		t.Fatal(err)
	}
	if !strings.EqualFold(gotEngine, engine) || !strings.EqualFold(gotFormat, "Fixed") {
		t.Errorf("sbtest1: engine %s, row format %s; want %s with the option's ROW_FORMAT=%s", gotEngine, gotFormat, engine, option)
	}
	res = sandboxtest.CLI(t, sandboxtest.Run{}, "bench", "prepare", "--defaults-file="+cnf, "--create-schema="+s, "--rows=100", "--engine=innodb,memory")
	if res.Code != 2 {
		t.Errorf("prepare --engine innodb,memory on the command line: exit %d, want 2: %s", res.Code, res.Stderr)
	}
	res = sandboxtest.CLI(t, sandboxtest.Run{}, "bench", "--defaults-file="+cnf, "--create-schema="+s, "--workload=point-select", "--events=10")
	if res.Code != 0 || !strings.Contains(res.Stderr, "ignoring engine=") || !strings.Contains(res.Stderr, "number-of-queries=20") {
		t.Errorf("--workload beside [mysqlslap] engine= and number-of-queries=: exit %d, want 0 and a warning naming them: %s", res.Code, res.Stderr)
	}
	// On the command line they are still refused with a workload.
	res = sandboxtest.CLI(t, sandboxtest.Run{}, "bench", "--defaults-file="+cnf, "--create-schema="+s, "--workload=point-select", "--events=10", "--engine=memory")
	if res.Code != 2 {
		t.Errorf("--workload --engine memory: exit %d, want 2: %s", res.Code, res.Stderr)
	}
	other := sandboxtest.Schema(t) + "_slap"
	res = sandboxtest.CLI(t, sandboxtest.Run{}, "bench", "--defaults-file="+cnf, "--create-schema="+other, "-a")
	if res.Code != 0 || !strings.Contains(res.Stdout, "Running for engine "+strings.ToLower(engine)) && !strings.Contains(res.Stdout, "Running for engine "+engine) || !strings.Contains(res.Stdout, "Running for engine memory") {
		t.Errorf("-a with [mysqlslap] engine=%s...,memory: exit %d, want a block per engine:\n%s%s", engine, res.Code, res.Stdout, res.Stderr)
	}
}

// TestRandSpecFromOptionFile: --rand-spec-* given in an option file apply as on the command
// line (and are checked as strictly). Before, only the command line's were read: a file's
// rand-spec-pct=50 ran special with pct 1, and its rand-spec-pct=101 was not refused. An
// option file's workload settings do not stop a mysqlslap-style run given on the command
// line: they are ignored, with a warning.
func TestRandSpecFromOptionFile(t *testing.T) {
	dir := t.TempDir()
	cnf := filepath.Join(dir, "my.cnf")
	if err := os.WriteFile(cnf, []byte("[innowarm]\nrand-spec-pct=101\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res := sandboxtest.CLI(t, sandboxtest.Run{}, "bench", "--defaults-file="+cnf, "-S", filepath.Join(dir, "none.sock"), "--workload=point-select", "--dist=special")
	if res.Code != 2 || !strings.Contains(res.Stderr, "--rand-spec-pct 101") {
		t.Errorf("[innowarm] rand-spec-pct=101: exit %d, want 2 and the value refused: %s", res.Code, res.Stderr)
	}
	s := sandboxtest.Schema(t) + "_sb"
	c := sandboxtest.Conn(t)
	if _, err := Prepare(context.Background(), c, PrepareOptions{Schema: s, Tables: 1, Rows: 100}, nil); err != nil {
		t.Fatal(err)
	}
	defer Cleanup(context.Background(), c, s)
	if err := os.WriteFile(cnf, []byte("[innowarm]\nrand-spec-pct=50\nrand-spec-iter=3\ndist=special\nworkload=point-select\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := []string{"-S", sandboxtest.Server(t).Socket, "-u", "root"}
	res = sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"bench", "--defaults-file=" + cnf, "--create-schema=" + s, "--events=5", "--json"}, sock...)...)
	if res.Code != 0 || !strings.Contains(res.Stdout, `"dist": "special(pct=50,iter=3,res=75)"`) {
		t.Errorf("[innowarm] rand-spec-pct=50 rand-spec-iter=3: exit %d, want special(pct=50,iter=3,res=75):\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	res = sandboxtest.CLI(t, sandboxtest.Run{}, "bench", "--defaults-file="+cnf, "--only-print", "-a", "--auto-generate-sql-write-number=2")
	if res.Code != 0 || !strings.Contains(res.Stderr, "ignoring workload=point-select") || !strings.Contains(res.Stdout, "CREATE TABLE `t1`") {
		t.Errorf("-a beside an option file's workload settings: exit %d, want 0 and a warning:\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
}

// TestRandSpecInOptionFileOnlyWhereItApplies: an option file's --rand-spec-* settings,
// kept for special (or gaussian) runs, are ignored with a warning by runs whose
// distribution does not take them; on the command line they are still refused there.
func TestRandSpecInOptionFileOnlyWhereItApplies(t *testing.T) {
	dir := t.TempDir()
	cnf := filepath.Join(dir, "my.cnf")
	if err := os.WriteFile(cnf, []byte("[innowarm]\nrand-spec-pct=50\nrand-spec-iter=3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := sandboxtest.Schema(t) + "_sb"
	c := sandboxtest.Conn(t)
	if _, err := Prepare(context.Background(), c, PrepareOptions{Schema: s, Tables: 1, Rows: 100}, nil); err != nil {
		t.Fatal(err)
	}
	defer Cleanup(context.Background(), c, s)
	base := []string{"bench", "--defaults-file=" + cnf, "-S", sandboxtest.Server(t).Socket, "-u", "root", "--create-schema=" + s, "--workload=point-select", "--events=5", "--json"}
	for dist, want := range map[string]string{"uniform": "uniform", "gaussian": "gaussian(iter=3)", "zipf": "zipf:0.8"} {
		res := sandboxtest.CLI(t, sandboxtest.Run{}, append(append([]string{}, base...), "--dist="+dist)...)
		if res.Code != 0 || !strings.Contains(res.Stdout, `"dist": "`+want+`"`) {
			t.Errorf("--dist %s beside [innowarm] rand-spec-pct=50 rand-spec-iter=3: exit %d, want 0 and %s:\n%s%s", dist, res.Code, want, res.Stdout, res.Stderr)
		}
		if dist != "gaussian" && !strings.Contains(res.Stderr, "ignoring rand-spec-iter=3, rand-spec-pct=50") || dist == "gaussian" && !strings.Contains(res.Stderr, "ignoring rand-spec-pct=50") {
			t.Errorf("--dist %s: no warning naming the ignored settings:\n%s", dist, res.Stderr)
		}
	}
	res := sandboxtest.CLI(t, sandboxtest.Run{}, append(append([]string{}, base...), "--rand-spec-pct=5")...)
	if res.Code != 2 {
		t.Errorf("--rand-spec-pct 5 on the command line with --dist uniform: exit %d, want 2: %s", res.Code, res.Stderr)
	}
}

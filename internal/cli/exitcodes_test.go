package cli_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// Every command fails the same way: exit 2 for what the user gave or lacks (a selection or
// a manifest that matches nothing here, a missing privilege, a bad flag), 1 for a runtime
// failure, 3 for a readiness timeout; one "innowarm: ..." line on stderr that names the
// subcommand once; and with --json one JSON object on stdout with the error and the exit
// code, so that a script that reads stdout learns of the failure.
func TestFailuresExitCodesAndJSON(t *testing.T) {
	sb := sandboxtest.Server(t)
	db := sandboxtest.Schema(t)
	srv := sandboxtest.Flavor(t)
	dir := sandboxtest.Dir(t)
	ft := sqltext.Table(db, "ft")
	sandboxtest.Exec(t,
		"CREATE TABLE "+ft+" (id INT PRIMARY KEY, title VARCHAR(100), FULLTEXT KEY ftt (title))",
		"INSERT INTO "+ft+" SELECT seq, CONCAT('title ', seq) FROM "+srv.Series(db, 1, 20000)+" ORDER BY seq",
		"ANALYZE TABLE "+ft,
		// A selection of only a MEMORY table and a view: nothing of it is in the pool.
		"CREATE TABLE "+sqltext.Table(db, "mem")+" (id INT PRIMARY KEY) ENGINE=MEMORY",
		"CREATE VIEW "+sqltext.Table(db, "memview")+" AS SELECT id FROM "+sqltext.Table(db, "mem"),
		"CREATE USER IF NOT EXISTS 'nosuper'@'localhost' IDENTIFIED BY 'ns-pw'",
		"GRANT SELECT ON "+sqltext.Ident(db)+".* TO 'nosuper'@'localhost'",
		"GRANT PROCESS ON *.* TO 'nosuper'@'localhost'",
	)
	gone := goneManifest(t, dir)
	// ft is cold: the budget case has something to leave out, the wait something to wait for.
	if _, err := sb.ColdRestart(context.Background()); err != nil {
		t.Fatal(err)
	}
	sandboxtest.Reconnect(t)
	root := sandboxtest.Sock(t)
	nosuper := []string{"--no-defaults", "-S", sb.Socket, "-u", "nosuper"}
	nosuperPw := []string{"MYSQL_PWD=ns-pw"}

	cases := []struct {
		name string
		env  []string
		args []string
		code int
		want string
	}{
		{"ping wrong password", nil, []string{"ping", "--no-defaults", "-S", sb.Socket, "-u", "nosuper", "--password=wrong"}, 2, "access denied"},
		{"ping unknown flag", nil, []string{"ping", "--frobnicate"}, 2, "ping: unknown flag"},
		{"version unknown flag", nil, []string{"version", "--frobnicate"}, 2, "version: unknown flag"},
		{"inspect selection matches nothing", nil, append([]string{"inspect", "--tables", db + ".nosuch"}, root...), 2, "matches no tables"},
		// A warm of them said every tablespace of the selection was already resident, exit 0.
		{"warm selection of no InnoDB table", nil, append([]string{"warm", "--tables", db + ".mem*"}, root...), 2, "matches no InnoDB table"},
		{"inspect selection of no InnoDB table", nil, append([]string{"inspect", "--tables", db + ".mem"}, root...), 2, "engine MEMORY"},
		{"inspect wait on a selection that matches nothing", nil, append([]string{"inspect", "--tables", db + ".nosuch", "--wait-coverage", "50%", "--timeout", "1m"}, root...), 2, "matches no tables"},
		{"inspect manifest matches nothing", nil, append([]string{"inspect", "--manifest", gone}, root...), 2, "matches nothing here"},
		{"inspect wait on a manifest that matches nothing", nil, append([]string{"inspect", "--manifest", gone, "--wait-coverage", "50%", "--timeout", "1m"}, root...), 2, "matches nothing here"},
		{"warm selection matches nothing", nil, append([]string{"warm", "--tables", db + ".nosuch*"}, root...), 2, "matches no tables"},
		{"warm selection matches nothing, native", nil, append([]string{"warm", "--tables", db + ".nosuch*", "--method", "native"}, root...), 2, "matches no tables"},
		{"warm manifest matches nothing", nil, append([]string{"warm", "--from", gone}, root...), 2, "matches nothing here"},
		{"warm --make-young without SUPER", nosuperPw, append([]string{"warm", "-q", "--tables", db + ".ft", "--method", "scan", "--make-young"}, nosuper...), 2, "SUPER"},
		{"warm --method native without SUPER", nosuperPw, append([]string{"warm", "--tables", db + ".ft", "--method", "native"}, nosuper...), 2, "SUPER"},
		// A full pool leaves the default budget no room; --budget 16K (one page) does the
		// same here. The FULLTEXT index skipped is not what stopped the warm.
		{"warm with no room in the budget", nil, append([]string{"warm", "-q", "--tables", db + ".ft", "--method", "scan", "--budget", "16K"}, root...), 1, "budget"},
		{"snapshot selection matches nothing", nil, append([]string{"snapshot", "--tables", db + ".nosuch", "-o", filepath.Join(dir, "nothing.manifest")}, root...), 2, "matches no tables"},
		{"follow bad budget", nil, []string{"follow", "--source-socket", sb.Socket, "--target-socket", sb.Socket, "--budget", "lots"}, 2, "--budget"},
		{"bench with nothing to run", nil, append([]string{"bench"}, root...), 2, "nothing to run"},
		{"experiment no rows", nil, []string{"experiment", "coldstart", "--rows", "0"}, 2, "--rows"},
		{"sandbox status without a sandbox", nil, []string{"sandbox", "status", "--dir", filepath.Join(dir, "none")}, 2, "no sandbox"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := sandboxtest.CLI(t, sandboxtest.Run{Env: c.env}, c.args...)
			oneLineError(t, r, c.code, c.want)
			if strings.Contains(r.Stderr, "innowarm: innowarm ") {
				t.Errorf("the command is named twice: %q", r.Stderr)
			}
			if r.Stdout != "" {
				t.Errorf("a failure without --json printed on stdout: %q", r.Stdout)
			}
			r = sandboxtest.CLI(t, sandboxtest.Run{Env: c.env}, append(c.args, "--json")...)
			oneLineError(t, r, c.code, c.want)
			got := jsonError(t, r.Stdout)
			if got.ExitCode != c.code || !strings.Contains(strings.ToLower(got.Error), strings.ToLower(c.want)) {
				t.Errorf("--json: stdout %q, want one object with exit_code %d and an error about %q", r.Stdout, c.code, c.want)
			}
		})
	}

	// A readiness wait that times out prints its one document with the error in it.
	args := append([]string{"inspect", "--tables", db + ".ft", "--wait-coverage", "100%", "--timeout", "1s", "--interval", "200ms", "--json"}, root...)
	r := sandboxtest.CLI(t, sandboxtest.Run{}, args...)
	lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
	if last := lines[len(lines)-1]; r.Code != 3 || !strings.HasPrefix(last, "innowarm: ") || !strings.Contains(last, "did not reach") {
		t.Errorf("timed-out wait: exit %d, last line %q", r.Code, last)
	}
	var wait struct {
		Reached  *bool  `json:"reached"`
		Error    string `json:"error"`
		ExitCode int    `json:"exit_code"`
	}
	dec := json.NewDecoder(strings.NewReader(r.Stdout))
	if err := dec.Decode(&wait); err != nil || dec.More() || wait.Reached == nil || *wait.Reached || wait.ExitCode != 3 || wait.Error == "" {
		t.Errorf("timed-out wait --json: want one document saying so with exit_code 3, got %q (%v)", r.Stdout, err)
	}
}

type errorDoc struct {
	Error    string `json:"error"`
	ExitCode int    `json:"exit_code"`
}

// jsonError decodes stdout as exactly one JSON object holding an error.
func jsonError(t *testing.T, stdout string) errorDoc {
	t.Helper()
	var doc errorDoc
	dec := json.NewDecoder(strings.NewReader(stdout))
	if err := dec.Decode(&doc); err != nil {
		t.Errorf("--json failure: stdout is not a JSON object: %q (%v)", stdout, err)
		return doc
	}
	if dec.More() {
		t.Errorf("--json failure: more than one JSON document on stdout: %q", stdout)
	}
	if doc.Error == "" {
		t.Errorf("--json failure: no \"error\" in %q", stdout)
	}
	return doc
}

// goneManifest writes a manifest of a schema that is then dropped: a manifest from another
// server, of which nothing resolves here.
func goneManifest(t *testing.T, dir string) string {
	t.Helper()
	schema := "gone_" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "_"))
	q := sqltext.Table(schema, "t")
	sandboxtest.Exec(t, "DROP DATABASE IF EXISTS "+sqltext.Ident(schema), "CREATE DATABASE "+sqltext.Ident(schema),
		"CREATE TABLE "+q+" (id INT PRIMARY KEY)", "INSERT INTO "+q+" VALUES (1), (2), (3)", "SELECT COUNT(*) FROM "+q)
	path := filepath.Join(dir, "gone.manifest")
	r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"snapshot", "-D", schema, "-o", path, "--page-list", "lru-table"}, sandboxtest.Sock(t)...)...)
	if r.Code != 0 {
		t.Fatalf("snapshot of %s: exit %d: %s", schema, r.Code, r.Stderr)
	}
	sandboxtest.Exec(t, "DROP DATABASE "+sqltext.Ident(schema))
	return path
}

// --version answers as the version command does, with exit 0.
func TestVersionFlag(t *testing.T) {
	want := sandboxtest.CLI(t, sandboxtest.Run{}, "version")
	r := sandboxtest.CLI(t, sandboxtest.Run{}, "--version")
	if r.Code != 0 || r.Stdout != want.Stdout || !strings.HasPrefix(r.Stdout, "innowarm ") {
		t.Errorf("--version: exit %d, %q; version says %q", r.Code, r.Stdout, want.Stdout)
	}
}

// follow takes -D/--database as the other commands do (and its old --databases still).
func TestFollowTakesDatabase(t *testing.T) {
	sb := sandboxtest.Server(t)
	db := sandboxtest.Schema(t)
	q := sqltext.Table(db, "t")
	sandboxtest.Exec(t, "CREATE TABLE "+q+" (id INT PRIMARY KEY)", "INSERT INTO "+q+" VALUES (1), (2)", "SELECT COUNT(*) FROM "+q)
	// follow refuses the same server on both sides: the target is a second one, with the
	// table (a target that has none of the hot set is refused too).
	target := sandboxtest.SecondServer(t, 0)
	tc, err := target.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{"CREATE DATABASE " + sqltext.Ident(db), "CREATE TABLE " + q + " (id INT PRIMARY KEY)"} {
		if _, err := tc.DB.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	tc.Close()
	for _, flag := range []string{"--database", "-D", "--databases"} {
		r := sandboxtest.CLI(t, sandboxtest.Run{}, "follow", "--source-socket", sb.Socket, "--source-user", "root", "--target-socket", target.Socket, "--target-user", "root",
			flag, db, "--rounds", "1", "--interval", "1s", "--json")
		var round struct {
			Round int  `json:"round"`
			OK    bool `json:"ok"`
		}
		if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &round) != nil || round.Round != 1 || !round.OK {
			t.Errorf("follow %s %s: exit %d, stdout %q, stderr %s", flag, db, r.Code, r.Stdout, r.Stderr)
		}
	}
}

// ping tells a user without PROCESS that the InnoDB dictionary tables exist but are closed
// to them, rather than "ok".
func TestPingWithoutProcess(t *testing.T) {
	sb := sandboxtest.Server(t)
	sandboxtest.Exec(t, "CREATE USER IF NOT EXISTS 'noprocess'@'localhost' IDENTIFIED BY 'np-pw'")
	r := sandboxtest.CLI(t, sandboxtest.Run{Env: []string{"MYSQL_PWD=np-pw"}}, "ping", "--no-defaults", "-S", sb.Socket, "-u", "noprocess")
	if r.Code != 0 {
		t.Fatalf("ping: exit %d: %s", r.Code, r.Stderr)
	}
	srv := sandboxtest.Flavor(t)
	tables := strings.TrimPrefix(srv.TablesTable(), "information_schema.")
	if !strings.Contains(r.Stdout, tables+" needs PROCESS") || strings.Contains(r.Stdout, tables+" ok") {
		t.Errorf("ping without PROCESS: %s", r.Stdout)
	}
	r = sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"ping"}, sandboxtest.Sock(t)...)...)
	if !strings.Contains(r.Stdout, tables+" ok") {
		t.Errorf("ping as root: %s", r.Stdout)
	}
}

// A wrong password typed at -p's prompt is reported as typed at the prompt, not as given
// by a flag.
func TestWrongPromptedPasswordSaysSo(t *testing.T) {
	sb := sandboxtest.Server(t)
	sandboxtest.Exec(t, "CREATE USER IF NOT EXISTS 'typist'@'localhost' IDENTIFIED BY 'right-pw'")
	cmd := exec.Command(sandboxtest.Binary(t), "ping", "--no-defaults", "-S", sb.Socket, "-u", "typist", "-p")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + sandboxtest.Dir(t), "TERM=dumb"}
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var out sandboxtest.SyncBuffer
	done := make(chan struct{})
	go func() { _, _ = io.Copy(&out, tty); close(done) }()
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(out.String(), "Enter password: "); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no prompt; output so far: %q", out.String())
		}
	}
	_, _ = tty.Write([]byte("not-the-password\r"))
	err = cmd.Wait()
	<-done
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != 2 || !strings.Contains(out.String(), "typed at the prompt") || strings.Contains(out.String(), "from flag") {
		t.Errorf("wrong password at the prompt: exit %d, %q", code, out.String())
	}
}

// The services (snapshot --every, follow) end with 130 on Ctrl-C, like every command, and
// with 0 on SIGTERM, a service manager's stop.
func TestServicesStopOnSignals(t *testing.T) {
	sb := sandboxtest.Server(t)
	db := sandboxtest.Schema(t)
	q := sqltext.Table(db, "t")
	sandboxtest.Exec(t, "CREATE TABLE "+q+" (id INT PRIMARY KEY)", "INSERT INTO "+q+" VALUES (1), (2)", "SELECT COUNT(*) FROM "+q)
	dir := sandboxtest.Dir(t)
	services := map[string][]string{
		"snapshot --every": append([]string{"snapshot", "-D", db, "-o", filepath.Join(dir, "every.manifest"), "--every", "1s", "--json"}, sandboxtest.Sock(t)...),
		// follow refuses the same server on both sides, and retries a target that is not
		// there (a server not up yet): its failed rounds are printed.
		"follow": {"follow", "--source-socket", sb.Socket, "--source-user", "root", "--target-socket", filepath.Join(dir, "none.sock"), "--target-user", "root",
			"-D", db, "--interval", "1s", "--json"},
	}
	for name, args := range services {
		for _, sig := range []struct {
			s    syscall.Signal
			code int
		}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 0}} {
			t.Run(name+" "+sig.s.String(), func(t *testing.T) {
				cmd := exec.Command(sandboxtest.Binary(t), args...)
				cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
				var stdout, stderr sandboxtest.SyncBuffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				// The first capture or round is printed: the service is running.
				for deadline := time.Now().Add(60 * time.Second); !strings.Contains(stdout.String(), "\n"); time.Sleep(20 * time.Millisecond) {
					if time.Now().After(deadline) {
						_ = cmd.Process.Kill()
						t.Fatalf("no output within 60 s; stderr: %s", stderr.String())
					}
				}
				_ = cmd.Process.Signal(sig.s)
				select {
				case <-done:
				case <-time.After(30 * time.Second):
					_ = cmd.Process.Kill()
					t.Fatalf("still running 30 s after %s", sig.s)
				}
				if code := cmd.ProcessState.ExitCode(); code != sig.code {
					t.Errorf("exit %d after %s, want %d; stderr: %s", code, sig.s, sig.code, stderr.String())
				}
				if sig.code == 130 && !strings.HasSuffix(strings.TrimSpace(stderr.String()), "innowarm: interrupted") {
					t.Errorf("after %s the last line should say interrupted: %s", sig.s, stderr.String())
				}
			})
		}
	}
}

package cli_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// Every bad input named in the foundation issue gives one line naming the problem and the
// fix, exit 2 for usage/input errors and 1 for runtime failures.
func TestBadInputsGiveOneLineErrors(t *testing.T) {
	sb := sandboxtest.Server(t)
	sandboxtest.Exec(t, "CREATE USER IF NOT EXISTS 'badpw'@'localhost' IDENTIFIED BY 'right-one'")
	dir := sandboxtest.Dir(t)
	malformed := filepath.Join(dir, "malformed.cnf")
	os.WriteFile(malformed, []byte("[client]\nuser=root\nthis line is broken\n"), 0o600)
	aFile := filepath.Join(dir, "a-file")
	os.WriteFile(aFile, []byte("x"), 0o600)

	// A port nobody listens on: bind one, then close it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()

	cases := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"unknown flag", []string{"ping", "--frobnicate"}, 2, []string{"unknown flag", "--help"}},
		{"unknown command", []string{"frobnicate"}, 2, []string{"unknown command"}},
		{"bad host", []string{"ping", "--no-defaults", "-h", "no-such-host.invalid", "-u", "root"}, 2, []string{"unknown host", "-h"}},
		{"refused port", []string{"ping", "--no-defaults", "-h", "127.0.0.1", "-P", closedPort, "-u", "root"}, 1, []string{"nothing listens", "port"}},
		{"missing socket", []string{"ping", "--no-defaults", "-S", filepath.Join(dir, "nope.sock"), "-u", "root"}, 2, []string{"does not exist", "socket"}},
		{"wrong password", []string{"ping", "--no-defaults", "-S", sb.Socket, "-u", "badpw", "--password=wrong-one"}, 2, []string{"access denied", "password"}},
		{"unknown database", []string{"ping", "--no-defaults", "-S", sb.Socket, "-u", "root", "-D", "no_such_db"}, 2, []string{"unknown database", "-D"}},
		{"missing option file", []string{"ping", "--defaults-file=" + filepath.Join(dir, "absent.cnf"), "-S", sb.Socket}, 2, []string{"does not exist", "--defaults-file"}},
		{"unreadable option file", []string{"ping", "--defaults-file=" + dir, "-S", sb.Socket}, 2, []string{"cannot read option file"}},
		{"malformed option file", []string{"ping", "--defaults-file=" + malformed, "-S", sb.Socket}, 2, []string{malformed, "line 3"}},
		{"bad port number", []string{"ping", "--no-defaults", "-P", "99999"}, 2, []string{"out of range"}},
		{"bad ssl mode", []string{"ping", "--no-defaults", "--ssl-mode", "maybe"}, 2, []string{"ssl-mode"}},
		{"sandbox dir not writable", []string{"sandbox", "up", "--dir", filepath.Join(aFile, "sb")}, 2, []string{"not writable", "--dir"}},
		{"server binary missing", []string{"sandbox", "up", "--dir", filepath.Join(dir, "sb-nobin"), "--server-binary", filepath.Join(dir, "no-mariadbd")}, 2, []string{"apt-get install -y mariadb-server"}},
		{"pool too small", []string{"sandbox", "up", "--dir", filepath.Join(dir, "sb-tiny"), "--pool-size", "1M"}, 2, []string{"too small"}},
		{"bad pool size", []string{"sandbox", "up", "--dir", filepath.Join(dir, "sb-bad"), "--pool-size", "lots"}, 2, []string{"pool-size"}},
		{"no sandbox there", []string{"sandbox", "status", "--dir", filepath.Join(dir, "empty")}, 2, []string{"no sandbox", "sandbox up"}},
		{"positional argument", []string{"ping", "--no-defaults", "-S", sb.Socket, "-p", "hunter2"}, 2, []string{"no positional arguments"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := sandboxtest.CLI(t, sandboxtest.Run{}, c.args...)
			oneLineError(t, r, c.code, c.want...)
		})
	}
}

// "-p secret" makes "secret" a positional argument (as in the mysql client); the error
// must not echo it.
func TestPositionalPasswordNotEchoed(t *testing.T) {
	sb := sandboxtest.Server(t)
	r := sandboxtest.CLI(t, sandboxtest.Run{}, "ping", "--no-defaults", "-S", sb.Socket, "-u", "root", "-p", "hunter2-secret")
	if r.Code != 2 || strings.Contains(r.Stderr+r.Stdout, "hunter2-secret") {
		t.Errorf("exit %d, output echoes the password: %s%s", r.Code, r.Stdout, r.Stderr)
	}
}

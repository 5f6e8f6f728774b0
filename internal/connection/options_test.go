package connection

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/innowarm/innowarm/internal/exitcode"
)

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// resolve parses args as a command line would and resolves them against env and home.
func resolve(t *testing.T, args []string, env map[string]string, home string) (Options, []OptionValue, error) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	f := BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	if env == nil {
		env = map[string]string{}
	}
	if _, ok := env["USER"]; !ok {
		env["USER"] = "osuser"
	}
	return f.Resolve(func(k string) string { return env[k] }, home)
}

// The command line beats option files, which beat the environment: as in both clients,
// MYSQL_PWD, MYSQL_HOST, MYSQL_TCP_PORT and MYSQL_UNIX_PORT apply where no option file sets
// the value (a stale MYSQL_PWD beat a correct ~/.my.cnf: innowarm was refused where
// mariadb connected).
func TestPrecedenceFlagOverFileOverEnv(t *testing.T) {
	dir := t.TempDir()
	cnf := writeFile(t, dir, "my.cnf", "[client]\nuser=fileuser\npassword=filepw\nhost=filehost\nport=3307\nsocket=/file.sock\n")
	base := []string{"--defaults-file=" + cnf}

	o, _, err := resolve(t, base, nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	if o.User != "fileuser" || o.Password != "filepw" || o.Host != "filehost" || o.Port != 3307 || o.Socket != "/file.sock" {
		t.Errorf("option file values not applied: %+v", o)
	}

	env := map[string]string{"MYSQL_PWD": "envpw", "MYSQL_HOST": "envhost", "MYSQL_TCP_PORT": "3308", "MYSQL_UNIX_PORT": "/env.sock"}
	o, _, err = resolve(t, base, env, dir)
	if err != nil {
		t.Fatal(err)
	}
	if o.Password != "filepw" || o.Host != "filehost" || o.Port != 3307 || o.Socket != "/file.sock" {
		t.Errorf("option file must beat the environment: %+v", o)
	}
	if o.Sources["password"] != cnf {
		t.Errorf("password source = %q", o.Sources["password"])
	}
	// Where no option file sets them, the environment applies.
	bare := writeFile(t, dir, "bare.cnf", "[client]\nuser=fileuser\n")
	o, _, err = resolve(t, []string{"--defaults-file=" + bare}, env, dir)
	if err != nil {
		t.Fatal(err)
	}
	if o.Password != "envpw" || o.Host != "envhost" || o.Port != 3308 || o.Socket != "/env.sock" || o.Sources["password"] != "env MYSQL_PWD" {
		t.Errorf("environment must apply where no option file sets a value: %+v", o)
	}

	o, _, err = resolve(t, append(base, "--password=flagpw", "-h", "flaghost", "-P", "3309", "-S", "/flag.sock", "-u", "flaguser"), env, dir)
	if err != nil {
		t.Fatal(err)
	}
	if o.Password != "flagpw" || o.Host != "flaghost" || o.Port != 3309 || o.Socket != "/flag.sock" || o.User != "flaguser" {
		t.Errorf("flags must beat option files and environment: %+v", o)
	}
}

func TestDefaultUserIsOSUser(t *testing.T) {
	o, _, err := resolve(t, []string{"--no-defaults"}, map[string]string{"USER": "alice"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if o.User != "alice" {
		t.Errorf("default user = %q, want the OS user", o.User)
	}
}

func TestOptionFileOrderAndGroups(t *testing.T) {
	home := t.TempDir()
	// ~/.my.cnf is read after --defaults-extra-file, so it wins; within a file the later
	// group wins, whichever group it is.
	writeFile(t, home, ".my.cnf", "[client]\nuser=homeuser\n[innowarm]\npassword=homepw\nparallel=3\n[mysqldump]\nuser=ignored\n")
	extra := writeFile(t, home, "extra.cnf", "[client]\npassword=extrapw\ndatabase=extradb\n[innowarm]\nloose-frobnicate=1\n")
	o, rest, err := resolve(t, []string{"--defaults-extra-file=" + extra}, nil, home)
	if err != nil {
		t.Fatal(err)
	}
	if o.User != "homeuser" || o.Password != "homepw" || o.Database != "extradb" {
		t.Errorf("order wrong: %+v", o)
	}
	keys := []string{}
	for _, v := range rest {
		keys = append(keys, v.Key)
	}
	if strings.Join(keys, ",") != "frobnicate,parallel" {
		t.Errorf("non-connection [innowarm] settings = %v", keys)
	}

	// --defaults-file replaces every other file, --no-defaults reads none.
	only := writeFile(t, home, "only.cnf", "[client]\nuser=onlyuser\n")
	o, _, _ = resolve(t, []string{"--defaults-file=" + only}, nil, home)
	if o.User != "onlyuser" || o.Password != "" {
		t.Errorf("--defaults-file must be the only file: %+v", o)
	}
	o, _, _ = resolve(t, []string{"--no-defaults"}, nil, home)
	if o.User != "osuser" || o.Password != "" {
		t.Errorf("--no-defaults must read nothing: %+v", o)
	}
}

func TestOptionFileSyntax(t *testing.T) {
	dir := t.TempDir()
	inc := writeFile(t, dir, "inc.cnf", "[client]\nssl-ca=/inc/ca.pem\n")
	incdir := filepath.Join(dir, "conf.d")
	os.Mkdir(incdir, 0o755)
	writeFile(t, incdir, "b.cnf", "[client]\nconnect_timeout=7\n")
	writeFile(t, incdir, "a.cnf", "[client]\nconnect-timeout=5\n")
	writeFile(t, incdir, "ignored.txt", "[client]\nuser=nope\n")
	cnf := writeFile(t, dir, "my.cnf", `# comment
; another comment
[client]
user = spaced   # trailing comment
password = "quoted #not a comment"
ssl_mode=required
!include `+inc+`
!includedir `+incdir+`
[CLIENT]
protocol=tcp
`)
	o, _, err := resolve(t, []string{"--defaults-file=" + cnf}, nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	if o.User != "spaced" || o.Password != "quoted #not a comment" || o.SSLMode != SSLRequired || o.SSLCA != "/inc/ca.pem" || o.ConnectTimeout != 7*time.Second || o.Protocol != "TCP" {
		t.Errorf("parsed %+v", o)
	}
}

func TestBarePasswordPrompts(t *testing.T) {
	dir := t.TempDir()
	cnf := writeFile(t, dir, "my.cnf", "[client]\npassword\n")
	o, _, err := resolve(t, []string{"--defaults-file=" + cnf}, nil, dir)
	if err != nil || !o.PasswordPrompt {
		t.Fatalf("a lone password line must prompt: %+v %v", o, err)
	}
	o, _, err = resolve(t, []string{"--defaults-file=" + cnf, "-p"}, nil, dir)
	if err != nil || !o.PasswordPrompt || o.Password != "" {
		t.Fatalf("-p alone must prompt: %+v %v", o, err)
	}
	o, _, err = resolve(t, []string{"--no-defaults", "--password"}, map[string]string{"MYSQL_PWD": "x"}, dir)
	if err != nil || !o.PasswordPrompt {
		t.Fatalf("--password alone must prompt even with MYSQL_PWD: %+v %v", o, err)
	}
}

func TestMalformedOptionFiles(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"header":     "[client\nuser=x\n",
		"outside":    "user=x\n[client]\n",
		"noinclude":  "[client]\n!include  \t\n",
		"nokey":      "[client]\n=value\n",
		"spaces":     "[client]\nthis is not an option\n",
		"badport":    "[client]\nport=abc\n",
		"timeout":    "[client]\nconnect-timeout=soon\n",
		"includedir": "[client]\n!includedir " + filepath.Join(dir, "missing.d") + "\n",
	}
	for name, text := range cases {
		p := writeFile(t, dir, name+".cnf", text)
		_, _, err := resolve(t, []string{"--defaults-file=" + p}, nil, dir)
		if err == nil {
			t.Errorf("%s: malformed option file accepted", name)
			continue
		}
		if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: want a usage error naming %s, got %v", name, p, err)
		}
	}
	if _, _, err := resolve(t, []string{"--defaults-file=" + filepath.Join(dir, "absent.cnf")}, nil, dir); err == nil || exitcode.Of(err) != exitcode.Usage {
		t.Errorf("missing --defaults-file: %v", err)
	}
	if _, _, err := resolve(t, []string{"--defaults-file=" + dir}, nil, dir); err == nil || exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "cannot read") {
		t.Errorf("unreadable --defaults-file: %v", err)
	}
}

func TestSystemOptionFilesParse(t *testing.T) {
	// The machine's own /etc/mysql/my.cnf (with its !includedir lines) must not trip us.
	for _, f := range []string{"/etc/mysql/my.cnf", "/etc/my.cnf"} {
		if _, err := os.Stat(f); err != nil {
			continue
		}
		if _, err := ReadOptionFiles(OptionFileSet{DefaultsFile: f}, OptionGroups); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestTransportChoice(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args   []string
		socket bool
	}{
		{[]string{"--no-defaults"}, true},
		{[]string{"--no-defaults", "-h", "localhost"}, true},
		{[]string{"--no-defaults", "-h", "127.0.0.1"}, false},
		{[]string{"--no-defaults", "-P", "3307"}, false},
		{[]string{"--no-defaults", "-P", "3307", "-S", "/x.sock"}, true},
		{[]string{"--no-defaults", "--protocol=TCP"}, false},
		{[]string{"--no-defaults", "-h", "db1", "--protocol=socket"}, true},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			o, _, err := resolve(t, c.args, nil, dir)
			if err != nil {
				t.Fatal(err)
			}
			if o.UsesSocket() != c.socket {
				t.Errorf("%v: socket = %v, want %v", c.args, o.UsesSocket(), c.socket)
			}
		})
	}
	cnf := writeFile(t, dir, "port.cnf", "[client]\nport=3307\n")
	o, _, _ := resolve(t, []string{"--defaults-file=" + cnf}, nil, dir)
	if !o.UsesSocket() {
		t.Error("a port from an option file must not switch localhost to TCP (mysql client rule)")
	}
}

// "-P 3307 never silently reaches the socket's server": a port on the command line means
// TCP unless the socket is on the command line too. A socket (or protocol=socket) from an
// option file or MYSQL_UNIX_PORT kept the socket, and -P 3307 reached the socket's server.
func TestPortOnTheCommandLineBeatsAStandingSocket(t *testing.T) {
	dir := t.TempDir()
	sock := writeFile(t, dir, "sock.cnf", "[client]\nsocket=/file.sock\n")
	proto := writeFile(t, dir, "proto.cnf", "[client]\nsocket=/file.sock\nprotocol=socket\n")
	both := writeFile(t, dir, "both.cnf", "[client]\nsocket=/file.sock\nport=3307\n")
	env := map[string]string{"MYSQL_UNIX_PORT": "/env.sock"}
	for _, c := range []struct {
		args   []string
		env    map[string]string
		socket bool
		target string
	}{
		{[]string{"--defaults-file=" + sock, "-P", "3307"}, nil, false, "localhost:3307"},
		{[]string{"--defaults-file=" + proto, "-P", "3307"}, nil, false, "localhost:3307"},
		{[]string{"--no-defaults", "-P", "3307"}, env, false, "localhost:3307"},
		{[]string{"--defaults-file=" + sock, "-P", "3307", "-S", "/flag.sock"}, nil, true, "socket /flag.sock"},
		{[]string{"--no-defaults", "-S", "/flag.sock", "-P", "3307"}, env, true, "socket /flag.sock"},
		{[]string{"--defaults-file=" + sock, "-P", "3307", "--protocol=socket"}, nil, true, "socket /file.sock"},
		{[]string{"--defaults-file=" + sock}, nil, true, "socket /file.sock"},
		{[]string{"--defaults-file=" + both}, nil, true, "socket /file.sock"},
		{[]string{"--no-defaults"}, env, true, "socket /env.sock"},
	} {
		o, _, err := resolve(t, c.args, c.env, dir)
		if err != nil {
			t.Fatal(err)
		}
		if o.UsesSocket() != c.socket || o.Target() != c.target {
			t.Errorf("%v (env %v): socket %v, target %q; want %v, %q", c.args, c.env, o.UsesSocket(), o.Target(), c.socket, c.target)
		}
	}
}

// A bracketed IPv6 host, as in a URL, is the address: "-h [::1] -P 40309" dialled
// "[[[::1]]:40309]:3306" (missing port), and messages show IPv6 hosts bracketed.
func TestBracketedIPv6Host(t *testing.T) {
	dir := t.TempDir()
	cnf := writeFile(t, dir, "v6.cnf", "[client]\nhost=[fe80::1%lo]\nport=3310\n")
	for _, c := range []struct {
		args []string
		env  map[string]string
		host string
		addr string
	}{
		{[]string{"--no-defaults", "-h", "[::1]", "-P", "40309"}, nil, "::1", "[::1]:40309"},
		{[]string{"--no-defaults", "-h", "::1", "-P", "40309"}, nil, "::1", "[::1]:40309"},
		{[]string{"--no-defaults", "-P", "40309"}, map[string]string{"MYSQL_HOST": "[2001:db8::5]"}, "2001:db8::5", "[2001:db8::5]:40309"},
		{[]string{"--defaults-file=" + cnf}, nil, "fe80::1%lo", "[fe80::1%lo]:3310"},
		{[]string{"--no-defaults", "-h", "127.0.0.1", "-P", "40309"}, nil, "127.0.0.1", "127.0.0.1:40309"},
	} {
		o, _, err := resolve(t, c.args, c.env, dir)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := o.Config()
		if err != nil {
			t.Fatal(err)
		}
		if o.Host != c.host || cfg.Addr != c.addr || o.Target() != c.addr {
			t.Errorf("%v: host %q, address %q, target %q; want %q, %q", c.args, o.Host, cfg.Addr, o.Target(), c.host, c.addr)
		}
	}
}

func TestValidation(t *testing.T) {
	dir := t.TempDir()
	bad := [][]string{
		{"--no-defaults", "-P", "0"},
		{"--no-defaults", "-P", "70000"},
		{"--no-defaults", "--ssl-mode=sometimes"},
		{"--no-defaults", "--ssl-mode=VERIFY_CA"},
		{"--no-defaults", "--ssl-cert=/a.pem"},
		{"--no-defaults", "--protocol=PIPE"},
		{"--no-defaults", "--connect-timeout=0s"},
	}
	for _, args := range bad {
		if _, _, err := resolve(t, args, nil, dir); err == nil || exitcode.Of(err) != exitcode.Usage {
			t.Errorf("%v: want usage error, got %v", args, err)
		}
	}
	o, _, err := resolve(t, []string{"--no-defaults", "--ssl-mode=verify_identity", "-d", "shop"}, nil, dir)
	if err != nil || o.SSLMode != SSLVerifyIdentity || o.Database != "shop" {
		t.Errorf("lower-case ssl mode / -d alias: %+v %v", o, err)
	}
}

func TestTLSConfigModes(t *testing.T) {
	o := Options{Host: "db1", SSLMode: SSLPreferred}
	if c, fb, _ := o.tlsConfig(true); c != nil || fb {
		t.Error("PREFERRED over a socket must not use TLS")
	}
	if c, fb, _ := o.tlsConfig(false); c == nil || !fb || !c.InsecureSkipVerify {
		t.Error("PREFERRED over TCP: TLS without verification, plaintext fallback")
	}
	o.SSLMode = SSLRequired
	if c, fb, _ := o.tlsConfig(false); c == nil || fb {
		t.Error("REQUIRED must not fall back to plaintext")
	}
	o.SSLMode = SSLDisabled
	if c, _, _ := o.tlsConfig(false); c != nil {
		t.Error("DISABLED must not use TLS")
	}
	o.SSLMode = SSLVerifyIdentity
	if c, _, _ := o.tlsConfig(false); c == nil || c.InsecureSkipVerify || c.ServerName != "db1" {
		t.Error("VERIFY_IDENTITY must verify the host name")
	}
	o.SSLCA = filepath.Join(t.TempDir(), "absent.pem")
	if _, _, err := o.tlsConfig(false); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("missing CA file: %v", err)
	}
}

// INNOWARM_DEFAULT_SOCKETS replaces the sockets tried when none is given ("none": none),
// and ranks below option files and MYSQL_UNIX_PORT: the test harness sets it so that a run
// naming no server of its own cannot reach the machine's server.
func TestDefaultSocketsEnv(t *testing.T) {
	dir := t.TempDir()
	noFiles := []string{"--no-defaults"}
	o, _, err := resolve(t, noFiles, map[string]string{DefaultSocketsEnv: "none"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := o.SocketPath(); err == nil || !strings.Contains(err.Error(), DefaultSocketsEnv+"=none") {
		t.Errorf("with %s=none: socket %q, error %v; want an error naming it", DefaultSocketsEnv, p, err)
	}
	sock := writeFile(t, dir, "here.sock", "")
	o, _, err = resolve(t, noFiles, map[string]string{DefaultSocketsEnv: filepath.Join(dir, "missing.sock") + ":" + sock}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := o.SocketPath(); err != nil || p != sock {
		t.Errorf("with a list: socket %q, error %v; want %s", p, err, sock)
	}
	cnf := writeFile(t, dir, "my.cnf", "[client]\nsocket="+sock+"\n")
	o, _, err = resolve(t, []string{"--defaults-file=" + cnf}, map[string]string{DefaultSocketsEnv: "none"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := o.SocketPath(); err != nil || p != sock {
		t.Errorf("an option file's socket with %s=none: socket %q, error %v; want %s", DefaultSocketsEnv, p, err, sock)
	}
}

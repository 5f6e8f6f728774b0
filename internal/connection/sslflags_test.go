package connection

import (
	"strings"
	"testing"
)

// The mariadb client's TLS flags (it has no --ssl-mode): a MariaDB DBA's "--skip-ssl" or
// "--ssl-verify-server-cert" was an unknown flag (exit 2). They mean what the same lines
// of an option file mean to innowarm, and --ssl-mode, given too, decides.
func TestMariaDBClientTLSFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		mode string
	}{
		{[]string{"--skip-ssl"}, SSLDisabled},
		{[]string{"--ssl"}, SSLRequired},
		{[]string{"--ssl=0"}, SSLDisabled},
		{[]string{"--ssl-verify-server-cert"}, SSLVerifyIdentity},
		{[]string{"--skip-ssl", "--ssl-mode=REQUIRED"}, SSLRequired},
		{[]string{"--ssl-mode=DISABLED", "--ssl-verify-server-cert"}, SSLDisabled},
	} {
		o, _, err := resolve(t, append([]string{"--no-defaults", "-h", "db1"}, tc.args...), nil, dir)
		if err != nil || o.SSLMode != tc.mode {
			t.Errorf("%s: mode %q (%v), want %s", strings.Join(tc.args, " "), o.SSLMode, err, tc.mode)
		}
	}
	// An option file's ssl-verify-server-cert is overridden by --skip-ssl typed now.
	cnf := writeFile(t, dir, "my.cnf", "[client]\nssl-verify-server-cert\n")
	if o, _, err := resolve(t, []string{"--defaults-file=" + cnf, "--skip-ssl"}, nil, dir); err != nil || o.SSLMode != SSLDisabled {
		t.Errorf("--skip-ssl over the file's ssl-verify-server-cert: mode %q (%v)", o.SSLMode, err)
	}
}

// --defaults-group-suffix (and $MARIADB_GROUP_SUFFIX, $MYSQL_GROUP_SUFFIX) reads the
// suffixed groups too, as both clients do: a multi-instance host's [client_replica] was
// ignored (and the flag unknown), so innowarm reached the primary.
func TestDefaultsGroupSuffix(t *testing.T) {
	dir := t.TempDir()
	cnf := writeFile(t, dir, "my.cnf", "[client]\nuser=a\nsocket=/primary.sock\n[client_replica]\nsocket=/replica.sock\n[innowarm_replica]\nparallel=2\n[client]\nuser=b\n")
	for _, tc := range []struct {
		args   []string
		env    map[string]string
		socket string
		rest   int
	}{
		{nil, nil, "/primary.sock", 0},
		{[]string{"--defaults-group-suffix=_replica"}, nil, "/replica.sock", 1},
		{nil, map[string]string{"MYSQL_GROUP_SUFFIX": "_replica"}, "/replica.sock", 1},
		{nil, map[string]string{"MARIADB_GROUP_SUFFIX": "_replica", "MYSQL_GROUP_SUFFIX": "_none"}, "/replica.sock", 1},
		{[]string{"--defaults-group-suffix=_none"}, map[string]string{"MARIADB_GROUP_SUFFIX": "_replica"}, "/primary.sock", 0},
	} {
		o, rest, err := resolve(t, append([]string{"--defaults-file=" + cnf}, tc.args...), tc.env, dir)
		if err != nil || o.Socket != tc.socket || o.User != "b" || len(rest) != tc.rest {
			t.Errorf("%v %v: socket %q user %q, %d command settings (%v); want %s b %d", tc.args, tc.env, o.Socket, o.User, len(rest), err, tc.socket, tc.rest)
		}
	}
	if r, ok := clientReaders(t)["my_print_defaults"]; ok {
		want, _, _ := readWithClient(t, append(r, "--defaults-group-suffix=_replica"), cnf, OptionGroups)
		vals, err := ReadOptionFiles(OptionFileSet{DefaultsFile: cnf}, []string{"client", "client_replica", "innowarm", "innowarm_replica"})
		if err != nil || strings.Join(optionLines(vals), " ") != strings.Join(want, " ") {
			t.Errorf("innowarm reads %q, my_print_defaults %q", optionLines(vals), want)
		}
	}
}

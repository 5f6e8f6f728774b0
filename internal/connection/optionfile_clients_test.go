package connection

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/exitcode"
)

// clientReaders are the option-file readers of the client libraries installed here:
// MariaDB's my_print_defaults, and MySQL's from the provisioned mysql-9.7 root when there
// is one (run through that root's loader, as the sandbox runs its server).
func clientReaders(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	if bin, err := exec.LookPath("my_print_defaults"); err == nil {
		out["my_print_defaults"] = []string{bin}
	}
	home, _ := os.UserHomeDir()
	root := filepath.Join(home, ".cache", "innowarm", "servers", "mysql-9.7")
	if d := os.Getenv("INNOWARM_SERVERS_DIR"); d != "" {
		root = filepath.Join(d, "mysql-9.7")
	}
	ld := filepath.Join(root, "lib64", "ld-linux-x86-64.so.2")
	prog := filepath.Join(root, "usr", "bin", "my_print_defaults")
	if _, err := os.Stat(ld); err == nil {
		if _, err := os.Stat(prog); err == nil {
			libs := filepath.Join(root, "lib", "x86_64-linux-gnu") + ":" + filepath.Join(root, "usr", "lib", "x86_64-linux-gnu")
			out["mysql-9.7 my_print_defaults"] = []string{ld, "--library-path", libs, prog, "--show"}
		}
	}
	return out
}

// readWithClient runs reader on file for groups: the lines it prints, keys spelt as
// innowarm keeps them, or ok=false when it refused the file.
func readWithClient(t *testing.T, reader []string, file string, groups []string) (lines []string, stderr string, ok bool) {
	t.Helper()
	args := append(append(append([]string{}, reader[1:]...), "--defaults-file="+file), groups...)
	cmd := exec.Command(reader[0], args...)
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return nil, errb.String(), false
	}
	lines = []string{}
	for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		if l == "" {
			continue
		}
		k, v, hasValue := strings.Cut(strings.TrimPrefix(l, "--"), "=")
		k, _ = normalizeKey(k)
		if hasValue {
			lines = append(lines, "--"+k+"="+v)
		} else {
			lines = append(lines, "--"+k)
		}
	}
	return lines, errb.String(), true
}

// readOptionText writes text as an option file in dir and reads it as innowarm does:
// the lines my_print_defaults would print, or the error, and the warnings given.
func readOptionText(t *testing.T, dir, name, text string) (lines []string, warnings []string, path string, err error) {
	t.Helper()
	path = writeFile(t, dir, name, text)
	set := OptionFileSet{DefaultsFile: path, Warn: func(m string) { warnings = append(warnings, m) }}
	vals, err := ReadOptionFiles(set, OptionGroups)
	if err != nil {
		return nil, warnings, path, err
	}
	return optionLines(vals), warnings, path, nil
}

// Each file is read by innowarm as by the clients' own reader (my_print_defaults of
// MariaDB and of MySQL, where installed): the same settings in the same order, and a file
// refused by one refused by the others. innowarm refused an !include of a missing file, an
// unknown !directive and an include path with spaces (exit 2), which both clients read on
// with, and read a "[ client]" group that neither client reads.
func TestOptionFilesReadAsTheClientsReadThem(t *testing.T) {
	dir := t.TempDir()
	sp := filepath.Join(dir, "conf dir")
	if err := os.Mkdir(sp, 0o755); err != nil {
		t.Fatal(err)
	}
	spaced := writeFile(t, sp, "a b.cnf", "[client]\nhost=spaced\n")
	writeFile(t, sp, "c.cnf", "[client]\nport=7\n")
	other := writeFile(t, dir, "other.cnf", "[client]\nhost=other\n")
	missing := filepath.Join(dir, "missing.cnf")
	readers := clientReaders(t)
	if len(readers) == 0 {
		t.Log("no my_print_defaults installed: checked against the expected lines only")
	}
	for i, tc := range []struct {
		name, text string
		want       []string // nil: refused
		warns      int
	}{
		{"missing include", "[client]\nuser=a\n!include " + missing + "\nhost=h\n", []string{"--user=a", "--host=h"}, 1},
		{"unknown directive", "[client]\nuser=a\n!frob x\n!includex " + other + "\n!INCLUDE " + other + "\n!include" + other + "\nhost=h\n", []string{"--user=a", "--host=h"}, 0},
		{"directive blanks", "[client]\n!  include\t" + other + "  \t\n", []string{"--host=other"}, 0},
		{"include with spaces", "[client]\n!include " + spaced + "\n", []string{"--host=spaced"}, 0},
		{"includedir with spaces", "[client]\n!includedir " + sp + " \n", []string{"--host=spaced", "--port=7"}, 0},
		{"quoted include", "[client]\n!include \"" + spaced + "\"\nuser=u\n", []string{"--user=u"}, 1},
		{"include of a directory", "[client]\n!include " + dir + "\nuser=u\n", []string{"--user=u"}, 1},
		{"empty include", "[client]\n!include   \nuser=u\n", nil, 0},
		{"missing includedir", "[client]\n!includedir " + missing + "\n", nil, 0},
		{"quoted value", "[client]\npassword=\"a b#c\"\n", []string{"--password=a b#c"}, 0},
		{"unquoted value", "[client]\npassword=a b#c\n", []string{"--password=a b"}, 0},
		{"quoted, comment", "[client]\npassword = 'a b' # trailing\n", []string{"--password=a b"}, 0},
		{"quote then comment", "[client]\npassword='a b'#c\n", []string{"--password=a b"}, 0},
		{"escaped quote", "[client]\npassword=\"a\\\"b#c\" #d\n", []string{"--password=a\"b#c"}, 0},
		{"escapes", "[client]\npassword=a\\\\b\\sc\\xd\\\n", []string{"--password=a\\b c\\xd\\"}, 0},
		{"unterminated quote", "[client]\npassword=\"a # b\n", []string{"--password=\"a # b"}, 0},
		{"blanks in quotes", "[client]\npassword= ' a ' \n", []string{"--password= a "}, 0},
		{"empty quotes", "[client]\npassword=\"\"\n", []string{"--password="}, 0},
		{"semicolon", "[client]\nuser=x ; y\n", []string{"--user=x ; y"}, 0},
		{"crlf", "[client]\r\nuser=x\r\n!include " + other + "\r\n", []string{"--user=x", "--host=other"}, 0},
		{"group blanks", "[ client]\nuser=x\n[client ]\nuser=y\n", []string{"--user=y"}, 0},
		{"group case", "[CLIENT] comment\nuser=x\n", []string{"--user=x"}, 0},
		{"empty group", "[]\nuser=x\n", []string{}, 0},
		{"other group's lines", "[mysqld]\nthis is not ours\n=x\n[client]\nuser=x\n", []string{"--user=x"}, 0},
		{"no group", "user=x\n", nil, 0},
		{"bad group", "[client\n", nil, 0},
	} {
		lines, warns, p, err := readOptionText(t, dir, fmt.Sprintf("case%d.cnf", i), tc.text)
		switch {
		case tc.want == nil && err == nil:
			t.Errorf("%s: accepted, read %q", tc.name, lines)
		case tc.want == nil && exitcode.Of(err) != exitcode.Usage:
			t.Errorf("%s: want a usage error, got %v", tc.name, err)
		case tc.want != nil && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != nil && fmt.Sprintf("%q", lines) != fmt.Sprintf("%q", tc.want):
			t.Errorf("%s: read %q, want %q", tc.name, lines, tc.want)
		}
		if len(warns) != tc.warns {
			t.Errorf("%s: warnings %q, want %d", tc.name, warns, tc.warns)
		}
		for name, r := range readers {
			want, stderr, ok := readWithClient(t, r, p, OptionGroups)
			if ok != (err == nil) {
				t.Errorf("%s: %s accepts it: %v (%s); innowarm: %v", tc.name, name, ok, strings.TrimSpace(stderr), err)
			} else if ok && fmt.Sprintf("%q", lines) != fmt.Sprintf("%q", want) {
				t.Errorf("%s: innowarm read %q, %s %q", tc.name, lines, name, want)
			}
		}
	}
}

// Both clients skip a world-writable option file with a warning, even one named by
// --defaults-file: anyone on the machine could have put a host or a password there.
func TestWorldWritableOptionFileIgnored(t *testing.T) {
	dir := t.TempDir()
	ww := writeFile(t, dir, "ww.cnf", "[client]\nhost=evil\npassword=stolen\n")
	if err := os.Chmod(ww, 0o646); err != nil {
		t.Fatal(err)
	}
	lines, warns, p, err := readOptionText(t, dir, "main.cnf", "[client]\nuser=u\n!include "+ww+"\n")
	if err != nil || fmt.Sprintf("%q", lines) != fmt.Sprintf("%q", []string{"--user=u"}) || len(warns) != 1 || !strings.Contains(warns[0], "world-writable") {
		t.Errorf("read %q, warnings %q, err %v; want only --user=u and one warning", lines, warns, err)
	}
	for name, r := range clientReaders(t) {
		if want, _, ok := readWithClient(t, r, p, OptionGroups); !ok || fmt.Sprintf("%q", want) != fmt.Sprintf("%q", lines) {
			t.Errorf("%s read %q (ok %v), innowarm %q", name, want, ok, lines)
		}
	}
	var warned []string
	vals, err := ReadOptionFiles(OptionFileSet{DefaultsFile: ww, Warn: func(m string) { warned = append(warned, m) }}, OptionGroups)
	if err != nil || len(vals) != 0 || len(warned) != 1 {
		t.Errorf("--defaults-file of a world-writable file: %v, %v, warnings %q; want nothing read, one warning", vals, err, warned)
	}
}

// A file that includes itself stops after the clients' 10 levels with a warning, as
// theirs do, instead of an error.
func TestIncludeDepthAsTheClients(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "self.cnf")
	lines, warns, p, err := readOptionText(t, dir, "self.cnf", "[client]\nuser=self\n!include "+self+"\n")
	if err != nil || len(lines) != maxIncludeDepth+1 || len(warns) != 1 {
		t.Errorf("read %q, warnings %q, err %v: want %d lines and one warning", lines, warns, err, maxIncludeDepth+1)
	}
	for name, r := range clientReaders(t) {
		if want, _, ok := readWithClient(t, r, p, OptionGroups); !ok || len(want) != len(lines) {
			t.Errorf("%s read %d lines (ok %v), innowarm %d", name, len(want), ok, len(lines))
		}
	}
}

// The command line still works with a missing !include: innowarm exited 2 where both
// clients connect.
func TestResolveWithMissingInclude(t *testing.T) {
	dir := t.TempDir()
	cnf := writeFile(t, dir, "my.cnf", "[client]\n!include "+filepath.Join(dir, "gone.cnf")+"\nuser=bob\n")
	o, _, err := resolve(t, []string{"--defaults-file=" + cnf}, nil, dir)
	if err != nil || o.User != "bob" {
		t.Fatalf("resolved user %q, err %v; want bob", o.User, err)
	}
}

// MariaDB's clients read $MARIADB_HOME/my.cnf, and $MYSQL_HOME/my.cnf only when
// MARIADB_HOME is not set; innowarm read MYSQL_HOME's alone.
func TestMariaDBHomeOptionFile(t *testing.T) {
	mariadbHome, mysqlHome := t.TempDir(), t.TempDir()
	writeFile(t, mariadbHome, "my.cnf", "[client]\nuser=mariadb-home\n")
	writeFile(t, mysqlHome, "my.cnf", "[client]\nuser=mysql-home\n")
	for _, tc := range []struct{ mariadb, mysql, want string }{
		{mariadbHome, "", filepath.Join(mariadbHome, "my.cnf")},
		{mariadbHome, mysqlHome, filepath.Join(mariadbHome, "my.cnf")},
		{"", mysqlHome, filepath.Join(mysqlHome, "my.cnf")},
	} {
		// Unset where empty: set but empty, MARIADB_HOME hides MYSQL_HOME, as in MariaDB's.
		for k, v := range map[string]string{"MARIADB_HOME": tc.mariadb, "MYSQL_HOME": tc.mysql} {
			t.Setenv(k, v) // puts the value back at the end
			if v == "" {
				os.Unsetenv(k)
			}
		}
		files := DefaultOptionFiles("")
		if got := files[len(files)-1]; got != tc.want {
			t.Errorf("MARIADB_HOME=%q MYSQL_HOME=%q: read %q last, want %q", tc.mariadb, tc.mysql, files, tc.want)
		}
		if bin, err := exec.LookPath("my_print_defaults"); err == nil {
			out, err := exec.Command(bin, "--help").Output()
			if err == nil && !strings.Contains(string(out), tc.want) {
				t.Errorf("MARIADB_HOME=%q MYSQL_HOME=%q: my_print_defaults reads another: %s", tc.mariadb, tc.mysql, out)
			}
		}
	}
}

// --defaults-file=/dev/null, the usual way to read no option file, is a world-writable
// device, not a world-writable option file: no warning.
func TestDevNullDefaultsFile(t *testing.T) {
	var warned []string
	vals, err := ReadOptionFiles(OptionFileSet{DefaultsFile: os.DevNull, Warn: func(m string) { warned = append(warned, m) }}, OptionGroups)
	if err != nil || len(vals) != 0 || len(warned) != 0 {
		t.Errorf("--defaults-file=%s: %v, %v, warnings %q", os.DevNull, vals, err, warned)
	}
}

package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// TestBenchReadsMysqlslapOptionGroups: bench, sold with mysqlslap's command line, reads the
// groups mysqlslap users keep its settings in ([mysqlslap], and MariaDB's [mariadb-slap]):
// the connection there and bench's own options (a flag on the command line still wins).
// Before, only [client] and [innowarm] were read: bench connected as another user than
// mariadb-slap did with the same file, and ran 1 client where it ran 3.
func TestBenchReadsMysqlslapOptionGroups(t *testing.T) {
	sb := sandboxtest.Server(t)
	schema := sandboxtest.Schema(t)
	sandboxtest.Exec(t, "DROP DATABASE "+"`"+schema+"`") // bench creates it, and drops it
	dir := t.TempDir()
	cnf := filepath.Join(dir, "my.cnf")
	// [client] names no server at all: a bench that read only it reaches nothing (never the
	// machine's own server).
	file := "[client]\nuser=nobody_here\nsocket=" + filepath.Join(dir, "no-server.sock") + "\n" +
		"[mysqlslap]\nsocket=" + sb.Socket + "\nuser=root\nconcurrency=3\n" +
		"[mariadb-slap]\niterations=2\n"
	if err := os.WriteFile(cnf, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	r := sandboxtest.CLI(t, sandboxtest.Run{}, "bench", "--defaults-file="+cnf, "-a", "--number-of-queries=30", "--create-schema="+schema)
	if r.Code != 0 {
		t.Fatalf("bench with [mysqlslap] settings: exit %d: %s", r.Code, r.Stderr)
	}
	for _, want := range []string{"Number of clients running queries: 3", "(2 iterations)"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("bench with concurrency=3 in [mysqlslap] and iterations=2 in [mariadb-slap]: no %q in\n%s", want, r.Stdout)
		}
	}
	r = sandboxtest.CLI(t, sandboxtest.Run{}, "bench", "--defaults-file="+cnf, "-a", "--number-of-queries=30", "--create-schema="+schema, "-c", "2")
	if r.Code != 0 || !strings.Contains(r.Stdout, "Number of clients running queries: 2") {
		t.Errorf("-c 2 beside concurrency=3 in [mysqlslap]: exit %d, want the flag's 2 clients:\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// TestBenchIgnoresMysqlslapOptionsItDoesNotImplement: a user's [mysqlslap] or
// [mariadb-slap] group holds mysqlslap's options that bench does not implement (compress,
// sql-mode, pre-system ...): bench runs, with one warning naming them, and runs none of
// them (no pre-system command). A key neither knows is still refused, and on the command
// line they stay unknown flags. Before, bench refused every one of them (exit 2, unknown
// option): an existing mysqlslap group stopped it.
func TestBenchIgnoresMysqlslapOptionsItDoesNotImplement(t *testing.T) {
	sb := sandboxtest.Server(t)
	schema := sandboxtest.Schema(t)
	sandboxtest.Exec(t, "DROP DATABASE "+"`"+schema+"`") // bench creates it, and drops it
	dir := t.TempDir()
	ran := filepath.Join(dir, "pre-system-ran")
	cnf := filepath.Join(dir, "my.cnf")
	slap := "[mysqlslap]\nsocket=" + sb.Socket + "\nuser=root\nconcurrency=2\n" +
		"compress\nsql-mode=ANSI_QUOTES\npre-system=touch " + ran + "\npost-system=touch " + ran + "\n" +
		"plugin-dir=" + filepath.Join(dir, "plugins") + "\nenable-cleartext-plugin\n" +
		"[mariadb-slap]\nplugin_dir=" + filepath.Join(dir, "plugins") + "\nloose-debug-info\ninit-command=SET @a = 1\n"
	if err := os.WriteFile(cnf, []byte(slap), 0o600); err != nil {
		t.Fatal(err)
	}
	r := sandboxtest.CLI(t, sandboxtest.Run{}, "bench", "--defaults-file="+cnf, "-a", "--number-of-queries=10", "--create-schema="+schema)
	if r.Code != 0 || !strings.Contains(r.Stdout, "Number of clients running queries: 2") {
		t.Fatalf("bench with mysqlslap's options in [mysqlslap]: exit %d, want 0 and its concurrency=2:\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	var warnings []string
	for _, l := range strings.Split(r.Stderr, "\n") {
		if strings.Contains(l, "WARNING") {
			warnings = append(warnings, l)
		}
	}
	if len(warnings) != 1 {
		t.Fatalf("want one warning naming the ignored options, got:\n%s", r.Stderr)
	}
	for _, name := range []string{"compress", "sql-mode", "pre-system", "post-system", "plugin-dir", "enable-cleartext-plugin", "debug-info", "init-command"} {
		if !strings.Contains(warnings[0], name) {
			t.Errorf("the warning does not name %s: %s", name, warnings[0])
		}
	}
	if _, err := os.Stat(ran); err == nil {
		t.Errorf("bench ran a pre-system or post-system command: %s exists", ran)
	}
	// The other bench commands read the same groups.
	r = sandboxtest.CLI(t, sandboxtest.Run{}, "bench", "cleanup", "--defaults-file="+cnf, "--create-schema="+schema)
	if r.Code != 0 {
		t.Errorf("bench cleanup with the same file: exit %d: %s", r.Code, r.Stderr)
	}
	// A key mysqlslap does not know either is a typo: refused, naming it.
	if err := os.WriteFile(cnf, []byte(slap+"[mysqlslap]\nconcurency=3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = sandboxtest.CLI(t, sandboxtest.Run{}, "bench", "--defaults-file="+cnf, "-a", "--number-of-queries=10", "--create-schema="+schema)
	if r.Code != 2 || !strings.Contains(r.Stderr, `unknown option "concurency"`) {
		t.Errorf("a typo in [mysqlslap]: exit %d, want 2 naming it: %s", r.Code, r.Stderr)
	}
	// On the command line, bench does not pretend to take it.
	r = sandboxtest.CLI(t, sandboxtest.Run{}, "bench", "--no-defaults", "-S", sb.Socket, "-u", "root", "-a", "--compress")
	if r.Code != 2 || !strings.Contains(r.Stderr, "--compress") {
		t.Errorf("--compress on the command line: exit %d, want 2: %s", r.Code, r.Stderr)
	}
}

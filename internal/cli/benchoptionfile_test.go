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

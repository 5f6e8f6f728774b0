// Package sandboxtest gives each test binary one throwaway server, started in TestMain and
// removed when the binary ends, even when tests fail. Tests never touch any other server.
//
//	func TestMain(m *testing.M) { sandboxtest.Main(m, sandboxtest.Options{}) }
package sandboxtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/sandbox"
)

// Options shape the shared server.
type Options struct {
	PoolSize   int64    // default 64 MiB
	ServerArgs []string // extra server options
	BufferedIO bool
	// Prepare runs before the server starts, with the test binary's scratch root (removed at
	// the end); it may build files the tests need and return more server options.
	Prepare func(root string) (serverArgs []string, err error)
}

var (
	shared   *sandbox.Sandbox
	rootDir  string
	connOnce sync.Once
	conn     *connection.Conn
	connErr  error
)

const dirPrefix = "innowarm-test-"

// Main starts the server, runs the tests and removes the server and its directory.
func Main(m *testing.M, o Options) {
	os.Exit(run(m, o))
}

func run(m *testing.M, o Options) int {
	reapOrphans()
	if o.PoolSize == 0 {
		o.PoolSize = 64 << 20
	}
	var err error
	rootDir, err = os.MkdirTemp("", dirPrefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandboxtest:", err)
		return 1
	}
	_ = os.WriteFile(filepath.Join(rootDir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644)
	if o.Prepare != nil {
		more, err := o.Prepare(rootDir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sandboxtest: prepare:", err)
			os.RemoveAll(rootDir)
			return 1
		}
		o.ServerArgs = append(o.ServerArgs, more...)
	}
	ctx := context.Background()
	sb, rep, err := sandbox.Up(ctx, sandbox.Config{
		Dir: filepath.Join(rootDir, "sb"), PoolSize: o.PoolSize, ServerArgs: o.ServerArgs,
		BufferedIO: o.BufferedIO, DieWithParent: true,
	})
	if err != nil {
		// Show the server's own logs: a failure here is otherwise hard to diagnose.
		for _, f := range []string{"install.log", "error.log"} {
			if b, rerr := os.ReadFile(filepath.Join(rootDir, "sb", f)); rerr == nil {
				fmt.Fprintf(os.Stderr, "sandboxtest: %s:\n%s\n", f, tail(string(b), 40))
			}
		}
		fmt.Fprintln(os.Stderr, "sandboxtest: cannot start the test server:", err)
		killSandboxesUnder(rootDir)
		os.RemoveAll(rootDir)
		return 1
	}
	shared = sb
	fmt.Fprintf(os.Stderr, "sandboxtest: %s server pid %d on %s (install %.1fs, start %.1fs)\n", sb.Flavor, rep.Pid, sb.Socket, rep.InstallSeconds, rep.StartSeconds)

	// Ctrl-C or a kill while tests run must not leave the server behind.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sigs
		teardown()
		os.Exit(130)
	}()
	defer teardown()
	return m.Run()
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

var teardownOnce sync.Once

func teardown() {
	teardownOnce.Do(func() {
		if conn != nil {
			conn.Close()
		}
		if shared != nil {
			shared.Kill()
		}
		killSandboxesUnder(rootDir)
		os.RemoveAll(rootDir)
	})
}

// reapOrphans removes servers and directories left by test binaries that died without
// cleaning up (a panic, SIGKILL): their owner pid is gone.
func reapOrphans() {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range matches {
		raw, err := os.ReadFile(filepath.Join(d, "owner.pid"))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		if err != nil || syscall.Kill(pid, 0) == nil {
			continue
		}
		killSandboxesUnder(d)
		os.RemoveAll(d)
	}
}

// killSandboxesUnder kills every sandbox server whose directory lies below root: tests that
// start servers through the CLI leave detached processes if they fail half-way.
func killSandboxesUnder(root string) {
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "sandbox.json" {
			return nil
		}
		if sb, err := sandbox.Open(filepath.Dir(path)); err == nil {
			sb.Kill()
		}
		return nil
	})
}

// Server is the shared sandbox.
func Server(t testing.TB) *sandbox.Sandbox {
	t.Helper()
	if shared == nil {
		t.Fatal("sandboxtest.Main was not called from TestMain")
	}
	return shared
}

// Conn is a connection to the shared server as root, opened once per test binary.
func Conn(t testing.TB) *connection.Conn {
	t.Helper()
	sb := Server(t)
	connOnce.Do(func() { conn, connErr = sb.Connect(context.Background()) })
	if connErr != nil {
		t.Fatalf("connect to test server: %v", connErr)
	}
	return conn
}

// Reconnect drops the shared connection (after a restart of the server).
func Reconnect(t testing.TB) *connection.Conn {
	t.Helper()
	if conn != nil {
		conn.Close()
	}
	connOnce = sync.Once{}
	return Conn(t)
}

// Exec runs statements on the shared server as root and fails the test on error.
func Exec(t testing.TB, stmts ...string) {
	t.Helper()
	c := Conn(t)
	for _, s := range stmts {
		if _, err := c.DB.ExecContext(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

var nonWord = regexp.MustCompile(`[^a-z0-9_]+`)

// Schema creates a fresh schema named after the test and drops it when the test ends.
func Schema(t testing.TB) string {
	t.Helper()
	name := "t_" + nonWord.ReplaceAllString(strings.ToLower(t.Name()), "_")
	if len(name) > 60 {
		name = name[:60]
	}
	q := "`" + strings.ReplaceAll(name, "`", "``") + "`"
	Exec(t, "DROP DATABASE IF EXISTS "+q, "CREATE DATABASE "+q)
	t.Cleanup(func() {
		if conn != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, _ = conn.DB.ExecContext(ctx, "DROP DATABASE IF EXISTS "+q)
		}
	})
	return name
}

// Root is the test binary's scratch root, removed when the binary ends.
func Root() string { return rootDir }

// Dir is a scratch directory inside the test binary's sandbox root.
func Dir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp(rootDir, "scratch-")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// JSON decodes b into v or fails the test with the text.
func JSON(t testing.TB, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("bad JSON (%v): %s", err, b)
	}
}

// Package sandboxtest gives each test binary one throwaway server, started when a test
// first asks for one and removed when the binary ends, even when tests fail. Tests never
// touch any other server. The server is of the flavor $INNOWARM_FLAVOR names (mysql-9.7,
// mariadb-11.8, ...), else the machine's own.
//
//	func TestMain(m *testing.M) { sandboxtest.Main(m, sandboxtest.Options{}) }
package sandboxtest

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
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
	"github.com/innowarm/innowarm/internal/flavor"
	"github.com/innowarm/innowarm/internal/sandbox"
	"github.com/innowarm/innowarm/internal/sqltext"
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
	options   Options
	mainRan   bool
	startOnce sync.Once
	startErr  error
	shared    *sandbox.Sandbox
	rootDir   string
	connOnce  sync.Once
	conn      *connection.Conn
	connErr   error
)

const dirPrefix = "innowarm-test-"

// Main runs the tests; the server starts when a test first needs it, and is removed with its
// directory when the tests end.
func Main(m *testing.M, o Options) {
	os.Exit(run(m, o))
}

func run(m *testing.M, o Options) int {
	reapOrphans()
	if o.PoolSize == 0 {
		o.PoolSize = 64 << 20
	}
	options, mainRan = o, true
	var err error
	rootDir, err = os.MkdirTemp("", dirPrefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandboxtest:", err)
		return 1
	}
	_ = os.WriteFile(filepath.Join(rootDir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644)

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

// start brings up the shared server, once.
func start() error {
	startOnce.Do(func() {
		o := options
		if o.Prepare != nil {
			more, err := o.Prepare(rootDir)
			if err != nil {
				startErr = fmt.Errorf("prepare: %w", err)
				return
			}
			o.ServerArgs = append(o.ServerArgs, more...)
		}
		sb, rep, err := sandbox.Up(context.Background(), sandbox.Config{
			Dir: filepath.Join(rootDir, "sb"), PoolSize: o.PoolSize, ServerArgs: o.ServerArgs,
			BufferedIO: o.BufferedIO, DieWithParent: true, Flavor: os.Getenv(sandbox.FlavorEnv), TemplateCache: templateCache(),
		})
		if err != nil {
			// Show the server's own logs: a failure here is otherwise hard to diagnose.
			var logs strings.Builder
			for _, f := range []string{"install.log", "error.log"} {
				if b, rerr := os.ReadFile(filepath.Join(rootDir, "sb", f)); rerr == nil {
					fmt.Fprintf(&logs, "\n%s:\n%s", f, tail(string(b), 40))
				}
			}
			killSandboxesUnder(filepath.Join(rootDir, "sb"))
			startErr = fmt.Errorf("cannot start the test server: %w%s", err, logs.String())
			return
		}
		shared = sb
		fmt.Fprintf(os.Stderr, "sandboxtest: %s server pid %d on %s (install %.1fs, start %.1fs)\n", sb.Description(), rep.Pid, sb.Socket, rep.InstallSeconds, rep.StartSeconds)
	})
	return startErr
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
			return nil //nolint:nilerr // best effort: walk on
		}
		if sb, err := sandbox.Open(filepath.Dir(path)); err == nil {
			sb.Kill()
		}
		return nil
	})
}

// Server is the shared sandbox, started on first use.
func Server(t testing.TB) *sandbox.Sandbox {
	t.Helper()
	if !mainRan {
		t.Fatal("sandboxtest.Main was not called from TestMain")
	}
	if err := start(); err != nil {
		t.Fatalf("sandboxtest: %v", err)
	}
	return shared
}

// Flavor is the shared server's family and version, for tests whose expectations differ
// between servers.
func Flavor(t testing.TB) flavor.Server {
	t.Helper()
	srv, err := flavor.Detect(context.Background(), Conn(t).DB)
	if err != nil {
		t.Fatalf("detect the test server: %v", err)
	}
	return srv
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
	q := sqltext.Ident(name)
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

// SecondServer starts another throwaway server of the same flavor as Server's, for tests
// that need two (a hot set carried from one to the other), with extra server options
// (--innodb-page-size=8k creates its data directory with 8 KiB pages); it is killed when
// t ends.
func SecondServer(t testing.TB, poolSize int64, serverArgs ...string) *sandbox.Sandbox {
	t.Helper()
	return ServerOf(t, os.Getenv(sandbox.FlavorEnv), poolSize, serverArgs...)
}

// ServerOf starts a throwaway server of the named flavor ("mariadb-10.11", "mysql-9.7";
// "" is the machine's own), whatever $INNOWARM_FLAVOR says, for tests that carry a hot
// set from one flavor to another; it is killed when t ends.
func ServerOf(t testing.TB, flavorName string, poolSize int64, serverArgs ...string) *sandbox.Sandbox {
	t.Helper()
	if poolSize == 0 {
		poolSize = options.PoolSize
	}
	sb, _, err := sandbox.Up(context.Background(), sandbox.Config{
		Dir: filepath.Join(Dir(t), "second"), PoolSize: poolSize, ServerArgs: serverArgs, DieWithParent: true, Flavor: flavorName,
		TemplateCache: templateCache(),
	})
	if err != nil {
		t.Fatalf("start a %s server: %v", cmp.Or(flavorName, "second"), err)
	}
	t.Cleanup(func() { sb.Kill() })
	return sb
}

// SyncBuffer is a bytes.Buffer a child process's output and the test can use at once.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Checksums is CHECKSUM TABLE of the given (quoted) tables on the shared server, as one
// string to compare before and after: a warm must leave the data as it was.
func Checksums(t testing.TB, tables ...string) string {
	t.Helper()
	rows, err := Conn(t).DB.Query("CHECKSUM TABLE " + strings.Join(tables, ", "))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var name string
		var sum sql.NullInt64
		if err := rows.Scan(&name, &sum); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s=%d ", name, sum.Int64)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// ResizePool sets innodb_buffer_pool_size on the server behind db and waits until the pool
// has the new size and holds no more pages than it (MySQL resizes in the background: its
// pages_total says the new size at once, while the pages beyond it are still being
// withdrawn). A shrink the server gives up (MariaDB aborts one whose pages are all in use,
// MDEV-37263) is tried again. It returns the pool's pages.
func ResizePool(t testing.TB, db *sql.DB, bytes int64) int64 {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(2 * time.Minute)
	var lastErr error
	for time.Now().Before(deadline) {
		var size, page int64
		if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_buffer_pool_size, @@innodb_page_size").Scan(&size, &page); err != nil {
			t.Fatalf("read innodb_buffer_pool_size: %v", err)
		}
		if size != bytes {
			if _, lastErr = db.ExecContext(ctx, fmt.Sprintf("SET GLOBAL innodb_buffer_pool_size = %d", bytes)); lastErr != nil {
				time.Sleep(200 * time.Millisecond)
				continue
			}
		}
		st, err := poolPages(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		total := st["innodb_buffer_pool_pages_total"]
		// The pages hold a little less than the size (MariaDB keeps the blocks' descriptors in it).
		if size == bytes && total*page <= bytes && total*page > bytes*9/10 && st["innodb_buffer_pool_pages_data"]+st["innodb_buffer_pool_pages_free"] <= total {
			return total
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the pool did not become %d bytes within 2 minutes (last error: %v)", bytes, lastErr)
	return 0
}

// poolPages reads the pool's page counters (MySQL's pages_misc wraps around while it
// resizes, so the values are parsed leniently).
func poolPages(ctx context.Context, db *sql.DB) (map[string]int64, error) {
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_buffer_pool_pages_total', 'Innodb_buffer_pool_pages_free', 'Innodb_buffer_pool_pages_data')")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	st := map[string]int64{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		st[strings.ToLower(k)], _ = strconv.ParseInt(v, 10, 64)
	}
	return st, rows.Err()
}

// WaitForPurge waits until InnoDB's purge has caught up where the server has a statement
// for it (flavor.PurgeWaitStatement), so that a table's pages change no more once flushed: a
// test that reads a table's file while purge removes delete-marked records (and merges the
// pages they leave underfilled) could read a leaf and its parent from two moments.
func WaitForPurge(t testing.TB, c *connection.Conn) {
	t.Helper()
	if q := c.Server.PurgeWaitStatement(); q != "" {
		if _, err := c.DB.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// templateCache is where test servers' data directories are copied from once one server of
// a binary and page size has bootstrapped (sandbox.Config.TemplateCache): a suite starts
// dozens of servers, and MySQL's bootstrap alone took seconds each. The sandbox package's
// own tests bootstrap every time.
func templateCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "innowarm", "test-datadirs")
}

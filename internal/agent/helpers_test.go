package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/agent"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sandbox"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

func TestMain(m *testing.M) {
	if tool := os.Getenv(fakeEnv); tool != "" {
		os.Exit(runFake(tool, os.Args[1:]))
	}
	sandboxtest.Main(m, sandboxtest.Options{PoolSize: 128 << 20})
}

// running is an agent started by a test, in this process.
type running struct {
	a         *agent.Agent
	base      string // http://addr
	check     string // agent-check address
	cancel    context.CancelFunc
	done      chan error
	log       *sandboxtest.SyncBuffer
	stopOnce  sync.Once
	stopError error
}

// startAgent runs an agent until the test ends (or stop). Listeners take free ports.
func startAgent(t *testing.T, o agent.Options) *running {
	t.Helper()
	if o.HttpListen == "" {
		o.HttpListen = "127.0.0.1:0"
	}
	if o.Interval == 0 {
		o.Interval = 200 * time.Millisecond
	}
	if o.ReadyCoverage == 0 {
		o.ReadyCoverage = 0.95
	}
	r := &running{log: &sandboxtest.SyncBuffer{}, done: make(chan error, 1)}
	o.Log = logx.New(r.log, false)
	a, err := agent.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.a, r.cancel = a, cancel
	go func() { r.done <- a.Run(ctx) }()
	httpAddr, checkAddr := a.Addrs()
	r.base, r.check = "http://"+httpAddr, checkAddr
	t.Cleanup(func() {
		if err := r.stop(); err != nil {
			t.Errorf("agent Run: %v", err)
		}
		if t.Failed() {
			t.Logf("agent log:\n%s", r.log.String())
		}
	})
	return r
}

// stop cancels the agent (as SIGTERM does) and returns what Run returned.
func (r *running) stop() error {
	r.stopOnce.Do(func() {
		r.cancel()
		select {
		case r.stopError = <-r.done:
		case <-time.After(30 * time.Second):
			r.stopError = errors.New("Run did not return within 30 s of its context's end")
		}
	})
	return r.stopError
}

// ready is GET /ready: the status code and the body.
func (r *running) ready(t *testing.T) (int, agent.ReadyBody) {
	t.Helper()
	var body agent.ReadyBody
	code := getJSON(t, r.base+"/ready", &body)
	return code, body
}

func (r *running) status(t *testing.T) agent.Status {
	t.Helper()
	var st agent.Status
	if code := getJSON(t, r.base+"/status", &st); code != 200 {
		t.Fatalf("/status: %d", code)
	}
	return st
}

func getJSON(t testing.TB, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // a test's local request
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("GET %s: %d, not JSON (%v): %s", url, resp.StatusCode, err, raw)
	}
	return resp.StatusCode
}

// ask is one HAProxy agent check: connect, read the line.
func ask(t testing.TB, addr string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	raw, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("agent check at %s: %v", addr, err)
	}
	return string(raw)
}

// waitState polls /status until cond holds; the limit bounds a failure, it is not a
// measure (a busy machine is slow).
func (r *running) waitState(t *testing.T, what string, limit time.Duration, cond func(agent.Status) bool) agent.Status {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		st := r.status(t)
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			raw, _ := json.MarshalIndent(st, "", "  ")
			t.Fatalf("%s: not within %s; status:\n%s", what, limit, raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func inState(s agent.State) func(agent.Status) bool {
	return func(st agent.Status) bool { return st.State == s }
}

// wideTable creates schema.wide with rows of 250 bytes (about 2,500 16 KiB pages for 150,000
// rows) and has the server write every dirty page: a page not written yet has no index in
// its tablespace file, where the agent's page list from the server's dump names it (and
// FLUSH TABLES ... FOR EXPORT, which would write them, evicts them on MySQL 9.7).
func wideTable(t *testing.T, conn *connection.Conn, schema string, rows int64) {
	t.Helper()
	ctx := context.Background()
	c, err := conn.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	db, table := sqltext.Ident(schema), sqltext.Table(schema, "wide")
	for _, q := range []string{
		"DROP DATABASE IF EXISTS " + db, "CREATE DATABASE " + db,
		"CREATE TABLE " + table + " (id INT PRIMARY KEY, pad CHAR(250) NOT NULL)",
		"INSERT INTO " + table + " SELECT seq, REPEAT(CHAR(65 + seq MOD 26), 250) FROM " + conn.Server.Series(schema, 1, rows) + " ORDER BY seq",
		// Persistent statistics lag a bulk load: the selection's size comes from them.
		"ANALYZE TABLE " + table,
	} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	agent.FlushDirtyPages(t, conn)
}

var (
	secondOnce sync.Once
	second     *sandbox.Sandbox
	secondErr  error
)

// secondServer is a server beside the shared one, for tests that stop, kill or restart
// theirs: one for the package (installing a server costs seconds, tens on MySQL), which the
// tests use in turn. Each gets it running with a wide table in a schema of its own, and
// restarted, so that its pool is empty (O_DIRECT: nothing comes back from the OS cache);
// the schema is dropped when the test ends.
func secondServer(t *testing.T, schema string, rows int64) (*sandbox.Sandbox, connection.Options) {
	t.Helper()
	ctx := context.Background()
	secondOnce.Do(func() {
		second, _, secondErr = sandbox.Up(ctx, sandbox.Config{Dir: filepath.Join(sandboxtest.Root(), "second"), PoolSize: 128 << 20,
			DieWithParent: true, Flavor: os.Getenv(sandbox.FlavorEnv)})
	})
	if secondErr != nil {
		t.Fatalf("start the second server: %v", secondErr)
	}
	sb := second
	up := func() *connection.Conn {
		t.Helper()
		if _, err := sb.Start(ctx); err != nil {
			t.Fatalf("start the second server: %v", err)
		}
		conn, err := sb.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return conn
	}
	conn := up()
	wideTable(t, conn, schema, rows)
	conn.Close()
	t.Cleanup(func() {
		_ = syscall.Kill(sb.Status(ctx).Pid, syscall.SIGCONT) // a test stopped with the server stopped
		conn := up()
		defer conn.Close()
		_, _ = conn.DB.ExecContext(ctx, "DROP DATABASE IF EXISTS "+sqltext.Ident(schema))
	})
	if _, err := sb.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	return sb, sb.ConnOptions()
}

func describe(st agent.Status) string {
	return fmt.Sprintf("state %s, coverage %.3f, warm %s %d/%d, note %q", st.State, st.Coverage.Coverage, st.Warm.State, st.Warm.DonePages, st.Warm.TotalPages, st.ReadyNote)
}

func hasPrefix(s, p string) bool { return strings.HasPrefix(strings.TrimSpace(s), p) }

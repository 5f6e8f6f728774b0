package experiment_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/experiment"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sandbox"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// TestUsersSandboxGetsItsSettingsBack: an experiment given a sandbox of the user's
// (--sandbox-dir) runs it with its own pool and options, and puts the sandbox's back at the
// end, its server as it found it: running (restarted with them) or stopped. A user test
// found a running sandbox left with the experiment's 16 MiB pool and options, written to
// its sandbox.json, and a stopped one's dump and load at startup turned off for good.
func TestUsersSandboxGetsItsSettingsBack(t *testing.T) {
	ctx := context.Background()
	const pool = 48 << 20
	args := []string{"--innodb-lru-scan-depth=400"}
	for _, running := range []bool{true, false} {
		name := map[bool]string{true: "running", false: "stopped"}[running]
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(sandboxtest.Dir(t), "users-"+name)
			sb, _, err := sandbox.Up(ctx, sandbox.Config{Dir: dir, PoolSize: pool, ServerArgs: args, DumpAtShutdown: true, LoadAtStartup: true,
				DieWithParent: true, Flavor: os.Getenv(sandbox.FlavorEnv)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sb.Kill() })
			if !running {
				if _, err := sb.Stop(ctx); err != nil {
					t.Fatal(err)
				}
			}
			target, err := experiment.NewSandbox(ctx, experiment.SandboxConfig{Dir: dir, PoolSize: 16 << 20}, logx.New(io.Discard, true))
			if err != nil {
				t.Fatal(err)
			}
			if target.Sandbox.PoolSize != 16<<20 || target.Sandbox.DumpAtShutdown || target.Sandbox.LoadAtStartup {
				t.Errorf("during the experiment: pool %d, dump at shutdown %v, load at startup %v; want the experiment's 16 MiB, both off",
					target.Sandbox.PoolSize, target.Sandbox.DumpAtShutdown, target.Sandbox.LoadAtStartup)
			}
			target.Close()
			after, err := sandbox.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if after.PoolSize != pool || !slices.Equal(after.ServerArgs, args) || !after.DumpAtShutdown || !after.LoadAtStartup {
				t.Errorf("after the experiment the sandbox's settings are: pool %d, options %q, dump at shutdown %v, load at startup %v; want its own: %d, %q, both on",
					after.PoolSize, after.ServerArgs, after.DumpAtShutdown, after.LoadAtStartup, pool, args)
			}
			if st := after.Status(ctx); st.Running != running {
				t.Errorf("after the experiment the sandbox's server runs: %v; want %v, as before it", st.Running, running)
			}
			if running {
				conn, err := after.Connect(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				var size int64
				if err := conn.DB.QueryRow("SELECT @@innodb_buffer_pool_size").Scan(&size); err != nil {
					t.Fatal(err)
				}
				if size != pool {
					t.Errorf("the restarted server's pool is %d bytes, want its own %d", size, pool)
				}
			}
		})
	}
}

// TestRestartOfAServerThatLoadsAtStartupIsCold: an existing server restarted by
// --restart-cmd that loads its buffer pool at startup (innodb_buffer_pool_load_at_startup)
// is restarted cold: innowarm turns innodb_buffer_pool_dump_at_shutdown off first, so the
// server writes no dump to load. Before, every restart dumped and reloaded the pool, and
// recovery reported the warm runs as cold.
func TestRestartOfAServerThatLoadsAtStartupIsCold(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(sandboxtest.Dir(t), "loads-at-startup")
	sb, _, err := sandbox.Up(ctx, sandbox.Config{Dir: dir, PoolSize: 64 << 20, DumpAtShutdown: true, LoadAtStartup: true,
		DieWithParent: true, Flavor: os.Getenv(sandbox.FlavorEnv)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if now, err := sandbox.Open(dir); err == nil {
			now.Kill() // the restart command started its server
		}
		sb.Kill()
	})
	conn, err := sb.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	series := conn.Server.Series("warmdb", 1, 20000)
	for _, q := range []string{
		"CREATE DATABASE warmdb",
		"CREATE TABLE warmdb.t (id INT PRIMARY KEY, pad CHAR(200) NOT NULL DEFAULT '') CHARSET latin1",
		"INSERT INTO warmdb.t (id) SELECT seq FROM " + series + " ORDER BY seq",
	} {
		if _, err := conn.DB.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var space int64
	if err := conn.DB.QueryRow("SELECT SPACE FROM " + conn.Server.TablesTable() + " WHERE NAME = 'warmdb/t'").Scan(&space); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	// By space: after a restart the pages a load brought in before the table is opened
	// have no table name in INNODB_BUFFER_PAGE.
	resident := func() int64 {
		t.Helper()
		c, err := sb.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var n int64
		if err := c.DB.QueryRow("SELECT COUNT(*) FROM information_schema.INNODB_BUFFER_PAGE WHERE SPACE = ?", space).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	target := &experiment.Target{Opts: sb.ConnOptions(), RestartCmd: sandboxtest.Binary(t) + " sandbox restart --dir " + dir, Log: logx.New(io.Discard, true)}
	before := resident()
	rs, err := target.ColdRestart(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The server's own load at startup runs in the background: wait for its end.
	waitLoad := func() string {
		c, err := sb.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var name, status string
		for i := 0; i < 300; i++ {
			if err := c.DB.QueryRow("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_load_status'").Scan(&name, &status); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(status, "oading") {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		return status
	}
	status := waitLoad()
	after := resident()
	t.Logf("%d of the table's pages resident before the restart, %d after (load status %q; restart: %s)", before, after, status, rs.Cold)
	if before < 100 || after > 10 || rs.Note != "" {
		t.Errorf("restart of a server that loads at startup: %d pages resident after (of %d), note %q; want a cold pool and no note", after, before, rs.Note)
	}
}

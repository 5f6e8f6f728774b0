package warm_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/flavor"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/warm"
)

// warm --wait-for-server started while the server is down waits for it, connects once it
// answers and warms.
func TestWaitForServer(t *testing.T) {
	sb := sandboxtest.Server(t)
	db := sandboxtest.Schema(t)
	plainTable(t, db, "w", 2000)
	ctx := context.Background()
	if _, err := sb.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := sb.Start(ctx); err != nil {
			t.Fatal(err)
		}
		sandboxtest.Reconnect(t)
	}()
	cmd := exec.Command(sandboxtest.Binary(t), "warm", "--no-defaults", "-S", sb.Socket, "-u", "root", "-D", db, "--method", "scan", "--wait-for-server=60s")
	var stderr sandboxtest.SyncBuffer
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// It waits (and says so) while the server is down, rather than failing.
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(stderr.String(), "waiting for the server"); {
		select {
		case err := <-exited:
			t.Fatalf("warm exited (%v) while the server was down: %s", err, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("warm did not say it waits: %s", stderr.String())
		}
	}
	if _, err := sb.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil || !strings.Contains(stderr.String(), "answered after") {
			t.Fatalf("warm after the server started: %v: %s", err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("warm did not finish after the server started: %s", stderr.String())
	}
	// Traffic arrives with such a warm: it yields to it unless told otherwise.
	if !strings.Contains(stderr.String(), "pacing: --nice, the default when traffic arrives with the warm") {
		t.Errorf("warm --wait-for-server did not say it runs --nice: %s", stderr.String())
	}
	out, err := exec.Command(sandboxtest.Binary(t), "warm", "--no-defaults", "-S", sb.Socket, "-u", "root", "-D", db, "--method", "scan", "--wait-for-server=60s", "--nice=false").CombinedOutput()
	if err != nil || strings.Contains(string(out), "pacing:") {
		t.Errorf("warm --wait-for-server --nice=false: %v: %s", err, out)
	}
}

// A warm started with the server aborts the server's own load that is running, and says
// so; the server's reads are throttled so that its load is surely running.
func TestTakeOverStartupLoad(t *testing.T) {
	sb := sandboxtest.Server(t)
	db := sandboxtest.Schema(t)
	plainTable(t, db, "big", 150_000)
	conn := sandboxtest.Conn(t)
	ctx := context.Background()
	status := func() string {
		var v string
		conn.DB.QueryRow("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_load_status'").Scan(new(string), &v)
		return v
	}
	// Nothing to take over: the server is not loading.
	if did, err := warm.TakeOverStartupLoad(ctx, conn); err != nil || did != "" {
		t.Fatalf("with no load running: %q, %v", did, err)
	}
	// The server's own dump of its pool, to be loaded after a cold restart.
	sandboxtest.Exec(t, "SELECT COUNT(*) FROM "+sqltext.Table(db, "big"))
	sandboxtest.DumpPool(t)
	if _, err := sb.ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	conn = sandboxtest.Reconnect(t)
	unthrottle := sandboxtest.ThrottleReads(t, sb.Status(ctx).Pid, sb.Datadir, 4<<20)
	defer unthrottle()
	sandboxtest.Exec(t, "SET GLOBAL innodb_buffer_pool_load_now = ON")
	for deadline := time.Now().Add(30 * time.Second); !flavor.LoadInProgress(status()); {
		if time.Now().After(deadline) {
			t.Fatalf("the server's load did not start: %s", status())
		}
		time.Sleep(10 * time.Millisecond)
	}
	did, err := warm.TakeOverStartupLoad(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(did, "aborted it") || flavor.LoadInProgress(status()) {
		t.Errorf("took over: %q; status now %q", did, status())
	}
}

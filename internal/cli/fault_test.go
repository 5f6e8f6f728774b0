package cli_test

import (
	"context"
	"database/sql"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/sandbox"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// A server that dies in the middle of a warm, a snapshot sidecar or a replay: innowarm ends
// without waiting out a retry or a timeout, with one line that says the server was lost, and exit 1, without a warning for
// every unit or statement it had left.
func TestServerLostMidCommand(t *testing.T) {
	// busy is the server-side sign that the command is in the middle of its work.
	busy := func(tag string) func(*sql.DB) bool {
		return func(db *sql.DB) bool {
			var n int
			_ = db.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE ?", "%"+tag+"%").Scan(&n)
			return n > 1 // this query matches itself
		}
	}
	loading := func(db *sql.DB) bool {
		var name, status string
		_ = db.QueryRow("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_load_status'").Scan(&name, &status)
		return strings.HasPrefix(status, "Loaded ") || strings.HasPrefix(status, "Loading buffer")
	}
	always := func(*sql.DB) bool { return true }
	cases := []struct {
		name  string
		args  func(sb *sandbox.Sandbox, dir string) []string
		ready func(*sql.DB) bool
	}{
		{"warm by scans", func(sb *sandbox.Sandbox, _ string) []string {
			return []string{"warm", "-D", "lost", "--method", "scan", "--parallel", "4", "--split-pages", "64"}
		}, busy("innowarm:warm")},
		{"native warm", func(sb *sandbox.Sandbox, _ string) []string {
			return []string{"warm", "-D", "lost", "--method", "native"}
		}, loading},
		{"snapshot sidecar", func(sb *sandbox.Sandbox, dir string) []string {
			return []string{"snapshot", "-D", "lost", "-o", filepath.Join(dir, "lost.manifest"), "--every", "1s", "--page-list", "lru-table"}
		}, always},
		{"replay", func(sb *sandbox.Sandbox, dir string) []string {
			var b strings.Builder
			for i := 0; i < 3000; i++ {
				b.WriteString("SELECT COUNT(*) FROM lost.t WHERE k = " + itoa(i%500) + " AND pad <> '';\n")
			}
			p := filepath.Join(dir, "statements.sql")
			if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			return []string{"warm", "--replay", p, "--concurrency", "4"}
		}, busy("innowarm:replay")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			sb := sandboxtest.SecondServer(t, 64<<20)
			conn, err := sb.Connect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			srv := conn.Server
			for _, q := range []string{
				"CREATE DATABASE lost",
				"CREATE TABLE lost.t (id INT PRIMARY KEY, k INT, pad CHAR(200), KEY k (k))",
				"INSERT INTO lost.t SELECT seq, seq MOD 500, REPEAT('l', 200) FROM " + srv.Series("lost", 1, 120000) + " ORDER BY seq",
				"ANALYZE TABLE lost.t",
			} {
				if _, err := conn.DB.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			conn.Close()
			if _, err := sb.ColdRestart(ctx); err != nil {
				t.Fatal(err)
			}
			watch, err := sb.Connect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer watch.Close()
			// Slow reads keep the command busy when the server dies.
			unthrottle := sandboxtest.ThrottleReads(t, sb.Status(ctx).Pid, sb.Datadir, 2<<20)
			defer unthrottle()
			dir := t.TempDir()
			args := append(c.args(sb, dir), "--no-defaults", "-S", sb.Socket, "-u", "root")
			cmd := exec.Command(sandboxtest.Binary(t), args...)
			// Written by exec's copying goroutines while the test reads them.
			var stdout, stderr sandboxtest.SyncBuffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			// Kill the server once the command is at work on it (and at least a second in).
			time.Sleep(time.Second)
			for deadline := time.Now().Add(20 * time.Second); !c.ready(watch.DB); time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the command never got to work\n%s%s", stdout.String(), stderr.String())
				}
			}
			select {
			case err := <-done:
				t.Fatalf("the command ended before the server was killed (%v): the test proves nothing\n%s%s", err, stdout.String(), stderr.String())
			default:
			}
			before := len(stderr.String())
			sb.Kill()
			// The clock starts when the server is gone for a client too: its socket refuses.
			// Until every thread of a killed server has exited, its sockets stay open, and a
			// busy machine can take seconds to finish the last one's read.
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				c, err := net.Dial("unix", sb.Socket)
				if err != nil {
					break
				}
				c.Close()
				if time.Now().After(deadline) {
					t.Fatal("the killed server still accepts connections after 30 s")
				}
			}
			killed := time.Now()
			var waitErr error
			select {
			case waitErr = <-done:
			case <-time.After(15 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("still running 15 s after the server died\n%s", stderr.String())
			}
			took := time.Since(killed)
			code := cmd.ProcessState.ExitCode()
			all := stderr.String()
			after := strings.TrimSpace(all[min(before, len(all)):])
			lines := strings.Split(after, "\n")
			t.Logf("exit %d after %s; stderr after the kill:\n%s", code, took.Round(time.Millisecond), after)
			// Seconds, not milliseconds, on a busy machine; what the bound catches is a retry
			// or a timeout (innowarm's own are 5-10 s) spent on a server that is gone.
			if took > 10*time.Second {
				t.Errorf("ended %s after the server died, want within 10 s", took.Round(time.Millisecond))
			}
			if code != 1 || waitErr == nil {
				t.Errorf("exit %d, want 1", code)
			}
			last := lines[len(lines)-1]
			if !strings.HasPrefix(last, "innowarm: ") || !strings.Contains(last, "lost the connection to the server") {
				t.Errorf("last line %q does not say the server was lost", last)
			}
			if warnings := strings.Count(after, "WARNING"); warnings > 0 {
				t.Errorf("%d warnings after the server died, want the one last line only", warnings)
			}
		})
	}
}

package cli_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// snapshot --every writes its age and size as Prometheus metrics after every capture, and
// stops cleanly on SIGTERM.
func TestSnapshotEveryMetricsFile(t *testing.T) {
	zoo := sandboxtest.Zoo(t)
	dir := sandboxtest.Dir(t)
	prom := filepath.Join(dir, "snapshot.prom")
	args := append([]string{"snapshot", "-D", zoo, "-o", filepath.Join(dir, "zoo.manifest"), "--every", "1s", "--metrics-file", prom}, sandboxtest.Sock(t)...)
	cmd := exec.Command(sandboxtest.Binary(t), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	var stderr sandboxtest.SyncBuffer // read while the process writes it
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Two captures written, counted from the file itself: a busy machine spaces them out.
	captures := regexp.MustCompile(`(?m)^innowarm_snapshot_captures_total ([0-9.e+]+)$`)
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		raw, _ := os.ReadFile(prom)
		if m := captures.FindSubmatch(raw); m != nil {
			if n, _ := strconv.ParseFloat(string(m[1]), 64); n >= 2 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("fewer than 2 captures at --every 1s in 2 minutes:\n%s\n%s", raw, stderr.String())
		}
	}
	stopWithSIGTERM(t, cmd, &stderr, 10*time.Second)
	raw, err := os.ReadFile(prom)
	if err != nil {
		t.Fatal(err)
	}
	value := func(name string) float64 {
		m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindSubmatch(raw)
		if m == nil {
			t.Fatalf("no %s in the metrics file:\n%s", name, raw)
		}
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		return v
	}
	if n := value("innowarm_snapshot_captures_total"); n < 2 {
		t.Errorf("captures_total %v after SIGTERM, want the 2 seen before", n)
	}
	if p := value("innowarm_snapshot_pages"); p < 10 {
		t.Errorf("pages %v", p)
	}
	// The age counts from the last capture: at most its own seconds, the 1 s interval and
	// the stop (10 s at most, above) before the file was written at exit.
	if age, took := value("innowarm_snapshot_age_seconds"), value("innowarm_snapshot_capture_seconds"); age < 0 || age > took+12 {
		t.Errorf("age %v s after a capture of %v s", age, took)
	}
}

// stopWithSIGTERM ends a snapshot --every process as a service manager does and checks that
// it exits with 0 within limit.
func stopWithSIGTERM(t *testing.T, cmd *exec.Cmd, stderr fmt.Stringer, limit time.Duration) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("snapshot --every after SIGTERM: %v; stderr: %s", err, stderr.String())
		}
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		t.Fatalf("snapshot --every did not stop within %s of SIGTERM", limit)
	}
}

package cli_test

import (
	"bytes"
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
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond)
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
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("snapshot --every did not stop within 10 s of SIGTERM")
	}
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
		t.Errorf("captures_total %v after 2.5 s at --every 1s", n)
	}
	if p := value("innowarm_snapshot_pages"); p < 10 {
		t.Errorf("pages %v", p)
	}
	if age := value("innowarm_snapshot_age_seconds"); age < 0 || age > 5 {
		t.Errorf("age %v s", age)
	}
}

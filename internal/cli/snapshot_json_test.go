package cli_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// snapshot --every --json prints a stream of captures a script reads line by line (JSON
// Lines, as follow --json): one compact object per capture, each line parseable alone.
func TestSnapshotEveryJSONLines(t *testing.T) {
	zoo := sandboxtest.Zoo(t)
	dir := sandboxtest.Dir(t)
	args := append([]string{"snapshot", "-D", zoo, "-o", filepath.Join(dir, "lines.manifest"), "--every", "1s", "--json"}, sandboxtest.Sock(t)...)
	cmd := exec.Command(sandboxtest.Binary(t), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	var stdout, stderr sandboxtest.SyncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Two captures printed, counted by their lines: a busy machine spaces them out.
	for deadline := time.Now().Add(2 * time.Minute); strings.Count(stdout.String(), "\n") < 2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than 2 captures at --every 1s in 2 minutes:\n%s\n%s", stdout.String(), stderr.String())
		}
	}
	stopWithSIGTERM(t, cmd, &stderr, 30*time.Second)
	lines := strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n")
	if len(lines) < 2 {
		t.Fatalf("%d lines: %q", len(lines), stdout.String())
	}
	for i, l := range lines {
		var doc struct {
			Path    string `json:"path"`
			Entries int64  `json:"entries"`
		}
		if err := json.Unmarshal([]byte(l), &doc); err != nil || doc.Path == "" || doc.Entries <= 0 {
			t.Errorf("line %d is not one capture's object (%v): %q", i+1, err, l)
		}
	}
}

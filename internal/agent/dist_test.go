package agent_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

const (
	unitFile    = "../../dist/systemd/innowarm-agent.service"
	defaultFile = "../../dist/default/innowarm-agent"
)

// The agent's systemd unit passes systemd-analyze verify (no warning either) in a root
// holding the binary where the unit runs it, and the options it starts the agent with are
// ones the agent accepts: it runs with them, and stops with exit 0 on SIGTERM, as the unit
// expects.
func TestSystemdUnit(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze is not installed (Debian's systemd package has it)")
	}
	root := sandboxtest.Dir(t)
	unit, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"usr/bin", "etc/systemd/system", "usr/lib/systemd"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The system's own units (the targets the unit orders itself after) and the binary.
	if out, err := exec.Command("cp", "-a", "/lib/systemd/system", filepath.Join(root, "usr/lib/systemd/")).CombinedOutput(); err != nil {
		t.Fatalf("copy the system's units: %v: %s", err, out)
	}
	if out, err := exec.Command("cp", sandboxtest.Binary(t), filepath.Join(root, "usr/bin/innowarm")).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/systemd/system/innowarm-agent.service"), unit, 0o644); err != nil {
		t.Fatal(err)
	}
	// Man pages come with the package (make dist); this checks the unit itself.
	out, err := exec.Command(analyze, "verify", "--man=no", "--root="+root, "/etc/systemd/system/innowarm-agent.service").CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v:\n%s", err, out)
	}

	// ExecStart with the default options, its paths moved into the test's directory.
	var execStart string
	sc := bufio.NewScanner(strings.NewReader(string(unit)))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "ExecStart="); ok {
			execStart = v
		}
	}
	args := strings.Fields(execStart)
	if len(args) < 2 || args[0] != "/usr/bin/innowarm" || args[1] != "agent" {
		t.Fatalf("ExecStart=%s", execStart)
	}
	opts := defaultOptions(t)
	state := sandboxtest.Dir(t)
	var expanded []string
	for _, a := range args[2:] {
		if a == "$INNOWARM_AGENT_OPTS" {
			for _, o := range strings.Fields(opts) {
				expanded = append(expanded, strings.ReplaceAll(o, "/var/lib/innowarm", state))
			}
			continue
		}
		expanded = append(expanded, a)
	}
	if strings.Contains(strings.Join(expanded, " "), "$") {
		t.Fatalf("unexpanded variable in %v", expanded)
	}
	p := startCLI(t, append(append(expanded, "--http-listen", "127.0.0.1:0"), sandboxtest.Sock(t)...)...)
	p.addr(t)
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(p.stderr.String(), "agent: ready") {
		if time.Now().After(deadline) {
			t.Fatalf("the agent with the unit's options did not get ready:\n%s", p.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, p.stderr.String())
	}
	// The exit status the unit does not restart on is the configuration error's.
	if !strings.Contains(string(unit), "RestartPreventExitStatus=2\n") {
		t.Error("the unit restarts on exit 2 (a configuration error)")
	}
}

// defaultOptions reads INNOWARM_AGENT_OPTS="..." from the environment file.
func defaultOptions(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(defaultFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, "INNOWARM_AGENT_OPTS="); ok {
			s, err := strconv.Unquote(v)
			if err != nil {
				t.Fatalf("INNOWARM_AGENT_OPTS: %v", err)
			}
			return s
		}
	}
	t.Fatal("no INNOWARM_AGENT_OPTS in " + defaultFile)
	return ""
}

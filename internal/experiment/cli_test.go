package experiment_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// TestBadInputOneLineErrors: each refusal is one line, exit 2, names only flags the
// subcommand has, and leaves no report directory behind (a user test found empty ones).
// Each case runs in a directory of its own ("RD" is a report directory inside it), which
// must stay empty: a default report directory would be made there.
func TestBadInputOneLineErrors(t *testing.T) {
	sock := sandboxtest.Sock(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"coldstart", "--rows", "0"}, "--rows must be at least 1"},
		{[]string{"coldstart", "--queries", "-1"}, "--queries"},
		// --pool-size 1M: were the value let through, the run would stop at the sandbox's
		// pool, not run an experiment.
		{[]string{"coldstart", "--repeat", "0", "--pool-size", "1M"}, "--repeat 0: use 1 to 100"},
		{[]string{"coldstart", "--interval", "0", "--pool-size", "1M"}, "--interval 0s: use 50ms or more"},
		{[]string{"coldstart", "--restart-timeout", "0"}, "--restart-timeout must be at least 1s"},
		{[]string{"hotrows", "--min-hot", "0"}, "--min-hot"},
		{[]string{"hotrows", "--max-hot", "-5"}, "--max-hot -5: use 0"},
		// hotrows never restarts the server; --rows 0: were the flag let through, nothing
		// would reach the server it points at (the default socket's).
		{[]string{"hotrows", "--restart-cmd", "true", "--rows", "0"}, "unknown flag: --restart-cmd"},
		{[]string{"concurrency", "--scale", "0"}, "--scale"},
		{[]string{"concurrency", "--iterations", "0"}, "--iterations must be at least 1"},
		{[]string{"recovery", "--rounds", "0"}, "--rounds 0: use 1 to 50"},
		{[]string{"recovery", "--duration", "0"}, "--duration 0s: use 2s or more"},
		{[]string{"recovery", "--hot-duration", "-1s"}, "--hot-duration -1s"},
		{[]string{"recovery", "--clients", "0"}, "--clients 0: use 1 to 1000"},
		{[]string{"recovery", "--clients", "4", "--write-clients", "4"}, "leave at least one client of point selects"},
		{[]string{"recovery", "--write-clients", "x%"}, "--write-clients"},
		{[]string{"recovery", "--warm-max-rate", "10KB/s"}, "--warm-max-rate 10KB/s: use at least 1MB/s"},
		{[]string{"concurrency", "--concurrency", "1,x"}, "--concurrency"},
		{[]string{"concurrency", "--concurrency", "0"}, "--concurrency"},
		{[]string{"coldstart", "--pool-size", "1M", "--report-dir", "RD"}, "too small"},
		{[]string{"concurrency", "--pool-size", "0", "--report-dir", "RD/a/b"}, "too small"},
		{[]string{"coldstart", "--report-dir", "/proc/innowarm-report"}, "report directory /proc/innowarm-report"},
		{append(append([]string{"coldstart"}, sock...), "--report-dir", "RD"), "needs cold restarts and this server has no restart method"},
		{append(append([]string{"coldstart"}, sock...), "--pool-size", "64M", "--restart-cmd", "true"), "--pool-size applies to the sandbox"},
		{append(append([]string{"hotrows"}, sock...), "--schema", "mysql", "--report-dir", "RD"), "schema `mysql` exists and was not created by innowarm experiment"},
		{append(append([]string{"concurrency"}, sock...), "--schema", "mysql"), "schema `mysql` exists and was not created by innowarm: the mixed load writes, so it runs only in a schema of its own: choose another with --schema"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			cwd := sandboxtest.Dir(t)
			args := []string{"experiment"}
			for _, a := range c.args {
				args = append(args, strings.Replace(a, "RD", filepath.Join(cwd, "report"), 1))
			}
			r := sandboxtest.CLI(t, sandboxtest.Run{Dir: cwd}, args...)
			lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
			if r.Code != 2 || len(lines) != 1 || !strings.Contains(r.Stderr, c.want) {
				t.Errorf("experiment %s: exit %d, stderr %q; want exit 2 and one line with %q", strings.Join(c.args, " "), r.Code, r.Stderr, c.want)
			}
			// Flags of other commands: bench's, named by bench's own refusals.
			for _, other := range []string{"--create-schema", "--allow-writes-in-existing-schema"} {
				if strings.Contains(r.Stderr, other) {
					t.Errorf("experiment %s names %s, which it does not have: %s", c.args[0], other, r.Stderr)
				}
			}
			if left, _ := os.ReadDir(cwd); len(left) > 0 {
				t.Errorf("experiment %s left %s behind in its directory", strings.Join(c.args, " "), left[0].Name())
			}
		})
	}
}

// TestNumericFlagsAtZeroAndBelow runs every number and duration flag of every experiment
// subcommand, as its --help lists them, at 0 and at -1 (a user test: --repeat 0 ran once,
// silently). Each must be refused in one line with exit 2 before anything starts, except
// where the help says what 0 means. A value accepted meets the unwritable report
// directory instead, the first thing checked after the flags, so nothing runs either way.
func TestNumericFlagsAtZeroAndBelow(t *testing.T) {
	// 0 means something (the help says what); the seed takes any number.
	zeroOK := map[string]bool{"max-hot": true, "unsettled-primary": true, "pool-pages-every": true, "warm-parallel": true, "seed": true}
	flagLine := regexp.MustCompile(`^\s+(?:-\S, )?--([a-z0-9-]+) (int|int64|float|duration)\s`)
	for _, sub := range []string{"coldstart", "hotrows", "concurrency", "recovery"} {
		help := sandboxtest.CLI(t, sandboxtest.Run{}, "experiment", sub, "--help")
		var flags []string
		for _, l := range strings.Split(help.Stdout, "\n") {
			// The connection's port and timeout are every command's (connflags.go).
			if m := flagLine.FindStringSubmatch(l); m != nil && m[1] != "port" && m[1] != "connect-timeout" {
				flags = append(flags, m[1]+" "+m[2])
			}
		}
		if len(flags) < 2 {
			t.Fatalf("experiment %s --help lists %d number flags: %s", sub, len(flags), help.Stdout)
		}
		for _, f := range flags {
			name, typ, _ := strings.Cut(f, " ")
			for _, v := range []string{"0", "-1"} {
				if typ == "duration" {
					v += "s"
				}
				arg := "--" + name + "=" + v
				r := sandboxtest.CLI(t, sandboxtest.Run{}, "experiment", sub, arg, "--report-dir", "/proc/innowarm-report")
				accepted := strings.Contains(r.Stderr, "report directory /proc/innowarm-report")
				want := !(zeroOK[name] && v[0] == '0' || name == "seed")
				switch {
				case r.Code != 2 || strings.Count(strings.TrimSpace(r.Stderr), "\n") > 0:
					t.Errorf("experiment %s %s: exit %d, stderr %q; want exit 2 and one line", sub, arg, r.Code, r.Stderr)
				case want && accepted:
					t.Errorf("experiment %s %s was accepted", sub, arg)
				case want && !strings.Contains(r.Stderr, "--"+name):
					t.Errorf("experiment %s %s: the refusal does not name --%s: %s", sub, arg, name, r.Stderr)
				case !want && !accepted:
					t.Errorf("experiment %s %s was refused, but its help says what it means: %s", sub, arg, r.Stderr)
				}
			}
		}
	}
}

// TestColdstartOnServerWithRestartCmd runs coldstart on an existing server (the shared test
// server) restarted by --restart-cmd, with JSON output.
func TestColdstartOnServerWithRestartCmd(t *testing.T) {
	sb := sandboxtest.Server(t)
	restart := sandboxtest.Binary(t) + " sandbox cold-restart --dir " + sb.Dir
	rd := filepath.Join(sandboxtest.Dir(t), "report")
	args := append(append([]string{"experiment", "coldstart"}, sandboxtest.Sock(t)...),
		"--restart-cmd", restart, "--rows", "5000", "--queries", "500", "--scenarios", "warm", "--warm-method", "scan",
		"--schema", "exp_cs_cli", "--report-dir", rd, "--json", "-q")
	r := sandboxtest.CLI(t, sandboxtest.Run{Timeout: 3 * time.Minute}, args...)
	defer sandboxtest.Reconnect(t)
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	var out struct {
		Target    string `json:"target"`
		ReportDir string `json:"report_dir"`
		Scenarios []struct {
			ID      string `json:"id"`
			Restart struct {
				Cold string `json:"cold"`
			} `json:"restart"`
			Warmup *struct {
				Method string `json:"method"`
			} `json:"warmup"`
			Passes []struct {
				Misses int64 `json:"misses"`
			} `json:"passes"`
		} `json:"scenarios"`
	}
	sandboxtest.JSON(t, []byte(r.Stdout), &out)
	if len(out.Scenarios) != 2 || out.Scenarios[0].ID != "cold" || out.Scenarios[1].ID != "warm" || !strings.HasPrefix(out.Target, "existing server") {
		t.Fatalf("output: %s", r.Stdout)
	}
	for _, s := range out.Scenarios {
		if !strings.Contains(s.Restart.Cold, "restarted") || len(s.Passes) != 2 {
			t.Errorf("scenario %s: %+v", s.ID, s)
		}
	}
	cold, warmed := out.Scenarios[0].Passes, out.Scenarios[1].Passes
	if cold[0].Misses < 20*(cold[1].Misses+1) || warmed[0].Misses > cold[0].Misses/20+5 {
		t.Errorf("misses: cold %d, hot %d, after innowarm warm %d", cold[0].Misses, cold[1].Misses, warmed[0].Misses)
	}
	if w := out.Scenarios[1].Warmup; w == nil || w.Method != "innowarm warm (scan)" {
		t.Errorf("warm-up: %+v", w)
	}
	for _, f := range []string{"report.html", "report.json", "charts/warmup-curve.png"} {
		if _, err := os.Stat(filepath.Join(rd, f)); err != nil {
			t.Errorf("report: %v", err)
		}
	}
}

// TestConcurrencyOnItsOwnSandbox is the default target: a sandbox made for the run and
// removed after it.
func TestConcurrencyOnItsOwnSandbox(t *testing.T) {
	scratch := sandboxtest.Dir(t)
	sbDir, rd := filepath.Join(scratch, "sb"), filepath.Join(scratch, "report")
	r := sandboxtest.CLI(t, sandboxtest.Run{Timeout: 3 * time.Minute}, "experiment", "concurrency", "--pool-size", "16M", "--sandbox-dir", sbDir,
		"--scale", "0.000001", "--concurrency", "1,2", "--iterations", "1", "--report-dir", rd)
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	for _, want := range []string{"## innowarm experiment concurrency", "| clients / queries per client", "Report: " + rd + "/report.html"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.Stdout)
		}
	}
	if !strings.Contains(r.Stderr, "starting a sandbox server") {
		t.Errorf("stderr: %s", r.Stderr)
	}
	if _, err := os.Stat(sbDir); err == nil {
		t.Errorf("the sandbox %s was not removed", sbDir)
	}
}

// TestInterruptStopsTheSandbox: Ctrl-C during the data load stops the statements, removes
// the sandbox and exits 130.
func TestInterruptStopsTheSandbox(t *testing.T) {
	scratch := sandboxtest.Dir(t)
	sbDir := filepath.Join(scratch, "sb")
	cmd := exec.Command(sandboxtest.Binary(t), "experiment", "coldstart", "--pool-size", "16M", "--sandbox-dir", sbDir,
		"--rows", "3000000", "--report-dir", filepath.Join(scratch, "report"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + scratch}
	var stderr sandboxtest.SyncBuffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(stderr.String(), "sandbox: ") {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the sandbox did not start: %s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // inside the load
	t0 := time.Now()
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d (%v), want 130: %s", code, err, stderr.String())
	}
	if d := time.Since(t0); d > 30*time.Second {
		t.Errorf("stopping took %s", d)
	}
	if _, err := os.Stat(sbDir); err == nil {
		t.Errorf("the sandbox %s was not removed: %s", sbDir, stderr.String())
	}
	if !strings.HasSuffix(strings.TrimSpace(stderr.String()), "innowarm: interrupted") {
		t.Errorf("stderr ends with %q", lastLine(stderr.String()))
	}
}

func lastLine(s string) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return l[len(l)-1]
}

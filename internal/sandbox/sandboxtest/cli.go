package sandboxtest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// Binary builds cmd/innowarm once per test binary and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		binPath = filepath.Join(rootDir, "innowarm")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/innowarm/innowarm/cmd/innowarm").CombinedOutput()
		if err != nil {
			binErr = errors.New(string(out))
		}
	})
	if binErr != nil {
		t.Fatalf("build innowarm: %v", binErr)
	}
	return binPath
}

// Result is what one run of the binary did.
type Result struct {
	Code           int
	Stdout, Stderr string
	Elapsed        time.Duration
}

// Run options.
type Run struct {
	Env     []string // added to a minimal environment (PATH, HOME=scratch, USER)
	Stdin   string
	Timeout time.Duration
	Dir     string

	// nobody runs the binary as the OS user nobody, from the copy it may run, with HOME
	// there (CLIElsewhere).
	nobody string
}

// Env is the minimal environment runs get: no MYSQL_* from the developer's shell, and a
// HOME without a ~/.my.cnf unless the test writes one, and no default socket: a run that
// names no server of the test's (no -S, no socket= in an option file it wrote) must fail,
// not reach the machine's own server through /run/mysqld/mysqld.sock (a test of a refusal,
// run against a build that did not refuse, once filled a schema on the machine's MariaDB).
// A test of the defaults sets connection.DefaultSocketsEnv in Env.
func (r Run) environ(t testing.TB) []string {
	home, user := filepath.Join(rootDir, "home"), "root"
	if r.nobody != "" {
		home, user = filepath.Dir(r.nobody), "nobody"
	}
	_ = os.MkdirAll(home, 0o755)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "USER=" + user, "LANG=C.UTF-8",
		connection.DefaultSocketsEnv + "=none"}
	if gc := os.Getenv("GOCACHE"); gc != "" {
		env = append(env, "GOCACHE="+gc)
	}
	return append(env, r.Env...)
}

// CLI runs the innowarm binary with args, detached from any terminal.
func CLI(t testing.TB, r Run, args ...string) Result {
	t.Helper()
	if r.Timeout == 0 {
		r.Timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.Timeout)
	defer cancel()
	bin := Binary(t)
	if r.nobody != "" {
		bin = r.nobody
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = r.environ(t)
	cmd.Dir = r.Dir
	cmd.Stdin = strings.NewReader(r.Stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if r.nobody != "" {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: nobody, Gid: nobody}
	}
	t0 := time.Now()
	err := cmd.Run()
	res := Result{Stdout: out.String(), Stderr: errb.String(), Elapsed: time.Since(t0)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.Code = ee.ExitCode()
	default:
		t.Fatalf("run innowarm %v: %v", args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("innowarm %v did not finish within %s; stderr: %s", args, r.Timeout, res.Stderr)
	}
	return res
}

// Sock returns the -S/-u flags that reach the shared server as root.
func Sock(t testing.TB) []string {
	return []string{"--no-defaults", "-S", Server(t).Socket, "-u", "root"}
}

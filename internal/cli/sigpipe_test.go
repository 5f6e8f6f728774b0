package cli_test

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// A reader that goes away (innowarm ... 2>&1 | head) killed innowarm by SIGPIPE at its
// next write, before its cleanup ran: a user's sandbox was left running that way. Writes
// to a closed pipe now fail, and the command ends as it would, by its own exit.
func TestClosedPipeDoesNotKill(t *testing.T) {
	args := append([]string{"ping"}, sandboxtest.Sock(t)...)
	cmd := exec.Command(sandboxtest.Binary(t), args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errOut, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	out.Close()
	errOut.Close()
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Fatalf("innowarm ping with its output's reader gone was killed by %v", ws.Signal())
		}
	}
	t.Logf("innowarm ping with its output's reader gone: %v", err)
}

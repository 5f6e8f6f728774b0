package cli

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// A second Ctrl-C while innowarm puts back what it changed (a native load's dump file and
// settings) does not kill it half-way, as it did (the handler was gone after the first):
// the first cancels the command, the second only says to wait, a third exits at once.
func TestSecondInterruptWaitsForCleanup(t *testing.T) {
	var logged sandboxtest.SyncBuffer
	saved := logx.Default()
	logx.SetDefault(logx.New(&logged, false))
	t.Cleanup(func() { logx.SetDefault(saved) })
	sigs := make(chan os.Signal)
	exited := make(chan struct{})
	ctx, stop := watchSignals(context.Background(), sigs, func() { close(exited) })
	defer stop()
	send := func(what string) {
		t.Helper()
		select {
		case sigs <- syscall.SIGINT:
		case <-time.After(10 * time.Second):
			t.Fatalf("the %s interrupt was not taken: nothing handles it", what)
		}
	}
	send("first")
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the first interrupt did not cancel the command")
	}
	send("second")
	send("third") // taken once the second is: the second was handled, not left to the default
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the third interrupt did not exit")
	}
	if out := logged.String(); !strings.Contains(out, "interrupt again to exit at once") || !strings.Contains(out, "exiting before the cleanup ends") {
		t.Errorf("the second and third interrupts' lines: %q", out)
	}
}

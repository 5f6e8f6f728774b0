package connection

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// lockedText is what a goroutine has read so far.
type lockedText struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedText) add(p []byte) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Write(p)
	return l.b.String()
}

func (l *lockedText) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// echoAtPrompt writes the prompt to the terminal and notes whether the terminal echoed
// input at that moment: what a user types as soon as the prompt shows is echoed then.
type echoAtPrompt struct {
	tty    *os.File
	echoed []bool
}

func (e *echoAtPrompt) Write(p []byte) (int, error) {
	t, err := unix.IoctlGetTermios(int(e.tty.Fd()), unix.TCGETS)
	if err != nil {
		return 0, err
	}
	e.echoed = append(e.echoed, t.Lflag&unix.ECHO != 0)
	return e.tty.Write(p)
}

// openPTY opens a pseudo-terminal pair, closed when the test ends.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	master, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tty.Close()
		master.Close()
	})
	return master, tty
}

func echoOn(t *testing.T, tty *os.File) bool {
	t.Helper()
	st, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	return st.Lflag&unix.ECHO != 0
}

// readUntil collects the terminal's output and says when it holds want.
func readUntil(master *os.File, want string) (*lockedText, <-chan struct{}) {
	out := &lockedText{}
	seen := make(chan struct{})
	go func() {
		buf := make([]byte, 256)
		signalled := false
		for {
			n, err := master.Read(buf)
			if text := out.add(buf[:n]); !signalled && strings.Contains(text, want) {
				close(seen)
				signalled = true
			}
			if err != nil {
				return
			}
		}
	}()
	return out, seen
}

// Echo is off before the prompt is written, whatever the scheduling: the check is made at
// the moment of the write, so the old order (prompt, then echo off) fails every run.
func TestPromptTurnsEchoOffBeforePrompting(t *testing.T) {
	master, tty := openPTY(t)
	if !echoOn(t, tty) {
		t.Fatal("a new terminal should echo")
	}
	out, prompted := readUntil(master, "Enter password: ")
	rec := &echoAtPrompt{tty: tty}
	type result struct {
		pw  string
		err error
	}
	done := make(chan result, 1)
	go func() {
		pw, err := promptOn(context.Background(), tty, rec)
		done <- result{pw, err}
	}()
	<-prompted
	if _, err := master.Write([]byte("s3cret-typed\r")); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.pw != "s3cret-typed" {
		t.Fatalf("prompt read %q, %v", r.pw, r.err)
	}
	if len(rec.echoed) == 0 || rec.echoed[0] {
		t.Errorf("the terminal echoed input when the prompt was written (echo at each write: %v)", rec.echoed)
	}
	if !echoOn(t, tty) {
		t.Error("echo not restored after the prompt")
	}
	if strings.Contains(out.String(), "s3cret") {
		t.Errorf("the password was echoed: %q", out.String())
	}
}

// Ctrl-C at the prompt (the command's context ends) returns at once and gives the terminal
// its echo back: a shell left without echo is the user's next surprise.
func TestPromptInterruptedRestoresEcho(t *testing.T) {
	master, tty := openPTY(t)
	_, prompted := readUntil(master, "Enter password: ")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := promptOn(ctx, tty, tty)
		done <- err
	}()
	<-prompted
	if echoOn(t, tty) {
		t.Error("echo is on while the prompt waits")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("interrupted prompt: %v", err)
	}
	if !echoOn(t, tty) {
		t.Error("echo not restored after an interrupted prompt")
	}
}

// A Ctrl-C that comes before the reader starts (here: before the prompt) must leave the
// terminal echoing for good. A reader that set the terminal's modes itself started after
// the restore and turned echo off again for the rest of the shell's life (CI, a loaded
// machine); the check watches the terminal for a while, and never fails without such a
// late writer.
func TestPromptCancelledEarlyLeavesEchoOn(t *testing.T) {
	master, tty := openPTY(t)
	readUntil(master, "\x00")
	for i := 0; i < 20; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := promptOn(ctx, tty, tty); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled prompt: %v", err)
		}
		for deadline := time.Now().Add(25 * time.Millisecond); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if !echoOn(t, tty) {
				t.Fatalf("round %d: echo turned off after the cancelled prompt returned", i)
			}
		}
	}
}

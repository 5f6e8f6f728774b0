package connection

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/innowarm/innowarm/internal/exitcode"
)

// errNoTerminal explains what to do instead of the prompt.
var errNoTerminal = errors.New("-p without a value asks for the password on the terminal, and there is none: set MYSQL_PWD, put password=... in the [client] group of ~/.my.cnf, or pass --password=SECRET")

// PromptPassword asks for the password on the controlling terminal without echo, as the
// mysql client does (it reads /dev/tty, so it works even when stdin is redirected).
func PromptPassword(ctx context.Context) (string, error) {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return "", exitcode.UsageError(errNoTerminal)
	}
	defer tty.Close()
	return promptOn(ctx, tty, tty)
}

// promptOn turns echo off on tty, then writes the prompt to prompt and reads a line. The
// order matters: a password typed the moment the prompt shows, before echo went off, would
// be echoed by the terminal. The terminal's settings are put back on return, and on ctx's
// end (Ctrl-C), which does not wait for the line.
func promptOn(ctx context.Context, tty *os.File, prompt io.Writer) (string, error) {
	fd := int(tty.Fd())
	saved, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return "", exitcode.UsageError(errNoTerminal)
	}
	// The settings term.ReadPassword reads with, set before the prompt is written.
	noEcho := *saved
	noEcho.Lflag &^= unix.ECHO
	noEcho.Lflag |= unix.ICANON | unix.ISIG
	noEcho.Iflag |= unix.ICRNL
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &noEcho); err != nil {
		return "", fmt.Errorf("turn terminal echo off: %w", err)
	}
	restore := sync.OnceFunc(func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, saved) })
	defer restore()
	fmt.Fprint(prompt, "Enter password: ")
	type line struct {
		b   []byte
		err error
	}
	read := make(chan line, 1)
	go func() {
		b, err := term.ReadPassword(fd)
		read <- line{b, err}
	}()
	select {
	case l := <-read:
		restore()
		fmt.Fprintln(prompt)
		if l.err != nil {
			return "", fmt.Errorf("read password from terminal: %w", l.err)
		}
		return strings.TrimRight(string(l.b), "\r\n"), nil
	case <-ctx.Done():
		// The reader stays blocked until the process exits, which an interrupt leads to.
		restore()
		fmt.Fprintln(prompt)
		return "", ctx.Err()
	}
}

// scrubArgs overwrites the password in the process's own argument memory with 'x', so it
// does not show in ps or /proc/PID/cmdline (the mysql client does the same). On Linux the
// Go runtime's os.Args strings point into that memory, which the kernel reads for cmdline.
// The caller must have copied the password first.
func scrubArgs(secret string) bool {
	if secret == "" {
		return false
	}
	found := false
	for _, a := range os.Args[1:] {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		for {
			i := strings.Index(a, secret)
			if i < 0 {
				break
			}
			b := unsafe.Slice(unsafe.StringData(a), len(a))
			for j := i; j < i+len(secret); j++ {
				b[j] = 'x'
			}
			found = true
		}
	}
	return found
}

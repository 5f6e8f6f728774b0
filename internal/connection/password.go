package connection

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

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
// end (Ctrl-C), which does not wait for the line. Only this goroutine touches the
// terminal's settings: a reader that saved and set them itself (term.ReadPassword) could
// start after an early Ctrl-C had restored echo, and leave the shell without it.
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
	defer func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, saved) }()
	fmt.Fprint(prompt, "Enter password: ")
	b, err := readLine(ctx, fd)
	fmt.Fprintln(prompt)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("read password from terminal: %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// promptPollInterval bounds how long a cancelled prompt takes to notice.
const promptPollInterval = 50 * time.Millisecond

// readLine reads one line from the terminal in canonical mode, the way term.ReadPassword
// does (a line ends at '\n'; end of input ends a non-empty line), and gives up when ctx
// ends: it waits for input with poll, so no reader is left blocked on the terminal to eat
// the user's next keystrokes.
func readLine(ctx context.Context, fd int) ([]byte, error) {
	var line []byte
	buf := make([]byte, 256)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(promptPollInterval/time.Millisecond))
		if errors.Is(err, unix.EINTR) || n == 0 {
			continue
		}
		if err != nil {
			return nil, err
		}
		got, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if got == 0 {
			if len(line) > 0 {
				return line, nil
			}
			return nil, io.EOF
		}
		for _, c := range buf[:got] {
			switch c {
			case '\n':
				return line, nil
			case '\r':
			case '\b':
				if len(line) > 0 {
					line = line[:len(line)-1]
				}
			default:
				line = append(line, c)
			}
		}
	}
}

// scrubArgs overwrites the password in the process's own argument memory with 'x', so it
// does not show in ps or /proc/PID/cmdline (the mysql client does the same). On Linux the
// Go runtime's os.Args strings point into that memory, which the kernel reads for cmdline.
// The caller must have copied the password first. Only the password flag's own argument
// is touched (-pSECRET, -p=SECRET, --password=SECRET, --source-password=SECRET): other
// flags' values point into that memory too, and a password that is also a user or schema
// name must not rename them (nor, made of x, loop forever).
func scrubArgs(secret string) bool {
	if secret == "" {
		return false
	}
	found := false
	for _, a := range os.Args[1:] {
		flag, value, ok := strings.Cut(a, "=")
		isPassword := ok && strings.HasPrefix(flag, "--") && strings.HasSuffix(flag, "password") && value == secret
		isPassword = isPassword || a == "-p"+secret || a == "-p="+secret
		if !isPassword {
			continue
		}
		b := unsafe.Slice(unsafe.StringData(a), len(a))
		for j := len(a) - len(secret); j < len(a); j++ {
			b[j] = 'x'
		}
		found = true
	}
	return found
}

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

	"github.com/spf13/pflag"
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

// takePasswords copies the value of every password flag of fs given on the command line
// (--password, -p, --source-password, --target-password) out of the process's argument
// memory, then overwrites those arguments with 'x' there, so that no password shows in ps
// or /proc/PID/cmdline (the mysql client does the same). On Linux the Go runtime's os.Args
// strings point into that memory, which the kernel reads for cmdline, and the flag parser's
// --NAME=VALUE values point into os.Args. All of fs's passwords are taken before any is
// scrubbed: a command with two ends resolves one end before the other, and scrubbing the
// source's --source-password=pw once also turned the target's value of the same password
// into "xx" (access denied on the target). It returns the names of the flags whose
// password was found in the arguments.
func takePasswords(fs *pflag.FlagSet) map[string]bool {
	var taken []*pflag.Flag
	fs.VisitAll(func(fl *pflag.Flag) {
		isPassword := fl.Name == "password" || strings.HasSuffix(fl.Name, "-password")
		if !isPassword || !fl.Changed || fl.Value.Type() != "string" {
			return
		}
		// Set on the value, not on fs: it copies without counting as the flag given again.
		_ = fl.Value.Set(strings.Clone(fl.Value.String()))
		taken = append(taken, fl)
	})
	found := map[string]bool{}
	for _, fl := range taken {
		if v := fl.Value.String(); v != PasswordPromptSentinel && scrubArgs(fl.Name, fl.Shorthand, v) {
			found[fl.Name] = true
		}
	}
	return found
}

// scrubArgs overwrites with 'x' the password secret in os.Args where it is the argument of
// the flag name (--NAME=SECRET) or of its shorthand (-pSECRET, -p=SECRET), and reports
// whether it found one. The caller must have copied the password first. Only that flag's
// own argument is touched: other flags' values point into that memory too, and a password
// that is also a user or schema name must not rename them (nor, made of x, loop forever);
// nor is another end's password flag, whose value may not have been copied yet.
func scrubArgs(name, shorthand, secret string) bool {
	if secret == "" {
		return false
	}
	found := false
	for _, a := range os.Args[1:] {
		if a == "--" {
			break // what follows is positional, not flags
		}
		isPassword := a == "--"+name+"="+secret
		if shorthand != "" {
			isPassword = isPassword || a == "-"+shorthand+secret || a == "-"+shorthand+"="+secret
		}
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

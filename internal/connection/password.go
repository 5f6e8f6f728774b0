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

	"github.com/go-sql-driver/mysql"
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
// into "xx" (access denied on the target). Every argument of a password flag is scrubbed,
// not only the one whose value counts: in "-pOld -pNew" or "--password=Old -p" the earlier
// password is as secret as the last. It returns the names of the flags whose (last)
// password was found in the arguments.
func takePasswords(fs *pflag.FlagSet) map[string]bool {
	var taken []*pflag.Flag
	fs.VisitAll(func(fl *pflag.Flag) {
		if !isPasswordFlag(fl) || !fl.Changed {
			return
		}
		// Set on the value, not on fs: it copies without counting as the flag given again.
		_ = fl.Value.Set(strings.Clone(fl.Value.String()))
		taken = append(taken, fl)
	})
	found := map[string]bool{}
	for _, fl := range taken {
		if scrubArgs(fs, fl) && fl.Value.String() != PasswordPromptSentinel {
			found[fl.Name] = true
		}
	}
	return found
}

func isPasswordFlag(fl *pflag.Flag) bool {
	return (fl.Name == "password" || strings.HasSuffix(fl.Name, "-password")) && fl.Value.Type() == "string"
}

// scrubArgs overwrites with 'x', in os.Args, the value of every argument of the password
// flag pw (--NAME=SECRET, -pSECRET, -p=SECRET), whatever the value, and reports whether it
// found one with a value. The caller must have copied the password first. It reads the
// arguments as the flag parser does, with fs's flags: only pw's own arguments are touched,
// not an argument that another flag took as its value (-D -pdb), nor any other flag's
// value, which points into that memory too (a password that is also the user's or the
// schema's name must not rename them); nor another end's password flag, whose value may
// not have been copied yet.
func scrubArgs(fs *pflag.FlagSet, pw *pflag.Flag) bool {
	found := false
	hide := func(a string, from int) {
		if from >= len(a) {
			return
		}
		b := unsafe.Slice(unsafe.StringData(a), len(a))
		for j := from; j < len(a); j++ {
			b[j] = 'x'
		}
		found = true
	}
	args := os.Args[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return found // what follows is positional, not flags
		case strings.HasPrefix(a, "--"):
			name, _, hasValue := strings.Cut(a[2:], "=")
			fl := fs.Lookup(name)
			switch {
			case fl == nil:
			case fl == pw && hasValue:
				hide(a, len("--"+name+"="))
			case !hasValue && fl.NoOptDefVal == "":
				i++ // the next argument is this flag's value
			}
		case len(a) > 1 && a[0] == '-':
			// Shorthands, possibly several in one argument (-qv), as the parser reads them.
			// "-pSECRET" reaches the parser as "-p=SECRET" (cli.attachPasswordValues): the
			// password shorthand first in an argument takes the rest.
			for j := 1; j < len(a); j++ {
				fl := fs.ShorthandLookup(a[j : j+1])
				if fl == nil {
					break
				}
				rest := a[j+1:]
				valueAt := j + 1
				if strings.HasPrefix(rest, "=") {
					valueAt++
				} else if fl.NoOptDefVal != "" && !(fl == pw && j == 1) {
					continue // no value: the next letter is another flag
				}
				if fl == pw {
					hide(a, valueAt)
				} else if rest == "" && fl.NoOptDefVal == "" {
					i++ // "-D db": the next argument is this flag's value
				}
				break
			}
		}
	}
	return found
}

// Refusals of a login for the account's failed logins before it.
const (
	// errPasswordLockBlocked is MySQL's
	// ER_USER_ACCESS_DENIED_FOR_USER_ACCOUNT_BLOCKED_BY_PASSWORD_LOCK (8.0.19+): an account
	// created or altered with FAILED_LOGIN_ATTEMPTS N PASSWORD_LOCK_TIME D is blocked after
	// N failed logins in a row, for D days or until unlocked, and refuses even the right
	// password meanwhile. With N=1 the first wrong password already answers 3955, not 1045.
	errPasswordLockBlocked uint16 = 3955
	// errUserBlockedMariaDB is MariaDB's ER_USER_IS_BLOCKED (10.4+): max_password_errors
	// wrong passwords in a row block the account until FLUSH PRIVILEGES or an ALTER USER.
	// MySQL uses 4150 for a bulk load parser error, which no login answers.
	errUserBlockedMariaDB uint16 = 4150
)

// passwordOrigin says which password a refused login used, for messages: the server's
// words say only "using password: YES".
func passwordOrigin(o Options) string {
	switch {
	case o.Password == "":
		return "no password"
	case o.source("password") == sourcePrompt:
		return "the password typed at the prompt"
	default:
		return "the password from " + o.source("password")
	}
}

// explainAccountRefusal explains, in one line, a login refused for the account's failed
// logins before it (MySQL's 3955, MariaDB's 4150): the user's to fix (exit 2). It returns
// nil for any other error, which Explain goes on to read.
func explainAccountRefusal(err error, o Options) error {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return nil
	}
	// A wrong password of innowarm's (a stale ~/.my.cnf, a MYSQL_PWD meant for another
	// server) is the usual cause: each run counted one more failed login, and the block
	// now refuses the right one too. Fixed first, or the unblock lasts one more run.
	var why, unblock string
	switch me.Number {
	case errPasswordLockBlocked:
		why, unblock = "its FAILED_LOGIN_ATTEMPTS and PASSWORD_LOCK_TIME", "ALTER USER '"+o.User+"'@'HOST' ACCOUNT UNLOCK"
	case errUserBlockedMariaDB:
		why, unblock = "the server's max_password_errors", "ALTER USER '"+o.User+"'@'HOST' ACCOUNT UNLOCK or FLUSH PRIVILEGES"
	default:
		return nil
	}
	return exitcode.UsageError(fmt.Errorf("the account of user %q on %s is blocked after too many failed logins in a row (%s), and refuses even the right password meanwhile: check the password innowarm used (%s), as each wrong one counts, and have an administrator unblock the account with %s (the server says: %w)",
		o.User, o.Target(), why, passwordOrigin(o), unblock, me))
}

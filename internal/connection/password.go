package connection

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"unsafe"

	"golang.org/x/term"

	"github.com/innowarm/innowarm/internal/exitcode"
)

// errNoTerminal explains what to do instead of the prompt.
var errNoTerminal = errors.New("-p without a value asks for the password on the terminal, and there is none: set MYSQL_PWD, put password=... in the [client] group of ~/.my.cnf, or pass --password=SECRET")

// PromptPassword asks for the password on the controlling terminal without echo, as the
// mysql client does (it reads /dev/tty, so it works even when stdin is redirected).
func PromptPassword() (string, error) {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return "", exitcode.UsageError(errNoTerminal)
	}
	defer tty.Close()
	fd := int(tty.Fd())
	if !term.IsTerminal(fd) {
		return "", exitcode.UsageError(errNoTerminal)
	}
	fmt.Fprint(tty, "Enter password: ")
	b, err := term.ReadPassword(fd)
	fmt.Fprintln(tty)
	if err != nil {
		return "", fmt.Errorf("read password from terminal: %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
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

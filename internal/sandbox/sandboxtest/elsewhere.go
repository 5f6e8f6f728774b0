package sandboxtest

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// nobody is the OS user CLIElsewhere runs innowarm as.
const nobody = 65534

// CanRunElsewhere says whether CLIElsewhere can run here: it needs root, to run innowarm as
// another OS user.
func CanRunElsewhere() bool { return os.Geteuid() == 0 }

// CLIElsewhere runs the innowarm binary as if on another host than the shared server's: as
// the OS user nobody, through TCP to 127.0.0.1, so that it can read neither the server's
// files (datadir, tablespaces) nor its dump, as innowarm on a remote machine. It adds the
// connection flags (--no-defaults -h -P); args give the user (-u, default root) and r.Env
// the password (MYSQL_PWD). The test fails when not root (CanRunElsewhere).
func CLIElsewhere(t testing.TB, r Run, args ...string) Result {
	t.Helper()
	if !CanRunElsewhere() {
		t.Fatal("CLIElsewhere needs root, to run innowarm as the OS user nobody")
	}
	r.nobody = NobodyBinary(t)
	r.Dir = filepath.Dir(r.nobody)
	args = append(args, "--no-defaults", "-h", "127.0.0.1", "-P", strconv.Itoa(Server(t).Port))
	if !hasFlag(args, "-u") {
		args = append(args, "-u", "root")
	}
	return CLI(t, r, args...)
}

func hasFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == flag {
			return true
		}
	}
	return false
}

// NobodyBinary copies the innowarm binary, for the test, into a directory of its own that
// the OS user nobody may enter (the scratch root is not), which is also its HOME, and
// returns the copy's path.
func NobodyBinary(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "innowarm-elsewhere-")
	if err == nil {
		t.Cleanup(func() { os.RemoveAll(dir) })
		err = os.Chmod(dir, 0o755)
	}
	bin := filepath.Join(dir, "innowarm")
	if err == nil {
		err = copyFile(Binary(t), bin)
	}
	if err != nil {
		t.Fatalf("make innowarm runnable by nobody: %v", err)
	}
	return bin
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

package flavor

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
)

// Bootstrap is how a throwaway server of one family gets its data directory created.
type Bootstrap struct {
	// Path and Args run once on an empty data directory.
	Path string
	Args []string
}

// ErrNoInstaller means the family's data-directory installer was not found.
var ErrNoInstaller = errors.New("no mariadb-install-db or mysql_install_db found")

// NewBootstrap returns the command that initializes datadir for serverBinary: MariaDB ships
// mariadb-install-db (root gets an empty password with normal authentication, so tests and
// demos can log in over the socket as any OS user); MySQL 5.7+/8 initialize with the server
// binary itself.
//
// tmpdir keeps the bootstrap's temporary files apart: a server deletes every #sql* file in
// its tmpdir when it starts, so servers sharing /tmp destroy each other's.
func NewBootstrap(kind Kind, serverBinary, datadir, tmpdir string, runAsRoot bool) (Bootstrap, error) {
	prefix := filepath.Dir(filepath.Dir(serverBinary))
	if kind == MySQL {
		args := []string{"--no-defaults", "--initialize-insecure", "--datadir=" + datadir, "--basedir=" + prefix, "--tmpdir=" + tmpdir}
		if runAsRoot {
			args = append(args, "--user=root")
		}
		return Bootstrap{Path: serverBinary, Args: args}, nil
	}
	installer := findInstaller(prefix)
	if installer == "" {
		return Bootstrap{}, ErrNoInstaller
	}
	args := []string{"--no-defaults", "--datadir=" + datadir, "--auth-root-authentication-method=normal", "--skip-test-db", "--tmpdir=" + tmpdir}
	if prefix != "/usr" && prefix != "/usr/local" {
		args = append(args, "--basedir="+prefix)
	}
	if runAsRoot {
		args = append(args, "--user=root")
	}
	return Bootstrap{Path: installer, Args: args}, nil
}

func findInstaller(prefix string) string {
	names := []string{"mariadb-install-db", "mysql_install_db"}
	for _, dir := range []string{filepath.Join(prefix, "bin"), filepath.Join(prefix, "scripts")} {
		for _, n := range names {
			p := filepath.Join(dir, n)
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				return p
			}
		}
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// SandboxServerArgs are start-up flags one family needs and the other rejects.
func SandboxServerArgs(kind Kind, v Version) []string {
	if kind == MySQL {
		args := []string{"--skip-log-bin"}
		if v.AtLeast(8, 0, 0) {
			args = append(args, "--mysqlx=OFF")
		}
		return args
	}
	return nil
}

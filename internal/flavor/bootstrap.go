package flavor

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Install is where one server's files are: the host's own packages (Root empty, files under
// the binary's prefix) or a provisioned Debian root file system run through its own loader
// (Command is then the loader's argv that runs Binary).
type Install struct {
	Kind    Kind
	Version Version
	Binary  string
	// Command runs Binary: nil means Binary itself; a provisioned root's is its loader, the
	// root's library path and Binary.
	Command []string
	Root    string
}

// Argv is the command line that runs the server with args.
func (in Install) Argv(args ...string) []string {
	if len(in.Command) > 0 {
		return append(append([]string(nil), in.Command...), args...)
	}
	return append([]string{in.Binary}, args...)
}

// prefix is the installation prefix: /usr for /usr/sbin/mariadbd.
func (in Install) prefix() string { return filepath.Dir(filepath.Dir(in.Binary)) }

// shareDir is where the server's message files and bootstrap SQL are. Only a provisioned root
// needs it said: a host install finds its own.
func (in Install) shareDir() string {
	for _, name := range []string{"mariadb", "mysql"} {
		d := filepath.Join(in.prefix(), "share", name)
		if _, err := os.Stat(filepath.Join(d, "english")); err == nil {
			return d
		}
	}
	return ""
}

// Bootstrap is how a throwaway server gets its data directory created.
type Bootstrap struct {
	// Argv runs once on an empty data directory, with Stdin (if any) as its input.
	Argv  []string
	Stdin []byte
}

// ErrNoInstaller means the family's data-directory installer was not found.
var ErrNoInstaller = errors.New("no mariadb-install-db or mysql_install_db found")

// mariadbBootstrapSQL are the files mariadb-install-db pipes into mariadbd --bootstrap, in
// its order (help tables, GIS procedures, the sys schema and the test database left out).
var mariadbBootstrapSQL = []string{"mariadb_system_tables.sql", "mariadb_performance_tables.sql", "mariadb_system_tables_data.sql"}

// Bootstrap returns the command that initializes datadir. MySQL 5.7+ initializes with the
// server binary itself (root without a password). MariaDB ships mariadb-install-db (root
// gets an empty password with normal authentication, so tests and demos log in over the
// socket as any OS user); a provisioned root's installer cannot run (the core package lacks
// my_print_defaults), so there the same SQL is piped into mariadbd --bootstrap, as the
// installer would.
//
// tmpdir keeps the bootstrap's temporary files apart: a server deletes every #sql* file in
// its tmpdir when it starts, so servers sharing /tmp destroy each other's.
func (in Install) Bootstrap(datadir, tmpdir string, runAsRoot bool) (Bootstrap, error) {
	prefix := in.prefix()
	var user []string
	if runAsRoot {
		user = []string{"--user=root"}
	}
	if in.Kind == MySQL {
		args := []string{"--no-defaults", "--initialize-insecure", "--datadir=" + datadir, "--basedir=" + prefix, "--tmpdir=" + tmpdir}
		args = append(args, in.rootPaths()...)
		return Bootstrap{Argv: in.Argv(append(args, user...)...)}, nil
	}
	if in.Root != "" {
		share := in.shareDir()
		var sql bytes.Buffer
		// mariadb-install-db --auth-root-authentication-method=normal: root@localhost with an
		// empty password, not unix_socket.
		sql.WriteString("create database if not exists mysql;\nuse mysql;\nSET @auth_root_socket=NULL;\n")
		for _, f := range mariadbBootstrapSQL {
			b, err := os.ReadFile(filepath.Join(share, f))
			if err != nil {
				return Bootstrap{}, fmt.Errorf("bootstrap SQL of %s: %w", in.Binary, err)
			}
			sql.Write(b)
			sql.WriteByte('\n')
		}
		args := []string{"--no-defaults", "--bootstrap", "--datadir=" + datadir, "--tmpdir=" + tmpdir,
			"--log-warnings=0", "--enforce-storage-engine=", "--max-allowed-packet=8M", "--net-buffer-length=16K"}
		args = append(args, in.rootPaths()...)
		return Bootstrap{Argv: in.Argv(append(args, user...)...), Stdin: sql.Bytes()}, nil
	}
	installer := findInstaller(prefix)
	if installer == "" {
		return Bootstrap{}, ErrNoInstaller
	}
	args := []string{installer, "--no-defaults", "--datadir=" + datadir, "--auth-root-authentication-method=normal", "--skip-test-db", "--tmpdir=" + tmpdir}
	if prefix != "/usr" && prefix != "/usr/local" {
		args = append(args, "--basedir="+prefix)
	}
	return Bootstrap{Argv: append(args, user...)}, nil
}

// rootPaths point a provisioned root's server at its own files: the compiled-in paths name
// /usr, where the host has other versions' files or none.
func (in Install) rootPaths() []string {
	if in.Root == "" {
		return nil
	}
	out := []string{"--basedir=" + in.prefix()}
	if share := in.shareDir(); share != "" {
		out = append(out, "--lc-messages-dir="+share)
	}
	plugins := filepath.Join(in.prefix(), "lib", "mysql", "plugin")
	if st, err := os.Stat(plugins); err == nil && st.IsDir() {
		out = append(out, "--plugin-dir="+plugins)
	}
	return out
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

// SandboxServerArgs are start-up flags one family needs and the other rejects. filesDir is
// the sandbox's own directory for server-side file I/O: MySQL refuses to start when its
// compiled-in secure_file_priv directory (/var/lib/mysql-files) does not exist.
func (in Install) SandboxServerArgs(filesDir string) []string {
	args := in.rootPaths()
	if in.Kind == MySQL {
		args = append(args, "--skip-log-bin")
		if in.Version.AtLeast(8, 0, 0) {
			args = append(args, "--mysqlx=OFF")
		}
		if in.Version.AtLeast(5, 7, 6) {
			args = append(args, "--secure-file-priv="+filesDir)
		}
	}
	return args
}

package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/exitcode"
)

func TestLookupDistribution(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"mysql-9.7", "mysql-9.7"}, {"MySQL-9.7", "mysql-9.7"}, {"mysql9.7", "mysql-9.7"},
		{"mariadb_11.8", "mariadb-11.8"}, {"mariadb-10.11", "mariadb-10.11"},
	} {
		t.Run(c.in, func(t *testing.T) {
			d, err := LookupDistribution(c.in)
			if err != nil || d.Name != c.want {
				t.Errorf("got %q, %v; want %s", d.Name, err, c.want)
			}
		})
	}
	_, err := LookupDistribution("postgres-17")
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "mysql-9.7") {
		t.Errorf("unknown flavor: %v (want a usage error listing the flavors)", err)
	}
}

func TestCheckSeries(t *testing.T) {
	my, _ := LookupDistribution("mysql-9.7")
	if err := my.checkSeries("/r/usr/sbin/mysqld  Ver 9.7.4-2 for Linux on x86_64 ((Debian))"); err != nil {
		t.Errorf("9.7.4 is of series 9.7: %v", err)
	}
	err := my.checkSeries("/r/usr/sbin/mysqld  Ver 9.8.0-1 for Linux on x86_64 ((Debian))")
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "9.8.0") {
		t.Errorf("a suite that moved on to 9.8 must be refused with the version it ships: %v", err)
	}
	maria, _ := LookupDistribution("mariadb-10.11")
	if maria.checkSeries("/usr/sbin/mariadbd  Ver 10.1.48-MariaDB") == nil {
		t.Error("10.1.48 passed for series 10.11")
	}
}

func TestMirrorFromSources(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, text, want string
	}{
		{"one-line", "# comment\ndeb http://deb.debian.org/debian-security bookworm-security main\ndeb [arch=amd64] http://mirror.example/debian/ bookworm main\n", "http://mirror.example/debian"},
		{"deb822", "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm\n", "http://deb.debian.org/debian"},
		{"security only", "Types: deb\nURIs: http://deb.debian.org/debian-security\n", ""},
		{"ubuntu", "deb http://archive.ubuntu.com/ubuntu noble main\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Run(c.name, func(t *testing.T) {
				p := filepath.Join(dir, c.name)
				if err := os.WriteFile(p, []byte(c.text), 0o644); err != nil {
					t.Fatal(err)
				}
				if got := mirrorFromSources(p); got != c.want {
					t.Errorf("got %q, want %q", got, c.want)
				}
			})
		})
	}
}

func TestRootCommandUsesTheRootsLoader(t *testing.T) {
	argv, err := RootCommand("/srv/root", "usr/sbin/mysqld", "--version")
	if err != nil {
		t.Skip(err)
	}
	joined := strings.Join(argv, " ")
	if !strings.HasPrefix(argv[0], "/srv/root/") || !strings.Contains(joined, "--library-path /srv/root/lib/") || !strings.HasSuffix(joined, "/srv/root/usr/sbin/mysqld --version") {
		t.Errorf("argv = %s", joined)
	}
}

// Without root, a flavor that is not installed is refused with what to do, and nothing is
// written.
func TestProvisionNeedsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("runs as root, to drop to another user")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv not installed")
	}
	dir, err := os.MkdirTemp("", "innowarm-noroot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "innowarm")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/innowarm/innowarm/cmd/innowarm").CombinedOutput()
	if err != nil {
		t.Fatalf("build: %v: %s", err, out)
	}
	cmd := exec.CommandContext(context.Background(), "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", bin, "sandbox", "flavors", "--install", "mysql-9.7")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, ServersDirEnv + "=" + filepath.Join(dir, "servers")}
	out, err = cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != exitcode.Usage || !strings.Contains(string(out), "needs root") {
		t.Errorf("install as nobody: %v: %s (want exit 2 saying it needs root)", err, out)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "servers")); len(entries) > 1 {
		t.Errorf("left files behind: %v", entries)
	}
}

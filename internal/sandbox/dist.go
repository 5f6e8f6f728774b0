package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/flavor"
	"github.com/innowarm/innowarm/internal/logx"
)

// Distribution is a server a sandbox can run by name: a series of one family, taken from
// the Debian suite that ships it. The machine's own server is used when it is of that
// series; otherwise the suite's packages are installed with debootstrap into a private root
// file system (a newer suite needs a newer C library than the host's) and the server runs
// on the host, with host paths, through that root's own dynamic loader.
type Distribution struct {
	Name     string      `json:"name"`
	Kind     flavor.Kind `json:"flavor"`
	Series   string      `json:"series"` // the version prefix the binary must report
	Suite    string      `json:"debian_suite"`
	Packages []string    `json:"packages"`
	// Server is the server binary inside the root; Tools are client programs kept beside it
	// (mysqlslap, for the bench's comparison).
	Server string            `json:"server"`
	Tools  map[string]string `json:"tools,omitempty"`
}

// PlainRoot is a Debian suite's minimal root with packages but no server in it, provisioned,
// cached and locked the way the flavors are (the package install test installs innowarm's
// .deb into a clean copy of one with systemd).
func PlainRoot(name, suite string, packages ...string) Distribution {
	return Distribution{Name: name, Suite: suite, Packages: packages}
}

// Distributions are the flavors `--flavor` accepts. The first is the default of tests and
// demos on Debian 12, whose own MariaDB it is.
var Distributions = []Distribution{
	{Name: "mariadb-10.11", Kind: flavor.MariaDB, Series: "10.11", Suite: "bookworm",
		Packages: []string{"mariadb-server-core", "mariadb-client-core"}, Server: "usr/sbin/mariadbd"},
	{Name: "mariadb-11.8", Kind: flavor.MariaDB, Series: "11.8", Suite: "trixie",
		Packages: []string{"mariadb-server-core"}, Server: "usr/sbin/mariadbd"},
	{Name: "mysql-9.7", Kind: flavor.MySQL, Series: "9.7", Suite: "sid",
		Packages: []string{"mysql-server-core", "mysql-client"}, Server: "usr/sbin/mysqld",
		Tools: map[string]string{"mysqlslap": "usr/bin/mysqlslap"}},
}

// FlavorEnv names the flavor sandboxes use when none is given: tests, make demo and make
// bench set it (make test FLAVOR=mysql-9.7).
const FlavorEnv = "INNOWARM_FLAVOR"

// ServersDirEnv overrides where provisioned servers are kept.
const ServersDirEnv = "INNOWARM_SERVERS_DIR"

// FlavorNames lists the names --flavor accepts.
func FlavorNames() []string {
	out := make([]string, len(Distributions))
	for i, d := range Distributions {
		out[i] = d.Name
	}
	return out
}

// LookupDistribution finds a flavor by name ("mysql-9.7"; "mysql9.7" and "MySQL-9.7" too).
func LookupDistribution(name string) (Distribution, error) {
	norm := func(s string) string {
		return strings.NewReplacer("-", "", "_", "", " ", "").Replace(strings.ToLower(s))
	}
	for _, d := range Distributions {
		if norm(d.Name) == norm(name) {
			return d, nil
		}
	}
	return Distribution{}, exitcode.UsageError(fmt.Errorf("unknown flavor %q: choose one of %s", name, strings.Join(FlavorNames(), ", ")))
}

// ServersDir is where provisioned root file systems live: ~/.cache/innowarm/servers.
func ServersDir() string {
	if d := os.Getenv(ServersDirEnv); d != "" {
		return d
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "innowarm", "servers")
}

// Root is a provisioned distribution on this machine.
type Root struct {
	Distribution
	Dir         string    `json:"dir"`
	VersionLine string    `json:"version"`
	CreatedAt   time.Time `json:"created_at"`
	Seconds     float64   `json:"provision_seconds"`
}

const rootInfoName = "innowarm-root.json"

// loaderPaths are the dynamic loader and the library directories of a Debian root for this
// machine's architecture.
func loaderPaths(root string) (loader string, libPath string, err error) {
	var triplet, ld string
	switch runtime.GOARCH {
	case "amd64":
		triplet, ld = "x86_64-linux-gnu", "lib64/ld-linux-x86-64.so.2"
	case "arm64":
		triplet, ld = "aarch64-linux-gnu", "lib/ld-linux-aarch64.so.1"
	default:
		return "", "", fmt.Errorf("provisioned servers are not supported on %s", runtime.GOARCH)
	}
	return filepath.Join(root, ld), filepath.Join(root, "lib", triplet) + ":" + filepath.Join(root, "usr", "lib", triplet), nil
}

// RootCommand is the argv that runs program (a path inside root) on the host through the
// root's loader, so that it finds the root's C library and not the host's.
func RootCommand(root, program string, args ...string) ([]string, error) {
	loader, libPath, err := loaderPaths(root)
	if err != nil {
		return nil, err
	}
	return append([]string{loader, "--library-path", libPath, filepath.Join(root, program)}, args...), nil
}

// Installed returns the distribution's root if it was provisioned here.
func (d Distribution) Installed() (Root, bool) {
	dir := filepath.Join(ServersDir(), d.Name)
	b, err := os.ReadFile(filepath.Join(dir, rootInfoName))
	if err != nil {
		return Root{}, false
	}
	var r Root
	if json.Unmarshal(b, &r) != nil || r.Name != d.Name {
		return Root{}, false
	}
	r.Distribution, r.Dir = d, dir
	if _, err := os.Stat(filepath.Join(dir, d.Server)); err != nil {
		return Root{}, false
	}
	return r, true
}

// Tool is the argv prefix that runs one of the distribution's client programs, or nil.
func (r Root) Tool(name string) []string {
	rel, ok := r.Tools[name]
	if !ok {
		return nil
	}
	argv, err := RootCommand(r.Dir, rel)
	if err != nil {
		return nil
	}
	return argv
}

// ProvisionReport says what Provision did.
type ProvisionReport struct {
	Root   Root   `json:"root"`
	Action string `json:"action"` // cached, provisioned
}

// Provision installs the distribution into ServersDir unless it is there already. It needs
// root (debootstrap) and the Debian mirror; when either is missing it says so (exit 2).
// Concurrent callers (test binaries started in parallel) wait for one another.
func Provision(ctx context.Context, d Distribution) (ProvisionReport, error) {
	if r, ok := d.Installed(); ok {
		return ProvisionReport{Root: r, Action: "cached"}, nil
	}
	if os.Geteuid() != 0 {
		return ProvisionReport{}, exitcode.UsageError(fmt.Errorf("flavor %s is not installed in %s, and installing it (debootstrap of Debian %s's %s) needs root: run the same command once as root, or set %s to a directory where it was installed",
			d.Name, ServersDir(), d.Suite, strings.Join(d.Packages, ", "), ServersDirEnv))
	}
	base := ServersDir()
	if err := os.MkdirAll(base, 0o755); err != nil {
		return ProvisionReport{}, exitcode.UsageError(fmt.Errorf("flavor %s: cannot create %s: %w", d.Name, base, err))
	}
	unlock, err := lockFile(ctx, filepath.Join(base, ".provision.lock"))
	if err != nil {
		return ProvisionReport{}, err
	}
	defer unlock()
	if r, ok := d.Installed(); ok {
		return ProvisionReport{Root: r, Action: "cached"}, nil
	}
	debootstrap, err := findOrInstallDebootstrap(ctx)
	if err != nil {
		return ProvisionReport{}, err
	}
	mirror := DebianMirror()
	final := filepath.Join(base, d.Name)
	tmp, err := os.MkdirTemp(base, d.Name+".partial-")
	if err != nil {
		return ProvisionReport{}, exitcode.UsageError(fmt.Errorf("flavor %s: %w", d.Name, err))
	}
	defer os.RemoveAll(tmp)
	logPath := filepath.Join(base, d.Name+".provision.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return ProvisionReport{}, exitcode.UsageError(fmt.Errorf("flavor %s: %w", d.Name, err))
	}
	defer logFile.Close()
	logx.Infof("installing %s: debootstrap of Debian %s (%s) from %s into %s (once: about a minute on an idle machine, 3 to 4 minutes on a loaded one)", d.Name, d.Suite, strings.Join(append([]string{"minbase"}, d.Packages...), ", "), mirror, final)
	t0 := time.Now()
	args := []string{"--variant=minbase"}
	if len(d.Packages) > 0 {
		args = append(args, "--include="+strings.Join(d.Packages, ","))
	}
	cmd := exec.CommandContext(ctx, debootstrap, append(args, d.Suite, tmp, mirror)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ProvisionReport{}, ctx.Err()
		}
		return ProvisionReport{}, exitcode.UsageError(fmt.Errorf("flavor %s: debootstrap of Debian %s from %s failed (%w): %s (full log: %s; is the mirror reachable? set INNOWARM_DEBIAN_MIRROR to another)",
			d.Name, d.Suite, mirror, err, lastErrorLine(logPath), logPath))
	}
	// The root's apt caches and documentation are of no use to a sandbox.
	for _, junk := range []string{"var/cache/apt/archives", "usr/share/doc", "usr/share/man", "usr/share/locale"} {
		_ = os.RemoveAll(filepath.Join(tmp, junk))
	}
	var line string
	if d.Server != "" {
		if line, err = binaryVersion(ctx, tmp, d.Server); err != nil {
			return ProvisionReport{}, fmt.Errorf("flavor %s: the installed server does not run on this machine: %w (log: %s)", d.Name, err, logPath)
		}
		if err := d.checkSeries(line); err != nil {
			return ProvisionReport{}, err
		}
		line = strings.ReplaceAll(line, tmp, final)
	}
	r := Root{Distribution: d, Dir: final, VersionLine: line, CreatedAt: time.Now().UTC(), Seconds: time.Since(t0).Seconds()}
	b, _ := json.MarshalIndent(r, "", "  ")
	if err := os.WriteFile(filepath.Join(tmp, rootInfoName), b, 0o644); err != nil {
		return ProvisionReport{}, err
	}
	_ = os.RemoveAll(final)
	if err := os.Rename(tmp, final); err != nil {
		return ProvisionReport{}, fmt.Errorf("flavor %s: %w", d.Name, err)
	}
	logx.Infof("installed %s (%s) in %.0f s", d.Name, line, r.Seconds)
	return ProvisionReport{Root: r, Action: "provisioned"}, nil
}

// checkSeries refuses a binary of another series than the flavor's name promises: a suite
// that moved on (sid to MySQL 9.8) must not pass for 9.7 unnoticed.
func (d Distribution) checkSeries(versionLine string) error {
	m := verRe.FindStringSubmatch(versionLine)
	if m == nil {
		return fmt.Errorf("flavor %s: cannot read the server's version from %q", d.Name, versionLine)
	}
	if !strings.HasPrefix(m[1], d.Series+".") {
		return exitcode.UsageError(fmt.Errorf("flavor %s: Debian %s now ships %s, not %s (remove %s and choose the flavor of that series)",
			d.Name, d.Suite, m[1], d.Series, filepath.Join(ServersDir(), d.Name)))
	}
	return nil
}

func binaryVersion(ctx context.Context, root, program string) (string, error) {
	argv, err := RootCommand(root, program, "--no-defaults", "--version")
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0]), nil
}

func findOrInstallDebootstrap(ctx context.Context) (string, error) {
	for _, p := range []string{"debootstrap", "/usr/sbin/debootstrap"} {
		if lp, err := exec.LookPath(p); err == nil {
			return lp, nil
		}
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return "", exitcode.UsageError(errors.New("installing a server flavor needs debootstrap, and this machine has neither it nor apt-get: install debootstrap"))
	}
	logx.Infof("installing debootstrap with apt-get")
	cmd := exec.CommandContext(ctx, "apt-get", "install", "-y", "-qq", "debootstrap")
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", exitcode.UsageError(fmt.Errorf("apt-get install debootstrap failed (%w): %s", err, lastLine(string(out))))
	}
	return exec.LookPath("debootstrap")
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// DebianMirror is INNOWARM_DEBIAN_MIRROR, else the Debian mirror this machine's apt sources
// name, else deb.debian.org. An Ubuntu machine's archive has no Debian suites.
func DebianMirror() string {
	if m := os.Getenv("INNOWARM_DEBIAN_MIRROR"); m != "" {
		return m
	}
	var files []string
	files = append(files, "/etc/apt/sources.list")
	more, _ := filepath.Glob("/etc/apt/sources.list.d/*")
	sort.Strings(more)
	files = append(files, more...)
	for _, f := range files {
		if m := mirrorFromSources(f); m != "" {
			return m
		}
	}
	return "http://deb.debian.org/debian"
}

// mirrorFromSources reads one apt sources file, one-line ("deb URL suite ...") or deb822
// ("URIs: URL"), and returns the first Debian archive (not the security archive) it names.
func mirrorFromSources(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		var urls []string
		switch {
		case strings.HasPrefix(line, "deb "):
			fields := strings.Fields(line)
			for _, fld := range fields[1:] {
				if strings.Contains(fld, "://") {
					urls = append(urls, fld)
					break
				}
			}
		case strings.HasPrefix(strings.ToLower(line), "uris:"):
			urls = strings.Fields(line[len("uris:"):])
		}
		for _, u := range urls {
			if strings.Contains(u, "/debian") && !strings.Contains(u, "security") && !strings.Contains(u, "ubuntu") {
				return strings.TrimRight(u, "/")
			}
		}
	}
	return ""
}

// lockFile takes an exclusive flock on path, waiting while ctx allows.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, exitcode.UsageError(fmt.Errorf("lock %s: %w", path, err))
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// OnHost reports whether the machine's own server is of this flavor.
func (d Distribution) OnHost(ctx context.Context) bool {
	sys, err := FindServer(ctx, "")
	return err == nil && sys.Kind == d.Kind && d.checkSeries(sys.Line) == nil
}

// Available returns the flavor's server binary when it is on this machine, installing
// nothing.
func (d Distribution) Available(ctx context.Context) (Binary, bool) {
	if sys, err := FindServer(ctx, ""); err == nil && sys.Kind == d.Kind && d.checkSeries(sys.Line) == nil {
		sys.Flavor = d.Name
		return sys, true
	}
	if r, ok := d.Installed(); ok {
		if b, err := r.Binary(); err == nil {
			return b, true
		}
	}
	return Binary{}, false
}

// FindFlavor returns the server binary of a named flavor: the machine's own server when it is
// of that series, else the provisioned root's, provisioning it first.
func FindFlavor(ctx context.Context, name string) (Binary, error) {
	d, err := LookupDistribution(name)
	if err != nil {
		return Binary{}, err
	}
	if b, ok := d.Available(ctx); ok {
		return b, nil
	}
	rep, err := Provision(ctx, d)
	if err != nil {
		return Binary{}, err
	}
	return rep.Root.Binary()
}

// Binary describes the root's server for a sandbox.
func (r Root) Binary() (Binary, error) {
	line := r.VersionLine
	m := verRe.FindStringSubmatch(line)
	if m == nil {
		return Binary{}, fmt.Errorf("flavor %s: cannot read the server's version from %q", r.Name, line)
	}
	kind, ver, err := flavor.ParseVersion(m[1], line)
	if err != nil {
		return Binary{}, err
	}
	return Binary{Path: filepath.Join(r.Dir, r.Server), Root: r.Dir, Kind: kind, Version: ver, Line: line, Flavor: r.Name}, nil
}

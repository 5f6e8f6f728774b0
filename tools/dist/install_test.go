//go:build distcheck

// The packages make dist built, checked the way a DBA meets them: `make dist-check` (as root:
// it debootstraps a Debian root once, into ~/.cache/innowarm/servers, and mounts clean
// copies of it). Not part of `go test ./...`: it needs make dist's output.
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/innowarm/innowarm/internal/cli"
	"github.com/innowarm/innowarm/internal/sandbox"
)

// distDir is make dist's output (release/), relative to this package.
func distDir() string {
	if d := os.Getenv("INNOWARM_RELEASE"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "release")
}

// onePackage finds the one file of make dist's output matching pattern.
func onePackage(t *testing.T, pattern string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(distDir(), pattern))
	if err != nil || len(m) != 1 {
		t.Fatalf("%s in %s: found %v (%v): run make dist first", pattern, distDir(), m, err)
	}
	return m[0]
}

// cleanRoot is a fresh Debian 12 root (minbase and systemd, as a server host has it): the
// cached one under an overlay, whose writes go to a temporary directory, or a copy where
// overlays cannot be mounted.
func cleanRoot(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the install test needs root (debootstrap, chroot, mount): run make dist-check as root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	t0 := time.Now()
	rep, err := sandbox.Provision(ctx, sandbox.PlainRoot("debian-12-systemd", "bookworm", "systemd"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Debian 12 root %s: %s in %.1f s", rep.Root.Dir, rep.Action, time.Since(t0).Seconds())
	tmp := t.TempDir()
	root := filepath.Join(tmp, "root")
	for _, d := range []string{root, filepath.Join(tmp, "upper"), filepath.Join(tmp, "work")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", rep.Root.Dir, filepath.Join(tmp, "upper"), filepath.Join(tmp, "work"))
	if out, err := exec.Command("mount", "-t", "overlay", "overlay", "-o", opts, root).CombinedOutput(); err == nil {
		t.Cleanup(func() { _ = exec.Command("umount", "-l", root).Run() })
	} else {
		t.Logf("no overlay (%v: %s): copying the root", err, bytes.TrimSpace(out))
		sh(t, "", "cp", "-a", rep.Root.Dir+"/.", root)
	}
	return root
}

// sh runs a command (inside root with chroot when root is set) and returns its stdout; a
// failure ends the test with its output.
func sh(t *testing.T, root string, argv ...string) string {
	t.Helper()
	if root != "" {
		argv = append([]string{"chroot", root}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive", "LC_ALL=C")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstdout: %s\nstderr: %s", strings.Join(argv, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// commandPaths lists every command a man page is written for (as tools/dist docs writes them).
func commandPaths() []string {
	root := cli.NewRoot()
	root.InitDefaultCompletionCmd()
	var out []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c != root {
			return
		}
		out = append(out, strings.ReplaceAll(c.CommandPath(), " ", "-"))
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	sort.Strings(out)
	return out
}

// The .deb installs with dpkg into a clean Debian 12 root, and what it installs works there:
// the binary runs and says the package's version (`version`, `--version`, `version --json`),
// it is static, every command has its man page, the completions load and complete, the units
// pass systemd-analyze verify with the drop-ins linked the way the README says, and removal
// takes everything but the edited configuration, which purge takes.
func TestDebInstallsOnCleanDebian(t *testing.T) {
	t0 := time.Now()
	deb := onePackage(t, "innowarm_*_"+runtime.GOARCH+".deb")
	root := cleanRoot(t)
	tRoot := time.Since(t0)
	raw, err := os.ReadFile(deb)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "tmp", "innowarm.deb"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	sh(t, root, "dpkg", "-i", "/tmp/innowarm.deb")
	installed := sh(t, root, "dpkg-query", "-W", "-f", "${Version}", "innowarm")
	if !strings.Contains(filepath.Base(deb), "_"+installed+"_") {
		t.Errorf("dpkg says version %q; the package file is %s", installed, filepath.Base(deb))
	}

	// The binary: runs in the root, says its version the two ways, the version is the
	// package's, and it needs no C library.
	line := sh(t, root, "/usr/bin/innowarm", "version")
	if long := sh(t, root, "/usr/bin/innowarm", "--version"); long != line || !strings.HasPrefix(line, "innowarm ") {
		t.Errorf("innowarm version = %q, --version = %q; want the same innowarm line", line, long)
	}
	var v struct{ Version, Commit string }
	if err := json.Unmarshal([]byte(sh(t, root, "/usr/bin/innowarm", "version", "--json")), &v); err != nil {
		t.Fatal(err)
	}
	commits := strings.TrimSpace(sh(t, "", "git", "rev-list", "--count", "HEAD"))
	var n int
	fmt.Sscan(commits, &n)
	if pv, err := PackageVersion(v.Version, n); err != nil || pv+"-1" != installed {
		t.Errorf("the binary says version %q (package version %q, %v); dpkg installed %q", v.Version, pv, err, installed)
	}
	if v.Commit == "" {
		t.Errorf("the binary names no commit: %+v", v)
	}
	checkStatic(t, filepath.Join(root, "usr", "bin", "innowarm"))
	t.Logf("installed %s: %s", installed, strings.TrimSpace(line))

	// Man pages: one per command, readable.
	for _, name := range commandPaths() {
		page := filepath.Join(root, "usr", "share", "man", "man1", name+".1.gz")
		text := gunzip(t, page)
		if !strings.Contains(text, ".TH \""+strings.ToUpper(name)+"\" \"1\"") {
			t.Errorf("%s: not the man page of %s: %.80q", page, name, text)
		}
	}
	// Completions: installed where each shell looks, and the binary answers them.
	for path, want := range map[string]string{
		"usr/share/bash-completion/completions/innowarm":    "__start_innowarm",
		"usr/share/zsh/vendor-completions/_innowarm":        "#compdef innowarm",
		"usr/share/fish/vendor_completions.d/innowarm.fish": "complete -c innowarm",
	} {
		b, err := os.ReadFile(filepath.Join(root, path))
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("/%s: %v; want a completion script with %q", path, err, want)
		}
	}
	sh(t, root, "bash", "-c", "source /usr/share/bash-completion/completions/innowarm && declare -F __start_innowarm")
	if got := sh(t, root, "/usr/bin/innowarm", "__complete", "sna"); !strings.HasPrefix(got, "snapshot") {
		t.Errorf("innowarm __complete sna = %q; want snapshot", got)
	}

	verifyUnits(t, root)
	checkCommandLines(t, root)

	// Removal leaves the configuration (a conffile), purge takes it; nothing else stays.
	sh(t, root, "dpkg", "-r", "innowarm")
	for _, gone := range []string{"usr/bin/innowarm", "usr/lib/systemd/system/innowarm-snapshot@.service", "usr/share/man/man1/innowarm.1.gz", "usr/share/innowarm"} {
		if _, err := os.Stat(filepath.Join(root, gone)); err == nil {
			t.Errorf("/%s is still there after dpkg -r", gone)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "etc", "innowarm", "innowarm.cnf")); err != nil {
		t.Errorf("dpkg -r must keep the configuration: %v", err)
	}
	sh(t, root, "dpkg", "-P", "innowarm")
	if _, err := os.Stat(filepath.Join(root, "etc", "innowarm", "innowarm.cnf")); err == nil {
		t.Error("dpkg -P left /etc/innowarm/innowarm.cnf")
	}
	t.Logf("clean root in %.1f s; install, checks and removal in %.1f s", tRoot.Seconds(), (time.Since(t0) - tRoot).Seconds())
}

// verifyUnits runs the host's systemd-analyze verify on every unit the package installed
// (templates as instances for the server's unit, the agent's too when there is one), with
// stand-ins for the servers' units and the warm drop-ins linked as the README says; checks
// that the drop-ins are loaded and that enabling the sidecar hooks it to the server's start.
func verifyUnits(t *testing.T, root string) {
	t.Helper()
	sys := filepath.Join(root, "etc", "systemd", "system")
	servers := []string{"mariadb", "mysql", "mysqld"}
	for _, s := range servers {
		stub := "[Unit]\nDescription=stand-in for the database server's unit (innowarm's install test)\n\n[Service]\nExecStart=/bin/sleep infinity\n"
		if err := os.WriteFile(filepath.Join(sys, s+".service"), []byte(stub), 0o644); err != nil {
			t.Fatal(err)
		}
		// The README's opt-in, verbatim.
		sh(t, root, "mkdir", "-p", "/etc/systemd/system/"+s+".service.d")
		sh(t, root, "ln", "-s", "/usr/share/innowarm/systemd/"+s+".service.d/innowarm-warm.conf", "/etc/systemd/system/"+s+".service.d/")
	}
	files, err := filepath.Glob(filepath.Join(root, "usr", "lib", "systemd", "system", "innowarm*"))
	if err != nil || len(files) < 2 {
		t.Fatalf("units installed: %v (%v); want at least the sidecar and the warm", files, err)
	}
	var units []string
	for _, f := range files {
		name := filepath.Base(f)
		if strings.HasSuffix(name, "@.service") {
			for _, s := range servers {
				units = append(units, strings.TrimSuffix(name, "@.service")+"@"+s+".service")
			}
			continue
		}
		units = append(units, name)
	}
	for _, s := range servers {
		units = append(units, s+".service")
	}
	// systemd-analyze looks the units' man: pages up with man, which reads MANPATH: the
	// root's pages, so a Documentation= line that names no installed page fails.
	args := append([]string{"verify", "--root=" + root, "--man=yes", "--generators=no"}, units...)
	cmd := exec.Command("systemd-analyze", args...)
	cmd.Env = append(os.Environ(), "MANPATH="+filepath.Join(root, "usr", "share", "man"), "SYSTEMD_LOG_COLOR=0")
	out, err := cmd.CombinedOutput()
	text := strings.TrimSpace(string(out))
	if err != nil || text != "" {
		t.Errorf("systemd-analyze %s: %v\n%s", strings.Join(args, " "), err, text)
	} else {
		t.Logf("systemd-analyze verify: %d units clean: %s", len(units), strings.Join(units, " "))
	}

	// systemd's own view of the drop-ins, from the files where it looks (systemctl cat needs
	// a running manager).
	delta := sh(t, root, "systemd-delta", "--no-pager", "--type=extended")
	for _, s := range servers {
		want := fmt.Sprintf("/etc/systemd/system/%s.service -> /etc/systemd/system/%s.service.d/innowarm-warm.conf", s, s)
		if !strings.Contains(delta, want) {
			t.Errorf("systemd does not extend %s.service with the warm drop-in; systemd-delta says:\n%s", s, delta)
		}
	}
	sh(t, "", "systemctl", "--root="+root, "enable", "innowarm-snapshot@mariadb.service")
	if _, err := os.Lstat(filepath.Join(sys, "mariadb.service.wants", "innowarm-snapshot@mariadb.service")); err != nil {
		t.Errorf("systemctl enable innowarm-snapshot@mariadb.service did not hook it to mariadb.service: %v", err)
	}
}

// checkStatic fails unless the ELF file asks for no program interpreter and no shared
// library: CGO was off.
func checkStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has a program interpreter: not static", path)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v: not static", path, libs)
	}
}

func gunzip(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Error(err)
		return ""
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return ""
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Errorf("%s: %v", path, err)
	}
	return string(b)
}

// debFiles lists the regular files and symlinks a .deb installs, without the leading ".".
func debFiles(t *testing.T, deb string) []string {
	t.Helper()
	var out []string
	list := sh(t, "", "sh", "-c", "dpkg-deb --fsys-tarfile \"$1\" | tar -t", "-", deb)
	for _, f := range strings.Split(strings.TrimSpace(list), "\n") {
		if f = strings.TrimPrefix(f, "."); f != "" && !strings.HasSuffix(f, "/") {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

// ensureRPM installs the rpm tool with apt-get where it is missing (as the sandbox installs
// debootstrap).
func ensureRPM(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("rpm"); err == nil {
		return
	}
	t.Log("installing the rpm tool with apt-get")
	sh(t, "", "apt-get", "install", "-y", "-qq", "rpm")
}

// The .rpm holds what the .deb holds (zsh's completion where Fedora's zsh looks), says the
// same version, passes rpm's own digest check, and installs with rpm into a clean root where
// the binary runs.
func TestRPMMatchesDebAndInstalls(t *testing.T) {
	rpmArch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
	rpmFile := onePackage(t, "innowarm-*."+rpmArch+".rpm")
	deb := onePackage(t, "innowarm_*_"+runtime.GOARCH+".deb")
	ensureRPM(t)
	sh(t, "", "rpm", "--checksig", "--nosignature", rpmFile)
	ver := sh(t, "", "rpm", "-qp", "--queryformat", "%{VERSION}-%{RELEASE} %{ARCH}", rpmFile)
	debVer := sh(t, "", "dpkg-deb", "--showformat", "${Version}", "--show", deb)
	if ver != debVer+" "+rpmArch {
		t.Errorf("rpm says %q; the .deb is %q", ver, debVer)
	}
	// rpm lists the files it installs, as dpkg-deb does.
	var rpmList []string
	for _, f := range strings.Split(strings.TrimSpace(sh(t, "", "rpm", "-qp", "--list", rpmFile)), "\n") {
		rpmList = append(rpmList, strings.Replace(f, "/usr/share/zsh/site-functions/", "/usr/share/zsh/vendor-completions/", 1))
	}
	rpmFiles := rpmList
	sort.Strings(rpmFiles)
	if got, want := strings.Join(rpmFiles, "\n"), strings.Join(debFiles(t, deb), "\n"); got != want {
		t.Errorf("the .rpm's files differ from the .deb's:\nrpm:\n%s\ndeb:\n%s", got, want)
	}
	if scripts := sh(t, "", "rpm", "-qp", "--scripts", rpmFile); !strings.Contains(scripts, "daemon-reload") {
		t.Errorf("the .rpm lacks the scripts that reload systemd:\n%s", scripts)
	}

	root := cleanRoot(t)
	abs, err := filepath.Abs(rpmFile)
	if err != nil {
		t.Fatal(err)
	}
	sh(t, "", "rpm", "--root="+root, "--initdb")
	// A Debian root has no rpm database of /bin/sh and friends: the dependencies are dpkg's.
	sh(t, "", "rpm", "--root="+root, "--install", "--nodeps", abs)
	if line := sh(t, root, "/usr/bin/innowarm", "--version"); !strings.HasPrefix(line, "innowarm ") {
		t.Errorf("innowarm --version from the .rpm = %q", line)
	}
	if _, err := os.Stat(filepath.Join(root, "usr", "share", "zsh", "site-functions", "_innowarm")); err != nil {
		t.Errorf("the .rpm's zsh completion: %v", err)
	}
}

// The tarballs match SHA256SUMS, each holds the static binary of its architecture with its
// man pages, completions, units and container recipe, and the container recipe finds the
// binary it copies in make dist's output for every architecture built.
func TestTarballsChecksumsAndContainerRecipe(t *testing.T) {
	sums := sh(t, "", "sh", "-c", "cd \"$1\" && sha256sum --check --strict SHA256SUMS", "-", distDir())
	tarballs, _ := filepath.Glob(filepath.Join(distDir(), "innowarm_*_linux_*.tar.gz"))
	if len(tarballs) == 0 {
		t.Fatal("no tarballs: run make dist first")
	}
	for _, tb := range tarballs {
		if !strings.Contains(sums, filepath.Base(tb)+": OK") {
			t.Errorf("%s is not in SHA256SUMS: %s", tb, sums)
		}
	}
	for _, p := range []string{"*.deb", "*.rpm"} {
		files, _ := filepath.Glob(filepath.Join(distDir(), p))
		for _, f := range files {
			if !strings.Contains(sums, filepath.Base(f)+": OK") {
				t.Errorf("%s is not in SHA256SUMS", f)
			}
		}
	}
	recipe, err := os.ReadFile(filepath.Join(distDir(), "Containerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(recipe), "COPY linux_${TARGETARCH}/innowarm /usr/bin/innowarm") {
		t.Fatalf("the Containerfile no longer copies linux_${TARGETARCH}/innowarm: update this test with it")
	}
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	for _, tb := range tarballs {
		arch := strings.TrimSuffix(tb[strings.LastIndex(tb, "_")+1:], ".tar.gz")
		dir := t.TempDir()
		sh(t, "", "tar", "-xzf", tb, "-C", dir)
		top := filepath.Join(dir, strings.TrimSuffix(filepath.Base(tb), ".tar.gz"))
		for _, f := range []string{"innowarm", "README.md", "innowarm.cnf", "Containerfile", "man/man1/innowarm.1.gz",
			"completions/innowarm.bash", "completions/_innowarm", "completions/innowarm.fish",
			"systemd/innowarm-snapshot@.service", "systemd/innowarm-warm@.service", "systemd/mariadb.service.d/innowarm-warm.conf"} {
			if _, err := os.Stat(filepath.Join(top, f)); err != nil {
				t.Errorf("%s: %v", tb, err)
			}
		}
		for _, bin := range []string{filepath.Join(top, "innowarm"), filepath.Join(distDir(), "linux_"+arch, "innowarm")} {
			f, err := elf.Open(bin)
			if err != nil {
				t.Errorf("%s: %v", bin, err)
				continue
			}
			if f.Machine != machine[arch] {
				t.Errorf("%s is for %s, not %s", bin, f.Machine, arch)
			}
			f.Close()
			checkStatic(t, bin)
		}
	}
}

// checkCommandLines runs every innowarm command line of the installed units (ExecStart=,
// ExecStartPost=...) inside the root with --help added: the command and every flag it
// names must exist in the packaged binary, or the unit would fail with exit 2 at its start.
// %i is an instance name; $VARIABLES (an EnvironmentFile's options) are left out.
func checkCommandLines(t *testing.T, root string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, "usr", "lib", "systemd", "system", "innowarm*"))
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			key, val, ok := strings.Cut(strings.TrimSpace(line), "=")
			if !ok || !strings.HasPrefix(key, "Exec") {
				continue
			}
			val = strings.TrimLeft(val, "-@:+!")
			fields := strings.Fields(strings.ReplaceAll(val, "%i", "mariadb"))
			if len(fields) == 0 || fields[0] != "/usr/bin/innowarm" {
				continue
			}
			args := []string{}
			for _, a := range fields {
				if !strings.HasPrefix(a, "$") {
					args = append(args, a)
				}
			}
			cmd := exec.Command("chroot", append([]string{root}, append(args, "--help")...)...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s: %s: %v\n%s", filepath.Base(f), strings.Join(args, " "), err, out)
			}
			checked++
		}
	}
	if checked < 2 {
		t.Errorf("checked %d innowarm command lines in the units; want the sidecar's and the warm's at least", checked)
	}
}

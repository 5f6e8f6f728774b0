package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/flavor"
)

// Binary is a server executable found on this machine.
type Binary struct {
	Path    string         `json:"path"`
	Kind    flavor.Kind    `json:"flavor"`
	Version flavor.Version `json:"-"`
	Line    string         `json:"version"`
	// Root is the provisioned root file system the binary runs from ("" for the host's own
	// packages); Flavor is the distribution's name when one was asked for ("mysql-9.7").
	Root   string `json:"root,omitempty"`
	Flavor string `json:"distribution,omitempty"`
}

// Install describes the binary for the flavor package's bootstrap and start-up arguments.
func (b Binary) Install() (flavor.Install, error) {
	in := flavor.Install{Kind: b.Kind, Version: b.Version, Binary: b.Path, Root: b.Root}
	if b.Root != "" {
		rel, err := filepath.Rel(b.Root, b.Path)
		if err != nil {
			return in, err
		}
		if in.Command, err = RootCommand(b.Root, rel); err != nil {
			return in, err
		}
	}
	return in, nil
}

// serverNames are tried in this order: MariaDB's own name first, since Debian's mysqld is a
// link to mariadbd anyway.
var serverNames = []string{"mariadbd", "mysqld"}

// SbinDirs are searched after PATH, because sbin is often not on a normal user's PATH.
var SbinDirs = []string{"/usr/sbin", "/usr/local/sbin", "/usr/local/mysql/bin", "/usr/local/mariadb/bin", "/opt/mysql/bin", "/opt/mariadb/bin", "/usr/libexec"}

// InstallHint is what to install when no server binary exists.
const InstallHint = "install one with 'sudo apt-get install -y mariadb-server' (Debian/Ubuntu) or 'sudo dnf install mariadb-server' (Fedora/RHEL), or pass --server-binary PATH"

// ErrServerNotFound means no mariadbd or mysqld was found.
var ErrServerNotFound = errors.New("no MariaDB or MySQL server binary found")

// FindServer locates the server binary: explicit (a path or a name on PATH), else mariadbd
// or mysqld on PATH, else in the usual sbin directories.
func FindServer(ctx context.Context, explicit string) (Binary, error) {
	var candidates []string
	if explicit != "" {
		p := explicit
		if !strings.Contains(explicit, "/") {
			if lp, err := exec.LookPath(explicit); err == nil {
				p = lp
			}
		}
		if st, err := os.Stat(p); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return Binary{}, exitcode.UsageError(fmt.Errorf("server binary %s is not an executable file: %s", explicit, InstallHint))
		}
		candidates = []string{p}
	} else {
		for _, n := range serverNames {
			if p, err := exec.LookPath(n); err == nil {
				candidates = append(candidates, p)
			}
		}
		for _, d := range SbinDirs {
			for _, n := range serverNames {
				p := filepath.Join(d, n)
				if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
					candidates = append(candidates, p)
				}
			}
		}
	}
	if len(candidates) == 0 {
		return Binary{}, exitcode.UsageError(fmt.Errorf("%w (looked for %s on PATH and in %s): %s",
			ErrServerNotFound, strings.Join(serverNames, ", "), strings.Join(SbinDirs, ", "), InstallHint))
	}
	var lastErr error
	for _, p := range candidates {
		b, err := inspectBinary(ctx, p)
		if err == nil {
			return b, nil
		}
		lastErr = err
	}
	return Binary{}, exitcode.UsageError(fmt.Errorf("server binary unusable: %w: %s", lastErr, InstallHint))
}

var verRe = regexp.MustCompile(`Ver\s+(\S+)`)

func inspectBinary(ctx context.Context, path string) (Binary, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--no-defaults", "--version").CombinedOutput()
	if err != nil {
		return Binary{}, fmt.Errorf("%s --version: %w: %s", path, err, strings.TrimSpace(string(out)))
	}
	line := strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
	m := verRe.FindStringSubmatch(line)
	if m == nil {
		return Binary{}, fmt.Errorf("%s --version printed %q", path, line)
	}
	kind, ver, err := flavor.ParseVersion(m[1], line)
	if err != nil {
		return Binary{}, err
	}
	abs, _ := filepath.EvalSymlinks(path)
	if abs == "" {
		abs = path
	}
	return Binary{Path: abs, Kind: kind, Version: ver, Line: line}, nil
}

// Command dist makes what scripts/dist.sh (make dist) packages besides the binary and dist/:
//
//	go run ./tools/dist docs DIR                 man pages (DIR/man/man1/*.1.gz) and shell completions
//	                                             (DIR/completions/) from innowarm's command tree
//	go run ./tools/dist pkgversion DESCRIBE N    the .deb/.rpm version of git describe's answer
//	                                             (N: the commits in the history, for a tree without tags)
//
// The man pages carry the version the binary was given (-ldflags -X ...cli.version=) and the
// date of SOURCE_DATE_EPOCH when set, so that two builds of one commit are the same bytes.
package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/innowarm/innowarm/internal/cli"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "dist:", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	switch {
	case len(args) == 2 && args[0] == "docs":
		return writeDocs(args[1])
	case len(args) == 3 && args[0] == "pkgversion":
		n, err := strconv.Atoi(args[2])
		if err != nil {
			return fmt.Errorf("pkgversion: the commit count %q is not a number", args[2])
		}
		v, err := PackageVersion(args[1], n)
		if err != nil {
			return err
		}
		fmt.Println(v)
		return nil
	}
	return fmt.Errorf("usage: dist docs DIR | dist pkgversion DESCRIBE COMMITS")
}

// writeDocs writes a man page per command (innowarm-warm.1.gz for `innowarm warm`, as git's
// are named) and the bash, zsh and fish completion scripts.
func writeDocs(dir string) error {
	root := cli.NewRoot()
	// Execute adds these; the man pages document them too (innowarm-completion.1).
	root.InitDefaultCompletionCmd()
	root.InitDefaultVersionFlag()
	var disable func(*cobra.Command)
	disable = func(c *cobra.Command) {
		c.DisableAutoGenTag = true // the footer would carry the build's date and "cobra"
		for _, sub := range c.Commands() {
			disable(sub)
		}
	}
	disable(root)
	man := filepath.Join(dir, "man", "man1")
	comp := filepath.Join(dir, "completions")
	for _, d := range []string{man, comp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	plain, err := os.MkdirTemp("", "innowarm-man-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(plain)
	header := &doc.GenManHeader{Section: "1", Source: "innowarm " + root.Version, Manual: "innowarm manual"}
	if err := doc.GenManTreeFromOpts(root, doc.GenManTreeOptions{Header: header, Path: plain, CommandSeparator: "-"}); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	pages, err := filepath.Glob(filepath.Join(plain, "*.1"))
	if err != nil {
		return err
	}
	for _, p := range pages {
		if err := gzipFile(p, filepath.Join(man, filepath.Base(p)+".gz")); err != nil {
			return err
		}
	}
	var bash, zsh, fish bytes.Buffer
	if err := root.GenBashCompletionV2(&bash, true); err != nil {
		return err
	}
	if err := root.GenZshCompletion(&zsh); err != nil {
		return err
	}
	if err := root.GenFishCompletion(&fish, true); err != nil {
		return err
	}
	for name, b := range map[string][]byte{"innowarm.bash": bash.Bytes(), "_innowarm": zsh.Bytes(), "innowarm.fish": fish.Bytes()} {
		if err := os.WriteFile(filepath.Join(comp, name), b, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("%d man pages in %s, completions in %s\n", len(pages), man, comp)
	return nil
}

// gzipFile compresses src into dst at the best level, with no name or time in the header
// (Debian's policy for man pages: the same input gives the same bytes).
func gzipFile(src, dst string) error {
	raw, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if err != nil {
		return err
	}
	if _, err := zw.Write(raw); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(dst, out.Bytes(), 0o644)
}

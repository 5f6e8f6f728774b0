package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// templateFormat changes when what a template holds or how it is keyed changes.
const templateFormat = 1

// installFrom creates the data directory: a copy of cache's template for this binary and
// these creation options when there is one, else a bootstrap, whose result then becomes the
// template (best effort: a cache that cannot be written only costs the next bootstrap).
func (s *Sandbox) installFrom(ctx context.Context, bin Binary, cache string) error {
	if cache == "" {
		return s.install(ctx, bin)
	}
	key, err := s.templateKey(bin)
	if err != nil {
		return s.install(ctx, bin)
	}
	tmpl := filepath.Join(cache, key)
	if _, err := os.Stat(filepath.Join(tmpl, "complete")); err == nil {
		if err := os.MkdirAll(filepath.Join(s.Dir, tmpDirName), 0o750); err != nil {
			return fmt.Errorf("sandbox dir %s is not writable: %w", s.Dir, err)
		}
		if err := copyTree(filepath.Join(tmpl, dataDirName), s.Datadir); err == nil {
			return forgetServerUUID(s.Datadir)
		}
		os.RemoveAll(s.Datadir) // a template removed under us: bootstrap instead
	}
	if err := s.install(ctx, bin); err != nil {
		return err
	}
	// Built beside the template's place and renamed into it, so that another process
	// never copies a half-written template.
	if err := os.MkdirAll(cache, 0o750); err != nil {
		return nil
	}
	build, err := os.MkdirTemp(cache, key+".building-")
	if err != nil {
		return nil
	}
	defer os.RemoveAll(build)
	if copyTree(s.Datadir, filepath.Join(build, dataDirName)) != nil || os.WriteFile(filepath.Join(build, "complete"), nil, 0o640) != nil {
		return nil
	}
	_ = os.Rename(build, tmpl) // another process may have won the race: its template is as good
	return nil
}

// forgetServerUUID removes MySQL's auto.cnf from a data directory copied from a template:
// it holds the server_uuid the template's server made at its first start, and every copy
// would claim that identity, so that two test servers took each other's manifests for
// their own (warm by page number, "this server's manifest"). MySQL makes a new one at the
// copy's first start; MariaDB has no such file.
func forgetServerUUID(datadir string) error {
	if err := os.Remove(filepath.Join(datadir, "auto.cnf")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sandbox: forget the template's server_uuid: %w", err)
	}
	return nil
}

// templateKey names a template by what makes a bootstrap's result: the server binary (its
// path, version, size and time, so that an upgraded package gets a new one) and the options
// a data directory is created with.
func (s *Sandbox) templateKey(bin Binary) (string, error) {
	fi, err := os.Stat(bin.Path)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%d\n%s\n%s\n%s\n%d %d\n%s\n%d\n", templateFormat, bin.Path, bin.Root, bin.Line, fi.Size(), fi.ModTime().UnixNano(),
		strings.Join(creationArgs(s.ServerArgs), " "), os.Geteuid())
	return string(bin.Kind) + "-" + hex.EncodeToString(h.Sum(nil)[:8]), nil
}

// copyTree copies the regular files and directories under from into to (which must not
// exist), keeping their permissions.
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(dst, info.Mode().Perm())
		case info.Mode().IsRegular():
			return copyFile(path, dst, info.Mode().Perm())
		default:
			return nil // sockets, pid files' links: a data directory made by a bootstrap has none
		}
	})
}

func copyFile(from, to string, perm fs.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

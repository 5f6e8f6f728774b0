package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/exitcode"
)

// pages returns a producer writing n pages, tagged with generation so files can be told apart.
func pages(n int, generation uint32) func(*Writer) error {
	return func(w *Writer) error {
		o := Object{SpaceID: generation, PageType: "INDEX", Schema: "s", Table: "t", Index: "PRIMARY"}
		for i := range n {
			if err := w.Page(o, uint32(i), uint32(i), false); err != nil {
				return err
			}
		}
		return nil
	}
}

// generationOf reads back the tag pages() wrote.
func generationOf(t *testing.T, path string) uint32 {
	t.Helper()
	m, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Objects) == 0 {
		return 0
	}
	return m.Objects[0].SpaceID
}

// dirNames lists a directory.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteFileAtomicKeepsGoodFileOnFailure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hot.manifest")
	if _, err := WriteFileAtomic(path, testHeader(), WriteOptions{}, pages(10, 1)); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)

	queryFailed := exitcode.UsageError(errors.New("query failed"))
	failures := map[string]func(*Writer) error{
		"error before any page": func(*Writer) error { return queryFailed },
		"error after some pages": func(w *Writer) error {
			pages(5000, 2)(w)
			return queryFailed
		},
	}
	for name, produce := range failures {
		_, err := WriteFileAtomic(path, testHeader(), WriteOptions{Keep: 3}, produce)
		if !errors.Is(err, queryFailed) || exitcode.Of(err) != exitcode.Usage {
			t.Errorf("%s: error %v does not wrap the producer's", name, err)
		}
		if err != nil && !strings.Contains(err.Error(), "manifest "+path+" not written") {
			t.Errorf("%s: error %q does not say the file was not written", name, err)
		}
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic was swallowed")
			}
		}()
		WriteFileAtomic(path, testHeader(), WriteOptions{}, func(w *Writer) error {
			pages(100, 3)(w)
			panic("producer bug")
		})
	}()
	// A bad header fails before anything happens.
	bad := testHeader()
	bad.PageSize = 3
	if _, err := WriteFileAtomic(path, bad, WriteOptions{}, pages(1, 4)); err == nil {
		t.Error("bad header accepted")
	}

	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Error("a failed write changed the existing manifest")
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"hot.manifest"}) {
		t.Errorf("left behind: %v", names)
	}
}

func TestWriteFileAtomicRefusesEmptyCapture(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hot.manifest.gz")
	// With nothing to protect, an empty manifest is written: it says the pool was empty.
	if h, err := WriteFileAtomic(path, testHeader(), WriteOptions{}, pages(0, 1)); err != nil || h.Entries != 0 {
		t.Fatalf("first empty capture: %v", err)
	}
	if _, err := WriteFileAtomic(path, testHeader(), WriteOptions{}, pages(7, 2)); err != nil {
		t.Fatal(err)
	}
	_, err := WriteFileAtomic(path, testHeader(), WriteOptions{Keep: 2}, pages(0, 3))
	if !errors.Is(err, ErrEmpty) || !strings.Contains(err.Error(), "kept the existing manifest") {
		t.Errorf("empty capture over a good manifest: %v", err)
	}
	if exitcode.Of(err) != exitcode.Runtime {
		t.Errorf("an empty capture is not a usage error: exit %d", exitcode.Of(err))
	}
	if generationOf(t, path) != 2 {
		t.Error("the good manifest was replaced by an empty one")
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"hot.manifest.gz"}) {
		t.Errorf("left behind or rotated: %v", names)
	}
	if h, err := WriteFileAtomic(path, testHeader(), WriteOptions{AllowEmpty: true}, pages(0, 3)); err != nil || h.Entries != 0 {
		t.Errorf("AllowEmpty: %v", err)
	}
	if m, err := Load(path); err != nil || len(m.Entries) != 0 {
		t.Errorf("AllowEmpty did not replace: %v", err)
	}
}

func TestWriteFileAtomicRefusesForeignFiles(t *testing.T) {
	dir := t.TempDir()
	precious := filepath.Join(dir, "notes.txt")
	os.WriteFile(precious, []byte("not a manifest\n"), 0o600)
	_, err := WriteFileAtomic(precious, testHeader(), WriteOptions{}, pages(3, 1))
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "is not an innowarm manifest; refusing to replace it") {
		t.Errorf("foreign file: %v", err)
	}
	if got, _ := os.ReadFile(precious); string(got) != "not a manifest\n" {
		t.Error("a foreign file was replaced")
	}
	if _, err := WriteFileAtomic(dir, testHeader(), WriteOptions{}, pages(3, 1)); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("directory as path: %v", err)
	}
	// An empty file has nothing to lose.
	empty := filepath.Join(dir, "empty.manifest")
	os.WriteFile(empty, nil, 0o600)
	if _, err := WriteFileAtomic(empty, testHeader(), WriteOptions{}, pages(3, 1)); err != nil {
		t.Errorf("empty file: %v", err)
	}
	if _, err := WriteFileAtomic(filepath.Join(dir, "no", "such", "dir"), testHeader(), WriteOptions{}, pages(3, 1)); err == nil {
		t.Error("a path in a missing directory was accepted")
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"empty.manifest", "notes.txt"}) {
		t.Errorf("left behind: %v", names)
	}
}

func TestWriteFileAtomicKeepsFileMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m")
	if _, err := WriteFileAtomic(path, testHeader(), WriteOptions{}, pages(1, 1)); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o600)
	if _, err := WriteFileAtomic(path, testHeader(), WriteOptions{}, pages(1, 2)); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want the previous file's 0600", st.Mode().Perm())
	}
}

func TestRotationKeepsExactlyN(t *testing.T) {
	for _, name := range []string{"hot.manifest", "hot.manifest.gz"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, name)
			const keep = 3
			for gen := uint32(1); gen <= 6; gen++ {
				if _, err := WriteFileAtomic(path, testHeader(), WriteOptions{Keep: keep}, pages(5, gen)); err != nil {
					t.Fatal(err)
				}
				// The newest is at path, then path.1 (previous) ... path.keep.
				want := []string{name}
				if generationOf(t, path) != gen {
					t.Fatalf("generation %d: path holds %d", gen, generationOf(t, path))
				}
				for n := 1; n <= keep && uint32(n) < gen; n++ {
					p := RotationPath(path, n)
					want = append(want, filepath.Base(p))
					if g := generationOf(t, p); g != gen-uint32(n) {
						t.Errorf("generation %d: %s holds %d, want %d", gen, p, g, gen-uint32(n))
					}
				}
				slices.Sort(want)
				if got := dirNames(t, dir); !slices.Equal(got, want) {
					t.Fatalf("generation %d: files %v, want %v", gen, got, want)
				}
			}
			// A smaller --keep prunes the older rotations; --keep 0 leaves them alone.
			if _, err := WriteFileAtomic(path, testHeader(), WriteOptions{Keep: 1}, pages(5, 7)); err != nil {
				t.Fatal(err)
			}
			want := []string{name, filepath.Base(RotationPath(path, 1))}
			slices.Sort(want)
			if got := dirNames(t, dir); !slices.Equal(got, want) {
				t.Fatalf("after keep 1: %v, want %v", got, want)
			}
			if generationOf(t, RotationPath(path, 1)) != 6 {
				t.Error("keep 1 did not keep the previous manifest")
			}
			if _, err := WriteFileAtomic(path, testHeader(), WriteOptions{}, pages(5, 8)); err != nil {
				t.Fatal(err)
			}
			if got := dirNames(t, dir); !slices.Equal(got, want) || generationOf(t, RotationPath(path, 1)) != 6 {
				t.Fatalf("keep 0 touched the rotations: %v", got)
			}
		})
	}
}

func TestRotationNeverDeletesForeignFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hot.manifest")
	for gen := uint32(1); gen <= 2; gen++ {
		if _, err := WriteFileAtomic(path, testHeader(), WriteOptions{Keep: 1}, pages(5, gen)); err != nil {
			t.Fatal(err)
		}
	}
	// Someone's file sits where rotation 2 would go, and another beyond the kept range.
	foreign2 := RotationPath(path, 2)
	os.WriteFile(foreign2, []byte("my notes\n"), 0o644)
	_, err := WriteFileAtomic(path, testHeader(), WriteOptions{Keep: 2}, pages(5, 3))
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), foreign2) {
		t.Errorf("rotation over a foreign file: %v", err)
	}
	if generationOf(t, path) != 2 || generationOf(t, RotationPath(path, 1)) != 1 {
		t.Error("a refused rotation changed the manifests")
	}
	// Pruning beyond --keep stops at a file that is not a manifest.
	if _, err := WriteFileAtomic(path, testHeader(), WriteOptions{Keep: 1}, pages(5, 3)); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(foreign2); string(got) != "my notes\n" {
		t.Error("pruning deleted a foreign file")
	}
	if generationOf(t, path) != 3 || generationOf(t, RotationPath(path, 1)) != 2 {
		t.Error("rotation with keep 1 is wrong")
	}
}

func TestRotationPath(t *testing.T) {
	for path, want := range map[string]string{
		"hot.manifest":     "hot.manifest.2",
		"/d/hot.gz":        "/d/hot.2.gz",
		"/d/hot.manifest.": "/d/hot.manifest..2",
	} {
		t.Run(path, func(t *testing.T) {
			if got := RotationPath(path, 2); got != want {
				t.Errorf("RotationPath(%q) = %q, want %q", path, got, want)
			}
		})
	}
	if _, err := WriteFileAtomic("x", testHeader(), WriteOptions{Keep: -1}, pages(1, 1)); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("negative keep: %v", err)
	}
}

func TestWriteToStdout(t *testing.T) {
	var out bytes.Buffer
	h, err := WriteFileAtomic(StdioName, testHeader(), WriteOptions{Stdout: &out, Keep: 3}, pages(42, 1))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.HasPrefix(out.Bytes(), []byte{0x1f, 0x8b}) || !bytes.HasPrefix(out.Bytes(), []byte("innowarm-manifest 3\n")) {
		t.Errorf("stdout output starts %q", out.Bytes()[:20])
	}
	m, err := Read(&out, "stdin")
	if err != nil || len(m.Entries) != 42 || m.Header.SHA256 != h.SHA256 {
		t.Fatalf("read back: %v", err)
	}

	// A failed capture on stdout cannot be taken back, but it has no trailer: refused.
	out.Reset()
	_, err = WriteFileAtomic(StdioName, testHeader(), WriteOptions{Stdout: &out}, func(w *Writer) error {
		pages(20000, 1)(w)
		return fmt.Errorf("connection lost")
	})
	if err == nil {
		t.Fatal("no error")
	}
	_, err = Read(&out, "stdin")
	checkFormatError(t, err, "stdin", ErrTruncated)
}

package manifest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/innowarm/innowarm/internal/exitcode"
)

// StdioName is the path that means standard input (reading) or standard output (writing).
const StdioName = "-"

// Open opens a manifest file ("-" is standard input) and reads its header. Close the
// Reader when done.
func Open(path string) (*Reader, error) {
	if path == StdioName {
		return NewReader(os.Stdin, "stdin")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, openError(path, err)
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		return nil, exitcode.UsageError(fmt.Errorf("manifest %s: is a directory, not a manifest file", path))
	}
	r, err := NewReader(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.file = f
	return r, nil
}

// openError reports a file that cannot be opened: a missing or unreadable file is the
// user's input being wrong.
func openError(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path is already in our message
	}
	err = fmt.Errorf("manifest %s: %w", path, err)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return exitcode.UsageError(err)
	}
	return err
}

// Verify reads a whole manifest and checks everything (header, every line, counts,
// checksum) without keeping the entries: memory stays bounded by the number of objects.
// A caller that will stream the entries afterwards (Open again) knows they are sound.
func Verify(path string) (*Summary, error) {
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	m, err := readAll(r, false)
	if err != nil {
		return nil, err
	}
	return &m.Summary, nil
}

// Load reads a whole manifest into memory. It returns a manifest only if the whole file is
// valid, so nothing is acted on before the checksum has been verified. Works for "-".
func Load(path string) (*Manifest, error) {
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return readAll(r, true)
}

// Read is Load for any reader; name is used in error messages.
func Read(src io.Reader, name string) (*Manifest, error) {
	r, err := NewReader(src, name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return readAll(r, true)
}

func readAll(r *Reader, keepEntries bool) (*Manifest, error) {
	m := &Manifest{}
	if keepEntries {
		// The pool size bounds the entry count; the cap keeps a hostile header from
		// reserving memory the file does not fill.
		m.Entries = make([]Entry, 0, min(max(r.header.PoolPages, 0), 1<<20))
	}
	var counts []PageCount
	for {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		for int(e.Object) >= len(counts) {
			counts = append(counts, PageCount{})
		}
		if e.Old {
			counts[e.Object].Old++
		} else {
			counts[e.Object].Young++
		}
		if keepEntries {
			m.AddRange(&e, r.Range())
			m.Entries = append(m.Entries, e)
		}
	}
	for len(counts) < len(r.objects) {
		counts = append(counts, PageCount{})
	}
	m.Summary = Summary{Name: r.name, Header: r.header, Objects: r.objects, Counts: counts}
	return m, nil
}

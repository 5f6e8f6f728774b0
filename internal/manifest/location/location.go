// Package location reads and writes manifests wherever they live: a local file, standard
// input or output ("-"), or an object in S3-compatible storage (s3://BUCKET/PREFIX/NAME).
// It is the one entry point for every command that takes a manifest location (snapshot -o,
// warm --from, inspect --manifest, the agent): local paths go to internal/manifest as they
// always did, objects through internal/objstore with the same promises: a manifest is
// replaced only by a complete and valid one, and nothing is returned from a read before its
// checksums have been verified.
//
//	st := &location.Store{S3: objstore.Config{Endpoint: "https://minio:9000"}}
//	m, err := st.Load(ctx, "s3://manifests/db1/hot.manifest.gz")
package location

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/objstore"
)

// Store reaches manifests; the zero value reads and writes local files and reaches object
// storage with the AWS SDK's environment alone. Its S3 client is made on first use of an
// object location and kept, so a Store should live as long as its command (snapshot
// --every writes every interval through the same one). Safe for concurrent use.
type Store struct {
	// S3 is how to reach object storage (the --s3-* flags); empty fields come from the
	// environment and shared config files, as the AWS SDK takes them.
	S3 objstore.Config
	// TempDir is where a manifest bound for object storage is written before its upload;
	// empty: os.TempDir() ($TMPDIR).
	TempDir string

	mu     sync.Mutex
	client *objstore.Client

	// afterStep, when set (tests), is called after each step of an object write.
	afterStep func(step string)
}

// IsRemote reports whether loc names an object rather than a local file or "-".
func IsRemote(loc string) bool { return objstore.IsURL(loc) }

func (s *Store) objects(ctx context.Context) (*objstore.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client != nil {
		return s.client, nil
	}
	c, err := objstore.New(ctx, s.S3)
	if err != nil {
		return nil, err
	}
	s.client = c
	return c, nil
}

// remote parses loc and returns the client to reach it.
func (s *Store) remote(ctx context.Context, loc string) (objstore.URL, *objstore.Client, error) {
	u, err := objstore.Parse(loc)
	if err != nil {
		return u, nil, fmt.Errorf("manifest %w", err)
	}
	c, err := s.objects(ctx)
	return u, c, err
}

// Load reads a whole manifest into memory and returns it only when it is valid: for an
// object, its bytes match the object's stored checksums and size, and the manifest's own
// trailer (counts, SHA-256) matches its content. A missing object or bucket or refused
// credentials are usage errors (exit 2); an endpoint that cannot be reached is a runtime
// failure (exit 1).
func (s *Store) Load(ctx context.Context, loc string) (*manifest.Manifest, error) {
	if !IsRemote(loc) {
		return manifest.Load(loc)
	}
	u, c, err := s.remote(ctx, loc)
	if err != nil {
		return nil, err
	}
	r, err := c.Open(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("manifest %w", err)
	}
	defer r.Close()
	// The manifest is parsed as the object streams in; its checks and the object's both
	// pass before it is returned.
	m, err := manifest.Read(r, loc)
	if err != nil {
		return nil, err
	}
	if err := r.Finish(); err != nil {
		return nil, fmt.Errorf("manifest %w", err)
	}
	return m, nil
}

// Info identifies a stored manifest.
type Info struct {
	// Identity changes whenever the manifest is replaced: path, size and modification time
	// of a file; URL, ETag and size of an object.
	Identity string
	Size     int64
}

// Stat identifies the manifest at loc without reading it (a readiness probe's cheap check
// that the manifest it counted against is still the current one).
func (s *Store) Stat(ctx context.Context, loc string) (Info, error) {
	if !IsRemote(loc) {
		abs, err := filepath.Abs(loc)
		if err != nil {
			return Info{}, err
		}
		fi, err := os.Stat(abs)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return Info{}, exitcode.UsageError(fmt.Errorf("manifest %s: %w", loc, err))
		}
		return Info{Identity: fmt.Sprintf("manifest file %s %d %d", abs, fi.Size(), fi.ModTime().UnixNano()), Size: fi.Size()}, nil
	}
	u, c, err := s.remote(ctx, loc)
	if err != nil {
		return Info{}, err
	}
	in, err := c.Stat(ctx, u)
	if err != nil {
		return Info{}, fmt.Errorf("manifest %w", err)
	}
	return Info{Identity: fmt.Sprintf("manifest object %s %s %d", u, in.ETag, in.Size), Size: in.Size}, nil
}

// CheckWritable finds, before a possibly long capture, what would keep a manifest from
// being written at loc: a missing or read-only directory; a missing bucket, refused
// credentials or an unreachable endpoint; something that is not a manifest at loc or in
// one of its keep rotation slots. "-" is always writable.
func (s *Store) CheckWritable(ctx context.Context, loc string, keep int) error {
	if loc == manifest.StdioName {
		return nil
	}
	if !IsRemote(loc) {
		dir := filepath.Dir(loc)
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return exitcode.UsageError(fmt.Errorf("cannot write the manifest %s: directory %s does not exist", loc, dir))
		}
		if err := unix.Access(dir, unix.W_OK); err != nil {
			return exitcode.UsageError(fmt.Errorf("cannot write the manifest %s: directory %s is not writable", loc, dir))
		}
		return nil
	}
	u, c, err := s.remote(ctx, loc)
	if err != nil {
		return err
	}
	if err := checkKeyRoom(u, keep); err != nil {
		return err
	}
	if err := c.CheckBucket(ctx, u); err != nil {
		return fmt.Errorf("manifest %w", err)
	}
	if _, err := replaceable(ctx, c, u); err != nil {
		return err
	}
	return checkSlots(ctx, c, u, keep)
}

// Written describes a manifest written by Write.
type Written struct {
	Header manifest.Header
	// Bytes is the size of the file or object (0 for "-").
	Bytes int64
}

// Write writes a manifest to loc: produce streams the pages into the Writer. A local path
// or "-" is manifest.WriteFileAtomic's; an object is replaced only by a complete, verified
// manifest (see writeObject), keeping o.Keep previous ones as NAME.1 ... NAME.N. A capture
// that fails, or is empty where a manifest exists (manifest.ErrEmpty, unless
// o.AllowEmpty), leaves the existing manifest as it was.
func (s *Store) Write(ctx context.Context, loc string, h manifest.Header, o manifest.WriteOptions, produce func(*manifest.Writer) error) (Written, error) {
	// A write interrupted (Ctrl-C, SIGTERM) while its pages were produced is not
	// committed, however much of it the producer wrote: the file as it was is what a user
	// who stopped it expects (a huge pool's encoding took seconds after Ctrl-C, then
	// replaced the manifest).
	producePages := produce
	produce = func(w *manifest.Writer) error {
		if err := producePages(w); err != nil {
			return err
		}
		return ctx.Err()
	}
	if !IsRemote(loc) {
		hdr, err := manifest.WriteFileAtomic(loc, h, o, produce)
		if err != nil {
			return Written{}, err
		}
		w := Written{Header: hdr}
		if loc != manifest.StdioName {
			if fi, err := os.Stat(loc); err == nil {
				w.Bytes = fi.Size()
			}
		}
		return w, nil
	}
	if o.Keep < 0 {
		return Written{}, exitcode.UsageError(fmt.Errorf("manifest %s: %d previous manifests to keep: want 0 or more", loc, o.Keep))
	}
	u, c, err := s.remote(ctx, loc)
	if err != nil {
		return Written{}, err
	}
	if err := checkKeyRoom(u, o.Keep); err != nil {
		return Written{}, err
	}
	return s.writeObject(ctx, c, u, h, o, produce)
}

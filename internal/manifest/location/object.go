package location

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path"
	"strconv"
	"time"

	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/objstore"
)

// Steps of an object write, for Store.afterStep.
const (
	stepEncoded  = "encoded"  // the manifest is in the local temporary file
	stepUploaded = "uploaded" // the temporary object is stored and verified
	stepRotated  = "rotated"  // the previous manifests moved up one slot
	stepCopied   = "copied"   // the final object replaced
)

// staleTemp is how old a temporary object left by an interrupted write must be before a
// later write deletes it: younger ones may belong to a write still running.
const staleTemp = time.Hour

// writeObject replaces the object at u with a new manifest. S3 has no rename, but a single
// PUT and a server-side copy each make their object appear whole or not at all, so:
//
//  1. the manifest is written to a local temporary file ($TMPDIR), with its SHA-256 and
//     MD5: a capture that fails leaves nothing anywhere;
//  2. it is uploaded in one PUT to a temporary key beside the target (.NAME.tmp-RANDOM)
//     with Content-MD5 and x-amz-checksum-sha256, which the storage verifies before it
//     stores anything, and the stored object's size and SHA-256 are checked;
//  3. only then are the previous manifests rotated (server-side copies, each whole), so a
//     failed upload costs no rotation slot;
//  4. the temporary object is copied over the target (if its ETag is still the one
//     verified) and the target's size and SHA-256 are checked; the temporary object is
//     deleted.
//
// A crash or a lost endpoint at any point leaves the target either the previous manifest or
// the new one, never a part of either; at worst a temporary object stays behind, which a
// later write deletes once it is an hour old.
func (s *Store) writeObject(ctx context.Context, c *objstore.Client, u objstore.URL, h manifest.Header, o manifest.WriteOptions, produce func(*manifest.Writer) error) (Written, error) {
	// Fail before a possibly long capture if the result could not be put in place anyway.
	if _, err := replaceable(ctx, c, u); err != nil {
		return Written{}, err
	}
	if err := checkSlots(ctx, c, u, o.Keep); err != nil {
		return Written{}, err
	}

	f, err := os.CreateTemp(s.TempDir, "innowarm-manifest-*")
	if err != nil {
		return Written{}, fmt.Errorf("manifest %s not written: temporary file (TMPDIR): %w", u, err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	dg := objstore.NewDigester()
	buf := bufio.NewWriterSize(io.MultiWriter(f, dg), 256<<10)
	hdr, err := manifest.Encode(buf, manifest.Compressed(u.Key), h, produce)
	if err == nil {
		err = buf.Flush()
	}
	if err != nil {
		return Written{}, fmt.Errorf("manifest %s not written: %w", u, err)
	}
	digests := dg.Digests()
	s.step(stepEncoded)

	// Check again: the capture may have taken minutes.
	existing, err := replaceable(ctx, c, u)
	if err != nil {
		return Written{}, err
	}
	if existing != nil && existing.Size > 0 && hdr.Entries == 0 && !o.AllowEmpty {
		return Written{}, fmt.Errorf("manifest %s: %w: kept the existing manifest", u, manifest.ErrEmpty)
	}
	if existing != nil && existing.Size > 0 && o.Replace != nil {
		if err := o.Replace(hdr); err != nil {
			return Written{}, fmt.Errorf("manifest %s: %w: kept the existing manifest", u, err)
		}
	}

	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Written{}, fmt.Errorf("manifest %s not written: %w", u, err)
	}
	tmp := u.WithKey(tempKey(u.Key))
	uploaded := false
	defer func() {
		if uploaded {
			// Also after a cancel: the temporary object is ours to remove.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			_ = c.Delete(cctx, tmp)
			cancel()
		}
	}()
	contentType := "text/plain; charset=utf-8"
	if manifest.Compressed(u.Key) {
		contentType = "application/gzip"
	}
	if _, err := c.Put(ctx, tmp, f, digests, contentType); err != nil {
		return Written{}, fmt.Errorf("manifest %s not written: %w", u, err)
	}
	uploaded = true
	stored, err := c.Verify(ctx, tmp, digests)
	if err != nil {
		return Written{}, fmt.Errorf("manifest %s not written: %w", u, err)
	}
	s.step(stepUploaded)

	if existing != nil && o.Keep > 0 {
		if err := rotate(ctx, c, u, o.Keep); err != nil {
			return Written{}, err
		}
	}
	s.step(stepRotated)
	if err := c.Copy(ctx, tmp, u, stored.ETag); err != nil {
		return Written{}, fmt.Errorf("manifest %s not written: %w", u, err)
	}
	if _, err := c.Verify(ctx, u, digests); err != nil {
		return Written{}, fmt.Errorf("manifest %s: after the copy: %w", u, err)
	}
	s.step(stepCopied)
	sweepTemps(ctx, c, u)
	return Written{Header: hdr, Bytes: digests.Size}, nil
}

func (s *Store) step(name string) {
	if s.afterStep != nil {
		s.afterStep(name)
	}
}

// tempKey is a temporary key beside key: same prefix, hidden name, never a manifest name
// a reader is given.
func tempKey(key string) string {
	dir, base := path.Split(key)
	return dir + tempPrefix(base) + strconv.FormatUint(rand.Uint64(), 36)
}

func tempPrefix(base string) string { return "." + base + ".tmp-" }

// maxTempSuffix is the longest random part of a temporary key (a uint64 in base 36).
var maxTempSuffix = len(strconv.FormatUint(^uint64(0), 36))

// checkKeyRoom refuses, before any work, a manifest key whose temporary key (the upload
// goes there first) or rotation slots (NAME.1 ... NAME.keep) would be longer than S3
// allows: a key of 1,006 to 1,024 bytes was accepted, and its write failed after the
// whole capture, refused by the storage for the temporary key's length.
func checkKeyRoom(u objstore.URL, keep int) error {
	dir, base := path.Split(u.Key)
	longest := len(dir) + len(tempPrefix(base)) + maxTempSuffix
	why := "its temporary key"
	if keep > 0 {
		if n := len(manifest.RotationPath(u.Key, keep)); n > longest {
			longest, why = n, fmt.Sprintf("its rotation slot %s", path.Base(manifest.RotationPath(u.Key, keep)))
		}
	}
	if longest > objstore.MaxKeyBytes {
		return exitcode.UsageError(fmt.Errorf("manifest %s: the key is %d bytes, and %s would be %d, over the %d S3 allows: use a key of at most %d bytes",
			u, len(u.Key), why, longest, objstore.MaxKeyBytes, len(u.Key)-(longest-objstore.MaxKeyBytes)))
	}
	return nil
}

// sweepTemps deletes temporary objects an interrupted write of u left behind, once they are
// old enough not to be another write's. Best effort: without the right to list, nothing.
func sweepTemps(ctx context.Context, c *objstore.Client, u objstore.URL) {
	dir, base := path.Split(u.Key)
	listed, err := c.List(ctx, u.WithKey(dir+tempPrefix(base)), 100)
	if err != nil {
		return
	}
	for _, l := range listed {
		if time.Since(l.Modified) > staleTemp {
			_ = c.Delete(ctx, l.URL)
		}
	}
}

// sniffBytes is how much of an object replaceable reads to recognise a manifest, plain or
// gzip (the magic line is the first bytes of the first deflate block).
const sniffBytes = 16 << 10

// replaceable returns what is stored at u (nil for nothing), and refuses what innowarm must
// not replace: anything but an empty object or one that starts like a manifest. A typo in
// -o must not destroy someone's backup.
func replaceable(ctx context.Context, c *objstore.Client, u objstore.URL) (*objstore.Info, error) {
	in, err := c.Stat(ctx, u)
	if errors.Is(err, objstore.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("manifest %w", err)
	}
	if in.Size == 0 {
		return &in, nil
	}
	head, err := c.ReadPrefix(ctx, u, sniffBytes)
	if err != nil {
		return nil, fmt.Errorf("manifest %w", err)
	}
	if !manifest.LooksLikeManifest(bytes.NewReader(head)) {
		return nil, exitcode.UsageError(fmt.Errorf("manifest %s: exists and is not an innowarm manifest; refusing to replace it", u))
	}
	return &in, nil
}

func slot(u objstore.URL, n int) objstore.URL { return u.WithKey(manifest.RotationPath(u.Key, n)) }

// checkSlots refuses to start when a rotation slot holds something that is not a manifest:
// rotating would overwrite it.
func checkSlots(ctx context.Context, c *objstore.Client, u objstore.URL, keep int) error {
	for n := 1; n <= keep; n++ {
		if _, err := replaceable(ctx, c, slot(u, n)); err != nil {
			return err
		}
	}
	return nil
}

// rotate copies NAME.(keep-1) … NAME.1 one slot up and NAME to NAME.1, and deletes the
// manifests numbered beyond keep (left by a larger --keep). Every copy is whole; the
// target itself is not touched.
func rotate(ctx context.Context, c *objstore.Client, u objstore.URL, keep int) error {
	if err := checkSlots(ctx, c, u, keep); err != nil {
		return err
	}
	move := func(from, to objstore.URL) error {
		in, err := c.Stat(ctx, from)
		if errors.Is(err, objstore.ErrNotFound) {
			return nil
		}
		if err == nil {
			err = c.Copy(ctx, from, to, in.ETag)
		}
		if err != nil {
			return fmt.Errorf("manifest %s: rotate: %w", u, err)
		}
		return nil
	}
	for n := keep - 1; n >= 1; n-- {
		if err := move(slot(u, n), slot(u, n+1)); err != nil {
			return err
		}
	}
	if err := move(u, slot(u, 1)); err != nil {
		return err
	}
	for n := keep + 1; ; n++ {
		in, err := replaceable(ctx, c, slot(u, n))
		if in == nil || err != nil {
			return nil //nolint:nilerr // the rotation ends at the first missing or foreign object
		}
		if err := c.Delete(ctx, slot(u, n)); err != nil {
			return fmt.Errorf("manifest %s: rotate: %w", u, err)
		}
	}
}

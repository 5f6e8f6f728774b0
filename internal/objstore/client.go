package objstore

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/innowarm/innowarm/internal/exitcode"
)

// MetaSHA256 is the user metadata (x-amz-meta-innowarm-sha256) in which Put records the
// hex SHA-256 of the object's bytes: checked on every read, on any server.
const MetaSHA256 = "innowarm-sha256"

// MaxPutSize is the largest object one PUT may carry (S3's limit). A manifest is about 28
// bytes a page, so this is far above the largest pool's.
const MaxPutSize = 5 << 30

// Info describes a stored object.
type Info struct {
	Size     int64
	ETag     string
	Modified time.Time
	// SHA256 is the hex SHA-256 of the bytes, from the object's whole-object
	// x-amz-checksum-sha256 or innowarm's metadata; empty when it has neither.
	SHA256 string
}

func info(size *int64, etag *string, modified *time.Time, checksum *string, ctype types.ChecksumType, meta map[string]string) Info {
	in := Info{Size: aws.ToInt64(size), ETag: aws.ToString(etag), Modified: aws.ToTime(modified), SHA256: meta[MetaSHA256]}
	if sum := wholeObjectSHA256(checksum, ctype); sum != "" {
		in.SHA256 = sum
	}
	return in
}

// wholeObjectSHA256 decodes a whole-object x-amz-checksum-sha256 (not the checksum of a
// multipart upload's part checksums) to hex.
func wholeObjectSHA256(checksum *string, ctype types.ChecksumType) string {
	v := aws.ToString(checksum)
	if v == "" || strings.Contains(v, "-") || ctype == types.ChecksumTypeComposite {
		return ""
	}
	raw, err := base64.StdEncoding.DecodeString(v)
	if err != nil || len(raw) != sha256.Size {
		return ""
	}
	return hex.EncodeToString(raw)
}

// Stat describes the object at u; a missing one is ErrNotFound (exit 2).
func (c *Client) Stat(ctx context.Context, u URL) (Info, error) {
	out, err := c.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &u.Bucket, Key: &u.Key, ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		err = c.classify(opHead, u, err)
		if errors.Is(err, ErrNotFound) {
			// A HEAD answer has no body to say what is missing (the object, the bucket, or
			// on some servers the access key): a listing's answer says.
			if berr := c.CheckBucket(ctx, u); berr != nil {
				return Info{}, berr
			}
		}
		return Info{}, err
	}
	return info(out.ContentLength, out.ETag, out.LastModified, out.ChecksumSHA256, out.ChecksumType, out.Metadata), nil
}

// CheckBucket fails with ErrNoBucket, ErrDenied or ErrUnreachable when u's bucket cannot be
// used: a cheap first request (a listing of at most one key under u's own name) that finds
// a wrong configuration before any work is done.
func (c *Client) CheckBucket(ctx context.Context, u URL) error {
	_, err := c.s3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &u.Bucket, Prefix: &u.Key, MaxKeys: aws.Int32(1)})
	if err == nil {
		return nil
	}
	err = c.classify("list objects", u, err)
	if errors.Is(err, ErrNotFound) {
		return exitcode.UsageError(fmt.Errorf("%s: %w: bucket %q does not exist at %s", u, ErrNoBucket, u.Bucket, c.endpoint))
	}
	return err
}

// ReadPrefix returns up to n bytes from the start of the object.
func (c *Client) ReadPrefix(ctx context.Context, u URL, n int) ([]byte, error) {
	out, err := c.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: &u.Bucket, Key: &u.Key, Range: aws.String(fmt.Sprintf("bytes=0-%d", n-1))})
	if err != nil {
		var ae interface{ ErrorCode() string }
		if errors.As(err, &ae) && ae.ErrorCode() == "InvalidRange" {
			return nil, nil // an empty object
		}
		return nil, c.classify("get object", u, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, int64(n)))
	if err != nil {
		return nil, c.classify("get object", u, err)
	}
	return b, nil
}

// Reader is an object's bytes, checked as they are read: its size, innowarm's SHA-256
// metadata, and the SDK checks the whole-object x-amz-checksum-* the storage returns. A
// mismatch is returned instead of io.EOF, so a reader that reads to the end never takes
// damaged bytes for the whole object.
type Reader struct {
	c       *Client
	u       URL
	body    io.ReadCloser
	info    Info
	sum     hash.Hash // nil when the storage's own checksum covers innowarm's
	wantSum string
	n       int64
	err     error
}

// Open starts reading the object at u; a missing one is ErrNotFound (exit 2).
func (c *Client) Open(ctx context.Context, u URL) (*Reader, error) {
	out, err := c.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: &u.Bucket, Key: &u.Key, ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		return nil, c.classify("get object", u, err)
	}
	r := &Reader{c: c, u: u, body: out.Body, info: info(out.ContentLength, out.ETag, out.LastModified, out.ChecksumSHA256, out.ChecksumType, out.Metadata)}
	meta := out.Metadata[MetaSHA256]
	stored := wholeObjectSHA256(out.ChecksumSHA256, out.ChecksumType)
	switch {
	case meta != "" && stored != "" && meta != stored:
		out.Body.Close()
		return nil, exitcode.UsageError(fmt.Errorf("%s: %w: the stored x-amz-checksum-sha256 %s differs from the %s metadata %s", u, ErrChecksum, stored, MetaSHA256, meta))
	case meta != "" && stored == "":
		// The SDK validates a stored SHA-256 as the body streams; without one, hash here.
		r.sum, r.wantSum = sha256.New(), meta
	}
	return r, nil
}

// Info describes the object being read.
func (r *Reader) Info() Info { return r.info }

func (r *Reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.body.Read(p)
	r.n += int64(n)
	if r.sum != nil {
		r.sum.Write(p[:n])
	}
	switch {
	case err == nil:
	case errors.Is(err, io.EOF):
		err = r.check()
	case strings.Contains(err.Error(), sdkMismatch): // the SDK's validation
		// "algorithm CRC32, expect ..., actual ...", without the SDK's repetition of the kind.
		_, detail, _ := strings.Cut(err.Error(), sdkMismatch)
		err = exitcode.UsageError(fmt.Errorf("%s: %w: the bytes read do not match the stored checksum (%s)", r.u, ErrChecksum, detail))
	case errors.Is(err, io.ErrUnexpectedEOF) || isNetError(err):
		// The connection was cut: say how far it got. Not %w: a reader of the bytes must
		// not take the cut for an object that ends early (a damaged one).
		err = fmt.Errorf("%s: read object: the transfer from %s broke after %d of %d bytes: %v", r.u, r.c.endpoint, r.n, r.info.Size, innermost(err))
	default:
		err = r.c.classify("read object", r.u, err)
	}
	if err != nil {
		r.err = err
	}
	return n, err
}

func (r *Reader) check() error {
	if r.n != r.info.Size {
		return exitcode.UsageError(fmt.Errorf("%s: %w: read %d bytes of %d", r.u, ErrChecksum, r.n, r.info.Size))
	}
	if r.sum != nil {
		if got := hex.EncodeToString(r.sum.Sum(nil)); got != r.wantSum {
			return exitcode.UsageError(fmt.Errorf("%s: %w: the bytes' SHA-256 is %s, the object's %s metadata says %s", r.u, ErrChecksum, got, MetaSHA256, r.wantSum))
		}
	}
	return io.EOF
}

// sdkMismatch starts the SDK's error for a body that does not match its stored checksum.
const sdkMismatch = "checksum did not match: "

// Finish reads what is left of the object and returns the result of the checks: nil only
// when every byte has been read and matched.
func (r *Reader) Finish() error {
	if _, err := io.Copy(io.Discard, r); err != nil {
		return err
	}
	return nil
}

// Close releases the connection.
func (r *Reader) Close() error { return r.body.Close() }

// Digests are a body's checksums, computed while it is written (Digester).
type Digests struct {
	Size   int64
	SHA256 []byte
	MD5    []byte
}

// SHA256Hex is the SHA-256 as Info.SHA256 spells it.
func (d Digests) SHA256Hex() string { return hex.EncodeToString(d.SHA256) }

// Digester computes Digests of what is written to it.
type Digester struct {
	sha, md hash.Hash
	n       int64
}

func NewDigester() *Digester { return &Digester{sha: sha256.New(), md: md5.New()} }

func (d *Digester) Write(p []byte) (int, error) {
	d.sha.Write(p)
	d.md.Write(p)
	d.n += int64(len(p))
	return len(p), nil
}

func (d *Digester) Digests() Digests {
	return Digests{Size: d.n, SHA256: d.sha.Sum(nil), MD5: d.md.Sum(nil)}
}

// Put stores body (d.Size bytes with digests d) at u in one request, which S3 applies
// atomically: the object is the old one or all of the new one. The storage checks the
// body against Content-MD5 and x-amz-checksum-sha256 and refuses it on a mismatch; the
// SHA-256 is also recorded as metadata for readers of storage that keeps no checksums.
// body is read again from its start when an attempt is retried.
//
// u must be a key of the caller's own that nothing else writes (innowarm puts only to a
// fresh temporary key, then copies it in place): when the upload fails or is cancelled,
// Put deletes the object at u before it returns, since an attempt may have been stored
// although its answer was an error or never came.
//
// The DELETE is sent only once the PUT's request has ended: a storage that has received a
// whole body stores it whatever the client does next, and may finish doing so after a
// DELETE sent meanwhile. So a cancel stops the upload at once only while part of the body
// is still unsent (the storage cannot store a short body: it checks the length and the
// checksums); once the whole body is out, Put waits for the storage's answer, up to
// CleanupTimeout.
func (c *Client) Put(ctx context.Context, u URL, body io.ReadSeeker, d Digests, contentType string) (Info, error) {
	if d.Size > MaxPutSize {
		return Info{}, fmt.Errorf("%s: %d bytes is over the %d a single upload may carry", u, d.Size, int64(MaxPutSize))
	}
	// The request outlives ctx: the upload decides when it may be abandoned.
	reqCtx, abandon := context.WithCancel(context.WithoutCancel(ctx))
	defer abandon()
	up := &upload{r: body, size: d.Size, abandon: abandon}
	ended := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		if up.stop() {
			return
		}
		// The storage has the whole body: its answer says when it is done with it.
		t := time.NewTimer(CleanupTimeout)
		defer t.Stop()
		select {
		case <-t.C:
			abandon()
		case <-ended:
		}
	})
	out, err := c.s3.PutObject(reqCtx, &s3.PutObjectInput{
		Bucket: &u.Bucket, Key: &u.Key, Body: up, ContentLength: aws.Int64(d.Size),
		ContentType:    aws.String(contentType),
		ContentMD5:     aws.String(base64.StdEncoding.EncodeToString(d.MD5)),
		ChecksumSHA256: aws.String(base64.StdEncoding.EncodeToString(d.SHA256)),
		Metadata:       map[string]string{MetaSHA256: d.SHA256Hex()},
	})
	stop()
	close(ended)
	if cerr := ctx.Err(); cerr != nil {
		// Stored or not, the caller no longer wants it; the cancel is what to report.
		err = cerr
	}
	if err != nil {
		c.removeFailed(ctx, u)
		return Info{}, c.classify("put object", u, err)
	}
	return Info{Size: d.Size, ETag: aws.ToString(out.ETag), SHA256: d.SHA256Hex()}, nil
}

// errUploadStopped ends the body of an upload whose caller cancelled before all of it was
// sent.
var errUploadStopped = errors.New("upload stopped by the cancel before its body was complete")

// upload is a PUT's body that knows whether all of it has been handed to the transport, and
// that a cancel stops, for good, short of that.
type upload struct {
	mu        sync.Mutex
	r         io.ReadSeeker
	size      int64
	pos       int64 // in the current attempt: a retry seeks back to the start
	cancelled bool
	abandon   context.CancelFunc
}

// stop takes the caller's cancel: no byte is handed out after it, so that no attempt
// unfinished now ever completes, and the request is abandoned if part of its body is still
// unsent (the storage cannot store a short body). It reports whether it abandoned it: once
// the whole body has been handed out, the storage may store it.
func (b *upload) stop() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cancelled = true
	if b.pos >= b.size {
		return false
	}
	b.abandon()
	return true
}

func (b *upload) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cancelled && b.pos < b.size {
		// Also a retry's new attempt after a cancel that came once the body was out.
		b.abandon()
		return 0, errUploadStopped
	}
	n, err := b.r.Read(p)
	b.pos += int64(n)
	return n, err
}

func (b *upload) Seek(offset int64, whence int) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	pos, err := b.r.Seek(offset, whence)
	if err == nil {
		b.pos = pos
	}
	return pos, err
}

// CleanupTimeout bounds the removal of a failed upload's object, and the wait for the
// storage's answer to an upload cancelled after its whole body was sent: the user who
// pressed Ctrl-C waits for them.
const CleanupTimeout = 5 * time.Second

// removeFailed deletes the object of a PUT that failed or was cancelled, once its request
// has ended, with a context of its own (the caller's may be done). Best effort: a storage
// that cannot be reached, or that neither answered the PUT nor dropped it within
// CleanupTimeout, may still leave the object, for the sweep of a later write or a lifecycle
// rule.
func (c *Client) removeFailed(ctx context.Context, u URL) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
	defer cancel()
	_ = c.Delete(dctx, u)
}

// Verify checks that the object at u is what was written with digests d (its size and
// SHA-256, as the storage reports them) and returns its description.
func (c *Client) Verify(ctx context.Context, u URL, d Digests) (Info, error) {
	in, err := c.Stat(ctx, u)
	if err != nil {
		return Info{}, err
	}
	if in.Size != d.Size || in.SHA256 != d.SHA256Hex() {
		return in, fmt.Errorf("%s: %w: stored %d bytes with SHA-256 %q, wrote %d bytes with %s", u, ErrChecksum, in.Size, in.SHA256, d.Size, d.SHA256Hex())
	}
	return in, nil
}

// Copy copies the object from to to on the storage side (no bytes through innowarm), with
// its metadata; the new object appears whole. etag, when given, is the source's ETag as
// last seen: the copy fails rather than take another object that replaced it since.
func (c *Client) Copy(ctx context.Context, from, to URL, etag string) error {
	in := &s3.CopyObjectInput{
		Bucket: &to.Bucket, Key: &to.Key, CopySource: aws.String(copySource(from)),
		MetadataDirective: types.MetadataDirectiveCopy,
	}
	if etag != "" {
		in.CopySourceIfMatch = aws.String(etag)
	}
	if _, err := c.s3.CopyObject(ctx, in); err != nil {
		err = c.classify("copy object from "+from.String(), to, err)
		if errors.Is(err, ErrNotFound) {
			// What is missing is the source: the target need not exist.
			return exitcode.UsageError(fmt.Errorf("%s: copy from %s: %w at %s", to, from, ErrNotFound, c.endpoint))
		}
		return err
	}
	return nil
}

// copySource is CopyObject's "bucket/key", URL-encoded as S3 asks: every byte but the
// unreserved characters and the slashes, so that a server that decodes it as a query
// value (a "+" as a space) or as a path gets the key back as it is.
func copySource(u URL) string {
	return escapeKey(u.Bucket) + "/" + escapeKey(u.Key)
}

func escapeKey(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '-', c == '_', c == '.', c == '~', c == '/':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// Delete removes the object at u; a missing one is no error.
func (c *Client) Delete(ctx context.Context, u URL) error {
	_, err := c.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &u.Bucket, Key: &u.Key})
	if err != nil {
		err = c.classify("delete object", u, err)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
	}
	return err
}

// Listed is one object of a listing.
type Listed struct {
	URL      URL
	Size     int64
	Modified time.Time
}

// List returns the objects whose keys start with prefix.Key, at most limit of them.
func (c *Client) List(ctx context.Context, prefix URL, limit int) ([]Listed, error) {
	var out []Listed
	p := s3.NewListObjectsV2Paginator(c.s3, &s3.ListObjectsV2Input{Bucket: &prefix.Bucket, Prefix: &prefix.Key})
	for p.HasMorePages() && len(out) < limit {
		page, err := p.NextPage(ctx)
		if err != nil {
			return out, c.classify("list objects", prefix, err)
		}
		for _, o := range page.Contents {
			out = append(out, Listed{URL: prefix.WithKey(aws.ToString(o.Key)), Size: aws.ToInt64(o.Size), Modified: aws.ToTime(o.LastModified)})
		}
	}
	return out, nil
}

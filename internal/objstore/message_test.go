package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/objstore"
	"github.com/innowarm/innowarm/internal/objstore/s3test"
)

// A damaged object's message says the mismatch once, with the storage's algorithm and both
// sums, rather than the SDK's own wording after innowarm's ("checksum mismatch: ...:
// checksum did not match: ...").
func TestDamagedObjectMessageSaysTheMismatchOnce(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	srv.Bucket(t, "bkt")
	c := newClient(t, srv.Config())
	u := objstore.URL{Bucket: "bkt", Key: "m"}
	body := bytes.Repeat([]byte("0 1 2 y 1 0 0\n"), 1000)
	put(t, c, u, body)
	body[10] ^= 1
	if err := os.WriteFile(srv.ObjectPath("bkt", "m"), body, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := readAll(c, u)
	if !errors.Is(err, objstore.ErrChecksum) {
		t.Fatalf("read of a damaged object = %v, want ErrChecksum", err)
	}
	msg := err.Error()
	if strings.Count(msg, "checksum") != 2 || !strings.Contains(msg, "do not match the stored checksum (algorithm SHA256, expect ") {
		t.Errorf("message %q: want the mismatch said once, with the algorithm and both sums", msg)
	}
}

// An interrupted request says so in a few words: the object, the operation, the cancel; not
// the SDK's wrapping ("operation error S3: CopyObject, https response error StatusCode: 0,
// RequestID: , HostID: , canceled, context canceled").
func TestInterruptedRequestMessage(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	srv.Bucket(t, "bkt")
	c := newClient(t, srv.Config())
	u := objstore.URL{Bucket: "bkt", Key: "m"}
	in := put(t, c, u, []byte("x\n"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Stat(ctx, u)
	if want := "s3://bkt/m: head object: context canceled"; err == nil || err.Error() != want || !errors.Is(err, context.Canceled) {
		t.Errorf("interrupted stat = %v, want %q", err, want)
	}
	err = c.Copy(ctx, u, u.WithKey("m.1"), in.ETag)
	if want := "s3://bkt/m.1: copy object from s3://bkt/m: context canceled"; err == nil || err.Error() != want || !errors.Is(err, context.Canceled) {
		t.Errorf("interrupted copy = %v, want %q", err, want)
	}
}

// An https:// endpoint that serves plain http is the user's configuration, said as such
// (exit 2), not an endpoint that cannot be reached.
func TestHTTPSToAPlainEndpoint(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	srv.Bucket(t, "bkt")
	cfg := srv.Config()
	cfg.Endpoint = strings.Replace(cfg.Endpoint, "http://", "https://", 1)
	c := newClient(t, cfg)
	_, err := c.Open(context.Background(), objstore.URL{Bucket: "bkt", Key: "m"})
	if !errors.Is(err, objstore.ErrTLS) || exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "use an http:// endpoint") {
		t.Fatalf("https to a plain http endpoint = %v (exit %d), want ErrTLS, exit 2, saying to use http://", err, exitcode.Of(err))
	}
}

// A --s3-ca file with no certificate in it is named, as a usage error.
func TestCAFileWithoutCertificates(t *testing.T) {
	s3test.Isolate(t)
	bad := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(bad, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := objstore.New(context.Background(), withKeys(t, objstore.Config{Endpoint: "https://127.0.0.1:9", CAFile: bad}))
	if err == nil || exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Fatalf("CA file without certificates = %v (exit %d), want a usage error naming it", err, exitcode.Of(err))
	}
}

// brokenBody passes n bytes of a response, then fails as a connection cut mid-transfer.
type brokenBody struct {
	r io.ReadCloser
	n int
}

func (b *brokenBody) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	p = p[:min(len(p), b.n)]
	n, err := b.r.Read(p)
	b.n -= n
	return n, err
}

func (b *brokenBody) Close() error { return b.r.Close() }

// A transfer cut in its middle (the storage or the network gone) says how far it got, and
// is a runtime failure: the object is not damaged, and a reader of the bytes must not take
// the cut for a short object (io.ErrUnexpectedEOF is not in the chain).
func TestBrokenTransferMessage(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	srv.Bucket(t, "bkt")
	c := newClient(t, srv.Config())
	u := objstore.URL{Bucket: "bkt", Key: "m"}
	put(t, c, u, bytes.Repeat([]byte("0 1 2 y 1 0 0\n"), 1000))
	objstore.InterceptHTTP(c, func(req *http.Request, next aws.HTTPClient) (*http.Response, error) {
		resp, err := next.Do(req)
		if err == nil && req.Method == http.MethodGet {
			resp.Body = &brokenBody{r: resp.Body, n: 1000}
		}
		return resp, err
	})
	_, err := readAll(c, u)
	if err == nil || exitcode.Of(err) != exitcode.Runtime || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, objstore.ErrChecksum) ||
		!strings.Contains(err.Error(), "the transfer from "+srv.Endpoint+" broke after 1000 of 14000 bytes") {
		t.Fatalf("read cut mid-transfer = %v (exit %d), want a runtime failure saying how far it got", err, exitcode.Of(err))
	}
}

package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/objstore"
	"github.com/innowarm/innowarm/internal/objstore/s3test"
)

// keys lists the bucket's keys, hidden ones included, as the storage has them.
func keys(t *testing.T, srv *s3test.Server, bucket string) []string {
	t.Helper()
	out, err := srv.Client(t).ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var ks []string
	for _, o := range out.Contents {
		ks = append(ks, aws.ToString(o.Key))
	}
	return ks
}

// A PUT cancelled (Ctrl-C during snapshot -o s3://...) after the storage received the whole
// body stores the object all the same: here the storage's answer is lost to the cancel, as
// when the cancel comes between the last byte sent and the answer. Put must remove the
// object it was writing, and nothing else: the other objects, another write's temporary
// object among them, stay.
func TestCancelledPutRemovesItsObject(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	srv.Bucket(t, "bkt")
	c := newClient(t, srv.Config())
	other := objstore.URL{Bucket: "bkt", Key: "db1/.hot.manifest.gz.tmp-other"}
	put(t, c, other, []byte("another write's\n"))
	put(t, c, other.WithKey("db1/hot.manifest.gz"), []byte("the target\n"))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stored := answerStoredPutsWith(t, c, func(req *http.Request) (*http.Response, error) {
		cancel() // the answer is lost: what the transport returns for a cancelled request
		return nil, &url.Error{Op: "Put", URL: req.URL.String(), Err: context.Canceled}
	})
	u := other.WithKey("db1/.hot.manifest.gz.tmp-mine")
	body := bytes.Repeat([]byte("0 1 2 y 1 0 0\n"), 10_000)
	d := objstore.NewDigester()
	d.Write(body)
	_, err := c.Put(ctx, u, bytes.NewReader(body), d.Digests(), "application/gzip")
	if !errors.Is(err, context.Canceled) || exitcode.Of(err) != exitcode.Interrupted {
		t.Fatalf("cancelled put = %v (exit %d), want context.Canceled", err, exitcode.Of(err))
	}
	if stored.Load() == 0 {
		t.Fatal("the upload did not reach the storage: the test does not reach the case")
	}
	got := keys(t, srv, "bkt")
	want := []string{other.Key, "db1/hot.manifest.gz"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("objects after a cancelled put: %q, want %q", got, want)
	}
	if _, err := os.Stat(srv.ObjectPath("bkt", u.Key)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the cancelled object's file: %v", err)
	}
}

// blockingBody passes the first n bytes of a request body, says so, and then blocks until
// the request is cancelled, as an upload does when Ctrl-C comes in its middle.
type blockingBody struct {
	r       io.ReadCloser
	n       int
	ctx     context.Context
	started chan struct{}
	once    atomic.Bool
}

func (b *blockingBody) Read(p []byte) (int, error) {
	if b.n <= 0 {
		if b.once.CompareAndSwap(false, true) {
			close(b.started)
		}
		<-b.ctx.Done()
		return 0, b.ctx.Err()
	}
	p = p[:min(len(p), b.n)]
	n, err := b.r.Read(p)
	b.n -= n
	return n, err
}

func (b *blockingBody) Close() error { return b.r.Close() }

// A PUT cancelled in the middle of its upload: Put returns at once with the cancel, and
// nothing of the object is left on the storage, visible or hidden.
func TestPutCancelledMidUploadLeavesNothing(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	srv.Bucket(t, "bkt")
	c := newClient(t, srv.Config())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{})
	var puts atomic.Int32
	objstore.InterceptHTTP(c, func(req *http.Request, next aws.HTTPClient) (*http.Response, error) {
		if req.Method == http.MethodPut {
			puts.Add(1)
			req.Body = &blockingBody{r: req.Body, n: 100_000, ctx: req.Context(), started: started}
		}
		return next.Do(req)
	})
	go func() {
		<-started // half the body is on its way to the storage
		cancel()
	}()
	u := objstore.URL{Bucket: "bkt", Key: ".hot.manifest.tmp-x"}
	body := bytes.Repeat([]byte("0 1 2 y 1 0 0\n"), 20_000)
	d := objstore.NewDigester()
	d.Write(body)
	_, err := c.Put(ctx, u, bytes.NewReader(body), d.Digests(), "text/plain")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("put cancelled mid-upload = %v, want context.Canceled", err)
	}
	if puts.Load() != 1 {
		t.Fatalf("%d PUT requests, want 1 (a cancel is not retried)", puts.Load())
	}
	if got := keys(t, srv, "bkt"); len(got) != 0 {
		t.Fatalf("objects after a cancelled put: %q", got)
	}
	// Nor a part of it in the server's own directory (versitygw keeps uploads in progress
	// beside the buckets).
	matches, _ := filepath.Glob(filepath.Join(srv.Dir, "bkt", ".hot.manifest.tmp-x*"))
	if len(matches) != 0 {
		t.Fatalf("left on the storage: %v", matches)
	}
}

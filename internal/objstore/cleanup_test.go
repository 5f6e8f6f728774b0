package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/manifest/location"
	"github.com/innowarm/innowarm/internal/objstore"
	"github.com/innowarm/innowarm/internal/objstore/s3test"
)

// safetyBound only keeps a broken build from hanging the test run: every wait below is for
// an event that the code under test makes happen at once.
const safetyBound = 2 * time.Minute

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(safetyBound):
		t.Fatalf("%s: did not happen", what)
	}
}

func manifestBody(n int) ([]byte, objstore.Digests) {
	body := bytes.Repeat([]byte("0 1 2 y 1 0 0\n"), n)
	d := objstore.NewDigester()
	d.Write(body)
	return body, d.Digests()
}

// A cancel that comes once the whole body of a PUT has gone out: the storage has it and
// stores it whatever the client does, and may do so after the client's DELETE of the same
// key (its answer is the only sign that it is done). Here the storage stores the body after
// whatever the client does next, unless the client is still waiting for its answer. Put
// must not give up on such a request: it waits for the answer and deletes after it, so
// nothing is left.
func TestCancelledPutStoredAfterItsDeleteLeavesNothing(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	srv.Bucket(t, "bkt")
	c := newClient(t, srv.Config())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	deleted := make(chan struct{})
	var deleteOnce sync.Once
	committed := make(chan struct{})
	var abandoned atomic.Bool
	objstore.InterceptHTTP(c, func(req *http.Request, next aws.HTTPClient) (*http.Response, error) {
		switch req.Method {
		case http.MethodDelete:
			resp, err := next.Do(req)
			deleteOnce.Do(func() { close(deleted) })
			return resp, err
		case http.MethodPut:
			body, err := io.ReadAll(req.Body) // the whole body is on its way
			if err != nil {
				t.Errorf("reading the upload's body: %v", err)
				return nil, err
			}
			cancel() // Ctrl-C now
			late := req.Clone(context.Background())
			late.Body, late.GetBody = io.NopCloser(bytes.NewReader(body)), nil
			if req.Context().Err() != nil {
				// The client gave up on the request: the storage, which has the whole
				// body, stores it after the client's next move.
				abandoned.Store(true)
				go func() {
					defer close(committed)
					<-deleted
					if resp, err := next.Do(late); err == nil {
						resp.Body.Close()
					}
				}()
				return nil, &url.Error{Op: "Put", URL: req.URL.String(), Err: context.Canceled}
			}
			resp, err := next.Do(late)
			close(committed)
			return resp, err
		}
		return next.Do(req)
	})
	u := objstore.URL{Bucket: "bkt", Key: "db1/.hot.manifest.tmp-late"}
	body, d := manifestBody(10_000)
	_, err := c.Put(ctx, u, bytes.NewReader(body), d, "text/plain")
	if !errors.Is(err, context.Canceled) || exitcode.Of(err) != exitcode.Interrupted {
		t.Fatalf("cancelled put = %v (exit %d), want context.Canceled", err, exitcode.Of(err))
	}
	waitFor(t, committed, "the storage storing the upload")
	if got := keys(t, srv, "bkt"); len(got) != 0 {
		t.Fatalf("objects after a cancelled put whose upload the storage stored (client gave up on it: %v): %q", abandoned.Load(), got)
	}
}

// xmlError is an S3 error answer.
func xmlError(req *http.Request, status int, code string) *http.Response {
	body := `<?xml version="1.0" encoding="UTF-8"?><Error><Code>` + code + `</Code><Message>injected by the test</Message></Error>`
	return &http.Response{
		Status: strconv.Itoa(status) + " " + http.StatusText(status), StatusCode: status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/xml"}, "Content-Length": {strconv.Itoa(len(body))}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: req,
	}
}

// An upload that fails for another reason than a cancel, after the storage stored the
// object (its answer lost to a dropped connection, or replaced by a server error, on every
// attempt), leaves nothing behind either: Put deletes its key once the request has returned.
func TestFailedPutLeavesNothing(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	srv.Bucket(t, "bkt")
	for _, tc := range []struct {
		name string
		fail func(req *http.Request) (*http.Response, error)
	}{
		{"server error", func(req *http.Request) (*http.Response, error) {
			return xmlError(req, http.StatusInternalServerError, "InternalError"), nil
		}},
		{"connection reset", func(req *http.Request) (*http.Response, error) {
			return nil, &url.Error{Op: "Put", URL: req.URL.String(), Err: &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, srv.Config())
			stored := answerStoredPutsWith(t, c, tc.fail)
			u := objstore.URL{Bucket: "bkt", Key: "db1/.hot.manifest.tmp-" + strings.ReplaceAll(tc.name, " ", "-")}
			body, d := manifestBody(1000)
			_, err := c.Put(context.Background(), u, bytes.NewReader(body), d, "text/plain")
			if err == nil || errors.Is(err, context.Canceled) {
				t.Fatalf("put whose every answer failed = %v, want its failure", err)
			}
			if stored.Load() == 0 {
				t.Fatal("nothing reached the storage: the test does not reach the case")
			}
			for _, k := range keys(t, srv, "bkt") {
				if k == u.Key {
					t.Fatalf("%s left after a failed put (%v)", k, err)
				}
			}
		})
	}
}

// faultProxy stands between innowarm and the storage; fault, when it returns true, has
// answered the request itself.
func faultProxy(t *testing.T, srv *s3test.Server, fault func(w http.ResponseWriter, r *http.Request) bool) string {
	t.Helper()
	target, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !fault(w, r) {
			rp.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(p.Close)
	return p.URL
}

// A manifest write whose later steps fail (the stored object's check, the copy over the
// target) removes its temporary object, and leaves the previous manifest.
func TestFailedObjectWriteLeavesNoTemporaryObject(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	srv.Bucket(t, "bkt")
	s3test.Isolate(t)
	withKeys(t, objstore.Config{})
	for _, tc := range []struct {
		name  string
		fault func(w http.ResponseWriter, r *http.Request) bool
	}{
		{"copy refused", func(w http.ResponseWriter, r *http.Request) bool {
			if r.Method == http.MethodPut && r.Header.Get("X-Amz-Copy-Source") != "" {
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusForbidden)
				io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>injected</Message></Error>`)
				return true
			}
			return false
		}},
		{"copy's answer lost", func(w http.ResponseWriter, r *http.Request) bool {
			if r.Method == http.MethodPut && r.Header.Get("X-Amz-Copy-Source") != "" {
				panic(http.ErrAbortHandler) // the connection drops without an answer
			}
			return false
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "db1/" + strings.ReplaceAll(tc.name, " ", "-") + ".manifest"
			good := &location.Store{S3: objstore.Config{Endpoint: srv.Endpoint, Region: s3test.Region}, TempDir: t.TempDir()}
			h, produce := tinyManifest("before")
			loc := "s3://bkt/" + key
			if _, err := good.Write(context.Background(), loc, h, manifest.WriteOptions{}, produce); err != nil {
				t.Fatal(err)
			}
			var faulty atomic.Bool
			proxied := &location.Store{S3: objstore.Config{Endpoint: faultProxy(t, srv, func(w http.ResponseWriter, r *http.Request) bool {
				if r.Method == http.MethodPut && r.Header.Get("X-Amz-Copy-Source") != "" {
					faulty.Store(true)
				}
				return tc.fault(w, r)
			}), Region: s3test.Region}, TempDir: t.TempDir()}
			h, produce = tinyManifest("after")
			_, err := proxied.Write(context.Background(), loc, h, manifest.WriteOptions{}, produce)
			if err == nil || !faulty.Load() {
				t.Fatalf("write through the fault = %v (fault injected: %v), want a failure", err, faulty.Load())
			}
			m, err := good.Load(context.Background(), loc)
			if err != nil || m.Header.Hostname != "before" {
				t.Fatalf("the target after the failed write: %+v, %v", m, err)
			}
			for _, k := range keys(t, srv, "bkt") {
				if strings.Contains(k, ".tmp-") {
					t.Errorf("left behind: %s", k)
				}
			}
		})
	}
}

func tinyManifest(host string) (manifest.Header, func(*manifest.Writer) error) {
	h := manifest.Header{
		ServerID: "3e11fa47-71ca-11e1-9e33-c80aa9429562", Hostname: host, Flavor: "MariaDB",
		ServerVersion: "10.11.19-MariaDB", PageSize: 16 << 10, PoolBytes: 100 << 14, PoolPages: 100,
		CapturedAt: time.Date(2026, 3, 1, 10, 0, 5, 0, time.UTC), ToolVersion: "test", Captures: 1,
	}
	return h, func(w *manifest.Writer) error {
		for i := range 100 {
			o := manifest.Object{SpaceID: 5, PageType: "INDEX", Schema: "shop", Table: "t", Index: "PRIMARY"}
			if err := w.Page(o, uint32(i), uint32(i), false); err != nil {
				return err
			}
		}
		return nil
	}
}

// A storage that goes silent once it has the whole body of a cancelled upload does not hold
// the user who pressed Ctrl-C: Put waits for its answer only up to CleanupTimeout, then
// gives up on the request and still deletes the key.
func TestCancelledPutWaitsForTheAnswerBoundedly(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	srv.Bucket(t, "bkt")
	c := newClient(t, srv.Config())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var outlived atomic.Bool
	deletes := make(chan struct{}, 10)
	objstore.InterceptHTTP(c, func(req *http.Request, next aws.HTTPClient) (*http.Response, error) {
		switch req.Method {
		case http.MethodPut:
			if _, err := io.Copy(io.Discard, req.Body); err != nil {
				return nil, err
			}
			cancel()
			outlived.Store(req.Context().Err() == nil)
			<-req.Context().Done() // never answered
			return nil, &url.Error{Op: "Put", URL: req.URL.String(), Err: req.Context().Err()}
		case http.MethodDelete:
			deletes <- struct{}{}
		}
		return next.Do(req)
	})
	u := objstore.URL{Bucket: "bkt", Key: ".m.tmp-silent"}
	body, d := manifestBody(1000)
	t0 := time.Now()
	_, err := c.Put(ctx, u, bytes.NewReader(body), d, "text/plain")
	el := time.Since(t0)
	if !errors.Is(err, context.Canceled) || exitcode.Of(err) != exitcode.Interrupted {
		t.Fatalf("cancelled put = %v (exit %d), want context.Canceled", err, exitcode.Of(err))
	}
	if !outlived.Load() {
		t.Error("the request of an upload whose whole body was sent ended with the cancel: the storage may still store it after the DELETE")
	}
	if el > 2*objstore.CleanupTimeout+10*time.Second {
		t.Errorf("a cancelled put took %s against a silent storage, want about CleanupTimeout (%s)", el, objstore.CleanupTimeout)
	}
	if len(deletes) == 0 {
		t.Error("no DELETE after the cancelled put")
	}
}

// answerStoredPutsWith has every PUT of c reach the storage, which stores it, and then
// answers it with answer instead of the storage's answer (an error, a cancel: the outcome
// the client sees hides that the object was stored). It counts the PUTs stored.
func answerStoredPutsWith(t *testing.T, c *objstore.Client, answer func(*http.Request) (*http.Response, error)) *atomic.Int32 {
	var stored atomic.Int32
	objstore.InterceptHTTP(c, func(req *http.Request, next aws.HTTPClient) (*http.Response, error) {
		if req.Method != http.MethodPut {
			return next.Do(req)
		}
		resp, err := next.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("the upload itself: %v, %v", resp, err)
			return resp, err
		}
		resp.Body.Close()
		stored.Add(1)
		return answer(req)
	})
	return &stored
}

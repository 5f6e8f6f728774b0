package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/objstore"
	"github.com/innowarm/innowarm/internal/objstore/s3test"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in          string
		bucket, key string
		bad         string
	}{
		{in: "s3://b/k", bucket: "b", key: "k"},
		{in: "s3://manifests/prod/db1/hot.manifest.gz", bucket: "manifests", key: "prod/db1/hot.manifest.gz"},
		{in: "s3://b", bad: "no object name"},
		{in: "s3://b/", bad: "no object name"},
		{in: "s3://b/prefix/", bad: "no object name"},
		{in: "s3:///k", bad: "no bucket"},
		{in: "gs://b/k", bad: "only s3://"},
		{in: "s3://b/" + strings.Repeat("k", 1025), bad: "S3 allows 1024"},
	} {
		u, err := objstore.Parse(c.in)
		if c.bad != "" {
			if err == nil || !strings.Contains(err.Error(), c.bad) || exitcode.Of(err) != exitcode.Usage {
				t.Errorf("Parse(%q) = %v, want a usage error saying %q", c.in, err, c.bad)
			}
			continue
		}
		if err != nil || u.Bucket != c.bucket || u.Key != c.key || u.String() != c.in {
			t.Errorf("Parse(%q) = %+v, %v", c.in, u, err)
		}
	}
	for s, want := range map[string]bool{"s3://b/k": true, "gs://b/k": true, "hot.manifest": false, "./a://b": false, "-": false, "/tmp/x://y": false} {
		if objstore.IsURL(s) != want {
			t.Errorf("IsURL(%q) = %v", s, !want)
		}
	}
}

func newClient(t *testing.T, cfg objstore.Config) *objstore.Client {
	t.Helper()
	s3test.Isolate(t)
	c, err := objstore.New(context.Background(), withKeys(t, cfg))
	if err != nil {
		t.Fatalf("objstore.New: %v", err)
	}
	return c
}

// withKeys gives the root account's keys through the environment, as a user would.
func withKeys(t *testing.T, cfg objstore.Config) objstore.Config {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	return cfg
}

func put(t *testing.T, c *objstore.Client, u objstore.URL, body []byte) objstore.Info {
	t.Helper()
	d := objstore.NewDigester()
	d.Write(body)
	in, err := c.Put(context.Background(), u, bytes.NewReader(body), d.Digests(), "text/plain")
	if err != nil {
		t.Fatalf("put %s: %v", u, err)
	}
	return in
}

func readAll(c *objstore.Client, u objstore.URL) ([]byte, error) {
	r, err := c.Open(context.Background(), u)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

func TestPutReadVerifyCopyDelete(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	srv.Bucket(t, "bkt")
	c := newClient(t, srv.Config())
	ctx := context.Background()
	u := objstore.URL{Bucket: "bkt", Key: "a/b/hot.manifest"}
	body := bytes.Repeat([]byte("innowarm-manifest 2\n"), 50_000)
	put(t, c, u, body)
	got, err := readAll(c, u)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("read back %d bytes, %v; want %d", len(got), err, len(body))
	}
	d := objstore.NewDigester()
	d.Write(body)
	in, err := c.Verify(ctx, u, d.Digests())
	if err != nil || in.Size != int64(len(body)) || in.SHA256 != d.Digests().SHA256Hex() {
		t.Fatalf("verify: %+v, %v", in, err)
	}
	other := u.WithKey("a/b/hot.manifest.1")
	if err := c.Copy(ctx, u, other, in.ETag); err != nil {
		t.Fatalf("copy: %v", err)
	}
	if _, err := c.Verify(ctx, other, d.Digests()); err != nil {
		t.Fatalf("the copy: %v", err)
	}
	// A copy from an object that changed since it was looked at is refused.
	put(t, c, u, []byte("something else\n"))
	if err := c.Copy(ctx, u, other, in.ETag); err == nil {
		t.Fatal("copy with a stale ETag succeeded")
	}
	if _, err := c.Verify(ctx, u, d.Digests()); !errors.Is(err, objstore.ErrChecksum) {
		t.Fatalf("verify of a replaced object = %v, want ErrChecksum", err)
	}
	listed, err := c.List(ctx, u.WithKey("a/b/hot"), 10)
	if err != nil || len(listed) != 2 {
		t.Fatalf("list = %+v, %v", listed, err)
	}
	if err := c.Delete(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, other); err != nil {
		t.Fatalf("deleting a missing object: %v", err)
	}
	if _, err := c.Stat(ctx, other); !errors.Is(err, objstore.ErrNotFound) || exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("stat of a deleted object = %v", err)
	}
	prefix, err := c.ReadPrefix(ctx, u, 9)
	if err != nil || string(prefix) != "something" {
		t.Fatalf("read prefix = %q, %v", prefix, err)
	}
}

// TestDamagedObjectRefused changes an object's bytes behind the server's back (same size):
// a read must fail with ErrChecksum at the end instead of returning io.EOF.
func TestDamagedObjectRefused(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	srv.Bucket(t, "bkt")
	c := newClient(t, srv.Config())
	u := objstore.URL{Bucket: "bkt", Key: "m"}
	body := bytes.Repeat([]byte("0 1 2 y 1 0 0\n"), 10_000)
	put(t, c, u, body)
	path := srv.ObjectPath("bkt", "m")
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("9"), int64(len(body)/2)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = readAll(c, u)
	if !errors.Is(err, objstore.ErrChecksum) || exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("read of a damaged object = %v, want ErrChecksum (exit 2)", err)
	}
	// Cut short: the size no longer matches what the server says it stored.
	if err := os.Truncate(path, int64(len(body)/2)); err != nil {
		t.Fatal(err)
	}
	if _, err = readAll(c, u); err == nil {
		t.Fatal("read of a truncated object succeeded")
	}
}

func TestErrorsAreOneLineWithTheirExitCode(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	srv.Bucket(t, "bkt")
	ctx := context.Background()
	c := newClient(t, srv.Config())
	missingBucket := objstore.URL{Bucket: "nobucket", Key: "m"}
	missingKey := objstore.URL{Bucket: "bkt", Key: "nothing/here"}
	check := func(what string, err error, kind error, code int, says string) {
		t.Helper()
		if err == nil || !errors.Is(err, kind) || exitcode.Of(err) != code || !strings.Contains(err.Error(), says) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s = %v (exit %d), want %v, exit %d, saying %q on one line", what, err, exitcode.Of(err), kind, code, says)
		}
	}
	_, err := c.Open(ctx, missingBucket)
	check("open in a missing bucket", err, objstore.ErrNoBucket, exitcode.Usage, `bucket "nobucket" does not exist`)
	_, err = c.Stat(ctx, missingBucket)
	check("stat in a missing bucket", err, objstore.ErrNoBucket, exitcode.Usage, `bucket "nobucket" does not exist`)
	check("bucket check", c.CheckBucket(ctx, missingBucket), objstore.ErrNoBucket, exitcode.Usage, "does not exist")
	_, err = c.Open(ctx, missingKey)
	check("open of a missing object", err, objstore.ErrNotFound, exitcode.Usage, "s3://bkt/nothing/here: no such object")
	_, err = c.Stat(ctx, missingKey)
	check("stat of a missing object", err, objstore.ErrNotFound, exitcode.Usage, "no such object")

	// Something that is not S3 at the endpoint (a web server, a proxy) answering 404 to
	// everything is not taken for a missing object.
	web := httptest.NewServer(http.NotFoundHandler())
	defer web.Close()
	notS3 := newClient(t, objstore.Config{Endpoint: web.URL})
	_, err = notS3.Open(ctx, missingKey)
	check("open at a web server", err, objstore.ErrNotS3, exitcode.Usage, "without an S3 error: check --s3-endpoint")
	_, err = notS3.Stat(ctx, missingKey)
	check("stat at a web server", err, objstore.ErrNotS3, exitcode.Usage, "without an S3 error")

	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	bad, err := objstore.New(ctx, srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Open(ctx, missingKey)
	check("open with a wrong secret", err, objstore.ErrDenied, exitcode.Usage, "SignatureDoesNotMatch")
	_, err = bad.Stat(ctx, missingKey)
	check("stat with a wrong secret", err, objstore.ErrDenied, exitcode.Usage, "access denied")
	t.Setenv("AWS_ACCESS_KEY_ID", "nosuchuser")
	bad, _ = objstore.New(ctx, srv.Config())
	_, err = bad.Open(ctx, missingKey)
	check("open with an unknown key", err, objstore.ErrDenied, exitcode.Usage, "refused the credentials")
	_, err = bad.Stat(ctx, missingKey)
	check("stat with an unknown key", err, objstore.ErrDenied, exitcode.Usage, "refused the credentials")

	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	_, err = objstore.New(ctx, srv.Config())
	if err == nil || exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "S3 credentials: none found") {
		t.Errorf("no credentials anywhere = %v, want a usage error", err)
	}
}

func TestLostEndpointIsARuntimeFailureWithinBoundedTime(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	srv.Bucket(t, "bkt")
	c := newClient(t, srv.Config())
	u := objstore.URL{Bucket: "bkt", Key: "m"}
	put(t, c, u, []byte("x\n"))
	srv.Kill()
	t0 := time.Now()
	_, err := c.Open(context.Background(), u)
	if !errors.Is(err, objstore.ErrUnreachable) || exitcode.Of(err) != exitcode.Runtime || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("open with the endpoint gone = %v (exit %d), want ErrUnreachable, exit 1", err, exitcode.Of(err))
	}
	// The attempts' back-offs are bounded: about MaxAttempts × MaxBackoff at most.
	if el := time.Since(t0); el > objstore.MaxAttempts*objstore.MaxBackoff+10*time.Second {
		t.Fatalf("gave up after %s", el)
	}
	srv.Restart(t)
	if got, err := readAll(c, u); err != nil || string(got) != "x\n" {
		t.Fatalf("after a restart: %q, %v", got, err)
	}
}

func TestTLSWithCustomCA(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{TLS: true})
	srv.Bucket(t, "bkt")
	ctx := context.Background()
	c := newClient(t, srv.Config()) // --s3-ca
	u := objstore.URL{Bucket: "bkt", Key: "m"}
	put(t, c, u, []byte("over TLS\n"))

	noCA := srv.Config()
	noCA.CAFile = ""
	c2, err := objstore.New(ctx, noCA)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c2.Open(ctx, u)
	if !errors.Is(err, objstore.ErrTLS) || exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "--s3-ca") {
		t.Fatalf("TLS without the CA = %v (exit %d), want ErrTLS, exit 2, naming --s3-ca", err, exitcode.Of(err))
	}
	// The SDK's own variable works as well.
	t.Setenv("AWS_CA_BUNDLE", srv.CAFile)
	c3, err := objstore.New(ctx, noCA)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := readAll(c3, u); err != nil || string(got) != "over TLS\n" {
		t.Fatalf("with AWS_CA_BUNDLE: %q, %v", got, err)
	}
	// An http:// endpoint in front of a TLS server says so.
	plain := noCA
	plain.Endpoint = strings.Replace(srv.Endpoint, "https://", "http://", 1)
	c4, _ := objstore.New(ctx, plain)
	_, err = c4.Open(ctx, u)
	if err == nil || exitcode.Of(err) == exitcode.OK {
		t.Fatalf("http to a TLS server = %v", err)
	}
}

// TestConfigFromEnvironmentAndProfile: the endpoint, region and keys come the SDK's way,
// without a flag; a named profile's shared credentials file works; the region defaults for a
// custom endpoint and is required on AWS.
func TestConfigFromEnvironmentAndProfile(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	srv.Bucket(t, "bkt")
	ctx := context.Background()
	srv.SetEnv(t)
	c, err := objstore.New(ctx, objstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	u := objstore.URL{Bucket: "bkt", Key: "m"}
	put(t, c, u, []byte("env\n"))
	if c.Endpoint() != srv.Endpoint {
		t.Errorf("endpoint %q, want %q from AWS_ENDPOINT_URL_S3", c.Endpoint(), srv.Endpoint)
	}

	// A profile in the shared files, chosen with Config.Profile (--s3-profile) or AWS_PROFILE.
	dir := t.TempDir()
	creds := filepath.Join(dir, "credentials")
	conf := filepath.Join(dir, "config")
	os.WriteFile(creds, []byte("[default]\naws_access_key_id = wrong\naws_secret_access_key = wrong\n[warm]\naws_access_key_id = "+s3test.AccessKey+"\naws_secret_access_key = "+s3test.SecretKey+"\n"), 0o600)
	os.WriteFile(conf, []byte("[profile warm]\nregion = "+s3test.Region+"\nendpoint_url = "+srv.Endpoint+"\n"), 0o600)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", creds)
	t.Setenv("AWS_CONFIG_FILE", conf)
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL_S3", "AWS_REGION"} {
		os.Unsetenv(k)
	}
	c, err = objstore.New(ctx, objstore.Config{Profile: "warm"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := readAll(c, u); err != nil || string(got) != "env\n" {
		t.Fatalf("with --s3-profile warm: %q, %v", got, err)
	}
	t.Setenv("AWS_PROFILE", "warm")
	c, err = objstore.New(ctx, objstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readAll(c, u); err != nil {
		t.Fatalf("with AWS_PROFILE=warm: %v", err)
	}
	if _, err := objstore.New(ctx, objstore.Config{Profile: "nosuch"}); err == nil || exitcode.Of(err) != exitcode.Usage {
		t.Errorf("a missing profile = %v, want a usage error", err)
	}
	os.Unsetenv("AWS_PROFILE")

	// Keys from the environment, endpoint given, no region: us-east-1 for a custom endpoint.
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "none"))
	c, err = objstore.New(ctx, objstore.Config{Endpoint: srv.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readAll(c, u); err != nil {
		t.Fatalf("custom endpoint without a region: %v", err)
	}
	// Addressed by name, the bucket goes into the host name unless requests use path
	// style: bkt.localhost does not resolve here, so only the path-style default works.
	byName := strings.Replace(srv.Endpoint, "127.0.0.1", "localhost", 1)
	if c, err = objstore.New(ctx, objstore.Config{Endpoint: byName}); err != nil {
		t.Fatal(err)
	}
	if _, err := readAll(c, u); err != nil {
		t.Fatalf("%s with path style by default: %v", byName, err)
	}
	vc, err := objstore.New(ctx, objstore.Config{Endpoint: byName, Addressing: objstore.AddressingVirtualHost})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readAll(vc, u); err == nil || !strings.Contains(err.Error(), "bkt.localhost") {
		t.Errorf("virtual-hosted addressing to %s = %v, want a lookup of bkt.localhost", byName, err)
	}
	// AWS itself needs a region.
	if _, err := objstore.New(ctx, objstore.Config{}); err == nil || !strings.Contains(err.Error(), "no region") || exitcode.Of(err) != exitcode.Usage {
		t.Errorf("no endpoint and no region = %v, want a usage error", err)
	}
	// A malformed endpoint.
	if _, err := objstore.New(ctx, objstore.Config{Endpoint: "127.0.0.1:9000"}); err == nil || exitcode.Of(err) != exitcode.Usage {
		t.Errorf("endpoint without a scheme = %v, want a usage error", err)
	}
}

// TestForeignObjectStillChecked: an object uploaded by another tool (no innowarm metadata)
// is checked against the checksum the storage keeps.
func TestForeignObjectStillChecked(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	srv.Bucket(t, "bkt")
	c := newClient(t, srv.Config())
	body := bytes.Repeat([]byte("foreign line\n"), 1000)
	if _, err := srv.Client(t).PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("f"), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	u := objstore.URL{Bucket: "bkt", Key: "f"}
	if got, err := readAll(c, u); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("read: %d bytes, %v", len(got), err)
	}
	f, err := os.OpenFile(srv.ObjectPath("bkt", "f"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("X"), 100)
	f.Close()
	if _, err := readAll(c, u); !errors.Is(err, objstore.ErrChecksum) {
		t.Fatalf("damaged foreign object = %v, want ErrChecksum", err)
	}
}

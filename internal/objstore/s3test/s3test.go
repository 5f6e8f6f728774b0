// Package s3test runs a real S3 server for tests: versitygw (Apache-2.0), an S3 gateway over
// a directory, on a free loopback port in the test's temporary directory, killed when the
// test ends. Its binary is go install'ed once into GOBIN (GOPATH/bin) when missing or of
// another version (scripts/ensure-deps.sh s3server does the same before make test).
//
//	srv := s3test.Start(t, s3test.Options{})
//	srv.Bucket(t, "manifests")
//	client, err := objstore.New(ctx, srv.Config())
package s3test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"debug/buildinfo"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/innowarm/innowarm/internal/objstore"
)

// Version is the versitygw release the tests run (scripts/ensure-deps.sh names it too).
const Version = "v1.8.0"

const module = "github.com/versity/versitygw"

// The root account the server is started with.
const (
	AccessKey = "innowarmtest"
	SecretKey = "innowarm-test-secret-key"
	Region    = "us-east-1"
)

// Options shape a server.
type Options struct {
	// TLS serves https with a certificate signed by a CA made for the test (Server.CAFile).
	TLS bool
}

// Server is one running versitygw.
type Server struct {
	Endpoint string // http(s)://127.0.0.1:PORT
	Dir      string // the posix backend's root: a bucket is a directory below it
	CAFile   string // with Options.TLS: the CA's certificate (PEM)
	addr     string
	bin      string
	args     []string
	logPath  string
	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{}
}

// Start runs a server until the test ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	bin := Binary(t)
	s, err := Launch(bin, t.TempDir(), o)
	if err != nil {
		t.Fatalf("s3test: %v", err)
	}
	t.Cleanup(s.Kill)
	return s
}

// Launch runs a server of binary bin (EnsureBinary) with its data and log under root, for
// callers that are not tests (the benchmarks); Kill stops it.
func Launch(bin, root string, o Options) (*Server, error) {
	s := &Server{Dir: filepath.Join(root, "data"), logPath: filepath.Join(root, "versitygw.log"), bin: bin}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, err
	}
	scheme := "http"
	var tlsArgs []string
	if o.TLS {
		cert, key, ca, err := makeCert(root)
		if err != nil {
			return nil, fmt.Errorf("certificate: %w", err)
		}
		s.CAFile, scheme = ca, "https"
		tlsArgs = []string{"--cert", cert, "--key", key}
	}
	var err error
	for range 5 { // a free port can be taken by someone else before the server binds it
		if s.addr, err = freePort(); err != nil {
			return nil, err
		}
		s.Endpoint = scheme + "://" + s.addr
		s.args = append([]string{"--port", s.addr, "--access", AccessKey, "--secret", SecretKey, "--region", Region, "--quiet"}, tlsArgs...)
		s.args = append(s.args, "posix", s.Dir)
		if err = s.start(); err == nil {
			return s, nil
		}
	}
	return nil, err
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func (s *Server) start() error {
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(s.bin, s.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, and killed with the test binary if that dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start versitygw: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			log, _ := os.ReadFile(s.logPath)
			return fmt.Errorf("versitygw exited at start: %s", lastLines(string(log), 10))
		default:
		}
		if c, err := net.DialTimeout("tcp", s.addr, 200*time.Millisecond); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Kill()
	return fmt.Errorf("versitygw did not listen on %s within 30 s", s.addr)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// Kill stops the server with SIGKILL, as a crash would, and waits until it is gone.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// Restart starts the server again on the same directory and port (after Kill).
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Kill()
	var err error
	for range 50 { // the port may take a moment to be free again
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("s3test: restart: %v", err)
}

// Config reaches the server with explicit settings (no environment needed).
func (s *Server) Config() objstore.Config {
	return objstore.Config{Endpoint: s.Endpoint, Region: Region, CAFile: s.CAFile}
}

// Env is the environment an AWS SDK client (innowarm run as a process) needs to reach the
// server: the root account's keys, the endpoint and region; no instance metadata lookups.
func (s *Server) Env() []string {
	env := []string{
		"AWS_ACCESS_KEY_ID=" + AccessKey, "AWS_SECRET_ACCESS_KEY=" + SecretKey,
		"AWS_ENDPOINT_URL_S3=" + s.Endpoint, "AWS_REGION=" + Region, "AWS_EC2_METADATA_DISABLED=true",
	}
	if s.CAFile != "" {
		env = append(env, "AWS_CA_BUNDLE="+s.CAFile)
	}
	return env
}

// SetEnv sets Env for the rest of the test (tests that call it cannot run in parallel),
// after Isolate.
func (s *Server) SetEnv(t *testing.T) {
	t.Helper()
	Isolate(t)
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// Isolate clears the AWS settings of the environment for the rest of the test and points
// the shared config files at a directory without any, so that the developer's own ~/.aws
// and instance metadata are not used.
func Isolate(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") {
			t.Setenv(k, "") // restored when the test ends
			os.Unsetenv(k)
		}
	}
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// Client is a plain SDK client for the test's own set-up and checks.
func (s *Server) Client(t testing.TB) *s3.Client {
	t.Helper()
	return s.client()
}

func (s *Server) client() *s3.Client {
	cfg := aws.Config{Region: Region, Credentials: credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, "")}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(s.Endpoint)
		o.UsePathStyle = true
		if s.CAFile != "" {
			o.HTTPClient = caClient(s.CAFile)
		}
	})
}

func caClient(caFile string) *http.Client {
	pool := x509.NewCertPool()
	if pem, err := os.ReadFile(caFile); err == nil {
		pool.AppendCertsFromPEM(pem)
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

// Bucket creates a bucket.
func (s *Server) Bucket(t testing.TB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.CreateBucket(ctx, name); err != nil {
		t.Fatalf("s3test: %v", err)
	}
}

// CreateBucket creates a bucket (Bucket, for callers that are not tests).
func (s *Server) CreateBucket(ctx context.Context, name string) error {
	if _, err := s.client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		return fmt.Errorf("create bucket %s: %w", name, err)
	}
	return nil
}

// Ping sends the server a request and waits for its answer.
func (s *Server) Ping(ctx context.Context) error {
	_, err := s.client().ListBuckets(ctx, &s3.ListBucketsInput{})
	return err
}

// ObjectPath is the file that holds an object's bytes (to damage it behind the server's back).
func (s *Server) ObjectPath(bucket, key string) string { return filepath.Join(s.Dir, bucket, key) }

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// Binary returns the versitygw binary of Version, installing it with go install when the
// one in GOBIN is missing or of another version.
func Binary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() { binPath, binErr = EnsureBinary() })
	if binErr != nil {
		t.Fatalf("s3test: %v", binErr)
	}
	return binPath
}

// EnsureBinary is Binary for callers that are not tests.
func EnsureBinary() (string, error) {
	dir, err := goBin()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "versitygw")
	if hasVersion(path) {
		return path, nil
	}
	// Test binaries of several packages may start at once: one installs, the others wait.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".versitygw.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // released on close anyway
	if hasVersion(path) {
		return path, nil
	}
	fmt.Fprintf(os.Stderr, "s3test: installing versitygw %s into %s (once)\n", Version, dir)
	out, err := exec.Command("go", "install", module+"/cmd/versitygw@"+Version).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go install versitygw %s: %w: %s", Version, err, lastLines(string(out), 5))
	}
	if !hasVersion(path) {
		return "", fmt.Errorf("go install versitygw %s did not leave it at %s", Version, path)
	}
	return path, nil
}

func goBin() (string, error) {
	env := map[string]string{}
	for _, name := range []string{"GOBIN", "GOPATH"} {
		out, err := exec.Command("go", "env", name).Output()
		if err != nil {
			return "", fmt.Errorf("go env %s: %w", name, err)
		}
		env[name] = strings.TrimSpace(string(out))
	}
	if env["GOBIN"] != "" {
		return env["GOBIN"], nil
	}
	if env["GOPATH"] == "" {
		return "", errors.New("go env: no GOPATH")
	}
	return filepath.Join(filepath.SplitList(env["GOPATH"])[0], "bin"), nil
}

// hasVersion reads the binary's build information: go install pkg@VERSION records it.
func hasVersion(path string) bool {
	bi, err := buildinfo.ReadFile(path)
	return err == nil && bi.Main.Path == module && bi.Main.Version == Version
}

// makeCert writes a CA and a certificate for 127.0.0.1 signed by it.
func makeCert(dir string) (certFile, keyFile, caFile string, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", "", err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "innowarm test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return "", "", "", err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return "", "", "", err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return "", "", "", err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", "", err
	}
	certFile, keyFile, caFile = filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key"), filepath.Join(dir, "ca.pem")
	for _, f := range []struct {
		path, kind string
		der        []byte
	}{{certFile, "CERTIFICATE", der}, {keyFile, "EC PRIVATE KEY", keyDER}, {caFile, "CERTIFICATE", caDER}} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.kind, Bytes: f.der}), 0o600); err != nil {
			return "", "", "", err
		}
	}
	return certFile, keyFile, caFile, nil
}

package cli_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// certDir holds a CA, a server certificate for 127.0.0.1/localhost signed by it, and an
// unrelated CA, made fresh for each run.
var certDir string

func TestMain(m *testing.M) {
	sandboxtest.Main(m, sandboxtest.Options{
		Prepare: func(root string) ([]string, error) {
			certDir = filepath.Join(root, "certs")
			if err := makeCerts(certDir); err != nil {
				return nil, err
			}
			return []string{
				"--ssl-ca=" + filepath.Join(certDir, "ca.pem"),
				"--ssl-cert=" + filepath.Join(certDir, "server.pem"),
				"--ssl-key=" + filepath.Join(certDir, "server-key.pem"),
			}, nil
		},
	})
}

func makeCerts(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	newCA := func(name string) (*x509.Certificate, *ecdsa.PrivateKey, []byte, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			return nil, nil, nil, err
		}
		cert, _ := x509.ParseCertificate(der)
		return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
	}
	ca, caKey, caPEM, err := newCA("innowarm test CA")
	if err != nil {
		return err
	}
	_, _, otherPEM, err := newCA("some other CA")
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano() + 1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"ca.pem":         caPEM,
		"other-ca.pem":   otherPEM,
		"server.pem":     pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"server-key.pem": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// oneLineError checks the promise: a failed run prints exactly one "innowarm: ..." line
// for the error (warnings may precede it) and never a stack trace.
func oneLineError(t *testing.T, r sandboxtest.Result, wantCode int, wantSubstr ...string) {
	t.Helper()
	if r.Code != wantCode {
		t.Errorf("exit code %d, want %d; stderr: %s", r.Code, wantCode, r.Stderr)
	}
	lines := strings.Split(strings.TrimRight(r.Stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "innowarm: ") {
		t.Errorf("last stderr line is not an innowarm error: %q", r.Stderr)
	}
	for _, l := range lines[:len(lines)-1] {
		if !strings.Contains(l, "Warning") {
			t.Errorf("stderr has more than one error line: %q", r.Stderr)
		}
	}
	if strings.Contains(r.Stderr, "goroutine ") || strings.Contains(r.Stderr, "panic") {
		t.Errorf("stack trace on stderr: %s", r.Stderr)
	}
	for _, s := range wantSubstr {
		if !strings.Contains(strings.ToLower(last), strings.ToLower(s)) {
			t.Errorf("error %q does not mention %q", last, s)
		}
	}
}

func TestHelpListsCommandsWithExamples(t *testing.T) {
	r := sandboxtest.CLI(t, sandboxtest.Run{}, "--help")
	if r.Code != 0 {
		t.Fatalf("--help exit %d: %s", r.Code, r.Stderr)
	}
	for _, want := range []string{"sandbox", "ping", "version", "completion", "Examples:", "Exit codes"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("--help lacks %q:\n%s", want, r.Stdout)
		}
	}
	for _, sub := range [][]string{{"ping", "--help"}, {"sandbox", "up", "--help"}, {"sandbox", "cold-restart", "--help"}} {
		r := sandboxtest.CLI(t, sandboxtest.Run{}, sub...)
		if r.Code != 0 || !strings.Contains(r.Stdout, "Examples:") {
			t.Errorf("%v: exit %d, no examples:\n%s", sub, r.Code, r.Stdout)
		}
	}
	r = sandboxtest.CLI(t, sandboxtest.Run{}, "ping", "--help")
	if !strings.Contains(r.Stdout, "--password[=PW]") || !strings.Contains(r.Stdout, "-h, --host") {
		t.Errorf("ping --help must show mysql-style -h and --password[=PW]:\n%s", r.Stdout)
	}
}

func TestVersionAndCompletion(t *testing.T) {
	r := sandboxtest.CLI(t, sandboxtest.Run{}, "version")
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "innowarm ") {
		t.Errorf("version: %d %q", r.Code, r.Stdout)
	}
	// Packages and scripts ask `innowarm --version` as often as `innowarm version`.
	if long := sandboxtest.CLI(t, sandboxtest.Run{}, "--version"); long.Code != 0 || long.Stdout != r.Stdout {
		t.Errorf("--version: %d %q; want what version prints, %q", long.Code, long.Stdout, r.Stdout)
	}
	r = sandboxtest.CLI(t, sandboxtest.Run{}, "completion", "bash")
	if r.Code != 0 || !strings.Contains(r.Stdout, "innowarm") {
		t.Errorf("completion bash: %d", r.Code)
	}
}

func TestPingSocketAndTCP(t *testing.T) {
	sb := sandboxtest.Server(t)
	kind := string(sandboxtest.Flavor(t).Kind)
	r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"ping"}, sandboxtest.Sock(t)...)...)
	if r.Code != 0 || !strings.Contains(r.Stdout, kind+" ") || !strings.Contains(r.Stdout, "socket "+sb.Socket) {
		t.Fatalf("ping over socket: %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	// A hit rate is a share: never negative, even where the server's counters disagree
	// (MariaDB 11.8 counts reads without their requests).
	if strings.Contains(r.Stdout, "hit rate -") || !strings.Contains(r.Stdout, "hit rate ") {
		t.Errorf("ping's hit rate: %s", r.Stdout)
	}
	r = sandboxtest.CLI(t, sandboxtest.Run{}, "ping", "--no-defaults", "-h", "127.0.0.1", "-P", itoa(sb.Port), "-u", "root", "--json")
	var facts struct {
		Flavor  string `json:"flavor"`
		Via     string `json:"connected_via"`
		Release string `json:"release"`
		LTS     bool   `json:"lts"`
		Pool    struct {
			PagesTotal int64 `json:"pages_total"`
			PoolBytes  int64 `json:"pool_bytes"`
		} `json:"buffer_pool"`
		Resize string `json:"pool_resize"`
		Dump   string `json:"dump_file"`
	}
	sandboxtest.JSON(t, []byte(r.Stdout), &facts)
	if facts.Flavor != kind || facts.Via != "127.0.0.1:"+itoa(sb.Port) || facts.Pool.PagesTotal == 0 || !strings.HasPrefix(facts.Dump, sb.Datadir) {
		t.Errorf("ping --json over TCP: %+v", facts)
	}
	// Every flavor the tests run is an LTS line (MariaDB 10.11 and 11.8, MySQL 9.7); the
	// MariaDB ones (10.11.12+) resize in 1 MiB steps up to innodb_buffer_pool_size_max.
	srv := sandboxtest.Flavor(t)
	if facts.Release != srv.Release() || !facts.LTS || facts.Pool.PoolBytes != srv.PoolSize {
		t.Errorf("ping --json: release %q (LTS %v), pool %d bytes; want %q, LTS, %d", facts.Release, facts.LTS, facts.Pool.PoolBytes, srv.Release(), srv.PoolSize)
	}
	if elastic := strings.Contains(facts.Resize, "innodb_buffer_pool_size_max"); elastic != srv.IsMariaDB() {
		t.Errorf("ping --json pool_resize = %q on %s", facts.Resize, srv)
	}
	// -P alone with host localhost goes over TCP (MariaDB client rule), so it reaches the port.
	r = sandboxtest.CLI(t, sandboxtest.Run{}, "ping", "--no-defaults", "-P", itoa(sb.Port), "-u", "root")
	if r.Code != 0 || !strings.Contains(r.Stdout, "localhost:"+itoa(sb.Port)) {
		t.Errorf("-P with localhost: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

package agent_test

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// agentProcess is `innowarm agent` run by a test; its stderr is kept.
type agentProcess struct {
	cmd    *exec.Cmd
	stderr *sandboxtest.SyncBuffer
	done   chan struct{}
	code   int
}

func startCLI(t *testing.T, args ...string) *agentProcess {
	t.Helper()
	cmd := exec.Command(sandboxtest.Binary(t), append([]string{"agent"}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + sandboxtest.Dir(t)}
	p := &agentProcess{cmd: cmd, stderr: &sandboxtest.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stderr, cmd.Stdout = p.stderr, p.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		p.code = cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait returns the exit code, failing the test if the process runs on past limit.
func (p *agentProcess) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(limit):
		t.Fatalf("innowarm agent still running after %s; output:\n%s", limit, p.stderr.String())
		return -1
	}
}

var listenLine = regexp.MustCompile(`/ready, /status and /metrics on (\S+)`)

// addr waits for the agent's log line naming its HTTP address.
func (p *agentProcess) addr(t *testing.T) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if m := listenLine.FindStringSubmatch(p.stderr.String()); m != nil {
			return m[1]
		}
		select {
		case <-p.done:
			t.Fatalf("innowarm agent exited %d: %s", p.code, p.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("no listen line: %s", p.stderr.String())
	return ""
}

// As a service: SIGTERM stops the agent with exit 0; configuration errors are exit 2 with
// one line; a port that is taken is exit 1.
func TestCLIServiceExitCodes(t *testing.T) {
	schema := sandboxtest.Schema(t)
	wideTable(t, sandboxtest.Conn(t), schema, 2000)
	sock := sandboxtest.Sock(t)

	p := startCLI(t, append([]string{"-D", schema, "--http-listen", "127.0.0.1:0", "--interval", "200ms"}, sock...)...)
	base := "http://" + p.addr(t)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(base + "/ready") //nolint:noctx // a test's local request
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready within a minute: %s", p.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp, err := http.Get(base + "/metrics") //nolint:noctx // a test's local request
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"innowarm_agent_ready 1", `innowarm_agent_state{state="ready"} 1`, "innowarm_agent_weight_percent 100"} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, metrics)
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM; output:\n%s", code, p.stderr.String())
	}

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, c := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"every interface, plain HTTP", []string{"-D", schema, "--http-listen", ":0"}, 2, "--http-listen :0 is not a loopback address"},
		{"agent check outside, nobody allowed", []string{"-D", schema, "--agent-check-listen", "0.0.0.0:0"}, 2, "--agent-check-allow"},
		{"no target", nil, 2, "needs a target"},
		{"warm flags without --warm", []string{"-D", schema, "--max-rate", "10MB/s"}, 2, "add --warm"},
		{"wrong password", []string{"-D", schema, "--password=wrong"}, 2, "access denied"},
		{"port taken", []string{"-D", schema, "--http-listen", taken.Addr().String()}, 1, "address already in use"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := startCLI(t, append(c.args, sock...)...)
			code := p.wait(t, 60*time.Second)
			out := p.stderr.String()
			lines := strings.Split(strings.TrimSpace(out), "\n")
			last := lines[len(lines)-1]
			if code != c.code || !strings.Contains(last, c.says) || !strings.HasPrefix(last, "innowarm: ") {
				t.Errorf("exit %d, last line %q; want exit %d saying %q; output:\n%s", code, last, c.code, c.says, out)
			}
		})
	}
}

// HTTPS with a bearer token: without the token 401, with it the status.
func TestCLITLSAndToken(t *testing.T) {
	schema := sandboxtest.Schema(t)
	wideTable(t, sandboxtest.Conn(t), schema, 1000)
	dir := sandboxtest.Dir(t)
	certFile, keyFile, pool := selfSigned(t, dir)
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("let-me-in\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startCLI(t, append([]string{"-D", schema, "--http-listen", "127.0.0.1:0", "--tls-cert", certFile, "--tls-key", keyFile, "--auth-token-file", tokenFile}, sandboxtest.Sock(t)...)...)
	base := "https://" + p.addr(t)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}, Timeout: 10 * time.Second}
	get := func(token string) int {
		req, _ := http.NewRequest("GET", base+"/status", nil) //nolint:noctx // a test's local request
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	if code := get(""); code != http.StatusUnauthorized {
		t.Errorf("no token: %d", code)
	}
	if code := get("let-me-out"); code != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", code)
	}
	if code := get("let-me-in"); code != http.StatusOK {
		t.Errorf("token: %d", code)
	}
	// Plain HTTP on the TLS port gets nothing useful.
	resp, err := http.Get("http://" + strings.TrimPrefix(base, "https://") + "/status") //nolint:noctx // a test's local request
	if err == nil {
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP answered 200 on the TLS listener")
		}
		resp.Body.Close()
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns the pool that
// trusts it.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "innowarm agent"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	write := func(path, typ string, b []byte) {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriter(f)
		_ = pem.Encode(w, &pem.Block{Type: typ, Bytes: b})
		_ = w.Flush()
		f.Close()
	}
	write(certFile, "CERTIFICATE", der)
	write(keyFile, "EC PRIVATE KEY", kder)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

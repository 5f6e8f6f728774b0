package connection_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/flavor"
	"github.com/innowarm/innowarm/internal/sandbox"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// openWith connects as innowarm's commands do: mysql-style flags, resolved and opened.
func openWith(t *testing.T, args ...string) (*connection.Conn, error) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	f := connection.BindFlags(fs)
	if err := fs.Parse(append([]string{"--no-defaults", "--connect-timeout=20s"}, args...)); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	o, _, err := f.Resolve(func(k string) string { return map[string]string{"USER": "osuser"}[k] }, t.TempDir())
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := connection.Open(ctx, o)
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// wantRefusal checks that err is the user's to fix (exit 2), one line, naming each of
// words.
func wantRefusal(t *testing.T, what string, err error, words ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: connected, want a refusal", what)
		return
	}
	msg := err.Error()
	if code := exitcode.Of(err); code != 2 {
		t.Errorf("%s: exit %d, want 2: %s", what, code, msg)
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("%s: message is not one line: %q", what, msg)
	}
	for _, w := range words {
		if !strings.Contains(msg, w) {
			t.Errorf("%s: message does not name %q: %s", what, w, msg)
		}
	}
}

// An expired password (MySQL refuses the login with 1862; MariaDB lets it in and refuses
// its first statement with 1820) and a locked account (MySQL 3118, MariaDB 4151) are the
// user's to fix: they gave raw server errors with exit 1.
func TestExpiredPasswordAndLockedAccount(t *testing.T) {
	sock := sandboxtest.Server(t).Socket
	sandboxtest.Exec(t,
		"DROP USER IF EXISTS 'iw_expired'@'localhost', 'iw_locked'@'localhost'",
		"CREATE USER 'iw_expired'@'localhost' IDENTIFIED BY 'expiredpw'",
		"ALTER USER 'iw_expired'@'localhost' PASSWORD EXPIRE",
		"CREATE USER 'iw_locked'@'localhost' IDENTIFIED BY 'lockedpw' ACCOUNT LOCK",
	)
	t.Cleanup(func() {
		_, _ = sandboxtest.Conn(t).DB.Exec("DROP USER IF EXISTS 'iw_expired'@'localhost', 'iw_locked'@'localhost'")
	})
	_, err := openWith(t, "-S", sock, "-u", "iw_expired", "--password=expiredpw")
	wantRefusal(t, "expired password", err, `"iw_expired"`, "expired", "SET PASSWORD")
	_, err = openWith(t, "-S", sock, "-u", "iw_locked", "--password=lockedpw")
	wantRefusal(t, "locked account", err, `"iw_locked"`, "locked", "ACCOUNT UNLOCK")
}

// tlsFiles are a CA, a server certificate it signed for localhost, 127.0.0.1 and ::1, a
// client certificate it signed, and a client certificate of another CA.
type tlsFiles struct {
	ca, serverCert, serverKey, clientCert, clientKey, rogueCert, rogueKey, otherCA string
}

func makeTLSFiles(t *testing.T) tlsFiles {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl is not installed: cannot make the test's certificates")
	}
	dir := sandboxtest.Dir(t)
	openssl := func(args ...string) {
		t.Helper()
		cmd := exec.Command("openssl", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("openssl %v: %v\n%s", args, err, out)
		}
	}
	ca := func(name string) {
		openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", name+"-key.pem", "-out", name+".pem", "-days", "2", "-subj", "/CN=innowarm test "+name)
	}
	cert := func(name, caName, san string) {
		openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", name+"-key.pem", "-out", name+".csr", "-subj", "/CN="+name)
		if err := os.WriteFile(filepath.Join(dir, name+".ext"), []byte("subjectAltName="+san+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		openssl("x509", "-req", "-in", name+".csr", "-CA", caName+".pem", "-CAkey", caName+"-key.pem", "-CAcreateserial", "-out", name+".pem", "-days", "2", "-extfile", name+".ext")
	}
	ca("ca")
	ca("otherca")
	cert("server", "ca", "DNS:localhost,IP:127.0.0.1,IP:::1")
	cert("client", "ca", "DNS:client")
	cert("rogue", "otherca", "DNS:rogue")
	p := func(name string) string { return filepath.Join(dir, name) }
	// The server runs as another user when the tests do not run as root: let it read them.
	for _, name := range []string{"ca.pem", "server.pem", "server-key.pem"} {
		_ = os.Chmod(p(name), 0o644)
	}
	return tlsFiles{ca: p("ca.pem"), serverCert: p("server.pem"), serverKey: p("server-key.pem"),
		clientCert: p("client.pem"), clientKey: p("client-key.pem"), rogueCert: p("rogue.pem"), rogueKey: p("rogue-key.pem"),
		otherCA: p("otherca.pem")}
}

// adminExec runs statements as root on sb.
func adminExec(t *testing.T, sb *sandbox.Sandbox, stmts ...string) {
	t.Helper()
	c, err := sb.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, s := range stmts {
		if _, err := c.DB.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// A server with TLS and its CA, listening on ::1 only: a bracketed IPv6 host reaches it
// ("-h [::1] -P PORT" dialled "[[[::1]]:PORT]:3306"), a client certificate of a CA the
// server does not trust is named as the refusal it is ("bad connection", exit 1, before),
// and a wrong --ssl-ca stays a usage error.
func TestTLSRefusalsAndIPv6(t *testing.T) {
	f := makeTLSFiles(t)
	sb := sandboxtest.SecondServer(t, 0, "--ssl-ca="+f.ca, "--ssl-cert="+f.serverCert, "--ssl-key="+f.serverKey, "--bind-address=::1")
	adminExec(t, sb, "CREATE USER 'iw_x509'@'%' REQUIRE X509")
	port := strconv.Itoa(sb.Port)
	tcp := []string{"-h", "[::1]", "-P", port, "-u", "iw_x509"}

	c, err := openWith(t, append(tcp, "--ssl-ca", f.ca, "--ssl-cert", f.clientCert, "--ssl-key", f.clientKey)...)
	if err != nil {
		t.Fatalf("the CA's client certificate over [::1]: %v", err)
	}
	if got, want := c.Opts.Target(), "[::1]:"+port; got != want {
		t.Errorf("target %q, want %q", got, want)
	}

	_, err = openWith(t, append(tcp, "--ssl-ca", f.ca, "--ssl-cert", f.rogueCert, "--ssl-key", f.rogueKey)...)
	wantRefusal(t, "another CA's client certificate", err, "--ssl-cert "+f.rogueCert, "--ssl-key", "refused", "[::1]:"+port)
	_, err = openWith(t, append(tcp, "--ssl-mode", "REQUIRED", "--ssl-cert", f.rogueCert, "--ssl-key", f.rogueKey)...)
	wantRefusal(t, "another CA's client certificate, REQUIRED", err, "--ssl-cert "+f.rogueCert, "refused")

	_, err = openWith(t, append(tcp, "--ssl-ca", f.otherCA)...)
	wantRefusal(t, "a wrong --ssl-ca", err, "--ssl-ca")

	// Under TLS 1.3 the driver's write of the login may fail (broken pipe) before it reads
	// the server's alert, by the timing of the two: the probe reads the alert itself.
	probe := func(cert, key string) error {
		o := connection.ForTCP("::1", sb.Port, "iw_x509", "")
		o.SSLMode, o.SSLCert, o.SSLKey = connection.SSLRequired, cert, key
		cfg, err := o.Config()
		if err != nil {
			t.Fatal(err)
		}
		return connection.ProbeTLSRefusal(context.Background(), cfg, 2*time.Second)
	}
	if err := probe(f.rogueCert, f.rogueKey); err == nil || !strings.Contains(err.Error(), "tls: ") {
		t.Errorf("the probe of another CA's certificate found %v, want the server's TLS alert", err)
	}
	if err := probe(f.clientCert, f.clientKey); err != nil {
		t.Errorf("the probe of the CA's own certificate found %v, want nothing", err)
	}
}

// A server without TLS under --ssl-mode REQUIRED or VERIFY_*: the flags ask for what the
// server cannot give, which the user fixes (exit 2, as a wrong --ssl-ca), not a runtime
// failure (exit 1, before).
func TestServerWithoutTLS(t *testing.T) {
	f := makeTLSFiles(t)
	// MariaDB before 11.4 offers no TLS unless given certificates; MariaDB 11.4+ and MySQL
	// make their own at start, and are told not to.
	noTLS := "--skip-ssl"
	if sandboxtest.Flavor(t).Kind == flavor.MySQL {
		noTLS = "--tls-version="
	}
	sb := sandboxtest.SecondServer(t, 0, noTLS)
	port := strconv.Itoa(sb.Port)
	for _, mode := range [][]string{
		{"--ssl-mode", "REQUIRED"},
		{"--ssl-mode", "VERIFY_CA", "--ssl-ca", f.ca},
		{"--ssl-mode", "VERIFY_IDENTITY", "--ssl-ca", f.ca},
		{"--ssl-ca", f.ca}, // VERIFY_CA by default
	} {
		_, err := openWith(t, append([]string{"-h", "127.0.0.1", "-P", port, "-u", "root"}, mode...)...)
		wantRefusal(t, fmt.Sprint(mode), err, "does not offer TLS", "--ssl-mode")
	}
}

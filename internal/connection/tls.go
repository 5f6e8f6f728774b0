package connection

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/innowarm/innowarm/internal/exitcode"
)

// tlsConfig maps --ssl-mode to a TLS configuration. The second result allows falling back
// to plaintext (PREFERRED). Over a Unix socket PREFERRED means no TLS, as in the clients.
func (o Options) tlsConfig(socket bool) (*tls.Config, bool, error) {
	mode := o.SSLMode
	if mode == SSLDisabled || (mode == SSLPreferred && socket) {
		return nil, false, nil
	}
	// MySQL's client treats REQUIRED with a CA as VERIFY_CA.
	if mode == SSLRequired && o.SSLCA != "" {
		mode = SSLVerifyCA
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.SSLCert != "" {
		pair, err := tls.LoadX509KeyPair(o.SSLCert, o.SSLKey)
		if err != nil {
			return nil, false, exitcode.UsageError(fmt.Errorf("load client certificate %s / key %s: %w", o.SSLCert, o.SSLKey, err))
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	var roots *x509.CertPool
	if o.SSLCA != "" {
		pem, err := os.ReadFile(o.SSLCA)
		if err != nil {
			return nil, false, exitcode.UsageError(fmt.Errorf("read --ssl-ca %s: %w", o.SSLCA, err))
		}
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, false, exitcode.BadValue("SslCa", "%s holds no PEM certificate", o.SSLCA)
		}
	}
	switch mode {
	case SSLPreferred, SSLRequired:
		cfg.InsecureSkipVerify = true
		return cfg, mode == SSLPreferred, nil
	case SSLVerifyCA:
		// Verify the chain but not the host name: Go has no such mode, so verify by hand.
		cfg.InsecureSkipVerify = true
		cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("server sent no certificate")
			}
			certs := make([]*x509.Certificate, len(raw))
			for i, r := range raw {
				c, err := x509.ParseCertificate(r)
				if err != nil {
					return fmt.Errorf("server certificate: %w", err)
				}
				certs[i] = c
			}
			inter := x509.NewCertPool()
			for _, c := range certs[1:] {
				inter.AddCert(c)
			}
			_, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			return err
		}
		return cfg, false, nil
	default: // VERIFY_IDENTITY
		cfg.RootCAs = roots
		host := o.Host
		if host == "" {
			host = "localhost"
		}
		cfg.ServerName = host
		return cfg, false, nil
	}
}

// Capability flags of the client's SSLRequest (the protocol's CLIENT_*).
const (
	capLongPassword = 1 << 0
	capProtocol41   = 1 << 9
	capSSL          = 1 << 11
	capSecureConn   = 1 << 15
	capPluginAuth   = 1 << 19
)

// probeSource is the address the probe connects from; nil lets the system choose, as the
// driver's connection does. Tests set one that the server's host cache counts.
var probeSource net.IP

// errNotProbed stands for the server's answer when asking again would cost the user: it
// says what the answer most likely is, and why innowarm did not ask.
var errNotProbed = errors.New("the server closed the connection just after the TLS handshake, " +
	"which is how a server refuses a client certificate under TLS 1.3: check that --ssl-cert is signed by a CA in the server's ssl_ca, with its own --ssl-key " +
	"(innowarm did not connect again to ask: from this host, each refused connection counts against the server's max_connect_errors)")

// probeTLSRefusal asks the server again why it dropped a TLS connection: it opens a
// connection of its own, asks for TLS as the driver does, shakes hands with the same
// settings and reads the server's answer. Under TLS 1.3 the server checks the client's
// certificate after the client has finished its handshake: it sends an alert and closes,
// and the driver, writing its login meanwhile, saw only a broken pipe ("bad connection").
// It returns the alert's error, or nil when the server sent none within wait.
//
// The server counts a connection that ends before its login in its host cache, against
// max_connect_errors, for every client address but 127.0.0.1 and ::1: from any other,
// each probe took the host one step nearer to being blocked ("Host ... is blocked
// because of many connection errors"), on top of the refused connection itself. There
// the probe does not connect, and returns errNotProbed.
func probeTLSRefusal(ctx context.Context, cfg *mysql.Config, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if probeWouldCount(ctx, cfg) {
		return errNotProbed
	}
	d := net.Dialer{}
	if probeSource != nil {
		d.LocalAddr = &net.TCPAddr{IP: probeSource}
	}
	conn, err := d.DialContext(ctx, cfg.Net, cfg.Addr)
	if err != nil {
		return nil
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	// The server's greeting: 3 bytes of length, a sequence number, the payload.
	hdr := make([]byte, 4)
	if _, err := io.ReadFull(conn, hdr); err != nil {
		return nil
	}
	greeting := make([]byte, int(hdr[0])|int(hdr[1])<<8|int(hdr[2])<<16)
	if _, err := io.ReadFull(conn, greeting); err != nil || len(greeting) == 0 || greeting[0] == 0xff {
		return nil // an error packet, not a greeting
	}
	// SSLRequest: capabilities, max packet size, collation (utf8mb4), 23 zero bytes.
	req := make([]byte, 4+32)
	req[0], req[3] = 32, 1
	binary.LittleEndian.PutUint32(req[4:], capLongPassword|capProtocol41|capSSL|capSecureConn|capPluginAuth)
	binary.LittleEndian.PutUint32(req[8:], 1<<24-1)
	req[12] = 45
	if _, err := conn.Write(req); err != nil {
		return nil
	}
	tc := tls.Client(conn, cfg.TLS.Clone())
	err = tc.HandshakeContext(ctx)
	if err == nil {
		// Accepted, the server waits for the login and this read ends at the deadline.
		_, err = tc.Read(make([]byte, 1))
	}
	if _, ok := tlsAlert(err); ok {
		return err
	}
	return nil
}

// probeWouldCount reports whether the server would count the probe's connection in its
// host cache: a TCP connection from any address but the loopback ones, which the servers
// (is_ip_loopback in sql/hostname.cc) keep out of it, as they keep Unix sockets. The
// address the connection would come from is the one the system picks for a UDP socket
// "connected" to the server, which sends nothing. When that cannot be told, it counts.
func probeWouldCount(ctx context.Context, cfg *mysql.Config) bool {
	if cfg.Net == "unix" {
		return false
	}
	d := net.Dialer{}
	if probeSource != nil {
		d.LocalAddr = &net.UDPAddr{IP: probeSource}
	}
	network := "udp"
	switch cfg.Net {
	case "tcp4":
		network = "udp4"
	case "tcp6":
		network = "udp6"
	}
	c, err := d.DialContext(ctx, network, cfg.Addr)
	if err != nil {
		return true
	}
	defer c.Close()
	local, ok := c.LocalAddr().(*net.UDPAddr)
	return !ok || !(local.IP.Equal(net.IPv4(127, 0, 0, 1)) || local.IP.Equal(net.IPv6loopback))
}

package connection

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

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

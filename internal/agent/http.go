package agent

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/innowarm/innowarm/internal/exitcode"
)

// serveHTTP serves /ready, /status and /metrics until stop is called.
func (a *Agent) serveHTTP(ctx context.Context) (stop func(), addr string, err error) {
	mux := http.NewServeMux()
	// "GET /x" also answers HEAD; any other method gets 405.
	mux.HandleFunc("GET /ready", a.serveReady)
	mux.HandleFunc("GET /status", a.serveStatus)
	if a.o.MetricsHandler != nil {
		mux.Handle("GET /metrics", a.o.MetricsHandler)
	}
	srv := &http.Server{Handler: a.auth.wrap(mux), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second}
	if a.o.TlsCert != "" {
		kp, err := newKeyPair(a.o.TlsCert, a.o.TlsKey)
		if err != nil {
			return nil, "", err
		}
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: kp.get}
	}
	ln, err := listen(a.o.HttpListen)
	if err != nil {
		return nil, "", err
	}
	go func() {
		var err error
		if srv.TLSConfig != nil {
			err = srv.ServeTLS(ln, "", "")
		} else {
			err = srv.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Warnf("agent: HTTP server: %v", err)
		}
	}()
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}, ln.Addr().String(), nil
}

// serveReady answers 200 when ready, 503 (or 429, --warming-status) while warming, 503
// while the server is starting or down, with the state as JSON. It pings the server first,
// so that a server killed since the last measure is not reported ready.
func (a *Agent) serveReady(w http.ResponseWriter, r *http.Request) {
	_ = a.alive(r.Context())
	st := a.Status()
	writeJSON(w, a.statusCode(st.State), st.readyBody())
}

func (a *Agent) serveStatus(w http.ResponseWriter, r *http.Request) {
	_ = a.alive(r.Context())
	writeJSON(w, http.StatusOK, a.Status())
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// authenticator checks a bearer token or basic credentials; with neither configured it lets
// every request through (the listener is then loopback, or --insecure-listen was given).
type authenticator struct {
	token      []byte // sha256 of the token
	user, pass []byte // sha256 of each
	basic      bool
}

// readSecret reads a one-line secret file; a file every user can read is refused, as ssh
// refuses such a private key (group-readable is allowed: Kubernetes mounts secrets for the
// pod's fsGroup).
func readSecret(field, path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", exitcode.BadValue(field, "%v", err)
	}
	if fi.Mode().Perm()&0o007 != 0 {
		return "", exitcode.BadValue(field, "%s is readable by every user (mode %04o): chmod 600 it", path, fi.Mode().Perm())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", exitcode.BadValue(field, "%v", err)
	}
	s := strings.TrimSpace(string(raw))
	if s == "" || strings.ContainsAny(s, "\r\n") {
		return "", exitcode.BadValue(field, "%s must hold one non-empty line", path)
	}
	return s, nil
}

func newAuthenticator(tokenFile, basicFile string) (*authenticator, error) {
	a := &authenticator{}
	if tokenFile != "" {
		tok, err := readSecret("AuthTokenFile", tokenFile)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256([]byte(tok))
		a.token = sum[:]
	}
	if basicFile != "" {
		line, err := readSecret("AuthBasicFile", basicFile)
		if err != nil {
			return nil, err
		}
		user, pass, ok := strings.Cut(line, ":")
		if !ok || user == "" || pass == "" {
			return nil, exitcode.BadValue("AuthBasicFile", "%s must hold user:password", basicFile)
		}
		u, p := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(pass))
		a.user, a.pass, a.basic = u[:], p[:], true
	}
	return a, nil
}

// equal compares in constant time (over fixed-length digests).
func equal(want []byte, got string) bool {
	sum := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(want, sum[:]) == 1
}

func (a *authenticator) wrap(next http.Handler) http.Handler {
	if a.token == nil && !a.basic {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.token != nil {
			if h, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && equal(a.token, strings.TrimSpace(h)) {
				next.ServeHTTP(w, r)
				return
			}
		}
		if a.basic {
			if u, p, ok := r.BasicAuth(); ok && equal(a.user, u) && equal(a.pass, p) {
				next.ServeHTTP(w, r)
				return
			}
			w.Header().Set("WWW-Authenticate", `Basic realm="innowarm agent"`)
		} else {
			w.Header().Set("WWW-Authenticate", `Bearer realm="innowarm agent"`)
		}
		http.Error(w, "authentication required", http.StatusUnauthorized)
	})
}

// keyPair serves the certificate, loaded again when its files change (cert-manager and
// certbot renew them in place).
type keyPair struct {
	certFile, keyFile string
	mu                sync.Mutex
	cert              *tls.Certificate
	stamp             string
}

func newKeyPair(certFile, keyFile string) (*keyPair, error) {
	kp := &keyPair{certFile: certFile, keyFile: keyFile}
	if _, err := kp.get(nil); err != nil {
		return nil, exitcode.BadValue("TlsCert", "%v", err)
	}
	return kp, nil
}

func (kp *keyPair) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	kp.mu.Lock()
	defer kp.mu.Unlock()
	stamp := ""
	for _, f := range []string{kp.certFile, kp.keyFile} {
		if fi, err := os.Stat(f); err == nil {
			stamp += fmt.Sprintf("%d/%d ", fi.ModTime().UnixNano(), fi.Size())
		}
	}
	if kp.cert != nil && stamp == kp.stamp {
		return kp.cert, nil
	}
	cert, err := tls.LoadX509KeyPair(kp.certFile, kp.keyFile)
	if err != nil {
		if kp.cert != nil {
			return kp.cert, nil // mid-renewal: keep serving the previous pair
		}
		return nil, fmt.Errorf("load %s and %s: %w", kp.certFile, kp.keyFile, err)
	}
	kp.cert, kp.stamp = &cert, stamp
	return kp.cert, nil
}

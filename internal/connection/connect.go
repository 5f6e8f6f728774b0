package connection

import (
	"context"
	"crypto/x509"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/flavor"
	"github.com/innowarm/innowarm/internal/sqlerr"
)

func init() {
	// The driver logs packet errors on its own; innowarm reports errors once, as one line.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
}

// Conn is an open connection pool to one server, with what was detected about it.
type Conn struct {
	DB     *sql.DB
	Server flavor.Server
	Opts   Options

	kills  sync.WaitGroup
	opened time.Time // when Open began: the start of staleSessionGrace
}

// Config builds the driver configuration without ever putting the password in a DSN string.
func (o Options) Config() (*mysql.Config, error) {
	cfg := mysql.NewConfig()
	cfg.User = o.User
	cfg.Passwd = o.Password
	cfg.DBName = o.Database
	cfg.Timeout = o.ConnectTimeout
	cfg.InterpolateParams = true // one round trip per statement, no server-side prepares
	cfg.AllowNativePasswords = true
	cfg.Params = map[string]string{}
	if o.UsesSocket() {
		sock, err := o.SocketPath()
		if err != nil {
			return nil, err
		}
		cfg.Net, cfg.Addr = "unix", sock
	} else {
		cfg.Net, cfg.Addr = "tcp", net.JoinHostPort(o.Host, strconv.Itoa(o.Port))
	}
	tlsCfg, fallback, err := o.tlsConfig(cfg.Net == "unix")
	if err != nil {
		return nil, err
	}
	if tlsCfg != nil {
		cfg.TLS = tlsCfg
		cfg.AllowFallbackToPlaintext = fallback
	}
	return cfg, nil
}

// sourcePrompt is where a password typed at -p's prompt came from (Options.Sources).
const sourcePrompt = "prompt"

// Open connects, checks the credentials with a round trip and detects the server flavor.
// A bare -p prompts here, just before the password is needed.
func Open(ctx context.Context, o Options) (*Conn, error) {
	if o.PasswordPrompt {
		pw, err := PromptPassword(ctx)
		if err != nil {
			return nil, err
		}
		o.Password, o.PasswordPrompt = pw, false
		o.Sources = maps.Clone(o.Sources)
		if o.Sources == nil {
			o.Sources = map[string]string{}
		}
		o.Sources["password"] = sourcePrompt
	}
	cfg, err := o.Config()
	if err != nil {
		return nil, err
	}
	var own ownSettings
	own.apply(cfg)
	// The driver reports why a connection broke only to its logger ("bad connection"
	// otherwise): keep the first connection's errors for Explain.
	dlog := &driverLog{}
	cfg.Logger = dlog
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, exitcode.UsageError(fmt.Errorf("connection options: %w", err))
	}
	db := sql.OpenDB(connector)
	db.SetMaxIdleConns(8)
	db.SetConnMaxIdleTime(5 * time.Minute)
	pingCtx, cancel := context.WithTimeout(ctx, o.ConnectTimeout+5*time.Second)
	defer cancel()
	// The first connection is pinned: it is the only one opened before the flavor is known,
	// and gets the flavor's settings by hand (every later one at connect).
	opened := time.Now()
	var first *sql.Conn
	err = RetryRefused(pingCtx, opened.Add(staleSessionGrace), func() (err error) {
		first, err = db.Conn(pingCtx)
		return err
	})
	if err != nil {
		db.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		broke := brokeWithoutReason(err)
		err = dlog.cause(err)
		if _, ok := tlsAlert(err); !ok && broke && cfg.TLS != nil && cfg.TLS.Certificates != nil {
			if alert := probeTLSRefusal(ctx, cfg, min(o.ConnectTimeout, 5*time.Second)); alert != nil {
				err = fmt.Errorf("%w: %w", err, alert)
			}
		}
		return nil, Explain(err, o)
	}
	srv, err := own.detect(ctx, first)
	first.Close()
	if err != nil {
		db.Close()
		// MariaDB (and MySQL with disconnect_on_expired_password=OFF) lets an account
		// whose password expired log in, and refuses its first statement.
		if sqlerr.Is(err, sqlerr.MustChangePassword) {
			return nil, Explain(err, o)
		}
		return nil, fmt.Errorf("detect server at %s: %w", o.Target(), err)
	}
	return &Conn{DB: db, Server: srv, Opts: o, opened: opened}, nil
}

// driverLog keeps the first errors the driver logs (it logs nothing else), for those of
// the first connection: a server that refuses the client's certificate under TLS 1.3 says
// so in an alert that the driver reads after the handshake, logs, and replaces with
// "invalid connection" (unless its write of the login failed first: probeTLSRefusal).
type driverLog struct {
	mu   sync.Mutex
	errs []error
}

// Print implements mysql.Logger.
func (l *driverLog) Print(v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range v {
		if err, ok := a.(error); ok && len(l.errs) < 16 {
			l.errs = append(l.errs, err)
		}
	}
}

// cause adds to err, a connection that broke without a reason, the reason the driver
// logged for it, if any.
func (l *driverLog) cause(err error) error {
	if !brokeWithoutReason(err) {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) == 0 {
		return err
	}
	return fmt.Errorf("%w: %w", err, l.errs[len(l.errs)-1])
}

// brokeWithoutReason: the driver's words for a connection that broke, whatever broke it:
// "invalid connection", database/sql's "driver: bad connection", and the driver's own
// (unexported) "bad connection" for a write that failed.
func brokeWithoutReason(err error) bool {
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) || err.Error() == "bad connection"
}

// tlsAlert finds an alert the server sent in or just after the TLS handshake ("tls:
// unknown certificate authority"), which crypto/tls reports as a "remote error". The whole
// tree is searched: a write that failed first ("broken pipe") is another net.OpError in
// the same chain.
func tlsAlert(err error) (string, bool) {
	if op, ok := err.(*net.OpError); ok && op.Op == "remote error" && op.Err != nil { //nolint:errorlint // each node of the tree in turn: errors.As stops at the first *net.OpError, the write's
		return op.Err.Error(), true
	}
	switch u := err.(type) { //nolint:errorlint // the walk down the tree itself
	case interface{ Unwrap() error }:
		if next := u.Unwrap(); next != nil {
			return tlsAlert(next)
		}
	case interface{ Unwrap() []error }:
		for _, next := range u.Unwrap() {
			if alert, ok := tlsAlert(next); ok {
				return alert, true
			}
		}
	}
	return "", false
}

// Close waits for any KILL QUERY still being sent, then closes the pool.
func (c *Conn) Close() error {
	done := make(chan struct{})
	go func() { c.kills.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
	return c.DB.Close()
}

// Explain turns a connection error into one line that names the problem and the fix, and
// classifies it: what the user gave cannot work (exit 2) or the server failed (exit 1).
func Explain(err error, o Options) error {
	target := o.Target()
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		if e := explainAccountRefusal(err, o); e != nil {
			return e
		}
		switch me.Number {
		case sqlerr.AccessDenied:
			how := "no password"
			switch {
			case o.Password != "" && o.source("password") == sourcePrompt:
				how = "the password typed at the prompt"
			case o.Password != "":
				how = "the password from " + o.source("password")
			}
			// The server's words name the account it matched, host part included: a user
			// that exists only @localhost reached over TCP is 'u'@'127.0.0.1' there.
			return exitcode.UsageError(fmt.Errorf("access denied for user %q at %s with %s: check -u/--user and -p/--password, MYSQL_PWD or password= in your option files, and the account's host part (the server says: %s)", o.User, target, how, me.Message))
		case sqlerr.BadDB:
			return exitcode.UsageError(fmt.Errorf("unknown database %q on %s: check -D/--database", o.Database, target))
		case sqlerr.DBAccessDenied:
			return exitcode.UsageError(fmt.Errorf("user %q may not use database %q on %s: %s", o.User, o.Database, target, me.Message))
		case sqlerr.HostNotPrivileged:
			return exitcode.UsageError(fmt.Errorf("%s refuses connections from this host for user %q: %s", target, o.User, me.Message))
		case sqlerr.MustChangePassword, sqlerr.MustChangePasswordLogin:
			return exitcode.UsageError(fmt.Errorf("the password of user %q on %s has expired: set a new one in the mysql or mariadb client as that user (SET PASSWORD = 'NEW' on MySQL, SET PASSWORD = PASSWORD('NEW') on MariaDB) or have an administrator change it (ALTER USER ... IDENTIFIED BY), then use it here (the server says: %s)", o.User, target, me.Message))
		case sqlerr.AccountLocked, sqlerr.AccountLockedMariaDB:
			return exitcode.UsageError(fmt.Errorf("the account of user %q on %s is locked: an administrator unlocks it with ALTER USER '%s'@'HOST' ACCOUNT UNLOCK (the server says: %s)", o.User, target, o.User, me.Message))
		case sqlerr.TooManyConnections:
			return fmt.Errorf("%s has too many connections: %s", target, me.Message)
		}
		return fmt.Errorf("connect to %s: %w", target, err)
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return exitcode.UsageError(fmt.Errorf("unknown host %q: check -h/--host (%v)", o.Host, dnsErr.Err))
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		if o.UsesSocket() {
			return fmt.Errorf("nothing accepts connections on %s: the server is down or the socket file is stale", target)
		}
		return fmt.Errorf("nothing listens on %s: is the server running, and is -P/--port right?", target)
	}
	if errors.Is(err, syscall.ENOENT) && o.UsesSocket() {
		return exitcode.UsageError(fmt.Errorf("socket %s does not exist: check -S/--socket", o.Socket))
	}
	if errors.Is(err, syscall.EACCES) {
		return exitcode.UsageError(fmt.Errorf("permission denied on %s: %w", target, err))
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return fmt.Errorf("no answer from %s within --connect-timeout %s", target, o.ConnectTimeout)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer from %s within --connect-timeout %s", target, o.ConnectTimeout)
	}
	if errors.Is(err, mysql.ErrNoTLS) {
		// The flags ask for what this server cannot give: the user fixes one or the other.
		return exitcode.UsageError(fmt.Errorf("%s does not offer TLS, and --ssl-mode=%s requires it: enable TLS on the server or lower --ssl-mode", target, o.SSLMode))
	}
	if alert, ok := tlsAlert(err); ok {
		if o.SSLCert != "" {
			return exitcode.UsageError(fmt.Errorf("%s refused the client certificate --ssl-cert %s (--ssl-key %s) in the TLS handshake (the server says: %s): use a certificate signed by a CA the server trusts (its ssl_ca) with its own key", target, o.SSLCert, o.SSLKey, alert))
		}
		return exitcode.UsageError(fmt.Errorf("%s ended the TLS handshake (the server says: %s): check --ssl-mode and --ssl-ca, and whether the account needs a client certificate (--ssl-cert/--ssl-key)", target, alert))
	}
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	if errors.As(err, &unknownAuth) || errors.As(err, &hostErr) || strings.Contains(err.Error(), "x509:") {
		check := "check --ssl-ca"
		if o.SSLMode == SSLVerifyIdentity {
			check += " and the host name"
		}
		return exitcode.UsageError(fmt.Errorf("TLS verification of %s failed (--ssl-mode=%s): %w: %s", target, o.SSLMode, err, check))
	}
	return fmt.Errorf("connect to %s: %w", target, err)
}

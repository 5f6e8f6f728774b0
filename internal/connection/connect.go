package connection

import (
	"context"
	"crypto/x509"
	"database/sql"
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

	kills sync.WaitGroup
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
	first, err := db.Conn(pingCtx)
	if err != nil {
		db.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, Explain(err, o)
	}
	srv, err := own.detect(ctx, first)
	first.Close()
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("detect server at %s: %w", o.Target(), err)
	}
	return &Conn{DB: db, Server: srv, Opts: o}, nil
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
		return fmt.Errorf("%s does not offer TLS, and --ssl-mode=%s requires it: enable TLS on the server or lower --ssl-mode", target, o.SSLMode)
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

package connection

import (
	"context"
	"fmt"
	"time"

	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/sqlerr"
)

// Server errors that refuse a new connection for a limit on connections rather than for
// anything wrong with it: a session may open once another closes.
const (
	errTooManyUserConnections uint16 = 1203 // ER_TOO_MANY_USER_CONNECTIONS: the global max_user_connections
	errUserLimitReached       uint16 = 1226 // ER_USER_LIMIT_REACHED: an account's MAX_USER_CONNECTIONS (or another of its resources)
)

// LimitReached reports whether err is the server refusing a connection because of a limit
// on connections: max_connections (1040), max_user_connections (1203) or an account's
// MAX_USER_CONNECTIONS resource (1226). Callers that wanted several sessions run on those
// that opened.
func LimitReached(err error) bool {
	return sqlerr.Is(err, sqlerr.TooManyConnections, errTooManyUserConnections, errUserLimitReached)
}

// ExplainLimit says in one line why a command failed when the server refused it a
// connection for a limit on connections (err; any other error is returned as it is). An
// account allowed fewer connections at once than the command needs (need) is the user's
// setup to fix (exit 2, naming the ALTER USER); otherwise the server, or the account's
// other sessions, hold the rest. what names the command ("a capture", "a warm").
func ExplainLimit(ctx context.Context, conn *Conn, err error, need int, what string) error {
	if err == nil || !LimitReached(err) || ctx.Err() != nil {
		return err
	}
	// The session value is the account's MAX_USER_CONNECTIONS where it has one, else the
	// global max_user_connections (0: no limit), on both servers.
	var limit int64
	if qerr := conn.DB.QueryRowContext(ctx, "SELECT @@SESSION.max_user_connections").Scan(&limit); qerr == nil && limit > 0 && limit < int64(need) {
		return exitcode.UsageError(fmt.Errorf("user %q may hold %d connection at once (max_user_connections, or the account's MAX_USER_CONNECTIONS), and %s needs %d: raise the account's limit (ALTER USER ... WITH MAX_USER_CONNECTIONS %d) or run it as another user: %w",
			conn.Opts.User, limit, what, need, need, err))
	}
	return fmt.Errorf("%s needs %d connections at once, and the server refuses more (max_connections, or max_user_connections, which the account's other sessions count against): %w", what, need, err)
}

// staleSessionGrace is how long a command's connection tries again when the server refuses
// it a session for a limit on connections. The server counts an account's sessions against
// its MAX_USER_CONNECTIONS until their threads end, a moment after the client closed them:
// the sessions of the same account's previous command (an inspect just before a warm, in a
// script) may still count when this one starts. A CI run refused a warm's plan its session
// so, right after an inspect by the same 3-connection account. Past the grace, a refusal is
// the limit itself, and callers that can run on fewer sessions (warm's workers) must learn
// it at once.
const staleSessionGrace = 3 * time.Second

// RetryRefused runs open, and runs it again, backing off, while the server refuses it a
// connection for a limit on connections and until is not past; it returns open's last
// error, or ctx's when ctx ends first.
func RetryRefused(ctx context.Context, until time.Time, open func() error) error {
	err := open()
	for wait := 25 * time.Millisecond; err != nil && LimitReached(err) && ctx.Err() == nil; wait = min(2*wait, 500*time.Millisecond) {
		left := time.Until(until)
		if left <= 0 {
			return err
		}
		t := time.NewTimer(min(wait, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		err = open()
	}
	return err
}

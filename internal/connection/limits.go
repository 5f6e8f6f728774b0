package connection

import (
	"context"
	"fmt"

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

package connection

import (
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

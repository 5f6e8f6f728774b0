// Package sqlerr names the server error numbers innowarm reacts to and answers the questions
// callers ask of an error: is it this server error, did the connection or the server go away.
// Numbers are from MySQL's and MariaDB's mysqld_error.h (1xxx, 3xxx, 4xxx) and the client
// library's errmsg.h (2xxx); where the two servers differ, the comment says whose it is.
package sqlerr

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/go-sql-driver/mysql"
)

// Server and client error numbers.
const (
	TooManyConnections       uint16 = 1040 // ER_CON_COUNT_ERROR
	DBAccessDenied           uint16 = 1044 // ER_DBACCESS_DENIED_ERROR
	AccessDenied             uint16 = 1045 // ER_ACCESS_DENIED_ERROR
	BadDB                    uint16 = 1049 // ER_BAD_DB_ERROR
	ServerShutdown           uint16 = 1053 // ER_SERVER_SHUTDOWN
	NoSuchThread             uint16 = 1094 // ER_NO_SUCH_THREAD: KILL of a thread that is gone
	HostNotPrivileged        uint16 = 1130 // ER_HOST_NOT_PRIVILEGED
	TableAccessDenied        uint16 = 1142 // ER_TABLEACCESS_DENIED_ERROR
	ColumnAccessDenied       uint16 = 1143 // ER_COLUMNACCESS_DENIED_ERROR
	NoSuchTable              uint16 = 1146 // ER_NO_SUCH_TABLE
	AbortingConnection       uint16 = 1152 // ER_ABORTING_CONNECTION
	KeyDoesNotExist          uint16 = 1176 // ER_KEY_DOES_NOT_EXITS: FORCE INDEX of a dropped index
	UnknownSystemVariable    uint16 = 1193 // ER_UNKNOWN_SYSTEM_VARIABLE
	LockWaitTimeout          uint16 = 1205 // ER_LOCK_WAIT_TIMEOUT (also metadata locks)
	SpecificAccessDenied     uint16 = 1227 // ER_SPECIFIC_ACCESS_DENIED_ERROR: a privilege is missing
	QueryInterrupted         uint16 = 1317 // ER_QUERY_INTERRUPTED: KILL QUERY
	MustChangePassword       uint16 = 1820 // ER_MUST_CHANGE_PASSWORD: an expired password's session may only set one
	MustChangePasswordLogin  uint16 = 1862 // ER_MUST_CHANGE_PASSWORD_LOGIN: an expired password, refused at login
	ConnectionKilled         uint16 = 1927 // ER_CONNECTION_KILLED (MariaDB)
	StatementTimeout         uint16 = 1969 // ER_STATEMENT_TIMEOUT: max_statement_time (MariaDB)
	QueryTimeout             uint16 = 3024 // ER_QUERY_TIMEOUT: MAX_EXECUTION_TIME (MySQL)
	AccountLocked            uint16 = 3118 // ER_ACCOUNT_HAS_BEEN_LOCKED (MySQL)
	ClientInteractionTimeout uint16 = 4031 // ER_CLIENT_INTERACTION_TIMEOUT (MySQL 8.0.24+)
	AccountLockedMariaDB     uint16 = 4151 // ER_ACCOUNT_HAS_BEEN_LOCKED (MariaDB)
	ServerGone               uint16 = 2006 // CR_SERVER_GONE_ERROR
	ServerLost               uint16 = 2013 // CR_SERVER_LOST
)

// PrivilegeMissing reports whether err is the server refusing a statement for a privilege
// the user lacks (SUPER, PROCESS, SELECT on a table, ...): the user's setup, not a failure.
func PrivilegeMissing(err error) bool {
	return Is(err, SpecificAccessDenied, TableAccessDenied, ColumnAccessDenied, DBAccessDenied)
}

// Number returns the server error number of err, if it carries one.
func Number(err error) (uint16, bool) {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number, true
	}
	return 0, false
}

// Is reports whether err is a server error with one of the numbers.
func Is(err error, numbers ...uint16) bool {
	n, ok := Number(err)
	if !ok {
		return false
	}
	for _, want := range numbers {
		if n == want {
			return true
		}
	}
	return false
}

// ConnectionLost reports whether err says the connection or the server went away (killed,
// shut down, crashed, restarted, network cut), rather than one statement failing: every
// later statement on that server will fail the same way, so callers stop instead of trying
// the next unit of work.
func ConnectionLost(err error) bool {
	if err == nil {
		return false
	}
	if Is(err, ServerShutdown, AbortingConnection, ConnectionKilled, ClientInteractionTimeout, ServerGone, ServerLost) {
		return true
	}
	if _, ok := Number(err); ok {
		return false
	}
	if errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	// A dial or a read on the socket failed: refused (the server is down), reset, no socket.
	var op *net.OpError
	if errors.As(err, &op) {
		return true
	}
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// Timeout reports whether err is a statement time limit (either server's).
func Timeout(err error) bool { return Is(err, StatementTimeout, QueryTimeout) }

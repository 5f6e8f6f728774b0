package sandboxtest

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/innowarm/innowarm/internal/connection"
)

// SetGlobal sets a global variable of the test's server for the test and puts its value
// back when the test ends. The shared connection is then opened again: a session opened
// meanwhile keeps the value (a 1 ms max_execution_time killed a later test's SELECT).
func SetGlobal(t testing.TB, name, value string) {
	t.Helper()
	var old string
	if err := Conn(t).DB.QueryRow("SELECT @@global." + name).Scan(&old); err != nil {
		t.Fatal(err)
	}
	// The restore goes through a session opened before the change, which keeps the old
	// value (a 1 s wait_timeout, a 1 ms statement limit would stop it).
	pin, err := Conn(t).DB.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pin.ExecContext(context.Background(), fmt.Sprintf("SET GLOBAL %s = %s", name, value)); err != nil {
		pin.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		defer pin.Close()
		// A number goes back as a number (MySQL refuses a string for an integer variable),
		// anything else as a string: a file name, an enum's word.
		q, args := fmt.Sprintf("SET GLOBAL %s = %s", name, old), []any(nil)
		if _, err := strconv.ParseFloat(old, 64); err != nil {
			q, args = fmt.Sprintf("SET GLOBAL %s = ?", name), []any{old}
		}
		if _, err := pin.ExecContext(context.Background(), q, args...); err != nil {
			t.Errorf("put back %s = %s: %v", name, old, err)
		}
		Reconnect(t)
	})
}

// LimitedPassword is the password of LimitedUser's accounts.
const LimitedPassword = "lim-pw"

// LimitedUser creates user on the test's server with SELECT and PROCESS, allowed at most n
// connections at once (MAX_USER_CONNECTIONS), and returns a connection as it; both go when
// the test ends.
func LimitedUser(t testing.TB, user string, n int) *connection.Conn {
	t.Helper()
	Exec(t,
		fmt.Sprintf("DROP USER IF EXISTS '%s'@'localhost'", user),
		fmt.Sprintf("CREATE USER '%s'@'localhost' IDENTIFIED BY '%s' WITH MAX_USER_CONNECTIONS %d", user, LimitedPassword, n),
		fmt.Sprintf("GRANT SELECT, PROCESS ON *.* TO '%s'@'localhost'", user))
	c, err := connection.Open(context.Background(), connection.ForSocket(Server(t).Socket, user, LimitedPassword))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		Exec(t, fmt.Sprintf("DROP USER IF EXISTS '%s'@'localhost'", user))
	})
	return c
}

package connection

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/go-sql-driver/mysql"

	"github.com/innowarm/innowarm/internal/flavor"
)

// The session timeouts of innowarm's own connections. A session waits between its
// statements while the warm is paced (--max-rate, --max-load, --nice), while other sessions
// read, or while innowarm works on what it read: a server whose wait_timeout is lower (a
// few seconds, to reap an application's idle connections) would close it under innowarm
// ("Got timeout reading communication packets"), and the next statement would fail with a
// lost connection. The pool itself closes connections idle for 5 minutes.
const (
	// OwnWaitTimeout is wait_timeout (seconds) on innowarm's sessions: a day.
	OwnWaitTimeout = 86400
	// OwnNetTimeout is net_read_timeout and net_write_timeout (seconds): how long the server
	// waits for innowarm to read a result (a page list while innowarm writes a manifest) or
	// to send the rest of a statement.
	OwnNetTimeout = 600
)

// ownSettings are the session settings of the connections of one Open (not those of a
// bench's clients, which build their own from Options.Config): the timeouts above, and,
// once the flavor is known, no statement time limit of the server's (MariaDB
// max_statement_time, MySQL max_execution_time), so that a small global limit meant for the
// application does not stop innowarm's dictionary, page-list and status reads. innowarm
// bounds its own statements: the scans by --statement-timeout, replay by --replay-timeout,
// each on the statement or the session.
type ownSettings struct {
	limitVar atomic.Pointer[string]
}

// apply sets the timeouts for every connection of cfg, and the statement time limit for
// those opened once detect has learned its variable's name.
func (s *ownSettings) apply(cfg *mysql.Config) {
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["wait_timeout"] = strconv.Itoa(OwnWaitTimeout)
	cfg.Params["net_read_timeout"] = strconv.Itoa(OwnNetTimeout)
	cfg.Params["net_write_timeout"] = strconv.Itoa(OwnNetTimeout)
	_ = cfg.Apply(mysql.BeforeConnect(func(_ context.Context, c *mysql.Config) error {
		if v := s.limitVar.Load(); v != nil {
			if c.Params == nil {
				c.Params = map[string]string{}
			}
			c.Params[*v] = "0"
		}
		return nil
	}))
}

// detect reads the flavor on the first connection, lifts the server's statement time limit
// there before any dictionary read, and has every later connection do so at connect.
func (s *ownSettings) detect(ctx context.Context, first *sql.Conn) (flavor.Server, error) {
	var version, comment sql.NullString
	if err := first.QueryRowContext(ctx, "SELECT VERSION(), @@version_comment").Scan(&version, &comment); err != nil {
		return flavor.Server{}, fmt.Errorf("read server variables: %w", err)
	}
	kind, ver, err := flavor.ParseVersion(version.String, comment.String)
	if err != nil {
		return flavor.Server{}, err
	}
	if v := (flavor.Server{Kind: kind, Version: ver}).StatementTimeLimitVariable(); v != "" {
		if _, err := first.ExecContext(ctx, "SET SESSION "+v+" = 0"); err != nil {
			return flavor.Server{}, fmt.Errorf("lift the statement time limit of the session: %w", err)
		}
		s.limitVar.Store(&v)
	}
	return flavor.Detect(ctx, first)
}

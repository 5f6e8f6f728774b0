package connection

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sqlerr"
)

// Session is one pinned server connection. When the context of a statement it runs is
// cancelled, the driver only drops the socket, and the server would keep running the
// statement until it next writes to the client (for a COUNT(*) over a big index: its end).
// So a Session also sends KILL QUERY for its own thread id from another connection.
type Session struct {
	c      *Conn
	conn   *sql.Conn
	id     int64
	killed atomic.Bool
	broken atomic.Bool // a statement failed because the connection did: never reuse it
}

// NewSession pins a connection and reads its thread id. In the connection's first seconds a
// refusal for a limit on connections is tried again (staleSessionGrace).
func (c *Conn) NewSession(ctx context.Context) (*Session, error) {
	return c.newSession(ctx, c.opened.Add(staleSessionGrace))
}

// NewSessionNow is NewSession without the wait: for callers that run on the sessions the
// server allows when it refuses more (warm's and replay's workers), which must learn of a
// refusal at once, not after the others have done the work.
func (c *Conn) NewSessionNow(ctx context.Context) (*Session, error) {
	return c.newSession(ctx, time.Time{})
}

func (c *Conn) newSession(ctx context.Context, retryUntil time.Time) (*Session, error) {
	var conn *sql.Conn
	err := RetryRefused(ctx, retryUntil, func() (err error) {
		conn, err = c.DB.Conn(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open session: %w", err)
	}
	var id int64
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		conn.Close()
		return nil, fmt.Errorf("open session: %w", err)
	}
	return &Session{c: c, conn: conn, id: id}, nil
}

// ID is the server thread id (the Id column of SHOW PROCESSLIST).
func (s *Session) ID() int64 { return s.id }

// Killed reports whether a statement of this session was killed after a cancel.
func (s *Session) Killed() bool { return s.killed.Load() }

// guard arms a KILL QUERY for when ctx is cancelled; the returned func disarms it.
func (s *Session) guard(ctx context.Context) func() {
	if ctx.Done() == nil {
		return func() {}
	}
	s.c.kills.Add(1)
	var armed atomic.Bool
	armed.Store(true)
	stop := context.AfterFunc(ctx, func() {
		defer s.c.kills.Done()
		if !armed.Load() {
			return
		}
		s.killed.Store(true)
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		var err error
		// A pooled connection can carry an interruption meant for an earlier statement
		// (1317), and several kills running at once can each meet one: try again, each
		// attempt consumes one such interruption.
		//
		// The kill needs a connection of its own: at an account's connection limit
		// (max_user_connections) the server refuses it while the statement to stop holds
		// its slot, and the statement ran on. Another of innowarm's statements usually
		// ends within the kill's 5 s and frees one: try again until then.
		for attempt := 0; attempt < 8; {
			_, err = s.c.DB.ExecContext(kctx, fmt.Sprintf("KILL QUERY %d", s.id))
			if err != nil && LimitReached(err) && kctx.Err() == nil {
				select {
				case <-kctx.Done():
				case <-time.After(50 * time.Millisecond):
				}
				continue
			}
			if err == nil || !isInterrupted(err) {
				break
			}
			attempt++
		}
		// A server that went away runs no statement any more: nothing to warn about.
		if err != nil && !isUnknownThread(err) && !connectionGone(err) {
			logx.Warnf("could not stop statement of thread %d on the server (KILL QUERY): %v", s.id, err)
		}
	})
	return func() {
		if ctx.Err() != nil {
			// The statement returned because of the cancel: the driver gives up at once and
			// drops the socket while the server may still run it, so the kill must go ahead.
			// Marked here, not only when the kill runs: Close may come first, and a kill that
			// reaches the thread once it is idle in the pool would interrupt its next statement.
			s.killed.Store(true)
			return
		}
		armed.Store(false)
		if stop() {
			s.c.kills.Done()
		}
	}
}

// Exec runs a statement that returns no rows.
func (s *Session) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	defer s.guard(ctx)()
	r, err := s.conn.ExecContext(ctx, query, args...)
	return r, s.note(err)
}

// QueryRow runs a statement and scans its single row into dest.
func (s *Session) QueryRow(ctx context.Context, query string, args []any, dest ...any) error {
	defer s.guard(ctx)()
	return s.note(s.conn.QueryRowContext(ctx, query, args...).Scan(dest...))
}

// Query runs a statement and calls each for every row while it streams; the statement stays
// guarded until the rows are closed.
func (s *Session) Query(ctx context.Context, query string, args []any, each func(*sql.Rows) error) error {
	defer s.guard(ctx)()
	rows, err := s.conn.QueryContext(ctx, query, args...)
	if err != nil {
		return s.note(err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	return s.note(rows.Err())
}

// note marks the session broken when err says its connection is gone. MariaDB answers
// KILL CONNECTION with an error packet ("Connection was killed") before it closes the
// socket, so the driver may still think the connection usable and hand it back to the pool,
// where the next statement would fail on it.
func (s *Session) note(err error) error {
	if err != nil && connectionGone(err) {
		s.broken.Store(true)
	}
	return err
}

func connectionGone(err error) bool { return sqlerr.ConnectionLost(err) }

// Conn exposes the pinned connection for callers that manage their own statements.
func (s *Session) Conn() *sql.Conn { return s.conn }

// Close returns the connection; a session whose statement was killed, or whose connection
// failed, is discarded.
func (s *Session) Close() error {
	if s.killed.Load() || s.broken.Load() {
		_ = s.conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	return s.conn.Close()
}

// SetLockWaitTimeout bounds how long this session's statements wait for a metadata lock
// (behind DDL or LOCK TABLES) before failing, instead of the server default of a day.
func (s *Session) SetLockWaitTimeout(ctx context.Context, d time.Duration) error {
	_, err := s.Exec(ctx, fmt.Sprintf("SET SESSION lock_wait_timeout = %d", max(int(d.Seconds()), 1)))
	return err
}

func isInterrupted(err error) bool { return sqlerr.Is(err, sqlerr.QueryInterrupted) }

// isUnknownThread: the statement ended, and its connection with it, before the kill came.
func isUnknownThread(err error) bool {
	return sqlerr.Is(err, sqlerr.NoSuchThread)
}

// Usable says whether the session may run another statement: none of its statements was
// killed after a cancel and its connection did not fail.
func (s *Session) Usable() bool { return !s.killed.Load() && !s.broken.Load() }

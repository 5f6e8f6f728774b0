package catalog

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
)

// pendingRead is a dictionary read running on a session of its own.
type pendingRead[T any] struct {
	done chan struct{}
	val  T
	err  error
}

// startRead runs read on a new session of conn; ctx's end kills its statement. When the
// server refuses that session for a limit on connections (max_connections,
// max_user_connections), the read runs after the others: on the session of the first that
// ends, or on one opened once it ended. So a load needs two connections, not one per read,
// and keeps reading side by side where the server allows it.
func startRead[T any](ctx context.Context, conn *connection.Conn, read func(context.Context, *connection.Session) (T, error)) *pendingRead[T] {
	p := &pendingRead[T]{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		sess, err := readSessions.acquire(ctx, conn)
		if err != nil {
			p.err = err
			return
		}
		defer readSessions.release(conn, sess)
		p.val, p.err = read(ctx, sess)
	}()
	return p
}

// wait waits for the read and gives what it read.
func (p *pendingRead[T]) wait() (T, error) {
	<-p.done
	return p.val, p.err
}

// readSessions shares sessions between the reads of each connection pool once the server
// refuses more.
var readSessions = &sessionShare{pools: map[*connection.Conn]*readers{}}

// sessionShare hands the session of a read that ends to a read the server refused one.
type sessionShare struct {
	mu    sync.Mutex
	pools map[*connection.Conn]*readers
}

// readers are the reads of one connection pool: how many hold a session or are opening
// one, and those waiting for one, first come first served.
type readers struct {
	live    int
	waiting []chan handoff
	// released counts the sessions given back (to a waiting read or to the pool): a read
	// refused after one was given back to the pool tries again at once.
	released uint64
}

// handoff is what a waiting read is given: a session, leave to open one (a read ended
// and closed its session: nil sess and err), or an error when no session will come.
type handoff struct {
	sess *connection.Session
	err  error
}

// refusedRetries bounds the tries to open a session after a read ended and closed its own
// (a killed or broken one cannot be handed on), while the server may not yet have counted
// that connection closed.
const (
	refusedRetries = 20
	refusedBackoff = 50 * time.Millisecond
)

func (s *sessionShare) of(conn *connection.Conn) *readers {
	r := s.pools[conn]
	if r == nil {
		r = &readers{}
		s.pools[conn] = r
	}
	return r
}

// forget drops the pool's entry once no read holds or waits for a session.
func (s *sessionShare) forget(conn *connection.Conn, r *readers) {
	if r.live == 0 && len(r.waiting) == 0 {
		delete(s.pools, conn)
	}
}

// acquire opens a session for a read, or, when the server refuses it for a limit on
// connections while another read of conn holds a session, waits for one.
func (s *sessionShare) acquire(ctx context.Context, conn *connection.Conn) (*connection.Session, error) {
	s.mu.Lock()
	s.of(conn).live++
	s.mu.Unlock()
	retries := 0
	for {
		s.mu.Lock()
		released := s.of(conn).released
		s.mu.Unlock()
		sess, err := conn.NewSession(ctx)
		if err == nil {
			return sess, nil
		}
		s.mu.Lock()
		r := s.of(conn)
		if connection.LimitReached(err) && ctx.Err() == nil && r.released != released {
			// A read ended while this one was refused: its connection may be free.
			s.mu.Unlock()
			continue
		}
		if !connection.LimitReached(err) || ctx.Err() != nil {
			s.mu.Unlock()
			s.release(conn, nil) // a waiting read may open one in its place
			return nil, err
		}
		if r.live == 1 {
			// No other read holds a session that could be handed on, or will close one.
			if retries < refusedRetries && retries > 0 {
				s.mu.Unlock()
				retries++
				if !sleep(ctx, refusedBackoff) {
					s.release(conn, nil)
					return nil, ctx.Err()
				}
				continue
			}
			r.live--
			waiting := r.waiting
			r.waiting = nil
			s.forget(conn, r)
			s.mu.Unlock()
			for _, ch := range waiting {
				ch <- handoff{err: err}
			}
			return nil, err
		}
		r.live--
		ch := make(chan handoff, 1)
		r.waiting = append(r.waiting, ch)
		s.mu.Unlock()
		select {
		case h := <-ch:
			switch {
			case h.err != nil:
				return nil, h.err
			case h.sess != nil:
				return h.sess, nil // counted live by the read that handed it on
			}
			retries = 1 // counted live by the read that closed its session: open one
		case <-ctx.Done():
			s.mu.Lock()
			r := s.of(conn)
			if i := slices.Index(r.waiting, ch); i >= 0 {
				r.waiting = slices.Delete(r.waiting, i, i+1)
				s.forget(conn, r)
				s.mu.Unlock()
				return nil, ctx.Err()
			}
			s.mu.Unlock()
			// Handed something as ctx ended: pass it on.
			switch h := <-ch; {
			case h.sess != nil:
				s.release(conn, h.sess)
			case h.err == nil:
				s.release(conn, nil)
			}
			return nil, ctx.Err()
		}
	}
}

// release ends a read's hold on sess (nil: a read that was to open one and will not): the
// first waiting read gets it; else it goes back to the pool (or, when it cannot be used
// again, its statement killed or its connection failed, is closed), and the first waiting
// read, if any, opens one in its place.
func (s *sessionShare) release(conn *connection.Conn, sess *connection.Session) {
	s.mu.Lock()
	r := s.of(conn)
	if len(r.waiting) > 0 && sess != nil && sess.Usable() {
		ch := r.waiting[0]
		r.waiting = r.waiting[1:]
		r.released++
		s.mu.Unlock()
		ch <- handoff{sess: sess}
		return
	}
	s.mu.Unlock()
	if sess != nil {
		sess.Close() // before any read tries for its connection
	}
	s.mu.Lock()
	r = s.of(conn)
	r.released++
	if len(r.waiting) > 0 {
		ch := r.waiting[0]
		r.waiting = r.waiting[1:]
		s.mu.Unlock()
		ch <- handoff{}
		return
	}
	r.live--
	s.forget(conn, r)
	s.mu.Unlock()
}

// sleep waits d or until ctx ends; it says whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

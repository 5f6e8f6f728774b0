package connection

import (
	"context"
	"sync"
	"time"
)

// Share runs reads that each open connections of their own (a capture's page list and the
// dictionary reads beside it) side by side, and one after another where the server refuses
// more connections (max_connections, max_user_connections, an account's
// MAX_USER_CONNECTIONS): a read the server refused a connection runs again once another
// read of the share ends, whose connection then sits idle in the pool for it. With no other
// read running it tries again after a short wait, a few times (a connection that was
// closed, not given back to the pool, may not be counted gone yet), then fails with the
// refusal. So the reads need one connection at the least, not one each.
//
// A read must be independent of the share's other reads (never wait for one of them), give
// back its connections when it returns, and be safe to run again after a refusal. A read
// that opens connections through another Share (or none) is refused there on its own: it
// is not told of this share's reads. The zero Share is ready to use; a nil one runs each
// read with a share of its own.
//
// internal/catalog's sessionShare does the same for the catalog's reads, handing sessions
// on directly; this one needs no session of its own, so that reads through the pool
// (sql.DB queries) queue too.
type Share struct {
	mu      sync.Mutex
	running int           // reads running now (not those waiting after a refusal)
	ended   chan struct{} // closed when a read returns for good, then replaced
}

// The tries of a refused read when no other read of the share runs.
const (
	shareRetries = 20
	shareBackoff = 50 * time.Millisecond
)

// Run runs read, and runs it again while the server refuses it a connection for a limit on
// connections, as the Share's comment says. It returns read's last error, or ctx's when ctx
// ends while it waits.
func (s *Share) Run(ctx context.Context, read func() error) error {
	if s == nil {
		s = &Share{}
	}
	tries := 0
	for {
		ended := s.start()
		err := read()
		refused := err != nil && LimitReached(err) && ctx.Err() == nil
		if !refused {
			s.stop(true)
			return err
		}
		// Refused: nothing of this read runs now. No one is woken for it, or two refused
		// reads would wake each other in turn while a third holds the connection.
		others := s.stop(false)
		select {
		case <-ended:
			// A read ended while this one was refused: its connection may be free.
			tries = 0
			continue
		default:
		}
		if others > 0 {
			select {
			case <-ended:
				tries = 0
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if tries == shareRetries {
			return err
		}
		tries++
		t := time.NewTimer(shareBackoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// start counts a read running and gives the channel closed when another read returns.
func (s *Share) start() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running++
	if s.ended == nil {
		s.ended = make(chan struct{})
	}
	return s.ended
}

// stop counts a read no longer running; one that returned for good (end) wakes the reads
// waiting for another to end (it may have been the last one running). It says how many
// others still run.
func (s *Share) stop(end bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running--
	if end && s.ended != nil {
		close(s.ended)
		s.ended = nil
	}
	return s.running
}

package catalog

import (
	"context"

	"github.com/innowarm/innowarm/internal/connection"
)

// pendingRead is a dictionary read running on a session of its own.
type pendingRead[T any] struct {
	done chan struct{}
	val  T
	err  error
}

// startRead runs read on a new session of conn; ctx's end kills its statement.
func startRead[T any](ctx context.Context, conn *connection.Conn, read func(context.Context, *connection.Session) (T, error)) *pendingRead[T] {
	p := &pendingRead[T]{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		sess, err := conn.NewSession(ctx)
		if err != nil {
			p.err = err
			return
		}
		defer sess.Close()
		p.val, p.err = read(ctx, sess)
	}()
	return p
}

// wait waits for the read and gives what it read.
func (p *pendingRead[T]) wait() (T, error) {
	<-p.done
	return p.val, p.err
}

package catalog

import (
	"context"

	"golang.org/x/sys/unix"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/flavor"
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

// filesMayBeReadable says whether the server's datadir can be read here: innowarm may run
// on the database host, whose tablespace files the load reads (sizesFromFiles). A datadir
// of the same path on another host passes too; the files themselves decide.
func filesMayBeReadable(srv flavor.Server) bool {
	return srv.Datadir != "" && unix.Access(srv.Datadir, unix.R_OK|unix.X_OK) == nil
}

//go:build !linux

package bench

import (
	"context"
	"net"
)

// blockingIOSupported says whether dialBlocking gives blockingConns.
const blockingIOSupported = false

// blockingConn exists on Linux only.
type blockingConn struct {
	net.Conn
	fd    int
	hello []byte
}

// dialBlocking falls back to Go's network poller where the raw system calls are not known.
func dialBlocking(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

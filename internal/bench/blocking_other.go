//go:build !linux

package bench

import (
	"context"
	"net"
)

// blockingIOSupported says whether dialBlocking gives blockingConns.
const blockingIOSupported = false

// dialBlocking falls back to Go's network poller where the raw system calls are not known.
func dialBlocking(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

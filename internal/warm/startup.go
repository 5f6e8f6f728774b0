package warm

import (
	"context"
	"fmt"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/flavor"
)

// startupLoadGrace is how long a server that loads its pool at startup is given to begin
// that load after it first answers: the loader thread may start just after the listener.
const startupLoadGrace = time.Second

// TakeOverStartupLoad is for a warm started with the server: when the server is loading its
// own buffer pool dump (innodb_buffer_pool_load_at_startup), innowarm, about to load the
// pages the traffic needs itself, aborts that load (innodb_buffer_pool_load_abort) instead
// of racing it for the disk, and its loader, which a native warm needs. It returns what it
// did, for the log ("" when the server was not loading).
func TakeOverStartupLoad(ctx context.Context, conn *connection.Conn) (string, error) {
	var atStartup bool
	if err := conn.DB.QueryRowContext(ctx, "SELECT @@innodb_buffer_pool_load_at_startup").Scan(&atStartup); err != nil {
		return "", fmt.Errorf("read innodb_buffer_pool_load_at_startup: %w", err)
	}
	status, err := loadStatus(ctx, conn)
	if err != nil {
		return "", err
	}
	deadline := time.Now().Add(startupLoadGrace)
	for atStartup && !flavor.LoadInProgress(status) && !flavor.LoadFinished(status) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if status, err = loadStatus(ctx, conn); err != nil {
			return "", err
		}
	}
	if !flavor.LoadInProgress(status) {
		return "", nil
	}
	if _, err := conn.DB.ExecContext(ctx, "SET GLOBAL innodb_buffer_pool_load_abort = ON"); err != nil {
		return "", fmt.Errorf("abort the server's own buffer pool load (%s): %w", status, err)
	}
	// The loader stops at its next page; reads it already queued still complete.
	was := status
	for wait := time.Now().Add(10 * time.Second); flavor.LoadInProgress(status) && time.Now().Before(wait); {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if status, err = loadStatus(ctx, conn); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("the server was loading its own buffer pool dump (%s): aborted it (innodb_buffer_pool_load_abort), innowarm loads the pages instead; now: %s", was, status), nil
}

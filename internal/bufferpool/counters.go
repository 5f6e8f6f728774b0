package bufferpool

import (
	"context"
	"fmt"

	"github.com/innowarm/innowarm/internal/connection"
)

// PageCounters are the server's global page counters: what entered the pool (pages read
// and created) and how long its LRU list is. Between two readings,
//
//	left = read + created - (data_now - data_then)
//
// pages left the pool: every page that entered was read or created, and every page that
// left made the list shorter by one or made room for one of those. They cost one status
// read, whatever the pool's size.
type PageCounters struct {
	Read    int64 `json:"read"`    // Innodb_pages_read
	Created int64 `json:"created"` // Innodb_pages_created
	Data    int64 `json:"data"`    // Innodb_buffer_pool_pages_data
	Uptime  int64 `json:"uptime"`  // seconds: a restart is a new run
}

// LeftSince is how many pages left the pool between then and c (never negative).
func (c PageCounters) LeftSince(then PageCounters) int64 {
	read := max(c.Read-then.Read, 0)
	created := max(c.Created-then.Created, 0)
	return max(read+created-(c.Data-then.Data), 0)
}

// ReadPageCounters reads the page counters.
func ReadPageCounters(ctx context.Context, conn *connection.Conn) (PageCounters, error) {
	st, err := conn.GlobalStatus(ctx, "Innodb_pages_read", "Innodb_pages_created", "Innodb_buffer_pool_pages_data", "Uptime")
	if err != nil {
		return PageCounters{}, fmt.Errorf("read the page counters: %w", err)
	}
	return PageCounters{Read: st["innodb_pages_read"], Created: st["innodb_pages_created"], Data: st["innodb_buffer_pool_pages_data"], Uptime: st["uptime"]}, nil
}

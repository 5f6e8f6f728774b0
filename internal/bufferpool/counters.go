package bufferpool

import (
	"context"
	"fmt"
	"strings"

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
	rows, err := conn.DB.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_pages_read', 'Innodb_pages_created', 'Innodb_buffer_pool_pages_data', 'Uptime')")
	if err != nil {
		return PageCounters{}, fmt.Errorf("read the page counters: %w", err)
	}
	defer rows.Close()
	var c PageCounters
	seen := 0
	for rows.Next() {
		var name string
		var v int64
		if err := rows.Scan(&name, &v); err != nil {
			return c, fmt.Errorf("read the page counters: %w", err)
		}
		seen++
		switch strings.ToLower(name) {
		case "innodb_pages_read":
			c.Read = v
		case "innodb_pages_created":
			c.Created = v
		case "innodb_buffer_pool_pages_data":
			c.Data = v
		case "uptime":
			c.Uptime = v
		}
	}
	if err := rows.Err(); err != nil {
		return c, fmt.Errorf("read the page counters: %w", err)
	}
	if seen < 4 {
		return c, fmt.Errorf("read the page counters: the server reports %d of Innodb_pages_read, Innodb_pages_created, Innodb_buffer_pool_pages_data, Uptime", seen)
	}
	return c, nil
}

// Package bufferpool reads what the InnoDB buffer pool holds: pool-wide totals from status
// counters, and per schema/table/index residency from the page views.
package bufferpool

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/innowarm/innowarm/internal/connection"
)

// Totals are pool-wide figures from SHOW GLOBAL STATUS.
type Totals struct {
	PageSize     int     `json:"page_size"`
	PoolBytes    int64   `json:"pool_bytes"`
	PagesTotal   int64   `json:"pages_total"`
	PagesFree    int64   `json:"pages_free"`
	PagesData    int64   `json:"pages_data"`
	PagesDirty   int64   `json:"pages_dirty"`
	PagesMisc    int64   `json:"pages_misc"`
	PagesOld     int64   `json:"pages_old"`
	ReadRequests int64   `json:"read_requests"`
	DiskReads    int64   `json:"disk_reads"`
	HitRate      float64 `json:"hit_rate"` // 1 - disk reads / read requests since start-up
	ReadAhead    int64   `json:"read_ahead"`
	LoadStatus   string  `json:"load_status,omitempty"`
	DumpStatus   string  `json:"dump_status,omitempty"`
}

// ReadTotals reads the pool counters in one round trip.
func ReadTotals(ctx context.Context, c *connection.Conn) (Totals, error) {
	rows, err := c.DB.QueryContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_%'")
	if err != nil {
		return Totals{}, fmt.Errorf("read buffer pool status: %w", err)
	}
	defer rows.Close()
	st := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return Totals{}, err
		}
		st[strings.ToLower(k)] = v
	}
	if err := rows.Err(); err != nil {
		return Totals{}, err
	}
	num := func(k string) int64 {
		n, _ := strconv.ParseInt(st["innodb_buffer_pool_"+k], 10, 64)
		return n
	}
	t := Totals{
		PageSize:     c.Server.PageSize,
		PoolBytes:    c.Server.PoolSize,
		PagesTotal:   num("pages_total"),
		PagesFree:    num("pages_free"),
		PagesData:    num("pages_data"),
		PagesDirty:   num("pages_dirty"),
		PagesMisc:    num("pages_misc"),
		PagesOld:     num("pages_old"),
		ReadRequests: num("read_requests"),
		DiskReads:    num("reads"),
		ReadAhead:    num("read_ahead"),
		LoadStatus:   st["innodb_buffer_pool_load_status"],
		DumpStatus:   st["innodb_buffer_pool_dump_status"],
	}
	if t.ReadRequests > 0 {
		t.HitRate = 1 - float64(t.DiskReads)/float64(t.ReadRequests)
	}
	return t, nil
}

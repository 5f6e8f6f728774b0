// Package bufferpool reads what the InnoDB buffer pool holds: pool-wide totals from status
// counters, and per schema/table/index residency from the page views.
package bufferpool

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
)

// Totals are pool-wide figures from SHOW GLOBAL STATUS.
type Totals struct {
	PageSize     int   `json:"page_size"`
	PoolBytes    int64 `json:"pool_bytes"`
	PagesTotal   int64 `json:"pages_total"`
	PagesFree    int64 `json:"pages_free"`
	PagesData    int64 `json:"pages_data"`
	PagesDirty   int64 `json:"pages_dirty"`
	PagesMisc    int64 `json:"pages_misc"`
	PagesOld     int64 `json:"pages_old"`
	ReadRequests int64 `json:"read_requests"`
	DiskReads    int64 `json:"disk_reads"`
	// HitRate is 1 - disk reads / read requests since start-up; nil (JSON null) when the
	// counters do not allow it, with the reason in HitRateNote.
	HitRate     *float64 `json:"hit_rate"`
	HitRateNote string   `json:"hit_rate_note,omitempty"`
	ReadAhead   int64    `json:"read_ahead"`
	LoadStatus  string   `json:"load_status,omitempty"`
	DumpStatus  string   `json:"dump_status,omitempty"`
	// FreeTarget is the free pages the page cleaner keeps (flavor.FreeTargetExpr); 0
	// when the server would not say.
	FreeTarget int64 `json:"free_target_pages"`
}

// Room is how many pages can be added without going under the page cleaner's free target
// (or a fiftieth of the pool, at least 64 pages, when that is more): past it the server
// evicts from the LRU tail right away, and the next to go are pages just loaded.
func (t Totals) Room() (pages, reserve int64) {
	reserve = max(t.FreeTarget, t.PagesTotal/50, 64)
	return max(t.PagesFree-reserve, 0), reserve
}

// ReadTotals reads the pool counters in one round trip.
func ReadTotals(ctx context.Context, c *connection.Conn) (Totals, error) {
	// An account at its MAX_USER_CONNECTIONS: the server still counts sessions closed a
	// moment ago (another innowarm's that just ended, this one's previous step's) until
	// their threads end. A CI run refused a warm's status read so, right after an inspect
	// by the same 3-connection account. Tried again for a few seconds.
	st := map[string]string{}
	err := connection.RetryRefused(ctx, time.Now().Add(5*time.Second), func() error {
		return readStatus(ctx, c, st)
	})
	if err != nil {
		return Totals{}, fmt.Errorf("read buffer pool status: %w", err)
	}
	num := func(k string) int64 {
		n, _ := strconv.ParseInt(st["innodb_buffer_pool_"+k], 10, 64)
		return n
	}
	t := Totals{
		PageSize:     c.Server.PageSize,
		PagesTotal:   num("pages_total"),
		PagesFree:    num("pages_free"),
		PagesData:    num("pages_data"),
		PagesDirty:   num("pages_dirty"),
		PagesOld:     num("pages_old"),
		ReadRequests: num("read_requests"),
		DiskReads:    num("reads"),
		ReadAhead:    num("read_ahead"),
		LoadStatus:   st["innodb_buffer_pool_load_status"],
		DumpStatus:   st["innodb_buffer_pool_dump_status"],
	}
	t.PagesMisc = miscPages(st["innodb_buffer_pool_pages_misc"], t.PagesTotal, t.PagesFree, t.PagesData)
	t.HitRate, t.HitRateNote = HitRate(t.ReadRequests, t.DiskReads)
	// The pool's size now: it can be resized while innowarm is connected (SET GLOBAL
	// innodb_buffer_pool_size; MariaDB 10.11.12+ under memory pressure by itself).
	// MySQL has no Innodb_buffer_pool_pages_old: its old sublist's length is the sum of
	// the instances' OLD_DATABASE_PAGES, read in the same statement (no round trip more).
	_, hasOld := st["innodb_buffer_pool_pages_old"]
	q, dest := "SELECT @@GLOBAL.innodb_buffer_pool_size, "+c.Server.FreeTargetExpr(), []any{&t.PoolBytes, &t.FreeTarget}
	if !hasOld {
		q += ", " + oldPagesExpr
		dest = append(dest, &t.PagesOld)
	}
	if err := c.DB.QueryRowContext(ctx, q).Scan(dest...); err != nil {
		if ctx.Err() != nil {
			return Totals{}, err
		}
		// A server without the view the free target is counted in: the fiftieth of the
		// pool stands in for it (and the old pages stay unknown: 0).
		t.FreeTarget, t.PagesOld = 0, num("pages_old")
		if err := c.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_buffer_pool_size").Scan(&t.PoolBytes); err != nil {
			return Totals{}, fmt.Errorf("read innodb_buffer_pool_size: %w", err)
		}
	}
	return t, nil
}

// miscPages is the pool's pages that are neither free nor data (adaptive hash, locks):
// the server's Innodb_buffer_pool_pages_misc, unless it wrapped around. MariaDB computes it
// unsigned as total - free - LRU length, which a load under way or just done can push below
// zero (18446744073709551564 after a native load): parsed as it was, it read as the
// largest int64, and follow, which sizes the hot set it loads by the pool less those pages,
// loaded nothing. Then, and where the counter is missing, the pages neither free nor data.
func miscPages(raw string, total, free, data int64) int64 {
	if n, err := strconv.ParseUint(strings.TrimSpace(raw), 10, 64); err == nil && n <= uint64(max(total, 0)) {
		return int64(n)
	}
	return max(total-free-data, 0)
}

// oldPagesExpr is the pool's old sublist length from its instances' statistics, where the
// server has no status counter for it (MySQL).
const oldPagesExpr = "(SELECT CAST(COALESCE(SUM(OLD_DATABASE_PAGES), 0) AS SIGNED) FROM information_schema.INNODB_BUFFER_POOL_STATS)"

// HitRate is the share of page requests the pool answered without a disk read, from the
// server's counters since start-up. It is unavailable (nil, and why) when there were no
// requests, or when the counters disagree: the server's own load (load_now) reads pages no
// query requested, and MariaDB 11.8 counts some reads without counting their requests
// (MDEV-37152), so reads can exceed requests and the rate would be negative.
func HitRate(requests, diskReads int64) (*float64, string) {
	switch {
	case requests <= 0:
		return nil, "no page requests yet"
	case diskReads > requests:
		return nil, fmt.Sprintf("unavailable: the server counts %d disk reads but only %d read requests (the server's own buffer pool load and read-ahead read without a request; MariaDB 11.8 leaves out more, MDEV-37152)", diskReads, requests)
	}
	r := 1 - float64(diskReads)/float64(requests)
	return &r, ""
}

// HitRateText is the hit rate for a line of text: "hit rate 99.12% since start-up", or why
// there is none.
func (t Totals) HitRateText() string {
	if t.HitRate == nil {
		return "hit rate " + t.HitRateNote
	}
	return fmt.Sprintf("hit rate %.2f%% since start-up", 100**t.HitRate)
}

// readStatus puts the server's Innodb_buffer_pool_% status into st, its names in lower case.
func readStatus(ctx context.Context, c *connection.Conn, st map[string]string) error {
	rows, err := c.DB.QueryContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_%'")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return err
		}
		st[strings.ToLower(k)] = v
	}
	return rows.Err()
}

package warm

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/pacing"
)

// chunkReads follows what each chunk of a paced native load had the server read. It tells
// the governor how many pages (at most the chunk's: the loader skips resident ones; at
// most what the server read while the chunk loaded), so that --nice can tell the
// foreground's reads from the warm's. And where the loader queues its reads (MariaDB: up
// to about a thousand in flight, the load reported complete once they are submitted) it
// waits until they have left the queue before the next chunk starts: the warm then never
// has more than one chunk of reads ahead of the foreground's. On a disk capped at 1,000
// reads per second, chunks loaded back to back queued seconds of reads, and the
// foreground's misses waited behind them: 1-2 s seconds of p95 every 15-20 s, long after
// the pool was hot (docs/experiments.md).
type chunkReads struct {
	gov     *pacing.Governor
	conn    *connection.Conn
	queued  bool          // the loader's reads may still be in flight when it says it is done
	selects *atomic.Int64 // the drain's polls, which are SELECTs (may be nil)
}

// Drain bounds: the warm's reads in flight at most drainSlack pages (the foreground's
// read-ahead is in the same count); a drain that takes longer than drainTimeout is left
// to the governor's signals.
const (
	drainSlack   = 8
	drainTimeout = 10 * time.Second
)

func newChunkReads(gov *pacing.Governor, conn *connection.Conn, selects *atomic.Int64) *chunkReads {
	if gov == nil {
		return nil
	}
	return &chunkReads{gov: gov, conn: conn, queued: conn.Server.LoadQueuesReads(), selects: selects}
}

// start returns Innodb_pages_read as a chunk starts (<0: unknown).
func (c *chunkReads) start(ctx context.Context) int64 {
	if c == nil {
		return -1
	}
	n, err := pagesRead(ctx, c.conn)
	if err != nil {
		return -1
	}
	return n
}

// end accounts for a chunk of size pages that started at Innodb_pages_read from, and waits
// for its queued reads. Both servers count a read in Innodb_pages_read when it is
// submitted, so the count is complete once the loader says it is done.
func (c *chunkReads) end(ctx context.Context, size, from int64) {
	if c == nil {
		return
	}
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	n, err := pagesRead(qctx, c.conn)
	cancel()
	if err != nil || from < 0 {
		c.gov.OwnReads(size)
	} else {
		c.gov.OwnReads(min(size, max(n-from, 0)))
	}
	if c.queued {
		c.drain(ctx)
	}
}

// drain waits until the reads in flight beyond the synchronous ones (the foreground's
// misses wait for theirs) are down to drainSlack.
func (c *chunkReads) drain(ctx context.Context) {
	waitQueued(ctx, c.conn, drainSlack, 5*time.Millisecond, 50*time.Millisecond, c.selects)
}

// boundedChunkPages is the chunk of a load that stops for traffic on a server whose loader
// queues its reads: at most about one and a half chunks are queued when the traffic
// arrives, 0.2 s of a disk capped at 1,000 reads per second.
const boundedChunkPages = 128

// waitQueued waits until the reads queued beyond the synchronous ones are down to limit
// (or for drainTimeout, or ctx), polling after pause, doubled up to maxPause. Its polls are
// SELECTs: each is counted in selects (may be nil), which the traffic watcher leaves out.
func waitQueued(ctx context.Context, conn *connection.Conn, limit int64, pause, maxPause time.Duration, selects *atomic.Int64) {
	deadline := time.Now().Add(drainTimeout)
	for time.Now().Before(deadline) {
		if selects != nil {
			selects.Add(1)
		}
		queued, err := queuedReads(ctx, conn)
		if err != nil || queued <= limit {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, maxPause)
	}
}

// queuedReads is the pool's reads in flight (INNODB_BUFFER_POOL_STATS.PENDING_READS: every
// read, queued ones included) less the synchronous ones (Innodb_data_pending_reads).
func queuedReads(ctx context.Context, conn *connection.Conn) (int64, error) {
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var all, sync int64
	err := conn.DB.QueryRowContext(qctx, "SELECT (SELECT SUM(PENDING_READS) FROM information_schema.INNODB_BUFFER_POOL_STATS), (SELECT VARIABLE_VALUE FROM "+conn.Server.GlobalStatusTable()+" WHERE VARIABLE_NAME = 'INNODB_DATA_PENDING_READS')").Scan(&all, &sync)
	return all - sync, err
}

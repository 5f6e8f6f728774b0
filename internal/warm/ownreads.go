package warm

import (
	"context"
	"sync"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/pacing"
)

// chunkReads tells the pacing governor how many pages each chunk of a native load had the
// server read, so that --nice can tell the foreground's reads from the warm's: at most the
// chunk's pages (the loader skips resident ones), at most what the server read while the
// chunk loaded. A loader that queues its reads (MariaDB) reports its load complete while
// they are still in flight: what remains of the chunk is counted from what the server
// reads in the next half second, or until the next chunk starts, whichever is first.
type chunkReads struct {
	gov  *pacing.Governor
	conn *connection.Conn
	tail bool // the loader's reads may complete after it says it is done

	mu    sync.Mutex
	left  int64 // pages of the last chunk not accounted yet
	from  int64 // Innodb_pages_read when it ended
	timer *time.Timer
}

// chunkTailSettle is how long after a queued load's end its reads are still counted.
const chunkTailSettle = 500 * time.Millisecond

func newChunkReads(gov *pacing.Governor, conn *connection.Conn) *chunkReads {
	if gov == nil {
		return nil
	}
	return &chunkReads{gov: gov, conn: conn, tail: conn.Server.LoadQueuesReads()}
}

// start settles the previous chunk's tail and returns Innodb_pages_read as a chunk starts
// (<0: unknown).
func (c *chunkReads) start(ctx context.Context) int64 {
	if c == nil {
		return -1
	}
	c.settle(ctx)
	n, err := pagesRead(ctx, c.conn)
	if err != nil {
		return -1
	}
	return n
}

// end accounts for a chunk of size pages that started at Innodb_pages_read from.
func (c *chunkReads) end(ctx context.Context, size, from int64) {
	if c == nil {
		return
	}
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	n, err := pagesRead(qctx, c.conn)
	cancel()
	if err != nil || from < 0 {
		c.gov.OwnReads(size)
		return
	}
	read := min(size, max(n-from, 0))
	c.gov.OwnReads(read)
	if !c.tail || read >= size {
		return
	}
	c.mu.Lock()
	c.left, c.from = size-read, n
	c.timer = time.AfterFunc(chunkTailSettle, func() { c.settle(context.WithoutCancel(ctx)) })
	c.mu.Unlock()
}

// settle counts the last chunk's reads that completed after its end.
func (c *chunkReads) settle(ctx context.Context) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if c.left <= 0 {
		return
	}
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if n, err := pagesRead(qctx, c.conn); err == nil {
		c.gov.OwnReads(min(c.left, max(n-c.from, 0)))
	} else {
		c.gov.OwnReads(c.left)
	}
	c.left = 0
}

package experiment

import (
	"context"
	"time"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/dumpfile"
	"github.com/innowarm/innowarm/internal/logx"
)

// The pool's turnover (--pool-pages-every): the counters say how many pages a run read,
// not which. A failover's standby starts with the primary's pool and still dips 20-30 s
// later, reading at the disk's cap: whether those reads are pages it held at the failover
// and evicted (the loaded set's tail, or worse its head) or pages it never held tells an
// eviction order that throws away what the traffic comes back to from a hot set that was
// never complete. The server's own dump gives its whole LRU list at a moment, a copy under
// the pool's mutex and no table built, so it can be taken every few seconds under traffic.

// PoolTurnover is what changed in the pool between two lists of its pages.
type PoolTurnover struct {
	From  float64 `json:"from_s"` // seconds since the server answered
	To    float64 `json:"to_s"`
	Pages int     `json:"pages"` // in the list at To
	// In: pages in the list at To and not at From (read from disk between them; a page read
	// and evicted in between is not seen). InBack of them were in an earlier list of the run
	// (evicted, then read again); InStart of those were in the run's first list, and
	// InStartDecile says where they stood in it (0: its most recently used tenth).
	In            int     `json:"in"`
	InBack        int     `json:"in_back"`
	InStart       int     `json:"in_start"`
	InStartDecile [10]int `json:"in_start_decile"`
	// Out: pages in the list at From and not at To (evicted); OutStart of them were in the
	// first list, by decile of their place there.
	Out            int     `json:"out"`
	OutStart       int     `json:"out_start"`
	OutStartDecile [10]int `json:"out_start_decile"`
	// StartLeft: of the first list's pages, how many are still in the list at To.
	StartLeft int `json:"start_left"`
	// ListFrom is where the list at To came from when not the server's dump: "lru-table"
	// while another innowarm (follow's load) held the dump file.
	ListFrom string `json:"list_from,omitempty"`
}

// turnoverTracker compares each list of the pool's pages with the one before it, the run's
// first and every one since.
type turnoverTracker struct {
	start     map[dumpfile.PageID]int32 // the first list's pages, by their place in it
	startLen  int
	prev      map[dumpfile.PageID]struct{}
	ever      map[dumpfile.PageID]struct{} // every page of an earlier list
	prevT     float64
	turnovers []PoolTurnover
}

// add takes the list (most recently used first) seen at t.
func (tr *turnoverTracker) add(t float64, list []dumpfile.PageID) {
	cur := make(map[dumpfile.PageID]struct{}, len(list))
	for _, p := range list {
		cur[p] = struct{}{}
	}
	if tr.start == nil {
		tr.start = make(map[dumpfile.PageID]int32, len(list))
		for i, p := range list {
			tr.start[p] = int32(i)
		}
		tr.startLen = len(list)
		tr.prev, tr.prevT = cur, t
		tr.ever = make(map[dumpfile.PageID]struct{}, 2*len(list))
		return
	}
	decile := func(p dumpfile.PageID) (int, bool) {
		at, ok := tr.start[p]
		if !ok {
			return 0, false
		}
		return min(9, int(int64(at)*10/int64(max(tr.startLen, 1)))), true
	}
	pt := PoolTurnover{From: tr.prevT, To: t, Pages: len(list)}
	for p := range cur {
		if _, ok := tr.start[p]; ok {
			pt.StartLeft++
		}
		if _, ok := tr.prev[p]; ok {
			continue
		}
		pt.In++
		if _, back := tr.ever[p]; !back { // ever holds the first list from the second comparison on
			continue
		}
		pt.InBack++
		if d, ok := decile(p); ok {
			pt.InStart++
			pt.InStartDecile[d]++
		}
	}
	for p := range tr.prev {
		tr.ever[p] = struct{}{}
		if _, ok := cur[p]; ok {
			continue
		}
		pt.Out++
		if d, ok := decile(p); ok {
			pt.OutStart++
			pt.OutStartDecile[d]++
		}
	}
	tr.prev, tr.prevT = cur, t
	tr.turnovers = append(tr.turnovers, pt)
}

// sampleTurnover takes the server's list of its pages when the run starts and every
// r.o.PoolPagesEvery until done, and returns what changed between each two. It reads the
// server's dump (a sandbox on this host). While another innowarm holds the dump file (a
// promoted standby's follow, whose paced load can hold it for minutes), it reads
// INNODB_BUFFER_PAGE_LRU instead of waiting for the file: the same list, at the cost of a
// table built per sample.
func (r *recRun) sampleTurnover(ctx context.Context, opts connection.Options, answered time.Time, done <-chan struct{}) []PoolTurnover {
	conn, err := connection.Open(ctx, opts)
	if err != nil {
		r.log.Warnf("pool turnover: %v", err)
		return nil
	}
	defer conn.Close()
	quiet := logx.New(r.log.Writer(), true)
	var tr turnoverTracker
	tick := time.NewTicker(r.o.PoolPagesEvery)
	defer tick.Stop()
	saidBusy := false
	for {
		t := time.Since(answered).Seconds()
		list, fromTable, err := poolList(ctx, conn, quiet)
		if err == nil {
			tr.add(t, list)
			if fromTable && len(tr.turnovers) > 0 {
				tr.turnovers[len(tr.turnovers)-1].ListFrom = bufferpool.SourceLRUTable
			}
			if fromTable && !saidBusy {
				r.log.Infof("pool turnover at %.1f s: another innowarm holds the server's dump file; the lists come from %s while it does", t, conn.Server.BufferPageLRUTable())
				saidBusy = true
			}
		}
		if err != nil && ctx.Err() == nil {
			r.log.Warnf("pool turnover at %.1f s: %v", t, err)
		}
		select {
		case <-done:
			return tr.turnovers
		case <-ctx.Done():
			return tr.turnovers
		case <-tick.C:
		}
	}
}

// poolList is the server's list of its pages, most recently used first: its dump, or
// INNODB_BUFFER_PAGE_LRU (fromTable) while another innowarm holds the dump file.
func poolList(ctx context.Context, conn *connection.Conn, log *logx.Logger) (list []dumpfile.PageID, fromTable bool, err error) {
	if dumpfile.Busy(ctx, conn) {
		list, err = bufferpool.LRUListFromTable(ctx, conn)
		return list, true, err
	}
	b, err := dumpfile.Borrow(ctx, conn, log)
	if err != nil {
		return nil, false, err
	}
	defer b.Return()
	_, _, err = b.DumpEach(ctx, conn, log, func(p dumpfile.PageID) { list = append(list, p) })
	return list, false, err
}

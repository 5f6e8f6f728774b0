package warm

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/dumpfile"
	"github.com/innowarm/innowarm/internal/flavor"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/pacing"
	"github.com/innowarm/innowarm/internal/periodic"
	"github.com/innowarm/innowarm/internal/progress"
	"github.com/innowarm/innowarm/internal/sqlerr"
)

// PageID is a page of a tablespace (space in the high 32 bits), as the dump file names it.
type PageID = dumpfile.PageID

// MakePageID combines a space id and a page number.
func MakePageID(space, page uint32) PageID { return dumpfile.MakePageID(space, page) }

// NativeAccess says whether innowarm can drive the server's own page loader: it must run on
// the database host and be able to borrow the server's dump file (dumpfile.Check).
type NativeAccess = dumpfile.Access

// CheckNative finds out whether the native method is possible.
func CheckNative(ctx context.Context, conn *connection.Conn) NativeAccess {
	return dumpfile.Check(ctx, conn)
}

// NativeResult is what a native load did.
type NativeResult struct {
	Requested int64   `json:"pages_requested"`
	Loaded    int64   `json:"pages_loaded"` // reported by the server's loader
	Seconds   float64 `json:"seconds"`
	MBps      float64 `json:"mb_per_s"`
	Status    string  `json:"load_status"`
	DumpFile  string  `json:"dump_file"`
	Restored  string  `json:"dump_file_restored"`
	Aborted   bool    `json:"aborted,omitempty"`
	Stopped   string  `json:"stopped,omitempty"`
	// TrafficArrived is the client statements per second that stopped a load planned for an
	// idle server (RunOptions.StopOnTraffic); 0 when none did.
	TrafficArrived float64 `json:"stopped_for_traffic_statements_per_s,omitempty"`
	// PoolResize: the pool changed size during the load (the budget cut, chunks left out, or
	// the load stopped).
	PoolResize *PoolResize `json:"pool_resized,omitempty"`
	// SkippedResident: pages of a paced load's later chunks that were resident when their
	// turn came (the traffic had read them), left out of the load.
	SkippedResident int64 `json:"pages_skipped_resident,omitempty"`
	// LeftOutPoolFilled: pages left out because the pool filled (another innowarm's load)
	// while this one waited for the server's dump file.
	LeftOutPoolFilled int64 `json:"pages_left_out_pool_filled,omitempty"`
}

// firstPages is chunks cut to their first n pages.
func firstPages(chunks [][]PageID, n int64) [][]PageID {
	var out [][]PageID
	for _, c := range chunks {
		if n <= 0 {
			break
		}
		k := min(int64(len(c)), n)
		out = append(out, c[:k])
		n -= k
	}
	return out
}

// StoppedForTraffic says whether r's native load stopped because the server began serving
// traffic (RunOptions.StopOnTraffic); r may be nil.
func (r *Result) StoppedForTraffic() bool {
	return r != nil && r.Native != nil && r.Native.TrafficArrived > 0
}

// LoadNative has the server load pages with its own loader (innodb_buffer_pool_load_now):
// it writes the page list as the server's dump file, triggers the load, follows
// Innodb_buffer_pool_load_status, aborts it on cancel, and always puts the original dump
// file (or variable) back. pages must be sorted.
func LoadNative(ctx context.Context, conn *connection.Conn, pages []PageID, prog progress.Config, log *logx.Logger, until Until) (*NativeResult, error) {
	return LoadNativePaced(ctx, conn, [][]PageID{pages}, prog, log, until, nil, 0)
}

// LoadNativePaced is LoadNative for a page list in tiers, under a pacing governor. The tiers
// load one after the other, each sorted (the server sorts a dump file by page anyway): the
// server puts every page it reads at the head of the LRU list's old part, so of the pages
// that stay old the first tier's are nearest the tail, to be evicted first (how many stay
// old is innodb_old_blocks_pct's share: see hotnessTiers). With a governor, each tier loads
// in chunks of chunkPages, each started when the governor allows.
func LoadNativePaced(ctx context.Context, conn *connection.Conn, tiers [][]PageID, prog progress.Config, log *logx.Logger, until Until, gov *pacing.Governor, chunkPages int) (*NativeResult, error) {
	return loadNative(ctx, conn, tiers, prog, log, until, gov, chunkPages, nil, false)
}

// loadNative is LoadNativePaced under a pool guard: a pool that shrinks during the load
// leaves the chunks past the cut budget out, and stops the server's load once the pages read
// pass it. stopOnTraffic stops the load once the server serves traffic (RunOptions).
func loadNative(ctx context.Context, conn *connection.Conn, tiers [][]PageID, prog progress.Config, log *logx.Logger, until Until, gov *pacing.Governor, chunkPages int, guard *poolGuard, stopOnTraffic bool) (_ *NativeResult, runErr error) {
	srv := conn.Server
	var pages int
	for _, t := range tiers {
		pages += len(t)
	}
	res := &NativeResult{Requested: int64(pages)}
	if pages == 0 {
		return res, nil
	}
	before, err := loadStatus(ctx, conn)
	if err != nil {
		return res, err
	}
	if flavor.LoadInProgress(before) {
		return res, fmt.Errorf("the server is already loading its buffer pool (%s): wait for it to finish", before)
	}
	// With pacing, the list is loaded in chunks and the governor decides when each starts:
	// the server's loader cannot be slowed down once it runs.
	// A load that stops when traffic arrives, on a server whose loader queues its reads
	// (MariaDB), goes in small chunks, each started once the queue is down to half a chunk:
	// the reads queued when the traffic comes are what its first queries wait behind, and
	// an abort does not take them back (a promoted standby's first second had a p95 of
	// 1,002 ms behind about a thousand). The disk stays busy all the same.
	bounded := stopOnTraffic && gov == nil && srv.LoadQueuesReads()
	if bounded {
		chunkPages = boundedChunkPages
	}
	var chunks [][]PageID
	for _, tier := range tiers {
		switch {
		case len(tier) == 0:
		case (gov != nil || bounded) && chunkPages > 0 && len(tier) > chunkPages:
			for i := 0; i < len(tier); i += chunkPages {
				chunks = append(chunks, tier[i:min(i+chunkPages, len(tier))])
			}
		default:
			chunks = append(chunks, tier)
		}
	}
	// The server's loader reads its dump file: innowarm borrows it for the load.
	borrowed, err := dumpfile.Borrow(ctx, conn, log)
	if err != nil {
		return res, err
	}
	file := borrowed.Path
	var total int64
	for _, c := range chunks {
		total += int64(len(c))
	}
	if cut := guard.roomAfterWait(ctx, total); cut >= 0 {
		// Another innowarm's load held the dump file while this one waited, and filled the
		// free pages this plan counted on: what no longer fits is left out, not loaded over
		// the pages that load brought in (a second warm started 2 s after a first evicted
		// a third of the first one's table).
		log.Warnf("the pool has room for %d of the %d pages planned (it filled while this warm waited for the server's dump file): the rest is left out", cut, total)
		chunks = firstPages(chunks, cut)
		res.LeftOutPoolFilled = total - cut
		if len(chunks) == 0 {
			borrowed.Return()
			res.Stopped = fmt.Sprintf("stopped: no room left in the pool for the %d pages planned (it filled while this warm waited for the server's dump file)", total)
			return res, nil
		}
	}
	if err := borrowed.WriteList(chunks[0]); err != nil {
		borrowed.Return()
		return res, err
	}
	res.DumpFile = file
	defer func() {
		var restoreErr error
		res.Restored, restoreErr = borrowed.ReturnErr()
		switch {
		case restoreErr != nil && sqlerr.ConnectionLost(runErr):
			// The user's one line says it, rather than a warning before it.
			runErr = fmt.Errorf("%w; %s", runErr, res.Restored)
		case restoreErr != nil && runErr == nil:
			// A load that leaves the server's dump file setting changed fails: a follow
			// round said ok and the next fell back to scans, the setting left changed.
			runErr = fmt.Errorf("%w: %s", ErrNotRestored, res.Restored)
		case restoreErr != nil:
			log.Warnf("%s", res.Restored)
		}
	}()

	prog.Total, prog.Bytes = int64(pages), int64(srv.PageSize)
	if prog.Title == "" {
		prog.Title = "load"
	}
	rep := progress.New(prog)
	// MariaDB only says "Loading buffer pool(s) from ..." until the end; MySQL says "Loaded
	// N/M pages". Pages read from disk measure progress on both.
	readStart, _ := pagesRead(ctx, conn)
	t0 := time.Now()
	goal, stopGoal := context.WithCancel(ctx)
	defer stopGoal()
	reached := until.watch(goal, stopGoal, rep.Log())
	resized := guard.watch(goal, stopGoal)
	arrived := func() float64 { return 0 }
	var ownSelects atomic.Int64 // the queue's polls (bounded, or --nice's drain): not traffic
	if stopOnTraffic {
		arrived = watchTraffic(goal, conn, stopGoal, ownSelects.Load)
	}
	// stopped is why the load ended early: the coverage goal, traffic arriving, or the
	// pool shrinking.
	stopped := func() string {
		res.PoolResize = resized()
		if why := reached(); why != "" {
			return why
		}
		if rate := arrived(); rate > 0 {
			res.TrafficArrived = rate
			return fmt.Sprintf("stopped: the server began serving traffic (%.0f client statements/s)", rate)
		}
		if res.PoolResize != nil && res.PoolResize.Stopped {
			return "stopped: " + res.PoolResize.Text()
		}
		return ""
	}
	var loaded int64
	final := false // the pool shrank: no chunk after this one fits
	own := newChunkReads(gov, conn, &ownSelects)
	residentCheck := time.Now().Add(residentCheckEvery)
	for i, chunk := range chunks {
		if i > 0 && gov != nil && !time.Now().Before(residentCheck) {
			// A paced load under traffic can take minutes, and the traffic reads the hot pages
			// itself meanwhile: a chunk of resident pages reads nothing, yet takes its turn
			// (a second or two to be seen done), and the load holds the server's dump file
			// and its LRU settings all that time.
			t := time.Now()
			n, err := dropResident(goal, borrowed, conn, chunks[i:], &ownSelects)
			switch {
			case err == nil:
				res.SkippedResident += n
				residentCheck = time.Now().Add(max(residentCheckEvery, 20*time.Since(t)))
			case goal.Err() == nil:
				log.Warnf("the load goes on without leaving out resident pages: %v", err)
				residentCheck = time.Now().Add(time.Duration(1 << 62))
			}
			chunk = chunks[i]
		}
		if len(chunk) == 0 {
			continue
		}
		if left := guard.left(); left >= 0 && int64(len(chunk)) > left {
			// The pool shrank: this chunk's first pages fit what is left, the rest do not.
			var later int64
			for _, c := range chunks[i+1:] {
				later += int64(len(c))
			}
			guard.leaveOut(int64(len(chunk)) - left + later)
			if chunk = chunk[:left]; len(chunk) == 0 {
				break
			}
			final = true
			if i == 0 {
				if err := borrowed.WriteList(chunk); err != nil {
					rep.Finish(false)
					return res, err
				}
			}
		}
		if i > 0 {
			if err := borrowed.WriteList(chunk); err != nil {
				rep.Finish(false)
				return res, err
			}
		}
		if err := gov.Acquire(goal, 0); err != nil {
			rep.Finish(false)
			res.Seconds = time.Since(t0).Seconds()
			switch {
			case ctx.Err() != nil:
				res.Aborted = true
				return res, ctx.Err()
			case goal.Err() != nil:
				res.Stopped = stopped()
				return res, nil
			}
			return res, err
		}
		stopPaused := followPause(goal, gov, rep)
		chunkStart := own.start(goal)
		status, err := loadOnce(goal, conn, loadFollow{rep: rep, quiet: prog.Quiet, doneBefore: loaded, chunkPages: int64(len(chunk)), readsMeanDone: bounded, listPath: borrowed.Path}, before)
		if err == nil && borrowed.ListReplaced() {
			// The server wrote a dump over the list (a DBA's dump_now) before or while its
			// loader read it: that dump is kept, and the chunk is loaded again from its own
			// list (pages already resident cost nothing).
			log.Warnf("the page list was replaced by a dump of the server's during the load: loading this part again")
			if werr := borrowed.WriteList(chunk); werr == nil {
				before = status
				status, err = loadOnce(goal, conn, loadFollow{rep: rep, quiet: prog.Quiet, doneBefore: loaded, chunkPages: int64(len(chunk)), readsMeanDone: bounded, listPath: borrowed.Path}, before)
			}
		}
		stopPaused()
		own.end(goal, int64(len(chunk)), chunkStart)
		gov.Release(0)
		res.Status = status
		switch {
		case err == nil:
			loaded += int64(len(chunk))
			before = status
		case ctx.Err() != nil:
			res.Aborted = true
			abortLoad(ctx, conn, log, before)
			rep.Finish(false)
			res.Seconds = time.Since(t0).Seconds()
			return res, ctx.Err()
		case goal.Err() != nil:
			// The coverage goal is met, or the pool shrank under the budget: the rest of the
			// load is not needed, or does not fit.
			abortLoad(ctx, conn, log, before)
			rep.Finish(true)
			res.Seconds = time.Since(t0).Seconds()
			res.Stopped = stopped()
			res.Loaded = loaded
			return res, nil
		case flavor.LoadAborted(status) && guard.shrank(ctx):
			// The server aborts its own load to shrink the pool (MySQL and MariaDB alike):
			// the pool the rest was meant for is gone, which is no failure of the warm.
			guard.serverAborted(res.Requested)
			rep.Finish(true)
			res.Seconds = time.Since(t0).Seconds()
			res.Loaded = loaded
			res.PoolResize = resized()
			res.Stopped = "stopped: " + res.PoolResize.Text()
			return res, nil
		default:
			rep.Finish(false)
			res.Seconds = time.Since(t0).Seconds()
			return res, err
		}
		if final {
			break
		}
		if bounded && i < len(chunks)-1 {
			waitQueued(goal, conn, boundedChunkPages/2, 2*time.Millisecond, 20*time.Millisecond, &ownSelects)
		}
	}
	res.Loaded = loaded
	res.Stopped = stopped() // the pool may have shrunk without stopping the load
	rep.SetDone(res.Requested)
	rep.Finish(true)
	res.Seconds = time.Since(t0).Seconds()
	// The rate of what the disk gave: the server skips pages already resident, so a list of
	// mostly cached pages "loads" in no time.
	read := res.Requested
	if n, err := pagesRead(ctx, conn); err == nil {
		read = n - readStart
	}
	res.MBps = float64(read*int64(srv.PageSize)) / 1e6 / max(res.Seconds, 1e-9)
	return res, nil
}

// residentCheckEvery is how often a paced load leaves out the pages of its later chunks
// that are already resident (at most: a check that takes d waits 20d before the next).
var residentCheckEvery = 5 * time.Second

// dropResident removes from chunks the pages the pool holds now, read from the server's
// dump into the borrowed file (the next chunk is written over it), and returns how many it
// removed.
func dropResident(ctx context.Context, b *dumpfile.Borrowed, conn *connection.Conn, chunks [][]PageID, ownSelects *atomic.Int64) (int64, error) {
	want := map[PageID]bool{}
	for _, c := range chunks {
		for _, p := range c {
			want[p] = false
		}
	}
	ownSelects.Add(1) // the dump reads innodb_buffer_pool_dump_pct: not traffic
	_, _, err := b.DumpEach(ctx, conn, logx.New(io.Discard, true), func(p PageID) {
		if _, ok := want[p]; ok {
			want[p] = true
		}
	})
	if err != nil {
		return 0, fmt.Errorf("read the pool's list: %w", err)
	}
	var dropped int64
	for i, c := range chunks {
		kept := make([]PageID, 0, len(c)) // the chunks are the caller's tiers' slices
		for _, p := range c {
			if !want[p] {
				kept = append(kept, p)
			}
		}
		dropped += int64(len(c) - len(kept))
		chunks[i] = kept
	}
	return dropped, nil
}

// followPause shows the governor's reason to hold back on the progress line while a chunk
// loads.
func followPause(ctx context.Context, gov *pacing.Governor, rep *progress.Reporter) func() {
	if gov == nil {
		return func() {}
	}
	return periodic.Every(ctx, time.Second, func(context.Context) bool {
		rep.Paused(gov.Status())
		return true
	})
}

func loadStatus(ctx context.Context, conn *connection.Conn) (string, error) {
	var status string
	if err := conn.DB.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_load_status'").Scan(new(string), &status); err != nil {
		return "", fmt.Errorf("read the buffer pool load status: %w", err)
	}
	return status, nil
}

// loadFollow is what loadOnce needs to show a load's progress.
type loadFollow struct {
	rep   *progress.Reporter
	quiet bool // no progress shown: pages read are not polled
	// The progress line counts the chunks loaded before this one (doneBefore pages) and,
	// of this one, the pages the server read since it began, at most chunkPages: a paced
	// load runs beside traffic, whose own reads counted as the load's, and its line said
	// 100% after its first chunks.
	doneBefore, chunkPages int64
	// readsMeanDone: pages read since the chunk started, and a "completed" status, mean
	// the chunk's load is done even where the status text has not changed. A load's status
	// says "completed at" to the second: a MariaDB chunk submitted in a few milliseconds
	// leaves the same text as the chunk before it, and would otherwise wait 2 s to be
	// believed (bounded chunks of 128 pages went at 300 pages a second instead of 750).
	// Only for loads that stop when traffic comes: traffic's own reads would pass for it.
	readsMeanDone bool
	// listPath is the page list file the loader reads (listReadWatch).
	listPath string
}

// progress is the load's pages done when the server has read readSince pages since this
// chunk began (the load's and any traffic's).
func (f loadFollow) progress(readSince int64) int64 {
	return f.doneBefore + min(max(readSince, 0), f.chunkPages)
}

// progressEvery is how often a load's pages read are polled for the progress line: the
// status that says the load is over is polled more often, and every poll costs the server
// a status export while its loader keeps the CPU busy.
const progressEvery = 250 * time.Millisecond

// loadOnce triggers the server's load of the dump file in place and follows it until it
// completes; it returns the final status. before is the status it must see change.
func loadOnce(ctx context.Context, conn *connection.Conn, follow loadFollow, before string) (string, error) {
	readBefore := int64(-1)
	if follow.readsMeanDone || !follow.quiet {
		if n, err := pagesRead(ctx, conn); err == nil {
			readBefore = n
		}
	}
	readsMeanDone := follow.readsMeanDone && readBefore >= 0
	watch := watchListRead(follow.listPath)
	defer watch.close()
	listRead := false
	if _, err := conn.DB.ExecContext(ctx, "SET GLOBAL innodb_buffer_pool_load_now = ON"); err != nil {
		if ctx.Err() != nil {
			return before, ctx.Err()
		}
		if sqlerr.Is(err, sqlerr.SpecificAccessDenied) {
			return before, fmt.Errorf("start the server's buffer pool load (innodb_buffer_pool_load_now needs %s): %w", strings.Join(conn.Server.GlobalVariablePrivileges(), " or "), err)
		}
		// A server gone away is no missing privilege (follow's standby restarted mid-load).
		return before, fmt.Errorf("start the server's buffer pool load: %w", err)
	}
	t0 := time.Now()
	var progressAt time.Time
	started := false
	status := before
	for {
		select {
		case <-ctx.Done():
			return status, ctx.Err()
		case <-time.After(pollInterval(time.Since(t0))):
		}
		// The list's close first, then the status: a close seen now came before the
		// status read next, which the loader had set to "Loading" before opening the list.
		listRead = listRead || watch.read()
		s, err := loadStatus(ctx, conn)
		if err != nil {
			if ctx.Err() != nil {
				return status, ctx.Err()
			}
			return status, fmt.Errorf("follow the load: %w", err)
		}
		status = s
		if !follow.quiet && time.Since(progressAt) >= progressEvery {
			progressAt = time.Now()
			if n, err := pagesRead(ctx, conn); err == nil && readBefore >= 0 {
				follow.rep.SetDone(follow.progress(n - readBefore))
			}
		}
		if flavor.LoadInProgress(status) {
			started = true
			continue
		}
		if status != before || (listRead && strings.Contains(status, "completed")) {
			started = true
		}
		if !started && readsMeanDone && strings.Contains(status, "completed") {
			// Reads first, then the status again: the loader says "Loading" before its first
			// read, so "completed" after reads counted is its end, not the last chunk's.
			if n, err := pagesRead(ctx, conn); err == nil && n > readBefore {
				if again, err := loadStatus(ctx, conn); err == nil && strings.Contains(again, "completed") {
					status, started = again, true
				}
			}
		}
		if !started && time.Since(t0) < 2*time.Second {
			// The previous load's "completed at" text, unchanged: ours has not begun, or
			// completed within the same second; wait a little before believing the latter.
			continue
		}
		switch {
		case strings.Contains(status, "completed"):
			return status, nil
		case flavor.LoadAborted(status), strings.Contains(status, "rror"), strings.Contains(status, "annot"):
			return status, fmt.Errorf("the server's load stopped: %s", status)
		}
	}
}

// pollInterval follows a load closely at first (a small load is over in tens of ms: a
// tight load's tiers of 2,048 pages take 30-40 ms on a fast disk, and each waits for the
// one before it), then at about 1% of its elapsed time: the end is seen at most that late,
// and a long load is not interrupted a hundred times a second.
func pollInterval(elapsed time.Duration) time.Duration {
	if elapsed < 100*time.Millisecond {
		return 2 * time.Millisecond
	}
	return min(max(10*time.Millisecond, elapsed/100), 200*time.Millisecond)
}

// abortLoad stops the server's load; before is the load status from before it was started,
// so that a status the load did not write is not taken for its end.
func abortLoad(runCtx context.Context, conn *connection.Conn, log *logx.Logger, before string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(runCtx), 5*time.Second)
	defer cancel()
	abort := func() error {
		_, err := conn.DB.ExecContext(ctx, "SET GLOBAL innodb_buffer_pool_load_abort = ON")
		return err
	}
	if err := abort(); err != nil {
		log.Warnf("could not abort the buffer pool load: %v", err)
		return
	}
	// The loader stops at its next page, but reads it already queued still complete; on a
	// slow disk that can take seconds. The user asked to stop within a second: wait for the
	// server's word only that long (the loader read its page list at the start, so the dump
	// file can be put back while it winds down).
	confirm, cancelConfirm := context.WithTimeout(ctx, 800*time.Millisecond)
	defer cancelConfirm()
	status, reaborted := before, false
	for confirm.Err() == nil {
		var s string
		if conn.DB.QueryRowContext(confirm, "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_load_status'").Scan(new(string), &s) == nil {
			status = s
			switch {
			case flavor.LoadInProgress(s) && !reaborted:
				// MySQL's loader clears the abort flag as it starts: an abort that came
				// before it began is lost, so ask again once it runs.
				reaborted = abort() == nil
			case !flavor.LoadInProgress(s) && s != before:
				log.Infof("%s", abortOutcome(s))
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if status == before {
		log.Infof("buffer pool load abort requested; the server's load status reads as before the load: %s", before)
		return
	}
	log.Infof("buffer pool load abort requested; the server is finishing the reads it had queued")
}

// abortOutcome says how a load ended after innowarm asked the server to abort it: aborted,
// or completed before the abort reached it (the server reports that as it does any load).
func abortOutcome(status string) string {
	if strings.Contains(status, "completed") {
		return "the buffer pool load completed before the abort reached it: " + status
	}
	return "buffer pool load aborted: " + status
}

// SortPages sorts and de-duplicates a page list.
func SortPages(pages []PageID) []PageID {
	sort.Slice(pages, func(i, j int) bool { return pages[i] < pages[j] })
	out := pages[:0]
	for i, p := range pages {
		if i == 0 || p != pages[i-1] {
			out = append(out, p)
		}
	}
	return out
}

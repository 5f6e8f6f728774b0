package warm

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/pacing"
	"github.com/innowarm/innowarm/internal/progress"
)

// PageID is a page of a tablespace: space in the high 32 bits, page number in the low ones,
// so that sorting PageIDs sorts by (space, page) as InnoDB's loader reads them.
type PageID uint64

// MakePageID combines a space id and a page number.
func MakePageID(space, page uint32) PageID { return PageID(uint64(space)<<32 | uint64(page)) }

// Space is the tablespace id.
func (p PageID) Space() uint32 { return uint32(p >> 32) }

// Page is the page number.
func (p PageID) Page() uint32 { return uint32(p) }

// NativeAccess says whether innowarm can drive the server's own page loader: it must run on
// the database host (the server's pid file names a live local process) and be able to write
// the dump file (the datadir, or on MySQL a file of its own there).
type NativeAccess struct {
	OK      bool
	Reason  string // why not, when !OK
	Datadir string
}

// CheckNative finds out whether the native method is possible.
func CheckNative(ctx context.Context, conn *connection.Conn) NativeAccess {
	srv := conn.Server
	a := NativeAccess{Datadir: srv.Datadir}
	var pidFile string
	if err := conn.DB.QueryRowContext(ctx, "SELECT @@pid_file").Scan(&pidFile); err != nil {
		a.Reason = "cannot read @@pid_file: " + err.Error()
		return a
	}
	if !filepath.IsAbs(pidFile) {
		pidFile = filepath.Join(srv.Datadir, pidFile)
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		a.Reason = fmt.Sprintf("the server's pid file %s is not readable here (%v): innowarm does not run on the database host, or lacks access", pidFile, errors.Unwrap(err))
		return a
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err == nil {
		if kerr := syscall.Kill(pid, 0); kerr != nil && !errors.Is(kerr, syscall.EPERM) {
			err = kerr
		}
	}
	if err != nil {
		a.Reason = fmt.Sprintf("the server's pid file %s names no live process here: innowarm does not run on the database host", pidFile)
		return a
	}
	if st, err := os.Stat(srv.Datadir); err != nil || !st.IsDir() {
		a.Reason = fmt.Sprintf("the datadir %s is not visible here", srv.Datadir)
		return a
	}
	if err := unix.Access(srv.Datadir, unix.W_OK); err != nil {
		a.Reason = fmt.Sprintf("no write access to the datadir %s (run innowarm as root or as the server's user)", srv.Datadir)
		return a
	}
	if ok, err := hasGlobalPrivilege(ctx, conn); err != nil || !ok {
		a.Reason = fmt.Sprintf("user %s may not SET GLOBAL innodb_buffer_pool_load_now (needs %s)", conn.Opts.User, strings.Join(srv.GlobalVariablePrivileges(), " or "))
		return a
	}
	a.OK = true
	return a
}

// hasGlobalPrivilege reads SHOW GRANTS for a global grant that allows SET GLOBAL.
func hasGlobalPrivilege(ctx context.Context, conn *connection.Conn) (bool, error) {
	rows, err := conn.DB.QueryContext(ctx, "SHOW GRANTS")
	if err != nil {
		return false, err
	}
	defer rows.Close()
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			return false, err
		}
		u := strings.ToUpper(g)
		if !strings.Contains(u, " ON *.* ") {
			continue
		}
		if strings.Contains(u, "ALL PRIVILEGES") {
			return true, nil
		}
		for _, p := range conn.Server.GlobalVariablePrivileges() {
			if strings.Contains(u, p) {
				return true, nil
			}
		}
	}
	return false, rows.Err()
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
}

var loadedRe = regexp.MustCompile(`Loaded (\d+)/(\d+) pages`)

// LoadNative has the server load pages with its own loader (innodb_buffer_pool_load_now):
// it writes the page list as the server's dump file, triggers the load, follows
// Innodb_buffer_pool_load_status, aborts it on cancel, and always puts the original dump
// file (or variable) back. pages must be sorted.
func LoadNative(ctx context.Context, conn *connection.Conn, pages []PageID, prog progress.Config, log *logx.Logger, until Until) (*NativeResult, error) {
	return LoadNativePaced(ctx, conn, [][]PageID{pages}, prog, log, until, nil, 0)
}

// LoadNativePaced is LoadNative for a page list in tiers, under a pacing governor. The tiers
// load one after the other, each sorted (the server sorts a dump file by page anyway): the
// server puts every page it reads at the head of the LRU list's old part, so the last
// tier's pages end up nearest the young end and the first tier's nearest the tail, to be
// evicted first. With a governor, each tier loads in chunks of chunkPages, each started
// when the governor allows.
func LoadNativePaced(ctx context.Context, conn *connection.Conn, tiers [][]PageID, prog progress.Config, log *logx.Logger, until Until, gov *pacing.Governor, chunkPages int) (*NativeResult, error) {
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
	if strings.HasPrefix(before, "Loaded ") || strings.HasPrefix(before, "Loading") {
		return res, fmt.Errorf("the server is already loading its buffer pool (%s): wait for it to finish", before)
	}
	// With pacing, the list is loaded in chunks and the governor decides when each starts:
	// the server's loader cannot be slowed down once it runs.
	var chunks [][]PageID
	for _, tier := range tiers {
		switch {
		case len(tier) == 0:
		case gov != nil && chunkPages > 0 && len(tier) > chunkPages:
			for i := 0; i < len(tier); i += chunkPages {
				chunks = append(chunks, tier[i:min(i+chunkPages, len(tier))])
			}
		default:
			chunks = append(chunks, tier)
		}
	}
	restore, file, err := placeDumpFile(ctx, conn, chunks[0], log)
	if err != nil {
		return res, err
	}
	res.DumpFile = file
	defer func() { res.Restored = restore() }()

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
	reached := until.watch(goal, stopGoal)
	var loaded int64
	for i, chunk := range chunks {
		if i > 0 {
			if err := writeDump(file, chunk); err != nil {
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
				res.Stopped = reached()
				return res, nil
			}
			return res, err
		}
		stopPaused := followPause(goal, gov, rep)
		status, err := loadOnce(goal, conn, rep, readStart, res.Requested, before)
		stopPaused()
		gov.Release(0)
		res.Status = status
		switch {
		case err == nil:
			loaded += int64(len(chunk))
			before = status
		case ctx.Err() != nil:
			res.Aborted = true
			abortLoad(conn, log)
			rep.Finish(false)
			res.Seconds = time.Since(t0).Seconds()
			return res, ctx.Err()
		case goal.Err() != nil:
			// The coverage goal is met: the rest of the load is not needed.
			abortLoad(conn, log)
			rep.Finish(true)
			res.Seconds = time.Since(t0).Seconds()
			res.Stopped = reached()
			res.Loaded = loaded
			return res, nil
		default:
			rep.Finish(false)
			res.Seconds = time.Since(t0).Seconds()
			return res, err
		}
	}
	res.Loaded = loaded
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

// followPause shows the governor's reason to hold back on the progress line while a chunk
// loads.
func followPause(ctx context.Context, gov *pacing.Governor, rep *progress.Reporter) func() {
	if gov == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				rep.Paused(gov.Status())
			}
		}
	}()
	return func() { close(done) }
}

func loadStatus(ctx context.Context, conn *connection.Conn) (string, error) {
	var status string
	if err := conn.DB.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_load_status'").Scan(new(string), &status); err != nil {
		return "", fmt.Errorf("read the buffer pool load status: %w", err)
	}
	return status, nil
}

// loadOnce triggers the server's load of the dump file in place and follows it until it
// completes; it returns the final status. before is the status it must see change.
func loadOnce(ctx context.Context, conn *connection.Conn, rep *progress.Reporter, readStart, total int64, before string) (string, error) {
	if _, err := conn.DB.ExecContext(ctx, "SET GLOBAL innodb_buffer_pool_load_now = ON"); err != nil {
		if ctx.Err() != nil {
			return before, ctx.Err()
		}
		return before, fmt.Errorf("start the server's buffer pool load (innodb_buffer_pool_load_now needs SUPER or SYSTEM_VARIABLES_ADMIN): %w", err)
	}
	t0 := time.Now()
	started := false
	status := before
	for {
		select {
		case <-ctx.Done():
			return status, ctx.Err()
		case <-time.After(pollInterval(time.Since(t0))):
		}
		s, err := loadStatus(ctx, conn)
		if err != nil {
			if ctx.Err() != nil {
				return status, ctx.Err()
			}
			return status, fmt.Errorf("follow the load: %w", err)
		}
		status = s
		if n, err := pagesRead(ctx, conn); err == nil {
			rep.SetDone(min(n-readStart, total))
		}
		if loadedRe.MatchString(status) || strings.HasPrefix(status, "Loading") {
			started = true
			continue
		}
		if status != before {
			started = true
		}
		if !started && time.Since(t0) < 2*time.Second {
			// The previous load's "completed at" text, unchanged: ours has not begun, or
			// completed within the same second; wait a little before believing the latter.
			continue
		}
		switch {
		case strings.Contains(status, "completed"):
			return status, nil
		case strings.Contains(status, "aborted"), strings.Contains(status, "rror"), strings.Contains(status, "annot"):
			return status, fmt.Errorf("the server's load stopped: %s", status)
		}
	}
}

// pollInterval follows the load closely at first (a small load is over in tens of ms), then
// less often.
func pollInterval(elapsed time.Duration) time.Duration {
	switch {
	case elapsed < time.Second:
		return 10 * time.Millisecond
	case elapsed < 10*time.Second:
		return 50 * time.Millisecond
	}
	return 200 * time.Millisecond
}

func abortLoad(conn *connection.Conn, log *logx.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := conn.DB.ExecContext(ctx, "SET GLOBAL innodb_buffer_pool_load_abort = ON"); err != nil {
		log.Warnf("could not abort the buffer pool load: %v", err)
		return
	}
	// The loader stops at its next page, but reads it already queued still complete; on a
	// slow disk that can take seconds. The user asked to stop within a second: wait for the
	// server's word only that long (the loader read its page list at the start, so the dump
	// file can be put back while it winds down).
	confirm, cancelConfirm := context.WithTimeout(ctx, 800*time.Millisecond)
	defer cancelConfirm()
	for confirm.Err() == nil {
		var status string
		if conn.DB.QueryRowContext(confirm, "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_load_status'").Scan(new(string), &status) == nil &&
			!strings.HasPrefix(status, "Loaded ") && !strings.HasPrefix(status, "Loading") {
			log.Infof("buffer pool load aborted: %s", status)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	log.Infof("buffer pool load abort requested; the server is finishing the reads it had queued")
}

// placeDumpFile puts the page list where the server's loader reads it and returns what
// undoes that. MariaDB reads a fixed file in the datadir: the original is renamed aside
// and renamed back. MySQL lets innodb_buffer_pool_filename change at runtime: innowarm
// writes a file of its own and points the variable at it for the load.
func placeDumpFile(ctx context.Context, conn *connection.Conn, pages []PageID, log *logx.Logger) (restore func() string, path string, err error) {
	srv := conn.Server
	if srv.DumpFileDynamic() {
		var orig string
		if err := conn.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_buffer_pool_filename").Scan(&orig); err != nil {
			return nil, "", err
		}
		name := fmt.Sprintf("ib_buffer_pool.innowarm-%d", os.Getpid())
		path = filepath.Join(srv.Datadir, name)
		if err := writeDump(path, pages); err != nil {
			return nil, "", err
		}
		if _, err := conn.DB.ExecContext(ctx, "SET GLOBAL innodb_buffer_pool_filename = ?", name); err != nil {
			os.Remove(path)
			return nil, "", fmt.Errorf("point innodb_buffer_pool_filename at innowarm's page list: %w", err)
		}
		log.Infof("innodb_buffer_pool_filename set to %s for the load (was %s; restore it with SET GLOBAL innodb_buffer_pool_filename = '%s' if innowarm is killed)", name, orig, orig)
		return func() string {
			rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			os.Remove(path)
			if _, err := conn.DB.ExecContext(rctx, "SET GLOBAL innodb_buffer_pool_filename = ?", orig); err != nil {
				log.Warnf("could not restore innodb_buffer_pool_filename to %s: %v", orig, err)
				return "variable NOT restored: " + err.Error()
			}
			return "innodb_buffer_pool_filename restored to " + orig
		}, path, nil
	}

	path = srv.DumpFilePath()
	saved := path + ".innowarm-saved"
	hadOriginal := false
	if _, err := os.Stat(saved); err == nil {
		// A saved original from an innowarm run that was killed: it is the real one.
		hadOriginal = true
		log.Warnf("%s exists from an earlier interrupted run; it will be restored as %s", saved, path)
	} else if _, err := os.Stat(path); err == nil {
		if err := os.Rename(path, saved); err != nil {
			return nil, "", fmt.Errorf("set the server's dump file %s aside: %w", path, err)
		}
		hadOriginal = true
	}
	undo := func() string {
		if hadOriginal {
			if err := os.Rename(saved, path); err != nil {
				log.Warnf("could not restore the server's dump file: mv %s %s: %v", saved, path, err)
				return "NOT restored: " + err.Error()
			}
			return "original restored"
		}
		os.Remove(path)
		return "removed (there was none)"
	}
	if err := writeDump(path, pages); err != nil {
		undo()
		return nil, "", err
	}
	return undo, path, nil
}

// writeDump writes "space,page" lines, InnoDB's dump format, atomically and readable by the
// server's user.
func writeDump(path string, pages []PageID) error {
	tmp := path + ".innowarm-tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write the page list %s: %w", path, err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	buf := make([]byte, 0, 32)
	for _, p := range pages {
		buf = strconv.AppendUint(buf[:0], uint64(p.Space()), 10)
		buf = append(buf, ',')
		buf = strconv.AppendUint(buf, uint64(p.Page()), 10)
		buf = append(buf, '\n')
		w.Write(buf)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write the page list %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	f.Close()
	return os.Rename(tmp, path)
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

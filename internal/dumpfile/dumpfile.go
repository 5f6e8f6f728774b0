// Package dumpfile is InnoDB's buffer-pool dump file: its format ("space,page" lines), where
// the server keeps it, and how innowarm borrows it, both to hand the server's loader a page
// list (innodb_buffer_pool_load_now) and to have the server write the list of the pages it
// holds (innodb_buffer_pool_dump_now), which costs the server a copy of its LRU list, where
// INFORMATION_SCHEMA.INNODB_BUFFER_PAGE_LRU makes it build a table row for every page.
//
// Borrowing needs innowarm on the database host with access to the datadir, and SUPER (or
// SYSTEM_VARIABLES_ADMIN): see Check. The server's own dump file is always put back.
package dumpfile

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/logx"
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

// Write writes pages as a dump file the server reads, atomically (a temporary file renamed
// into place) and readable by the server's user.
func Write(path string, pages []PageID) error {
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
		_, _ = w.Write(buf) // a write error is kept by the writer and returned by Flush
	}
	err = w.Flush()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write the page list %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}

// Parse reads a dump file: "space,page" lines, in the order the server wrote them (for a
// dump, most recently used first).
func Parse(r io.Reader) ([]PageID, error) {
	var out []PageID
	_, err := ParseEach(r, func(p PageID) { out = append(out, p) })
	return out, err
}

// ParseEach is Parse calling each for every page in order, without keeping the list: a
// caller that wants a few tablespaces of a large pool keeps only theirs. It returns the
// number of pages.
func ParseEach(r io.Reader, each func(PageID)) (int64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	line, n := 0, int64(0)
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		comma := bytes.IndexByte(b, ',')
		space, ok1 := parseUint32(b[:max(comma, 0)])
		page, ok2 := parseUint32(b[comma+1:])
		if comma < 0 || !ok1 || !ok2 {
			return n, fmt.Errorf("dump file line %d: %q is not space,page", line, b)
		}
		each(MakePageID(space, page))
		n++
	}
	return n, sc.Err()
}

// parseUint32 reads decimal digits without allocating (a dump of a large pool has tens of
// millions of lines).
func parseUint32(b []byte) (uint32, bool) {
	if len(b) == 0 || len(b) > 10 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return uint32(v), v <= 0xFFFFFFFF
}

// Access says whether innowarm may borrow the server's dump file: it must run on the
// database host (the server's pid file names a live local process), reach the datadir, and
// be allowed to SET GLOBAL the dump/load variables.
type Access struct {
	OK      bool
	Reason  string // why not, when !OK
	Datadir string
}

// Check finds out whether the dump file can be borrowed.
func Check(ctx context.Context, conn *connection.Conn) Access {
	srv := conn.Server
	a := Access{Datadir: srv.Datadir}
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
	if err := unix.Access(srv.Datadir, unix.W_OK|unix.R_OK); err != nil {
		a.Reason = fmt.Sprintf("no read and write access to the datadir %s (run innowarm as root or as the server's user)", srv.Datadir)
		return a
	}
	if ok, err := hasGlobalPrivilege(ctx, conn); err != nil || !ok {
		a.Reason = fmt.Sprintf("user %s may not SET GLOBAL the buffer pool dump/load variables (needs %s)", conn.Opts.User, strings.Join(srv.GlobalVariablePrivileges(), " or "))
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
		if grantsAny(g, append([]string{"ALL PRIVILEGES"}, conn.Server.GlobalVariablePrivileges()...)) {
			return true, nil
		}
	}
	return false, rows.Err()
}

// grantsAny reports whether a SHOW GRANTS line grants one of privs on *.*. Only the words
// before ON are privileges: the grantee after TO may be named anything ('nosuper').
func grantsAny(grant string, privs []string) bool {
	u := strings.ToUpper(grant)
	on := strings.Index(u, " ON ")
	if on < 0 || !strings.HasPrefix(u[on:], " ON *.* ") {
		return false
	}
	for _, p := range privs {
		if strings.Contains(u[:on], p) {
			return true
		}
	}
	return false
}

// lockName serializes innowarm processes borrowing one server's dump file.
const lockName = "innowarm.dumpfile"

// Busy reports whether another innowarm holds the dump file now (a native load can hold
// it for minutes): a read that can take its page list elsewhere should not wait for it.
func Busy(ctx context.Context, conn *connection.Conn) bool {
	var holder sql.NullInt64
	err := conn.DB.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?)", lockName).Scan(&holder)
	return err == nil && holder.Valid
}

// Borrowed is the server's dump file while innowarm uses it.
type Borrowed struct {
	// Path is where the server reads and writes its dump now.
	Path    string
	restore func() (string, error)
	lock    *sql.Conn
}

// Borrow makes the dump file innowarm's until Return. MariaDB keeps its dump in a fixed
// file of the datadir: the original is renamed aside and renamed back. MySQL lets
// innodb_buffer_pool_filename change at runtime: it is pointed at a file of innowarm's. A
// named server lock keeps two innowarm processes from borrowing at once.
func Borrow(ctx context.Context, conn *connection.Conn, log *logx.Logger) (*Borrowed, error) {
	lock, err := conn.DB.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("borrow the dump file: %w", err)
	}
	var got sql.NullInt64
	if err := lock.QueryRowContext(ctx, "SELECT GET_LOCK(?, 30)", lockName).Scan(&got); err != nil || got.Int64 != 1 {
		lock.Close()
		if err == nil {
			err = errors.New("another innowarm has held it for 30 s")
		}
		return nil, fmt.Errorf("borrow the server's dump file: %w", err)
	}
	b := &Borrowed{lock: lock}
	release := func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = lock.ExecContext(rctx, "DO RELEASE_LOCK(?)", lockName)
		lock.Close()
	}
	srv := conn.Server
	if srv.DumpFileDynamic() {
		var orig string
		if err := conn.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_buffer_pool_filename").Scan(&orig); err != nil {
			release()
			return nil, err
		}
		name := fmt.Sprintf("ib_buffer_pool.innowarm-%d", os.Getpid())
		b.Path = filepath.Join(srv.Datadir, name)
		os.Remove(b.Path)
		if _, err := conn.DB.ExecContext(ctx, "SET GLOBAL innodb_buffer_pool_filename = ?", name); err != nil {
			release()
			return nil, fmt.Errorf("point innodb_buffer_pool_filename at innowarm's file: %w", err)
		}
		log.Infof("innodb_buffer_pool_filename set to %s (was %s; if innowarm is killed, restore it with SET GLOBAL innodb_buffer_pool_filename = '%s')", name, orig, orig)
		b.restore = func() (string, error) {
			defer release()
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			os.Remove(b.Path)
			os.Remove(b.Path + ".incomplete")
			if _, err := conn.DB.ExecContext(rctx, "SET GLOBAL innodb_buffer_pool_filename = ?", orig); err != nil {
				return fmt.Sprintf("innodb_buffer_pool_filename NOT restored (if the server is still up: SET GLOBAL innodb_buffer_pool_filename = '%s'): %v", orig, err), err
			}
			return "innodb_buffer_pool_filename restored to " + orig, nil
		}
		return b, nil
	}

	b.Path = srv.DumpFilePath()
	saved := b.Path + ".innowarm-saved"
	hadOriginal := false
	if _, err := os.Stat(saved); err == nil {
		// A saved original from an innowarm run that was killed: it is the real one.
		hadOriginal = true
		log.Warnf("%s exists from an earlier interrupted run; it will be restored as %s", saved, b.Path)
	} else if _, err := os.Stat(b.Path); err == nil {
		if err := os.Rename(b.Path, saved); err != nil {
			release()
			return nil, fmt.Errorf("set the server's dump file %s aside: %w", b.Path, err)
		}
		hadOriginal = true
	}
	// A local rename: it fails or not whatever became of the server, so it warns itself.
	b.restore = func() (string, error) {
		defer release()
		os.Remove(b.Path + ".incomplete")
		if hadOriginal {
			if err := os.Rename(saved, b.Path); err != nil {
				log.Warnf("could not restore the server's dump file: mv %s %s: %v", saved, b.Path, err)
				return "NOT restored: " + err.Error(), nil
			}
			return "original restored", nil
		}
		os.Remove(b.Path)
		return "removed (there was none)", nil
	}
	return b, nil
}

// Return puts the server's dump file (or the variable naming it) back and says what it
// did, warning when it could not.
func (b *Borrowed) Return() string {
	r, err := b.ReturnErr()
	if err != nil {
		logx.Default().Warnf("%s", r)
	}
	return r
}

// ReturnErr is Return for a caller that reports a failure itself: the error is set when
// the server could not be told (MySQL's innodb_buffer_pool_filename), with what to do in
// the text.
func (b *Borrowed) ReturnErr() (string, error) {
	if b.restore == nil {
		return "", nil
	}
	r, err := b.restore()
	b.restore = nil
	return r, err
}

// Capture is the server's list of the pages it holds, in LRU order (most recently used
// first), written by the server itself.
type Capture struct {
	Pages   []PageID
	Seconds float64 // from the request to a readable file
}

// Dump has the server write every page of its LRU list (innodb_buffer_pool_dump_pct=100
// for the dump, then put back) into the borrowed file and reads it. The server copies its
// list under the pool's mutex and writes the file in its dump thread: no table is built.
func (b *Borrowed) Dump(ctx context.Context, conn *connection.Conn, log *logx.Logger) (*Capture, error) {
	c := &Capture{}
	var err error
	c.Seconds, _, err = b.DumpEach(ctx, conn, log, func(p PageID) { c.Pages = append(c.Pages, p) })
	if err != nil {
		return nil, err
	}
	return c, nil
}

// DumpEach is Dump calling each for every page of the list in order (most recently used
// first) instead of keeping it. It returns the seconds the server took to write the list
// and the number of pages in it.
func (b *Borrowed) DumpEach(ctx context.Context, conn *connection.Conn, log *logx.Logger, each func(PageID)) (seconds float64, pages int64, err error) {
	var pct int
	if err := conn.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_buffer_pool_dump_pct").Scan(&pct); err != nil {
		return 0, 0, fmt.Errorf("read innodb_buffer_pool_dump_pct: %w", err)
	}
	if pct != 100 {
		if _, err := conn.DB.ExecContext(ctx, "SET GLOBAL innodb_buffer_pool_dump_pct = 100"); err != nil {
			return 0, 0, fmt.Errorf("set innodb_buffer_pool_dump_pct: %w", err)
		}
		defer func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if _, err := conn.DB.ExecContext(rctx, fmt.Sprintf("SET GLOBAL innodb_buffer_pool_dump_pct = %d", pct)); err != nil {
				log.Warnf("could not restore innodb_buffer_pool_dump_pct to %d: %v", pct, err)
			}
		}()
	}
	os.Remove(b.Path)
	t0 := time.Now()
	if _, err := conn.DB.ExecContext(ctx, "SET GLOBAL innodb_buffer_pool_dump_now = ON"); err != nil {
		return 0, 0, fmt.Errorf("ask the server to dump its buffer pool list: %w", err)
	}
	// The server writes PATH.incomplete and renames it to PATH when done.
	deadline := time.Now().Add(10 * time.Minute)
	for {
		if _, err := os.Stat(b.Path); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("the server did not write its buffer pool dump %s within 10 minutes", b.Path)
		}
		wait := 2 * time.Millisecond
		if time.Since(t0) > time.Second {
			wait = 50 * time.Millisecond
			var status string
			if err := conn.DB.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_dump_status'").Scan(new(string), &status); err == nil && strings.Contains(strings.ToLower(status), "cannot") {
				return 0, 0, fmt.Errorf("the server could not write its buffer pool dump: %s", status)
			}
		}
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-time.After(wait):
		}
	}
	seconds = time.Since(t0).Seconds()
	f, err := os.Open(b.Path)
	if err != nil {
		return seconds, 0, fmt.Errorf("read the server's buffer pool dump: %w", err)
	}
	defer f.Close()
	if pages, err = ParseEach(bufio.NewReaderSize(f, 1<<20), each); err != nil {
		return seconds, pages, fmt.Errorf("read the server's buffer pool dump %s: %w", b.Path, err)
	}
	return seconds, pages, nil
}

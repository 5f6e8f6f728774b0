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
	"encoding/json"
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
	"github.com/innowarm/innowarm/internal/flavor"
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
	// Readable: innowarm runs on the database host and may read the datadir, whatever
	// else stops a native load (the privilege to SET GLOBAL, a load under way): enough to
	// count pages in the tablespace files.
	Readable bool
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
	a.Readable = unix.Access(srv.Datadir, unix.R_OK|unix.X_OK) == nil
	if err := unix.Access(srv.Datadir, unix.W_OK|unix.R_OK); err != nil {
		a.Reason = fmt.Sprintf("no read and write access to the datadir %s (run innowarm as root or as the server's user)", srv.Datadir)
		return a
	}
	if ok, err := hasGlobalPrivilege(ctx, conn); err != nil || !ok {
		a.Reason = fmt.Sprintf("user %s may not SET GLOBAL the buffer pool dump/load variables (needs %s)", conn.Opts.User, strings.Join(srv.GlobalVariablePrivileges(), " or "))
		return a
	}
	// During a load (the server's own at startup, or one a killed innowarm left) MySQL
	// writes no dump asked for: the wait for it ran for minutes, and the request, still
	// pending, later wrote an empty list over the server's dump file.
	var status string
	if err := conn.DB.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_load_status'").Scan(new(string), &status); err == nil && flavor.LoadInProgress(status) {
		a.Reason = fmt.Sprintf("the server is loading its buffer pool (%s): innowarm does not ask for its dump during a load", status)
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
//
// The server may write its dump into the borrowed file while innowarm holds it: a DBA's
// innodb_buffer_pool_dump_now, or the dump at a clean shutdown. Such a dump is the server's
// newest and is kept: the file is innowarm's only while it is the very file innowarm wrote
// or asked for (the same inode, size and time: every write of innowarm's and of the
// server's renames a new file into place); anything else found there is moved to where the
// server keeps its dump (keepServerDump). A list of innowarm's that such a dump replaced
// before the server's loader read it is reported (ListReplaced) so that the load can be
// repeated.
//
// What a borrow changes is written down first, in a state file of the datadir, so that an
// innowarm killed during it (SIGKILL, the host's OOM killer) is repaired by the next borrow:
// the server's dump file or innodb_buffer_pool_filename put back, a dump the server wrote
// since kept, innodb_buffer_pool_dump_pct set back (recoverLeftovers).
type Borrowed struct {
	// Path is where the server reads and writes its dump now.
	Path    string
	restore func() (string, error)
	lock    *sql.Conn
	log     *logx.Logger
	// keepAt is where a dump the server writes during the borrow belongs: the file
	// innowarm set aside (MariaDB), or the file the variable named before (MySQL).
	keepAt   string
	state    borrowState
	stateAt  string
	replaced int // server dumps found in the borrowed file and kept
}

// borrowState is what a borrow changed, in the datadir while it lasts.
type borrowState struct {
	Pid int `json:"pid"`
	// Variable: MySQL's innodb_buffer_pool_filename pointed at Path, from OrigFilename.
	// Otherwise (MariaDB) the server's own file at Path was renamed to Path + savedSuffix
	// (Saved).
	Variable     bool   `json:"variable,omitempty"`
	Path         string `json:"path"`
	OrigFilename string `json:"orig_filename,omitempty"`
	Saved        bool   `json:"saved,omitempty"`
	// Mine is innowarm's last file at Path (inode, size, modification time in ns).
	MineIno   uint64 `json:"mine_ino,omitempty"`
	MineSize  int64  `json:"mine_size,omitempty"`
	MineMtime int64  `json:"mine_mtime,omitempty"`
	// DumpPct is innodb_buffer_pool_dump_pct before innowarm set it to 100 (0: not set).
	DumpPct int `json:"dump_pct,omitempty"`
}

const (
	savedSuffix = ".innowarm-saved"
	stateName   = "ib_buffer_pool.innowarm-state"
	// tempPrefix names MySQL's borrowed files: ib_buffer_pool.innowarm-<pid>.
	tempPrefix = "ib_buffer_pool.innowarm-"
)

func (b *Borrowed) saveState() {
	raw, err := json.Marshal(b.state)
	if err == nil {
		tmp := b.stateAt + ".tmp"
		if err = os.WriteFile(tmp, raw, 0o644); err == nil {
			err = os.Rename(tmp, b.stateAt)
		}
	}
	if err != nil {
		b.log.Warnf("could not record the borrow of the server's dump file in %s (a killed innowarm leaves it to be put back by hand): %v", b.stateAt, err)
	}
}

// setMine records the file now at Path as innowarm's.
func (b *Borrowed) setMine() {
	fi, err := os.Stat(b.Path)
	if err != nil {
		b.state.MineIno, b.state.MineSize, b.state.MineMtime = 0, 0, 0
	} else {
		b.state.MineIno, b.state.MineSize, b.state.MineMtime = inode(fi), fi.Size(), fi.ModTime().UnixNano()
	}
	b.saveState()
}

func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// isMine says whether fi is the file innowarm last put at Path (recorded in st).
func (st borrowState) isMine(fi os.FileInfo) bool {
	return st.MineIno != 0 && inode(fi) == st.MineIno && fi.Size() == st.MineSize && fi.ModTime().UnixNano() == st.MineMtime
}

// keepServerDump moves a dump the server wrote into the borrowed file to where it belongs
// (keepAt), replacing the older one there, and says whether there was one.
func (b *Borrowed) keepServerDump() bool {
	fi, err := os.Stat(b.Path)
	if err != nil || b.state.isMine(fi) {
		return false
	}
	if err := os.Rename(b.Path, b.keepAt); err != nil {
		b.log.Warnf("the server wrote its dump into %s during innowarm's borrow, and it could not be kept as %s: %v", b.Path, b.keepAt, err)
		return false
	}
	b.replaced++
	if !b.state.Variable {
		b.state.Saved = true
	}
	b.state.MineIno = 0
	b.saveState()
	b.log.Warnf("the server wrote its buffer pool dump during innowarm's borrow of its dump file (innodb_buffer_pool_dump_now, or a shutdown): kept as the server's dump")
	return true
}

// WriteList writes pages as the list for the server's loader, keeping first any dump the
// server wrote into the file since innowarm's last use of it.
func (b *Borrowed) WriteList(pages []PageID) error {
	b.keepServerDump()
	if err := Write(b.Path, pages); err != nil {
		return err
	}
	b.setMine()
	return nil
}

// ListReplaced says whether the list innowarm last wrote is no longer the file the server
// reads (a dump replaced it, and is kept): a load started since may have read that dump
// instead. The caller writes its list again.
func (b *Borrowed) ListReplaced() bool {
	return b.keepServerDump()
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
	if log == nil {
		log = logx.Default()
	}
	srv := conn.Server
	b := &Borrowed{lock: lock, log: log, stateAt: filepath.Join(srv.Datadir, stateName)}
	release := func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = lock.ExecContext(rctx, "DO RELEASE_LOCK(?)", lockName)
		lock.Close()
	}
	// The lock is held: a borrow's state file here is a dead innowarm's.
	if err := recoverLeftovers(ctx, conn, b.stateAt, log); err != nil {
		release()
		return nil, err
	}
	b.state.Pid = os.Getpid()
	if srv.DumpFileDynamic() {
		var orig string
		if err := conn.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_buffer_pool_filename").Scan(&orig); err != nil {
			release()
			return nil, err
		}
		name := fmt.Sprintf("%s%d", tempPrefix, os.Getpid())
		b.Path = filepath.Join(srv.Datadir, name)
		b.keepAt = dumpPathOf(srv.Datadir, orig)
		b.state.Variable, b.state.Path, b.state.OrigFilename = true, b.Path, orig
		b.saveState()
		os.Remove(b.Path)
		if _, err := conn.DB.ExecContext(ctx, "SET GLOBAL innodb_buffer_pool_filename = ?", name); err != nil {
			os.Remove(b.stateAt)
			release()
			return nil, fmt.Errorf("point innodb_buffer_pool_filename at innowarm's file: %w", err)
		}
		log.Infof("innodb_buffer_pool_filename set to %s (was %s; if innowarm is killed, the next innowarm puts it back, or SET GLOBAL innodb_buffer_pool_filename = '%s')", name, orig, orig)
		b.restore = func() (string, error) {
			defer release()
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			b.keepServerDump()
			os.Remove(b.Path)
			os.Remove(b.Path + ".incomplete")
			if _, err := conn.DB.ExecContext(rctx, "SET GLOBAL innodb_buffer_pool_filename = ?", orig); err != nil {
				return fmt.Sprintf("innodb_buffer_pool_filename NOT restored (if the server is still up: SET GLOBAL innodb_buffer_pool_filename = '%s'; the next innowarm also puts it back): %v", orig, err), err
			}
			os.Remove(b.stateAt)
			return "innodb_buffer_pool_filename restored to " + orig + b.keptNote(), nil
		}
		return b, nil
	}

	b.Path = srv.DumpFilePath()
	saved := b.Path + savedSuffix
	b.keepAt = saved
	b.state.Path = b.Path
	if _, err := os.Stat(b.Path); err == nil {
		b.state.Saved = true
		b.saveState()
		if err := os.Rename(b.Path, saved); err != nil {
			os.Remove(b.stateAt)
			release()
			return nil, fmt.Errorf("set the server's dump file %s aside: %w", b.Path, err)
		}
	} else {
		b.saveState()
	}
	// A local rename: it fails or not whatever became of the server, so it warns itself.
	b.restore = func() (string, error) {
		defer release()
		b.keepServerDump()
		os.Remove(b.Path + ".incomplete")
		if b.state.Saved {
			if err := os.Rename(saved, b.Path); err != nil {
				log.Warnf("could not restore the server's dump file: mv %s %s: %v", saved, b.Path, err)
				return "NOT restored: " + err.Error(), nil
			}
			os.Remove(b.stateAt)
			return "original restored" + b.keptNote(), nil
		}
		os.Remove(b.Path)
		os.Remove(b.stateAt)
		return "removed (there was none)", nil
	}
	return b, nil
}

func (b *Borrowed) keptNote() string {
	if b.replaced == 0 {
		return ""
	}
	return fmt.Sprintf(" (with the dump the server wrote meanwhile, %d time(s))", b.replaced)
}

// dumpPathOf is the file innodb_buffer_pool_filename names: relative to the datadir.
func dumpPathOf(datadir, name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(datadir, name)
}

// recoverLeftovers repairs what a killed innowarm left borrowed (its state file at
// stateAt), and on MySQL an innodb_buffer_pool_filename still naming a file of an
// innowarm that left no state (an older version).
func recoverLeftovers(ctx context.Context, conn *connection.Conn, stateAt string, log *logx.Logger) error {
	srv := conn.Server
	raw, err := os.ReadFile(stateAt)
	var st borrowState
	if err == nil && json.Unmarshal(raw, &st) == nil && st.Path != "" {
		if st.Variable {
			var cur string
			if err := conn.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_buffer_pool_filename").Scan(&cur); err != nil {
				return fmt.Errorf("read innodb_buffer_pool_filename: %w", err)
			}
			if cur == filepath.Base(st.Path) {
				if _, err := conn.DB.ExecContext(ctx, "SET GLOBAL innodb_buffer_pool_filename = ?", st.OrigFilename); err != nil {
					return fmt.Errorf("put back innodb_buffer_pool_filename, left at %s by an innowarm that was killed (pid %d): %w", cur, st.Pid, err)
				}
				log.Warnf("innodb_buffer_pool_filename was left at %s by an innowarm that was killed (pid %d): set back to %s", cur, st.Pid, st.OrigFilename)
			}
			if fi, err := os.Stat(st.Path); err == nil {
				if st.isMine(fi) || fi.Size() == 0 {
					os.Remove(st.Path)
				} else if err := os.Rename(st.Path, dumpPathOf(srv.Datadir, st.OrigFilename)); err == nil {
					log.Warnf("the server wrote its dump into %s while that innowarm held it: kept as %s", st.Path, st.OrigFilename)
				}
			}
		} else if st.Saved {
			saved := st.Path + savedSuffix
			if _, err := os.Stat(saved); err == nil {
				fi, err := os.Stat(st.Path)
				switch {
				case err == nil && !st.isMine(fi):
					// The server wrote a dump after the borrow began (a shutdown, a
					// dump_now): newer than the one set aside.
					os.Remove(saved)
					log.Warnf("an innowarm that was killed (pid %d) left the server's dump file set aside as %s; the server has written a newer dump since: kept, the older one removed", st.Pid, saved)
				default:
					if err := os.Rename(saved, st.Path); err != nil {
						return fmt.Errorf("put back the server's dump file %s, set aside by an innowarm that was killed (pid %d): %w", saved, st.Pid, err)
					}
					log.Warnf("the server's dump file, set aside by an innowarm that was killed (pid %d), is back at %s", st.Pid, st.Path)
				}
			}
		} else if fi, err := os.Stat(st.Path); err == nil && st.isMine(fi) {
			os.Remove(st.Path) // a page list of innowarm's where the server had no dump
		}
		if st.DumpPct > 0 {
			var pct int
			if err := conn.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_buffer_pool_dump_pct").Scan(&pct); err == nil && pct == 100 && st.DumpPct != 100 {
				if _, err := conn.DB.ExecContext(ctx, fmt.Sprintf("SET GLOBAL innodb_buffer_pool_dump_pct = %d", st.DumpPct)); err == nil {
					log.Warnf("innodb_buffer_pool_dump_pct was left at 100 by an innowarm that was killed (pid %d): set back to %d", st.Pid, st.DumpPct)
				}
			}
		}
		os.Remove(stateAt)
	} else if err == nil {
		os.Remove(stateAt) // unreadable: nothing to go by
	}
	if !srv.DumpFileDynamic() {
		if saved := srv.DumpFilePath() + savedSuffix; fileExists(saved) {
			// An older innowarm's leftover, without state: nothing tells its page lists
			// from a dump the server wrote since; the set-aside file is the server's.
			path := srv.DumpFilePath()
			log.Warnf("%s exists from an earlier interrupted run (an innowarm without a state file): restored as %s", saved, path)
			return os.Rename(saved, path)
		}
		return nil
	}
	var cur string
	if err := conn.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_buffer_pool_filename").Scan(&cur); err != nil {
		return fmt.Errorf("read innodb_buffer_pool_filename: %w", err)
	}
	if pid, ok := strings.CutPrefix(cur, tempPrefix); ok && isDigits(pid) {
		// Left by an innowarm that kept no state: the configured name is not known here;
		// the server's default is the likeliest.
		const def = "ib_buffer_pool"
		if _, err := conn.DB.ExecContext(ctx, "SET GLOBAL innodb_buffer_pool_filename = ?", def); err != nil {
			return fmt.Errorf("put back innodb_buffer_pool_filename, left at %s by an innowarm that was killed: %w", cur, err)
		}
		left := dumpPathOf(srv.Datadir, cur)
		if fi, err := os.Stat(left); err == nil && fi.Size() > 0 {
			_ = os.Rename(left, dumpPathOf(srv.Datadir, def))
		}
		os.Remove(left)
		log.Warnf("innodb_buffer_pool_filename was left at %s by an innowarm that was killed: set to the server's default, %s (if your configuration names another file, SET GLOBAL it); a dump the server wrote there is kept as %s", cur, def, def)
	}
	return nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
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
		b.state.DumpPct = pct // first: a kill from here on is repaired by the next borrow
		b.saveState()
		if _, err := conn.DB.ExecContext(ctx, "SET GLOBAL innodb_buffer_pool_dump_pct = 100"); err != nil {
			return 0, 0, fmt.Errorf("set innodb_buffer_pool_dump_pct: %w", err)
		}
		defer func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if _, err := conn.DB.ExecContext(rctx, fmt.Sprintf("SET GLOBAL innodb_buffer_pool_dump_pct = %d", pct)); err != nil {
				log.Warnf("could not restore innodb_buffer_pool_dump_pct to %d: %v", pct, err)
				return
			}
			b.state.DumpPct = 0
			b.saveState()
		}()
	}
	b.keepServerDump()
	os.Remove(b.Path)
	t0 := time.Now()
	if _, err := conn.DB.ExecContext(ctx, "SET GLOBAL innodb_buffer_pool_dump_now = ON"); err != nil {
		return 0, 0, fmt.Errorf("ask the server to dump its buffer pool list: %w", err)
	}
	// The server writes PATH.incomplete and renames it to PATH when done.
	deadline := time.Now().Add(10 * time.Minute)
	waitLogged := false
	for {
		if _, err := os.Stat(b.Path); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("the server did not write its buffer pool dump %s within 10 minutes", b.Path)
		}
		wait := 2 * time.Millisecond
		if time.Since(t0) > 10*time.Second && !waitLogged {
			waitLogged = true
			log.Infof("waiting for the server to write its buffer pool dump (%.0f s so far, at most 10 minutes)", time.Since(t0).Seconds())
		}
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
	b.setMine() // the dump innowarm asked for: not to be kept as the server's own
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

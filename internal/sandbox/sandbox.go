// Package sandbox runs throwaway local MariaDB/MySQL servers for demos, experiments and
// tests: a data directory of its own, --no-defaults, a free 127.0.0.1 port, a socket inside
// the sandbox directory, root with an empty password, O_DIRECT unless asked otherwise.
package sandbox

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/flavor"
	"github.com/innowarm/innowarm/internal/units"
)

const (
	stateFileName = "sandbox.json"
	stateFormat   = 1
	// The entries a sandbox makes in its directory; Purge removes these and nothing else.
	dataDirName    = "data"
	tmpDirName     = "tmp"
	filesDirName   = "files"
	installLogName = "install.log"
	serverOutName  = "server.out"
	errorLogName   = "error.log"
	pidFileName    = "mysqld.pid"
	socketName     = "mysqld.sock"
	// markName is a file 'up' puts into the data directory it made: with it a data
	// directory proves itself innowarm's where the state file cannot (a sandbox copied
	// whole, or a state file that records no identity of its directory).
	markName = DataDirMark
	// MinPoolSize is the smallest pool a sandbox accepts; the servers refuse or silently raise
	// smaller values.
	MinPoolSize = 8 << 20
	// DefaultPoolSize is the pool a sandbox gets unless told otherwise.
	DefaultPoolSize = 256 << 20
)

// Config is what `sandbox up` is asked for.
type Config struct {
	Dir          string
	PoolSize     int64
	Port         int
	ServerBinary string
	// Flavor names a distribution ("mysql-9.7"), provisioned on first use; empty means the
	// machine's own server (or ServerBinary).
	Flavor         string
	BufferedIO     bool     // default O_DIRECT: a restart is then cold without dropping caches
	DumpAtShutdown bool     // innodb_buffer_pool_dump_at_shutdown
	LoadAtStartup  bool     // innodb_buffer_pool_load_at_startup
	ServerArgs     []string // extra server options, e.g. --performance-schema=ON
	// DieWithParent kills the server when the creating process dies (test harnesses).
	DieWithParent bool
	StartTimeout  time.Duration
	// TemplateCache, when set, is a directory of freshly bootstrapped data directories, one
	// per server binary and creation options: a new sandbox copies one instead of
	// bootstrapping (MySQL's --initialize takes 4-10 s, a copy well under one), and a
	// bootstrap adds its result there. Test harnesses that start dozens of servers use it.
	TemplateCache string
}

// State is persisted in DIR/sandbox.json so that later commands find the server.
type State struct {
	Format         int         `json:"format"`
	Dir            string      `json:"dir"`
	Datadir        string      `json:"datadir"`
	Socket         string      `json:"socket"`
	Port           int         `json:"port"`
	PidFile        string      `json:"pid_file"`
	ErrorLog       string      `json:"error_log"`
	ServerBinary   string      `json:"server_binary"`
	Flavor         flavor.Kind `json:"flavor"`
	Distribution   string      `json:"distribution,omitempty"`
	Root           string      `json:"root,omitempty"`
	ServerVersion  string      `json:"server_version"`
	PoolSize       int64       `json:"pool_size"`
	BufferedIO     bool        `json:"buffered_io"`
	DumpAtShutdown bool        `json:"dump_at_shutdown"`
	LoadAtStartup  bool        `json:"load_at_startup"`
	ServerArgs     []string    `json:"server_args,omitempty"`
	CreatedAt      time.Time   `json:"created_at"`
	// DirCreated: 'sandbox up' made the directory itself, so Purge may remove it once
	// innowarm's own entries are gone and nothing else is left in it.
	DirCreated bool `json:"dir_created"`
	// Installing: the data directory's bootstrap has not completed (it failed or was
	// interrupted); the next 'up' installs again.
	Installing bool `json:"installing,omitempty"`
	// DirInode is the directory's inode number when 'up' made the sandbox: a state file
	// copied into another directory, its paths edited to match, names another inode, and
	// innowarm then neither stops a server nor removes a file by it. Absent from states
	// written before innowarm recorded it.
	DirInode uint64 `json:"dir_inode,omitempty"`
	// CopiedFrom is the directory of the sandbox this one was copied from (cp -a), when
	// 'up' made the copy a sandbox of its own.
	CopiedFrom string `json:"copied_from,omitempty"`
}

// Sandbox is one sandbox directory and, when this process started it, its server process.
type Sandbox struct {
	State
	dieWithParent bool
	startTimeout  time.Duration
	proc          *os.Process
	exited        chan struct{}
	// copyOf is the directory a sandbox copied (or moved) here was made in, until 'up'
	// makes the copy a sandbox of its own; moved: the directory itself is that one.
	copyOf string
	moved  bool
	// movedDatadir and movedPidFile are a moved sandbox's paths where it was made: a
	// server started before the move still names them on its command line.
	movedDatadir, movedPidFile string
	notes                      []string
}

// Notes say what a user may not expect of the directory they named: a symbolic link to
// the sandbox, or a copy of one.
func (s *Sandbox) Notes() []string { return slices.Clone(s.notes) }

// DefaultDir is under the user's cache directory.
func DefaultDir() string {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "innowarm", "sandbox")
}

// DataDirMark is the file 'sandbox up' puts into the data directory it made; it stays
// there for the sandbox's life (tests that look for innowarm's leftovers in a datadir
// leave it out).
const DataDirMark = "innowarm-sandbox"

// errNoSandbox: the directory holds no sandbox state.
var errNoSandbox = errors.New("no sandbox")

// Open loads the sandbox in dir. A state file that names another directory is taken as a
// sandbox copied (cp -a) or moved there only when the directory is that sandbox's (its
// inode) or its data directory carries innowarm's mark: its paths are then the copy's own,
// never the original's, and 'sandbox up' makes it a sandbox of its own. Any other state
// file naming another directory (one copied alone, or written by hand) is refused.
func Open(dir string) (*Sandbox, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, exitcode.UsageError(fmt.Errorf("sandbox dir %s: %w", dir, err))
	}
	statePath := filepath.Join(abs, stateFileName)
	b, err := os.ReadFile(statePath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil, exitcode.UsageError(fmt.Errorf("%w in %s: create one with 'innowarm sandbox up --dir %s'", errNoSandbox, abs, abs))
		}
		return nil, fmt.Errorf("read sandbox state: %w", err)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("sandbox state %s is corrupt: %w (remove the directory and run 'sandbox up' again)", filepath.Join(abs, stateFileName), err)
	}
	if st.Format != stateFormat {
		return nil, fmt.Errorf("sandbox in %s has state format %d, this innowarm reads %d", abs, st.Format, stateFormat)
	}
	s := &Sandbox{State: st, startTimeout: 120 * time.Second}
	moved := false
	if sameDir(abs, st.Dir) {
		if err := st.checkOwnPaths(abs); err == nil {
			s.notes = viaLink(abs, st.Dir)
			return s, nil
		} else if !errors.Is(err, errOtherInode) || !hasMark(filepath.Join(abs, dataDirName)) {
			return nil, fmt.Errorf("refusing %s: %w", statePath, err)
		}
		// The same path, another directory: a sandbox restored or copied back here.
	} else if ino, err := inodeOf(abs); err == nil && st.DirInode != 0 && ino == st.DirInode && hasMark(filepath.Join(abs, dataDirName)) {
		// The inode alone proves nothing once the original is gone: a directory made
		// after its purge can get its number again, and a state file copied alone into it
		// was taken for the sandbox moved there (a CI run: beside a user's data directory).
		moved = true
	} else if !hasMark(filepath.Join(abs, dataDirName)) {
		return nil, exitcode.UsageError(fmt.Errorf("%s describes the sandbox created in %s, not this directory, and %s is no data directory 'sandbox up' made (a state file copied alone, or written by hand): innowarm acts on that sandbox only in %s (--dir %s); a sandbox copied whole (cp -a) after this innowarm's 'sandbox up' marked its data directory can be used where it was copied", statePath, st.Dir, filepath.Join(abs, dataDirName), st.Dir, st.Dir))
	}
	s.copyOf, s.moved = st.Dir, moved
	if moved {
		s.movedDatadir, s.movedPidFile = st.Datadir, st.PidFile
	}
	s.setPaths(abs)
	// A copy's directory was made by the copy, not by 'sandbox up': purge leaves it.
	s.DirCreated = st.DirCreated && moved
	what := "a copy of"
	if moved {
		what = "moved from"
	}
	if n := linkNote(abs); n != "" {
		s.notes = append(s.notes, n)
	}
	s.notes = append(s.notes, fmt.Sprintf("%s is %s the sandbox made in %s (its sandbox.json names that directory): innowarm uses this directory's own data, socket, pid file and logs, never the original's; 'sandbox up --dir %s' starts it as a sandbox of its own", abs, what, st.Dir, abs))
	return s, nil
}

// errOtherInode: the state was written in another directory of the same path.
var errOtherInode = errors.New("another directory")

// setPaths derives every path of the sandbox from its directory, as 'up' does.
func (s *Sandbox) setPaths(dir string) {
	s.Dir, s.Datadir = dir, filepath.Join(dir, dataDirName)
	s.PidFile, s.ErrorLog = filepath.Join(dir, pidFileName), filepath.Join(dir, errorLogName)
	s.Socket, _ = socketPath(dir)
}

// viaLink says, when given (the --dir a user gave) and the sandbox's directory differ only
// through a symbolic link, which one innowarm acts on: a user who gave a link to a sandbox
// learns that the sandbox, and what purge removes, is the link's target.
func viaLink(given, dir string) []string {
	if given == dir {
		return nil // the user names it as it was made
	}
	if n := linkNote(given); n != "" {
		return []string{n}
	}
	return []string{fmt.Sprintf("%s is the directory of the sandbox made as %s (a symbolic link)", given, dir)}
}

// linkNote says where the --dir given leads when it is a symbolic link, else "".
func linkNote(given string) string {
	fi, err := os.Lstat(given)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return ""
	}
	target, err := filepath.EvalSymlinks(given)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s is a symbolic link: acting on the sandbox in %s (the link itself is never removed)", given, target)
}

// checkOwnPaths says whether every path the state names is the one 'up' derives from the
// sandbox's directory, and whether that directory is the one 'up' made it in: the server
// a command stops, and the files it removes, are found through these paths, and a state
// file edited to name another sandbox's pid file, socket or data directory made 'down'
// stop that other sandbox's server.
func (st State) checkOwnPaths(dir string) error {
	edited := func(what, got, want string) error {
		return fmt.Errorf("its %s %q is not the sandbox's own %s (the state file was edited or copied): innowarm stops and removes only what 'sandbox up' made in %s", what, got, want, st.Dir)
	}
	for _, p := range []struct{ what, got, name string }{
		{"datadir", st.Datadir, dataDirName},
		{"pid_file", st.PidFile, pidFileName},
		{"error_log", st.ErrorLog, errorLogName},
	} {
		if want := filepath.Join(st.Dir, p.name); p.got != want {
			return edited(p.what, p.got, want)
		}
	}
	// The socket is in the directory, or (a long path) in the temporary directory of the
	// day, under a name made from the directory's path.
	if own := filepath.Join(st.Dir, socketName); st.Socket != own && (!filepath.IsAbs(st.Socket) || filepath.Base(st.Socket) != shortSocketName(st.Dir)) {
		return edited("socket", st.Socket, own)
	}
	if st.DirInode != 0 {
		if ino, err := inodeOf(dir); err != nil {
			return fmt.Errorf("sandbox dir %s: %w", dir, err)
		} else if ino != st.DirInode {
			return fmt.Errorf("it was written in another directory than %s (inode %d, not %d: a copied state file, or a sandbox copied or restored here): innowarm stops and removes only what 'sandbox up' made in this directory: %w", dir, ino, st.DirInode, errOtherInode)
		}
	}
	return nil
}

// inodeOf is the inode number of the directory path names (a symbolic link is followed).
func inodeOf(path string) (uint64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	sys, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("no inode number for %s", path)
	}
	return sys.Ino, nil
}

// sameDir says whether two paths name the same directory (one may be a symbolic link to
// the other).
func sameDir(a, b string) bool {
	if a == b {
		return true
	}
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// Save writes the sandbox's settings (State) to its directory, where its next start reads
// them: a caller that changed them for a while (an experiment) puts them back with it.
func (s *Sandbox) Save() error { return s.save() }

func (s *Sandbox) save() error {
	b, err := json.MarshalIndent(s.State, "", "  ")
	if err != nil {
		return err
	}
	// Made anew (O_EXCL does not follow a link): a symbolic link planted at the temporary
	// name made the write go through it, over the file it led to.
	tmp := filepath.Join(s.Dir, stateFileName+".tmp")
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(s.Dir, stateFileName))
}

// UpReport says what `up` did.
type UpReport struct {
	Action         string   `json:"action"` // created, started, already-running
	InstallSeconds float64  `json:"install_seconds,omitempty"`
	StartSeconds   float64  `json:"start_seconds,omitempty"`
	Stale          []string `json:"stale,omitempty"`
	Notes          []string `json:"notes,omitempty"`
	Pid            int      `json:"pid"`
	Binary         Binary   `json:"binary"`
}

// Up creates the sandbox if needed and starts its server if it is not running. It creates
// a sandbox only in a new or empty directory: 'down --purge' then removes nothing of the
// user's.
func Up(ctx context.Context, cfg Config) (*Sandbox, *UpReport, error) {
	if cfg.Dir == "" {
		cfg.Dir = DefaultDir()
	}
	if cfg.PoolSize == 0 {
		cfg.PoolSize = DefaultPoolSize
	}
	if cfg.PoolSize < MinPoolSize {
		return nil, nil, exitcode.BadValue("PoolSize", "%s is too small: the sandbox needs at least %s", units.FormatBytes(cfg.PoolSize), units.FormatBytes(MinPoolSize))
	}
	if cfg.Port < 0 || cfg.Port > 65535 {
		return nil, nil, exitcode.BadValue("Port", "%d is out of range", cfg.Port)
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, nil, exitcode.UsageError(fmt.Errorf("sandbox dir %s: %w", cfg.Dir, err))
	}
	for attempt := 0; ; attempt++ {
		// The directory must exist to be locked; one made here is innowarm's.
		created := false
		if _, err := os.Stat(dir); err != nil {
			if created, err = claimDir(dir); err != nil {
				return nil, nil, err
			}
		}
		unlock, err := lockDir(ctx, dir)
		if errors.Is(err, fs.ErrNotExist) && attempt < 3 {
			continue // removed by the purge we waited for: make it anew
		}
		if err != nil {
			return nil, nil, err
		}
		s, rep, err := up(ctx, cfg, dir, created)
		unlock()
		return s, rep, err
	}
}

// up is Up holding the directory's lock: two 'up' at once in one directory bootstrapped
// into one data directory, and each wrote its own state over the other's.
func up(ctx context.Context, cfg Config, dir string, created bool) (*Sandbox, *UpReport, error) {
	rep := &UpReport{}
	s, err := Open(dir)
	dirCreated := created
	if err == nil && s.copyOf != "" {
		if n := linkNote(dir); n != "" {
			rep.Notes = append(rep.Notes, n)
		}
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s is a copy of the sandbox made in %s: it is now a sandbox of its own, with its own data, socket, port, pid file and logs (a purge of either leaves the other alone)", s.Dir, s.copyOf))
		if s.moved {
			rep.Notes[len(rep.Notes)-1] = fmt.Sprintf("the sandbox made in %s was moved to %s: it now lives there", s.copyOf, s.Dir)
		}
		if err := s.adopt(); err != nil {
			return nil, nil, err
		}
	} else if err == nil {
		rep.Notes = append(rep.Notes, s.notes...)
	}
	switch {
	case err == nil && !s.Installing:
		return upExisting(ctx, s, cfg, rep)
	case err == nil:
		// An install that failed or was interrupted: its entries are innowarm's, do it again.
		dirCreated = s.DirCreated
		rep.Notes = append(rep.Notes, "the previous install in "+s.Dir+" did not complete; installing again")
		if _, err := s.removeOwned(); err != nil {
			return nil, nil, err
		}
		dir = s.Dir
	case errors.Is(err, errNoSandbox):
		claimed, err := claimDir(dir)
		if err != nil {
			return nil, nil, err
		}
		dirCreated = dirCreated || claimed
	default:
		return nil, nil, err
	}

	var bin Binary
	if cfg.Flavor != "" && cfg.ServerBinary == "" {
		bin, err = FindFlavor(ctx, cfg.Flavor)
	} else {
		bin, err = FindServer(ctx, cfg.ServerBinary)
	}
	if err != nil {
		if dirCreated {
			os.Remove(dir) // only when still empty
		}
		return nil, nil, err
	}
	rep.Binary = bin
	ino, err := inodeOf(dir)
	if err != nil {
		return nil, nil, exitcode.BadValue("Dir", "%s: %w", dir, err)
	}
	s = &Sandbox{
		State: State{
			Format: stateFormat, Dir: dir, Datadir: filepath.Join(dir, dataDirName),
			PidFile: filepath.Join(dir, pidFileName), ErrorLog: filepath.Join(dir, errorLogName),
			ServerBinary: bin.Path, Flavor: bin.Kind, ServerVersion: bin.Line, Distribution: bin.Flavor, Root: bin.Root,
			PoolSize: cfg.PoolSize, BufferedIO: cfg.BufferedIO, DumpAtShutdown: cfg.DumpAtShutdown,
			LoadAtStartup: cfg.LoadAtStartup, ServerArgs: cfg.ServerArgs, Port: cfg.Port, CreatedAt: time.Now().UTC(),
			DirCreated: dirCreated, Installing: true, DirInode: ino,
		},
		dieWithParent: cfg.DieWithParent,
		startTimeout:  120 * time.Second,
	}
	if cfg.StartTimeout > 0 {
		s.startTimeout = cfg.StartTimeout
	}
	var note string
	s.Socket, note = socketPath(dir)
	if note != "" {
		rep.Notes = append(rep.Notes, note)
	}
	// The state is written before anything else, so that whatever the install leaves behind
	// (it may fail or be interrupted) is known to be innowarm's: 'up' again or 'down --purge'.
	if err := s.save(); err != nil {
		if dirCreated {
			os.Remove(dir)
		}
		return nil, nil, exitcode.BadValue("Dir", "%s is not writable (%w): choose another", dir, err)
	}
	t0 := time.Now()
	if err := s.installFrom(ctx, bin, cfg.TemplateCache); err != nil {
		return nil, nil, err
	}
	rep.InstallSeconds = time.Since(t0).Seconds()
	if err := s.writeMark(); err != nil {
		return nil, nil, err
	}
	s.Installing = false
	if err := s.save(); err != nil {
		return nil, nil, exitcode.UsageError(fmt.Errorf("sandbox dir %s is not writable: %w", dir, err))
	}
	start, err := s.Start(ctx)
	if err != nil {
		return nil, nil, err
	}
	rep.Action, rep.StartSeconds, rep.Pid = "created", start.Seconds, start.Pid
	rep.Stale, rep.Notes = start.Stale, append(rep.Notes, start.Notes...)
	return s, rep, nil
}

// adopt makes a sandbox copied (or moved) into its directory a sandbox of its own there:
// its state names this directory's paths and identity from now on. A copy gets a port of
// its own (the original's may be in use, or soon be).
func (s *Sandbox) adopt() error {
	ino, err := inodeOf(s.Dir)
	if err != nil {
		return exitcode.BadValue("Dir", "%s: %w", s.Dir, err)
	}
	s.DirInode = ino
	if !s.moved {
		s.Port, s.CopiedFrom = 0, s.copyOf
	}
	s.copyOf, s.moved = "", false
	if err := s.save(); err != nil {
		return exitcode.UsageError(fmt.Errorf("sandbox dir %s is not writable: %w", s.Dir, err))
	}
	return nil
}

// LockDir holds an exclusive lock on the sandbox directory dir until unlock is called,
// waiting while another innowarm holds it ('up', 'down', 'restart' of the same sandbox).
// The lock is on the directory itself: a lock file would be one more entry in a directory
// that may be the user's. It fails with fs.ErrNotExist when the directory was removed
// while it waited (a purge).
func LockDir(ctx context.Context, dir string) (unlock func(), err error) { return lockDir(ctx, dir) }

func lockDir(ctx context.Context, dir string) (func(), error) {
	for {
		f, err := os.Open(dir)
		if err != nil {
			return nil, fmt.Errorf("lock sandbox dir: %w", err)
		}
		for {
			err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
			if err == nil {
				break
			}
			if !errors.Is(err, syscall.EWOULDBLOCK) {
				f.Close()
				return nil, fmt.Errorf("lock sandbox dir %s: %w", dir, err)
			}
			select {
			case <-ctx.Done():
				f.Close()
				return nil, ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
		// The holder may have removed the directory, or another took its place: the lock
		// counts only on the directory the path names now.
		held, herr := f.Stat()
		now, nerr := os.Stat(dir)
		if herr == nil && nerr == nil && os.SameFile(held, now) {
			return func() { f.Close() }, nil
		}
		f.Close()
		if nerr != nil {
			return nil, fmt.Errorf("lock sandbox dir: %w", nerr)
		}
	}
}

// creationArgs are the server options a data directory is created with and keeps:
// innodb_page_size cannot change after it.
func creationArgs(serverArgs []string) []string {
	var out []string
	for _, a := range serverArgs {
		// MySQL fixes lower_case_table_names in its data dictionary when it initializes:
		// a server started with another value refuses to start.
		if n := strings.ReplaceAll(a, "_", "-"); strings.HasPrefix(n, "--innodb-page-size=") || strings.HasPrefix(n, "--lower-case-table-names=") {
			out = append(out, a)
		}
	}
	return out
}

// upExisting starts the server of a sandbox that exists, unless it runs already.
func upExisting(ctx context.Context, s *Sandbox, cfg Config, rep *UpReport) (*Sandbox, *UpReport, error) {
	s.dieWithParent = cfg.DieWithParent
	if cfg.StartTimeout > 0 {
		s.startTimeout = cfg.StartTimeout
	}
	if cfg.Flavor != "" && cfg.ServerBinary == "" {
		if d, err := LookupDistribution(cfg.Flavor); err != nil {
			return nil, nil, err
		} else if d.Name != s.Distribution && !(s.Distribution == "" && d.Kind == s.Flavor && d.checkSeries(s.ServerVersion) == nil) {
			return nil, nil, exitcode.BadValue("Flavor", "%s: the sandbox in %s runs %s: choose another directory, or remove it with 'innowarm sandbox down --purge --dir %s'", d.Name, s.Dir, s.Description(), s.Dir)
		}
	}
	st := s.Status(ctx)
	rep.Binary = s.binary()
	if st.Running {
		rep.Action, rep.Pid = "already-running", st.Pid
		if cfg.PoolSize != s.PoolSize {
			rep.Notes = append(rep.Notes, fmt.Sprintf("already running with a %s pool; 'sandbox restart --pool-size' changes it", units.FormatBytes(s.PoolSize)))
		}
		return s, rep, nil
	}
	s.PoolSize = cfg.PoolSize
	s.BufferedIO, s.DumpAtShutdown, s.LoadAtStartup = cfg.BufferedIO, cfg.DumpAtShutdown, cfg.LoadAtStartup
	if cfg.ServerArgs != nil {
		s.ServerArgs = cfg.ServerArgs
	}
	if cfg.Port != 0 {
		s.Port = cfg.Port
	}
	start, err := s.Start(ctx)
	if err != nil {
		return nil, nil, err
	}
	rep.Action, rep.StartSeconds, rep.Stale, rep.Notes, rep.Pid = "started", start.Seconds, start.Stale, append(rep.Notes, start.Notes...), start.Pid
	return s, rep, nil
}

// claimDir makes dir ready for a new sandbox: it creates it (and says so), or accepts it
// when it is an empty directory. A directory with anything in it is refused: its files
// would sit beside the sandbox's, and nothing would tell them apart.
func claimDir(dir string) (created bool, err error) {
	notWritable := func(err error) error {
		return exitcode.BadValue("Dir", "%s is not writable (%w): choose another", dir, err)
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if lfi, lerr := os.Lstat(dir); lerr == nil {
			if lfi.Mode()&fs.ModeSymlink != 0 {
				if _, err := os.Stat(dir); err != nil {
					return false, exitcode.BadValue("Dir", "%s is a symbolic link to a directory that does not exist: create the directory or choose another", dir)
				}
			}
			// Made between the two looks, by another 'up' in the same directory: the
			// directory's lock decides which of them bootstraps.
			return false, nil
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return false, notWritable(err)
		}
		return true, nil
	case err != nil:
		return false, notWritable(err)
	case !fi.IsDir():
		return false, exitcode.BadValue("Dir", "%s is not a directory: choose another", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, notWritable(err)
	}
	if len(entries) > 0 {
		var names []string
		for _, e := range entries[:min(len(entries), 3)] {
			names = append(names, e.Name())
		}
		if len(entries) > 3 {
			names = append(names, fmt.Sprintf("and %d more", len(entries)-3))
		}
		return false, exitcode.BadValue("Dir", "%s holds files and no sandbox (%s): a sandbox goes into a new or empty directory, so that 'sandbox down --purge' never removes anything of yours; choose another", dir, strings.Join(names, ", "))
	}
	return false, nil
}

// socketPath keeps the socket in the sandbox dir unless that path is too long for a Unix
// socket address (108 bytes), in which case it goes to a short per-sandbox path in /tmp.
func socketPath(dir string) (string, string) {
	p := filepath.Join(dir, socketName)
	if len(p) < 100 {
		return p, ""
	}
	short := filepath.Join(os.TempDir(), shortSocketName(dir))
	return short, fmt.Sprintf("sandbox path is too long for a Unix socket; the socket is %s", short)
}

// shortSocketName is the name of the socket of a sandbox whose directory's path is too long.
func shortSocketName(dir string) string {
	sum := sha1.Sum([]byte(dir))
	return "innowarm-" + hex.EncodeToString(sum[:6]) + ".sock"
}

func (s *Sandbox) install(ctx context.Context, bin Binary) error {
	if err := os.MkdirAll(s.Datadir, 0o750); err != nil {
		return exitcode.UsageError(fmt.Errorf("sandbox dir %s is not writable: %w", s.Dir, err))
	}
	tmp := filepath.Join(s.Dir, tmpDirName)
	if err := os.MkdirAll(tmp, 0o750); err != nil {
		return exitcode.UsageError(fmt.Errorf("sandbox dir %s is not writable: %w", s.Dir, err))
	}
	in, err := bin.Install()
	if err != nil {
		return err
	}
	boot, err := in.Bootstrap(s.Datadir, tmp, os.Geteuid() == 0)
	if err != nil {
		return exitcode.UsageError(fmt.Errorf("cannot create a %s data directory: %w: %s", bin.Kind, err, InstallHint))
	}
	boot.Argv = append(boot.Argv, creationArgs(s.ServerArgs)...)
	logPath := filepath.Join(s.Dir, installLogName)
	logFile, err := os.Create(logPath)
	if err != nil {
		return exitcode.UsageError(fmt.Errorf("sandbox dir %s is not writable: %w", s.Dir, err))
	}
	defer logFile.Close()
	cmd := exec.CommandContext(ctx, boot.Argv[0], boot.Argv[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if boot.Stdin != nil {
		cmd.Stdin = bytes.NewReader(boot.Stdin)
	}
	cmd.Dir = s.Dir
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%s bootstrap failed (%w): %s (full log: %s)", bin.Kind, err, lastErrorLine(logPath), logPath)
	}
	return nil
}

// binary describes the sandbox's server as recorded in its state.
func (s *Sandbox) binary() Binary {
	kind, ver, _ := flavor.ParseVersion(versionFromLine(s.ServerVersion), s.ServerVersion)
	if kind == "" {
		kind = s.Flavor
	}
	return Binary{Path: s.ServerBinary, Kind: kind, Version: ver, Line: s.ServerVersion, Root: s.Root, Flavor: s.Distribution}
}

// serverArgv builds the command line that starts the server.
func (s *Sandbox) serverArgv() ([]string, error) {
	in, err := s.binary().Install()
	if err != nil {
		return nil, err
	}
	return in.Argv(s.serverArgs(in)...), nil
}

// serverArgs builds the server's options.
func (s *Sandbox) serverArgs(in flavor.Install) []string {
	onOff := func(b bool) string {
		if b {
			return "ON"
		}
		return "OFF"
	}
	flush := "O_DIRECT"
	if s.BufferedIO {
		flush = "fsync"
	}
	args := []string{
		"--no-defaults",
		"--datadir=" + s.Datadir,
		"--socket=" + s.Socket,
		"--port=" + strconv.Itoa(s.Port),
		"--bind-address=127.0.0.1",
		"--pid-file=" + s.PidFile,
		"--log-error=" + s.ErrorLog,
		// A tmpdir of its own: internal temporary tables must not live where other programs
		// clean up, and a sandbox must not litter /tmp.
		"--tmpdir=" + filepath.Join(s.Dir, tmpDirName),
		"--innodb-buffer-pool-size=" + strconv.FormatInt(s.PoolSize, 10),
		"--innodb-flush-method=" + flush,
		"--innodb-buffer-pool-dump-at-shutdown=" + onOff(s.DumpAtShutdown),
		"--innodb-buffer-pool-load-at-startup=" + onOff(s.LoadAtStartup),
		"--character-set-server=utf8mb4",
		"--max-connections=1000",
		"--local-infile=1",
	}
	args = append(args, in.SandboxServerArgs(filepath.Join(s.Dir, filesDirName))...)
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	return append(args, s.ServerArgs...)
}

// Description names the server: "MariaDB 10.11.19-MariaDB-0+deb12u1", and the flavor it
// was asked as.
func (st State) Description() string {
	d := fmt.Sprintf("%s %s", st.Flavor, versionFromLine(st.ServerVersion))
	if st.Distribution != "" {
		d += " (flavor " + st.Distribution + ")"
	}
	return d
}

func versionFromLine(line string) string {
	if m := verRe.FindStringSubmatch(line); m != nil {
		return m[1]
	}
	return line
}

// StartReport says what Start did.
type StartReport struct {
	Seconds float64  `json:"seconds"`
	Pid     int      `json:"pid"`
	Stale   []string `json:"stale,omitempty"`
	Notes   []string `json:"notes,omitempty"`
}

// Start starts the server if it is not running and waits until it answers. A free port can
// be taken by another process between the check and the server's bind; then it tries again
// on another port.
func (s *Sandbox) Start(ctx context.Context) (StartReport, error) {
	var rep StartReport
	if s.Installing {
		return rep, exitcode.UsageError(fmt.Errorf("the sandbox in %s was never fully created (its install failed or was interrupted; see %s): run 'innowarm sandbox up --dir %s' again", s.Dir, filepath.Join(s.Dir, installLogName), s.Dir))
	}
	st := s.Status(ctx)
	if st.Running {
		rep.Pid = st.Pid
		return rep, nil
	}
	if err := s.checkStart(); err != nil {
		return rep, err
	}
	rep.Stale = s.clearStale(st)
	if socketLive(s.Socket) {
		// The sandbox's server would take it over, and our wait for its answer would
		// take the other's answer for it.
		return rep, fmt.Errorf("refusing to start the sandbox's server: another process listens on its socket %s", s.Socket)
	}
	for attempt := 0; ; attempt++ {
		err := s.start(ctx, &rep)
		if err == nil || attempt == 2 || !errors.Is(err, errPortTaken) {
			return rep, err
		}
		rep.Notes = append(rep.Notes, fmt.Sprintf("port %d was taken while the server started; retrying on another", s.Port))
		s.Port = 0
	}
}

// checkStart refuses to run a server on a data directory innowarm cannot prove it made,
// or that lies elsewhere: a server of another version upgrades, and any server changes,
// the data it is started on.
func (s *Sandbox) checkStart() error {
	if s.copyOf != "" {
		return exitcode.UsageError(fmt.Errorf("%s is a copy of the sandbox made in %s: 'innowarm sandbox up --dir %s' makes it a sandbox of its own and starts it", s.Dir, s.copyOf, s.Dir))
	}
	if fi, err := os.Lstat(s.Datadir); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("refusing to start a server on %s: it is a symbolic link, which 'sandbox up' never makes (the server would run on the directory it leads to)", s.Datadir)
	}
	// The server writes its pid file, logs, socket and temporary files through a link,
	// over whatever it leads to (a pid file linked to a file of the user's was truncated).
	for _, n := range []string{pidFileName, errorLogName, serverOutName, socketName, socketLockName, tmpDirName, filesDirName} {
		p := filepath.Join(s.Dir, n)
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("refusing to start the sandbox's server: %s is a symbolic link, which 'sandbox up' never makes (the server would write through it): remove it", p)
		}
	}
	if err := s.proven(); err != nil {
		return fmt.Errorf("refusing to start a server on %s: %w: create a new sandbox with 'innowarm sandbox up --dir NEW_DIR'", s.Datadir, err)
	}
	if fi, err := os.Lstat(s.Datadir); err == nil && fi.IsDir() && !hasMark(s.Datadir) {
		// Made before 'up' marked its data directory: a copy of it can then be used too.
		return s.writeMark()
	}
	return nil
}

var errPortTaken = errors.New("port taken")

// portTakenLine says whether a server's last error line says its port was taken: MariaDB
// ends with "Can't start server: Bind on TCP/IP port. Got error: 98: Address already in
// use" or, after its bind error, "Do you already have another server running on port: N ?"
// (10.11 in CI), MySQL with "Do you already have another mysqld server running on port: N ?"
// (a port freed by one sandbox's restart is handed to another test's server before the
// first binds it again).
func portTakenLine(line string) bool {
	for _, s := range []string{"Address already in use", "Bind on TCP/IP port", "server running on port"} {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

func (s *Sandbox) start(ctx context.Context, rep *StartReport) error {
	if s.Port == 0 || !portFree(s.Port) {
		old := s.Port
		p, err := freePort()
		if err != nil {
			return fmt.Errorf("find a free port: %w", err)
		}
		s.Port = p
		if old != 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("port %d is taken; now using %d", old, p))
		}
		if err := s.save(); err != nil {
			return err
		}
	}
	if err := s.save(); err != nil {
		return exitcode.UsageError(fmt.Errorf("sandbox dir %s is not writable: %w", s.Dir, err))
	}
	for _, sub := range []string{tmpDirName, filesDirName} {
		if err := os.MkdirAll(filepath.Join(s.Dir, sub), 0o750); err != nil {
			return exitcode.UsageError(fmt.Errorf("sandbox dir %s is not writable: %w", s.Dir, err))
		}
	}
	argv, err := s.serverArgv()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(filepath.Join(s.Dir, serverOutName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return exitcode.UsageError(fmt.Errorf("sandbox dir %s is not writable: %w", s.Dir, err))
	}
	defer out.Close()
	errLogOffset := fileSize(s.ErrorLog)
	t0 := time.Now()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Dir = s.Dir
	// A session of its own: the user's Ctrl-C in the terminal must not reach the server.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if s.dieWithParent {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", argv[0], err)
	}
	s.proc = cmd.Process
	s.exited = make(chan struct{})
	go func(exited chan struct{}) { _ = cmd.Wait(); close(exited) }(s.exited)
	rep.Pid = cmd.Process.Pid

	deadline := time.Now().Add(s.startTimeout)
	for {
		select {
		case <-s.exited:
			line := lastErrorLineFrom(s.ErrorLog, errLogOffset)
			if portTakenLine(line) {
				return fmt.Errorf("%w: %s", errPortTaken, line)
			}
			return fmt.Errorf("the %s server exited during start-up: %s (log: %s)", s.Flavor, line, s.ErrorLog)
		case <-ctx.Done():
			_ = s.proc.Kill()
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if s.ping(ctx) == nil {
			rep.Seconds = time.Since(t0).Seconds()
			return nil
		}
		if time.Now().After(deadline) {
			_ = s.proc.Kill()
			return fmt.Errorf("the server did not answer within %s: %s (log: %s)", s.startTimeout, lastErrorLineFrom(s.ErrorLog, errLogOffset), s.ErrorLog)
		}
	}
}

func (s *Sandbox) ping(ctx context.Context) error {
	if _, err := os.Stat(s.Socket); err != nil {
		return err
	}
	o := s.ConnOptions()
	o.ConnectTimeout = time.Second
	cfg, err := o.Config()
	if err != nil {
		return err
	}
	c, err := net.DialTimeout("unix", cfg.Addr, time.Second)
	if err != nil {
		return err
	}
	c.Close()
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := connection.Open(pctx, o)
	if err != nil {
		return err
	}
	return conn.Close()
}

// ConnOptions connects as root through the sandbox's socket.
func (s *Sandbox) ConnOptions() connection.Options {
	return connection.ForSocket(s.Socket, "root", "")
}

// Connect opens a connection to the sandbox server.
func (s *Sandbox) Connect(ctx context.Context) (*connection.Conn, error) {
	return connection.Open(ctx, s.ConnOptions())
}

// Status is what `sandbox status` reports.
type Status struct {
	Dir     string `json:"dir"`
	Running bool   `json:"running"`
	Pid     int    `json:"pid,omitempty"`
	Socket  string `json:"socket"`
	Port    int    `json:"port"`
	Flavor  string `json:"flavor"`
	Version string `json:"server_version"`
	// VersionLine is the server binary's whole --version line.
	VersionLine    string `json:"server_version_line,omitempty"`
	PoolSize       int64  `json:"pool_size"`
	FlushMethod    string `json:"flush_method"`
	DumpAtShutdown bool   `json:"dump_at_shutdown"`
	LoadAtStartup  bool   `json:"load_at_startup"`
	// ServerArgs are the extra server options the sandbox starts its server with, as 'up'
	// (--server-arg) recorded them; [] when none.
	ServerArgs  []string `json:"server_args"`
	UptimeSecs  float64  `json:"uptime_seconds,omitempty"`
	StalePid    string   `json:"stale_pid_file,omitempty"`
	StaleSocket string   `json:"stale_socket,omitempty"`
	// Notes say what the directory named is: a symbolic link to the sandbox, or a copy of one.
	Notes []string `json:"notes,omitempty"`
}

// Status inspects the pid file and socket without changing anything.
func (s *Sandbox) Status(ctx context.Context) Status {
	st := Status{Dir: s.Dir, Socket: s.Socket, Port: s.Port, Flavor: string(s.Flavor), Version: versionFromLine(s.ServerVersion), VersionLine: s.ServerVersion,
		PoolSize: s.PoolSize, FlushMethod: "O_DIRECT", DumpAtShutdown: s.DumpAtShutdown, LoadAtStartup: s.LoadAtStartup,
		ServerArgs: append([]string{}, s.ServerArgs...), Notes: s.Notes()}
	if s.BufferedIO {
		st.FlushMethod = "fsync"
	}
	pid := s.livePid()
	if pid > 0 {
		st.Running, st.Pid = true, pid
		st.UptimeSecs = processUptime(pid)
		if s.proc == nil && s.pidFilePid() != pid {
			st.Notes = append(st.Notes, fmt.Sprintf("its pid file %s is missing or names another process: the server was found by its socket", s.PidFile))
		}
		if d := procDatadir(pid); s.moved && filepath.Clean(d) != filepath.Clean(s.Datadir) {
			st.Notes = append(st.Notes, fmt.Sprintf("its server (pid %d) was started before the directory moved here: its command line names %s, its files are these; 'sandbox down --dir %s' stops it, and 'sandbox up' then starts it as a sandbox of its own", pid, d, s.Dir))
		}
		return st
	}
	if raw, err := os.ReadFile(s.PidFile); err == nil {
		st.StalePid = fmt.Sprintf("%s names pid %s, which is not this sandbox's server", s.PidFile, strings.TrimSpace(string(raw)))
		if other := s.otherServer(); other != "" {
			st.StalePid = fmt.Sprintf("%s names %s", s.PidFile, other)
		}
	}
	if socketLive(s.Socket) {
		st.StaleSocket = fmt.Sprintf("%s is served by another process, not this sandbox's server", s.Socket)
	} else if _, err := os.Lstat(s.Socket); err == nil {
		st.StaleSocket = fmt.Sprintf("%s exists but no server of this sandbox is running", s.Socket)
	}
	return st
}

// processUptime is how long pid has run, from its start time in /proc/PID/stat (0 when
// unknown). The mtime of /proc/PID is no start time: it is when the kernel last built that
// inode, which a lookup after the inode cache dropped it sets to now.
func processUptime(pid int) float64 {
	stat, ok := procStat(pid)
	if !ok {
		return 0
	}
	started, err := stat.StartTime()
	if err != nil {
		return 0
	}
	return max(0, float64(time.Now().UnixNano())/1e9-started)
}

// procStat is /proc/PID/stat, when pid is a live process.
func procStat(pid int) (procfs.ProcStat, bool) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return procfs.ProcStat{}, false
	}
	stat, err := p.Stat()
	return stat, err == nil
}

// livePid is the pid of this sandbox's running server, or 0.
func (s *Sandbox) livePid() int {
	if s.proc != nil {
		select {
		case <-s.exited:
		default:
			// Between its exit and the reaper's Wait the child is a zombie: not running.
			if alive(s.proc.Pid) {
				return s.proc.Pid
			}
			return 0
		}
	}
	if pid := s.pidFilePid(); pid != 0 && alive(pid) && s.serves(pid) {
		return pid
	}
	// A pid file removed while its server runs (by hand, or as stale by an innowarm that
	// took a moved sandbox's server for another's): the process behind the socket, when
	// it is the sandbox's server. Status called it another process's socket, 'down' said
	// "not running" and 'up' refused: a server no innowarm command could stop.
	if pid := socketPeerPid(s.Socket); pid != 0 && alive(pid) && s.serves(pid) {
		return pid
	}
	return 0
}

// socketPeerPid is the pid of the process that listens on the Unix socket path (its
// SO_PEERCRED), or 0.
func socketPeerPid(path string) int {
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&fs.ModeSocket == 0 {
		return 0
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return 0
	}
	defer c.Close()
	raw, err := c.(*net.UnixConn).SyscallConn()
	if err != nil {
		return 0
	}
	pid := 0
	_ = raw.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			pid = int(cred.Pid)
		}
	})
	return pid
}

// pidFilePid is the pid the sandbox's pid file names, or 0.
func (s *Sandbox) pidFilePid() int {
	raw, err := os.ReadFile(s.PidFile)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// serves says whether pid is a server of this sandbox's data directory, started as 'up'
// starts it: the last --datadir and --pid-file on its command line are the sandbox's,
// after --no-defaults, and its working directory (both servers change into their data
// directory at start-up) is that directory. A pid file can name any process: a recycled
// pid, or one a user wrote there; a substring match of the command line took a server of
// D/data/data (or, with an empty datadir, any sandbox's) for D's, and a server of the
// user's own, run with the datadir a hand-written sandbox.json names, for the sandbox's.
//
// A sandbox moved (mv) while its server ran is served by that server: its command line
// still names the paths the sandbox had where it was made, and its working directory is
// the data directory the kernel followed here. It was taken for another server: 'down'
// said the server was not running and left it running, 'up' refused for a socket in use.
func (s *Sandbox) serves(pid int) bool {
	args := procArgs(pid)
	datadir, pidFile := lastOpt(args, "--datadir="), lastOpt(args, "--pid-file=")
	if datadir == "" || !slices.Contains(args, "--no-defaults") {
		return false
	}
	datadir = filepath.Clean(datadir)
	namesOwn := datadir == filepath.Clean(s.Datadir) && pidFile == s.PidFile
	startedBeforeMove := s.moved && s.movedDatadir != "" && datadir == filepath.Clean(s.movedDatadir) && pidFile == s.movedPidFile
	if !namesOwn && !startedBeforeMove {
		return false
	}
	cwd, err := os.Stat(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		return false
	}
	own, err := os.Stat(s.Datadir)
	return err == nil && os.SameFile(cwd, own)
}

// procArgs is pid's command line.
func procArgs(pid int) []string {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil
	}
	return strings.Split(string(cmdline), "\x00")
}

// lastOpt is the value of the last option with prefix in args (the one the server uses).
func lastOpt(args []string, prefix string) string {
	var v string
	for _, a := range args {
		if after, ok := strings.CutPrefix(a, prefix); ok {
			v = after
		}
	}
	return v
}

// procDatadir is the last --datadir= on pid's command line (the one the server uses), or "".
func procDatadir(pid int) string { return lastOpt(procArgs(pid), "--datadir=") }

// otherServer describes the running MariaDB or MySQL server, not this sandbox's, that the
// pid file names ("" when it names none): 'down' and 'restart' refuse to go on then,
// rather than call it stale and leave the user believing the sandbox's server stopped.
func (s *Sandbox) otherServer() string {
	pid := s.pidFilePid()
	if pid == 0 || !alive(pid) || s.serves(pid) {
		return ""
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	isServer := false
	for _, a := range strings.Split(string(cmdline), "\x00") {
		if b := filepath.Base(a); b == "mariadbd" || b == "mysqld" {
			isServer = true
		}
	}
	if !isServer {
		return ""
	}
	where := "an unknown data directory"
	if d := procDatadir(pid); d != "" {
		where = d
	} else if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); err == nil {
		where = cwd
	}
	if filepath.Clean(where) == filepath.Clean(s.Datadir) {
		return fmt.Sprintf("pid %d, a server of %s that 'sandbox up' did not start (not with --no-defaults and the sandbox's pid file)", pid, where)
	}
	return fmt.Sprintf("pid %d, the server of %s, not this sandbox's (%s)", pid, where, s.Datadir)
}

// clearStale removes a stale pid file and socket, and says so. A socket another process
// listens on is no stale one: removing it cut that server off from its clients.
func (s *Sandbox) clearStale(st Status) []string {
	var msgs []string
	if st.StalePid != "" {
		os.Remove(s.PidFile)
		msgs = append(msgs, "removed stale pid file: "+st.StalePid)
	}
	if socketLive(s.Socket) {
		return msgs
	}
	lock := ""
	if fi, err := os.Lstat(s.Socket + ".lock"); err == nil && fi.Mode().IsRegular() && os.Remove(s.Socket+".lock") == nil {
		lock = s.Socket + ".lock"
	}
	switch {
	case st.StaleSocket != "":
		// Only a socket: the path may lie outside the directory (a long one's is in /tmp).
		if fi, err := os.Lstat(s.Socket); err == nil && fi.Mode()&fs.ModeSocket != 0 {
			os.Remove(s.Socket)
		}
		if lock != "" {
			st.StaleSocket += " (and its lock file)"
		}
		msgs = append(msgs, "removed stale socket: "+st.StaleSocket)
	case lock != "":
		msgs = append(msgs, "removed stale socket lock file: "+lock)
	}
	return msgs
}

// socketLive says whether path is a Unix socket some process accepts connections on.
func socketLive(path string) bool {
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&fs.ModeSocket == 0 {
		return false
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	// A killed server's main thread can be a zombie while another thread still waits on a
	// slow read: its sockets stay open until the last thread exits, so each thread counts.
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return threadAlive(fmt.Sprintf("/proc/%d/stat", pid))
	}
	for _, task := range tasks {
		if threadAlive(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name())) {
			return true
		}
	}
	return false
}

// threadAlive reads a /proc stat file: field 3, after "pid (comm)", is the state; Z is a
// zombie, X dead.
func threadAlive(statFile string) bool {
	stat, err := os.ReadFile(statFile)
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 || i+2 >= len(stat) {
		return true
	}
	state := stat[i+2]
	return state != 'Z' && state != 'X'
}

// Stop shuts the server down cleanly (SIGTERM, which both servers treat as SHUTDOWN) and
// waits for it to exit. It reports how long that took; stopping a stopped server is a no-op.
func (s *Sandbox) Stop(ctx context.Context) (float64, error) {
	h := s.server()
	if h == nil {
		// A copy's pid file, copied from the original, names the original's server: that
		// is no server of the copy's to stop, nor one the copy must wait for.
		if other := s.otherServer(); other != "" && (s.copyOf == "" || procDatadir(s.pidFilePid()) == s.Datadir) {
			return 0, fmt.Errorf("refusing to stop %s: %s names it (remove that file if this sandbox's server is not running)", other, s.PidFile)
		}
		s.clearStale(s.Status(ctx))
		return 0, nil
	}
	t0 := time.Now()
	if err := h.proc.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return 0, fmt.Errorf("stop server pid %d: %w", h.pid, err)
	}
	// Wait for the process itself: the server removes its pid file and socket early in the
	// shutdown, long before InnoDB has flushed and closed its files.
	deadline := time.Now().Add(5 * time.Minute)
	for !s.gone(h) {
		if time.Now().After(deadline) {
			_ = h.proc.Signal(syscall.SIGKILL)
			return time.Since(t0).Seconds(), fmt.Errorf("server pid %d did not shut down within 5 minutes; killed it", h.pid)
		}
		select {
		case <-ctx.Done():
			return time.Since(t0).Seconds(), ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	s.proc = nil
	os.Remove(s.PidFile)
	return time.Since(t0).Seconds(), nil
}

// serverHandle is the sandbox's running server, held so that a signal reaches that
// process and no other: on Linux os.FindProcess holds a pidfd, and a pid the kernel hands
// to a new process after the server exits is then not signalled.
type serverHandle struct {
	pid   int
	proc  *os.Process
	start uint64 // its start time in clock ticks since boot, 0 when unknown
}

// server is the handle of the sandbox's running server, or nil.
func (s *Sandbox) server() *serverHandle {
	pid := s.livePid()
	if pid == 0 {
		return nil
	}
	if s.proc != nil && s.proc.Pid == pid {
		return &serverHandle{pid: pid, proc: s.proc, start: procStart(pid)}
	}
	proc, err := os.FindProcess(pid)
	if err != nil {
		return nil
	}
	// Checked again with the handle held: the pid may have changed hands in between.
	start := procStart(pid)
	if !s.serves(pid) {
		return nil
	}
	return &serverHandle{pid: pid, proc: proc, start: start}
}

// gone says whether the server h has exited: every thread of it (alive), and the pid
// not since taken by a process that started later.
func (s *Sandbox) gone(h *serverHandle) bool {
	if s.proc != nil && s.proc == h.proc {
		select {
		case <-s.exited:
			return true
		default:
			return false
		}
	}
	if h.proc.Signal(syscall.Signal(0)) != nil {
		return true // the pidfd says the process is gone
	}
	return !alive(h.pid) || (h.start != 0 && procStart(h.pid) != h.start)
}

// procStart is when pid started, in clock ticks since boot (0 when unknown): with the pid,
// it names one process.
func procStart(pid int) uint64 {
	stat, ok := procStat(pid)
	if !ok {
		return 0
	}
	return stat.Starttime
}

// Kill stops the server at once (SIGKILL), as a crash would.
func (s *Sandbox) Kill() {
	if h := s.server(); h != nil {
		_ = h.proc.Signal(syscall.SIGKILL)
		// Not livePid: the server's working directory and command line are gone once its
		// main thread exits, while other threads still hold its files.
		for !s.gone(h) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	s.proc = nil
}

// RestartReport gives the timings of a restart.
type RestartReport struct {
	StopSeconds   float64  `json:"stop_seconds"`
	DropCache     string   `json:"os_page_cache"`
	DropSeconds   float64  `json:"drop_cache_seconds,omitempty"`
	StartSeconds  float64  `json:"start_seconds"`
	TotalSeconds  float64  `json:"total_seconds"`
	Pid           int      `json:"pid"`
	Stale         []string `json:"stale,omitempty"`
	Notes         []string `json:"notes,omitempty"`
	PoolSize      int64    `json:"pool_size"`
	ColdGuarantee string   `json:"cold,omitempty"`
}

// Restart stops and starts the server; a non-zero poolSize changes the pool first.
func (s *Sandbox) Restart(ctx context.Context, poolSize int64) (RestartReport, error) {
	return s.restart(ctx, poolSize, false)
}

// ColdRestart is a clean shutdown, a drop of the OS page cache when permitted, and a start:
// the buffer pool is then empty and reads come from the disk.
func (s *Sandbox) ColdRestart(ctx context.Context) (RestartReport, error) {
	return s.restart(ctx, 0, true)
}

func (s *Sandbox) restart(ctx context.Context, poolSize int64, cold bool) (RestartReport, error) {
	var rep RestartReport
	t0 := time.Now()
	if poolSize != 0 {
		if poolSize < MinPoolSize {
			return rep, exitcode.BadValue("PoolSize", "%s is too small: the sandbox needs at least %s", units.FormatBytes(poolSize), units.FormatBytes(MinPoolSize))
		}
		s.PoolSize = poolSize
	}
	stop, err := s.Stop(ctx)
	if err != nil {
		return rep, err
	}
	rep.StopSeconds = stop
	if cold {
		d0 := time.Now()
		rep.DropCache = DropPageCache()
		rep.DropSeconds = time.Since(d0).Seconds()
		switch {
		case rep.DropCache == "dropped":
			rep.ColdGuarantee = "pool empty, OS page cache dropped"
		case !s.BufferedIO:
			rep.ColdGuarantee = "pool empty; data files use O_DIRECT, so the OS cache does not serve InnoDB reads"
		default:
			rep.ColdGuarantee = "pool empty, but the OS page cache may still hold data pages (buffered I/O and no permission to drop caches)"
		}
	}
	start, err := s.Start(ctx)
	if err != nil {
		return rep, err
	}
	rep.StartSeconds, rep.Pid, rep.Stale, rep.Notes = start.Seconds, start.Pid, start.Stale, start.Notes
	rep.TotalSeconds = time.Since(t0).Seconds()
	rep.PoolSize = s.PoolSize
	return rep, nil
}

// DropPageCache syncs and drops the OS page cache; it says "dropped" or why it could not.
func DropPageCache() string {
	syscall.Sync()
	err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0)
	if err == nil {
		return "dropped"
	}
	if errors.Is(err, fs.ErrPermission) {
		return "not dropped: writing /proc/sys/vm/drop_caches needs root"
	}
	return "not dropped: " + err.Error()
}

// PurgeReport says what Purge removed and what it left.
type PurgeReport struct {
	Removed    []string `json:"removed"`        // innowarm's own entries in the directory
	Kept       []string `json:"kept,omitempty"` // entries innowarm did not make
	DirRemoved bool     `json:"dir_removed"`
	// KeptReason says why the directory stays, when it does.
	KeptReason string `json:"kept_reason,omitempty"`
}

// Purge stops the server and removes what the sandbox made: its own entries in the
// directory (by name: a state file beside the user's files does not make them the
// sandbox's), then the directory itself when 'up' created it and nothing else is left.
func (s *Sandbox) Purge(ctx context.Context) (PurgeReport, error) {
	var rep PurgeReport
	if _, err := os.Stat(filepath.Join(s.Dir, stateFileName)); err != nil {
		return rep, exitcode.UsageError(fmt.Errorf("refusing to remove anything in %s: it holds no sandbox state", s.Dir))
	}
	if err := s.CheckPurge(); err != nil {
		return rep, err
	}
	if _, err := s.Stop(ctx); err != nil {
		return rep, err
	}
	if filepath.Dir(s.Socket) != s.Dir && filepath.Dir(s.Socket) == os.TempDir() {
		// Only a socket no process listens on: the path comes from the state file.
		if fi, err := os.Lstat(s.Socket); err == nil && fi.Mode()&fs.ModeSocket != 0 && !socketLive(s.Socket) {
			os.Remove(s.Socket)
			if fi, err := os.Lstat(s.Socket + ".lock"); err == nil && fi.Mode().IsRegular() {
				os.Remove(s.Socket + ".lock")
			}
		}
	}
	removed, err := s.removeOwned()
	rep.Removed = removed
	if err != nil {
		return rep, err
	}
	// The state goes last: a purge that fails half-way can be run again.
	if err := os.Remove(filepath.Join(s.Dir, stateFileName)); err != nil {
		return rep, fmt.Errorf("remove the sandbox state: %w", err)
	}
	rep.Removed = append(rep.Removed, stateFileName)
	entries, err := os.ReadDir(s.Dir)
	if err != nil {
		return rep, fmt.Errorf("purge %s: %w", s.Dir, err)
	}
	for _, e := range entries {
		rep.Kept = append(rep.Kept, e.Name())
	}
	fi, err := os.Lstat(s.Dir)
	switch {
	case err != nil:
		return rep, fmt.Errorf("purge %s: %w", s.Dir, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		rep.KeptReason = "it is a symbolic link (the sandbox's files in the directory it leads to are removed)"
	case len(rep.Kept) > 0:
		rep.KeptReason = "it holds files innowarm did not make: " + strings.Join(rep.Kept, ", ")
	case !s.DirCreated && (s.CopiedFrom != "" || s.copyOf != ""):
		rep.KeptReason = "it was made by copying a sandbox, not by 'sandbox up'"
	case !s.DirCreated:
		rep.KeptReason = "it existed before 'sandbox up'"
	default:
		if err := os.Remove(s.Dir); err != nil {
			return rep, fmt.Errorf("purge %s: %w", s.Dir, err)
		}
		rep.DirRemoved = true
	}
	return rep, nil
}

// ownedNames are the entries a sandbox makes in its directory. The data directory goes
// last: a purge that failed half-way leaves it, by which CheckPurge knows the rest.
var ownedNames = []string{tmpDirName, filesDirName, installLogName, serverOutName, errorLogName, pidFileName, socketName, socketLockName, stateFileName + ".tmp", dataDirName}

// socketLockName is the lock file MySQL keeps beside its socket, holding its pid: a crash
// leaves it, and a copy (cp -a) of a running sandbox carries the original's pid in it,
// which made the copy's server refuse to start ("Unable to setup unix socket lock file").
const socketLockName = socketName + ".lock"

// datadirMarks begin the names of the files a server makes first in a new data directory
// (InnoDB's and Aria's, before any schema), and those a copy in name order makes first: a
// directory holding none of them is no server's data directory.
var datadirMarks = []string{"ibdata", "ib_logfile", "aria_log", "#ib", "#innodb", "mysql.ibd", "undo_", "ibtmp"}

// hasMark says whether datadir is a directory (not a link to one) holding the mark of a
// data directory 'sandbox up' made.
func hasMark(datadir string) bool {
	if fi, err := os.Lstat(datadir); err != nil || !fi.IsDir() {
		return false
	}
	fi, err := os.Lstat(filepath.Join(datadir, markName))
	return err == nil && fi.Mode().IsRegular()
}

// writeMark marks the data directory 'up' made as innowarm's.
func (s *Sandbox) writeMark() error {
	text := fmt.Sprintf("made by 'innowarm sandbox up' in %s at %s; 'innowarm sandbox down --purge' removes it\n", s.Dir, time.Now().UTC().Format(time.RFC3339))
	if err := os.WriteFile(filepath.Join(s.Datadir, markName), []byte(text), 0o640); err != nil {
		return fmt.Errorf("mark the sandbox's data directory: %w", err)
	}
	return nil
}

// proven says whether innowarm can prove it made this sandbox: the state file records the
// identity (inode) of the directory 'up' made, and this is that directory, or the data
// directory carries the mark 'up' puts into it. A state file written by hand, or by an
// innowarm that recorded neither, beside a real server's data directory proves nothing,
// and nothing is then started on, or removed from, that directory.
func (s *Sandbox) proven() error {
	if s.DirInode != 0 && s.copyOf == "" {
		if ino, err := inodeOf(s.Dir); err == nil && ino == s.DirInode {
			return nil
		}
	}
	if hasMark(s.Datadir) {
		return nil
	}
	return fmt.Errorf("innowarm cannot prove it made %s: its %s records no identity of the directory 'sandbox up' made (written by hand, or by an older innowarm), and %s carries no mark of innowarm's install", s.Dir, stateFileName, s.Datadir)
}

// CheckPurge says whether a purge would remove only what the sandbox made: each of its
// entries present is of the kind the sandbox makes (a symbolic link is removed, not
// followed), and its data directory is empty or holds a server's files. A state file put
// into a directory that is no sandbox, its paths edited to match, otherwise made purge
// (and 'up', reinstalling) remove the user's own data, tmp or files directory.
func (s *Sandbox) CheckPurge() error {
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("refusing to purge %s: %s: remove it by hand if it is the sandbox's", s.Dir, fmt.Sprintf(format, args...))
	}
	if err := s.proven(); err != nil {
		return refuse("%v", err)
	}
	for _, n := range ownedNames {
		p := filepath.Join(s.Dir, n)
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink != 0 {
			continue
		}
		wantDir := n == dataDirName || n == tmpDirName || n == filesDirName
		if fi.IsDir() != wantDir {
			kind := "a directory"
			if !fi.IsDir() {
				kind = "not a directory"
			}
			return refuse("%s is %s, not what 'sandbox up' makes there", p, kind)
		}
		if err := sameDevice(p, fi); err != nil {
			return refuse("%v", err)
		}
		if n != dataDirName {
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return fmt.Errorf("purge %s: %w", s.Dir, err)
		}
		if len(entries) > 0 && !slices.ContainsFunc(entries, func(e fs.DirEntry) bool {
			return slices.ContainsFunc(datadirMarks, func(m string) bool { return strings.HasPrefix(e.Name(), m) })
		}) {
			return refuse("%s holds no server's files (no ibdata1, aria_log_control, #innodb_redo, ...)", p)
		}
	}
	return nil
}

// sameDevice says whether every directory under dir (whose Lstat is fi) lies on dir's
// parent's file system: a file system mounted there (a user's volume, or a bind mount of
// their directory) is not the sandbox's, and removing the sandbox's entries would empty it.
func sameDevice(dir string, fi fs.FileInfo) error {
	if !fi.IsDir() {
		return nil
	}
	parent, err := os.Stat(filepath.Dir(dir))
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Dir(dir), err)
	}
	dev := func(fi fs.FileInfo) uint64 {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			return st.Dev
		}
		return 0
	}
	want := dev(parent)
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if dev(info) != want {
			return fmt.Errorf("%s is a mount point of another file system, which 'sandbox up' never makes (unmount it first)", p)
		}
		return nil
	})
}

// removeOwned removes the sandbox's own entries from its directory, by name (a symbolic
// link among them is removed, not followed), and says which it removed.
func (s *Sandbox) removeOwned() ([]string, error) {
	if err := s.CheckPurge(); err != nil {
		return nil, err
	}
	var removed []string
	for _, n := range ownedNames {
		p := filepath.Join(s.Dir, n)
		if _, err := os.Lstat(p); err != nil || ((n == socketName || n == socketLockName) && socketLive(filepath.Join(s.Dir, socketName))) {
			continue // another server's socket at the sandbox's path is that server's
		}
		if err := os.RemoveAll(p); err != nil {
			return removed, fmt.Errorf("purge %s: %w", s.Dir, err)
		}
		removed = append(removed, n)
	}
	return removed, nil
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func fileSize(path string) int64 {
	if st, err := os.Stat(path); err == nil {
		return st.Size()
	}
	return 0
}

func lastErrorLine(path string) string { return lastErrorLineFrom(path, 0) }

// lastErrorLineFrom finds the most telling line the server logged after offset: the last
// line saying ERROR (or error), else the last line.
func lastErrorLineFrom(path string, offset int64) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "no log"
	}
	if offset > 0 && offset <= int64(len(b)) {
		b = b[offset:]
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for _, pick := range []func(string) bool{
		func(l string) bool { return strings.Contains(l, "[ERROR]") && !strings.Contains(l, "Aborting") },
		func(l string) bool {
			return strings.Contains(strings.ToLower(l), "error") && !strings.Contains(l, "Aborting")
		},
	} {
		for i := len(lines) - 1; i >= 0; i-- {
			if pick(lines[i]) {
				return strings.TrimSpace(lines[i])
			}
		}
	}
	if len(lines) > 0 && lines[len(lines)-1] != "" {
		return strings.TrimSpace(lines[len(lines)-1])
	}
	return "nothing logged"
}

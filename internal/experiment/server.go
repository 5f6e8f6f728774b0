// Package experiment reproduces the classic buffer-pool experiments in one call each:
// coldstart (the 2017 mysql-warmup benchmark: lookups after a cold restart, with and
// without a warm-up), hotrows (InnoDB caches pages, not rows) and concurrency (the mysqlslap
// mixed-load matrix). Each runs on a throwaway sandbox by default, or on an existing server
// that a --restart-cmd can restart, writes only into a schema of its own, and returns its
// measurements with a report.Page to present them.
package experiment

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sandbox"
)

// Target is the server an experiment runs on, and how it is restarted cold.
type Target struct {
	Opts connection.Options
	// Sandbox is set when the experiment runs on a sandbox; its restarts drop the pool and
	// the OS page cache.
	Sandbox *sandbox.Sandbox
	// RestartCmd restarts an existing server (run with sh -c); empty: no cold restarts.
	RestartCmd string
	// RestartTimeout bounds the wait for the server to answer after a restart.
	RestartTimeout time.Duration
	Log            *logx.Logger

	created bool // the sandbox was made for this run and is removed by Close
	started bool // the sandbox existed, stopped, and this run started it: Close stops it
	keep    bool
	// own is a sandbox of the user's settings before the run (pool, options, dump and load
	// at startup), which Close puts back; running says its server ran then, and is
	// restarted with them.
	own     *sandbox.State
	running bool
	tempDir string // the temporary directory made for the sandbox, removed with it
}

// SandboxConfig is the sandbox an experiment creates for itself.
type SandboxConfig struct {
	Dir      string // "" : a temporary directory
	PoolSize int64
	Keep     bool   // leave it (stopped) instead of removing it
	Flavor   string // a server distribution ("mysql-9.7"); "" : the machine's own server
}

// NewSandbox creates and starts a sandbox for an experiment.
func NewSandbox(ctx context.Context, cfg SandboxConfig, log *logx.Logger) (*Target, error) {
	if log == nil {
		log = logx.Default()
	}
	if cfg.PoolSize < sandbox.MinPoolSize {
		return nil, exitcode.BadValue("PoolSize", "%s is too small to start a server: the sandbox needs at least %s", fmtBytes(cfg.PoolSize), fmtBytes(sandbox.MinPoolSize))
	}
	dir, temp := cfg.Dir, false
	if dir == "" {
		d, err := os.MkdirTemp("", "innowarm-experiment-")
		if err != nil {
			return nil, fmt.Errorf("create a sandbox directory: %w", err)
		}
		dir, temp = d, true
	}
	log.Infof("starting a sandbox server in %s (buffer pool %s)", dir, fmtBytes(cfg.PoolSize))
	args := SmallPoolArgs(cfg.PoolSize)
	var own *sandbox.State
	running := false
	if existing, err := sandbox.Open(dir); err == nil {
		// A sandbox of the user's: its own options stay, the experiment's replace theirs
		// of the same name (Up would replace them all). Its settings are put back at the
		// end: a user test found a running sandbox left with the experiment's pool (16 MiB
		// for its 48) and options, written to its sandbox.json.
		args = mergeServerArgs(existing.ServerArgs, args)
		st := existing.State
		st.ServerArgs = slices.Clone(existing.ServerArgs)
		own, running = &st, existing.Status(ctx).Running
	}
	sb, rep, err := sandbox.Up(ctx, sandbox.Config{Dir: dir, PoolSize: cfg.PoolSize, ServerArgs: args, Flavor: cfg.Flavor})
	if err != nil {
		if temp {
			os.RemoveAll(dir)
		}
		if exitcode.Of(err) == exitcode.Runtime && ctx.Err() == nil {
			err = fmt.Errorf("the sandbox server did not start with a %s buffer pool: %w", fmtBytes(cfg.PoolSize), err)
		}
		return nil, err
	}
	if rep.Action == "already-running" && (sb.PoolSize != cfg.PoolSize || !slices.Equal(sb.ServerArgs, args) || sb.DumpAtShutdown || sb.LoadAtStartup) {
		// Restarted with the experiment's pool and options: a running sandbox kept its own
		// innodb_lru_scan_depth (1,536 pages free), which left a 16 MiB pool no room to
		// warm, and the experiment failed half way.
		log.Warnf("the sandbox in %s was already running with a %s pool and options %q; restarting it with %s and %q (its own are put back at the end)", dir, fmtBytes(sb.PoolSize), sb.ServerArgs, fmtBytes(cfg.PoolSize), args)
		// Its dump at shutdown and load at startup too: restarts that load the pool are
		// not cold (the scenarios that want the server's own load turn it on themselves).
		sb.ServerArgs, sb.DumpAtShutdown, sb.LoadAtStartup = args, false, false
		if _, err := sb.Restart(ctx, cfg.PoolSize); err != nil {
			return nil, err
		}
	}
	log.Infof("sandbox: %s, pid %d", sb.Description(), sb.Status(ctx).Pid)
	t := &Target{Opts: sb.ConnOptions(), Sandbox: sb, Log: log, created: rep.Action == "created", started: rep.Action == "started", keep: cfg.Keep, running: running}
	if rep.Action != "created" {
		t.own = own
	}
	if temp {
		t.tempDir = dir
	}
	return t, nil
}

// SmallPoolArgs are the server options a sandbox with a small pool needs: the page cleaner
// keeps innodb_lru_scan_depth pages (default 1,536, 24 MiB) free, which would leave little
// of a 64 MiB pool for data and would empty a 16 MiB one as fast as it fills. A pool below
// 256 MiB gets a depth of a sixteenth of its pages (at least 100, the minimum).
func SmallPoolArgs(poolSize int64) []string {
	if poolSize <= 0 || poolSize >= 256<<20 {
		return nil
	}
	return []string{fmt.Sprintf("--innodb-lru-scan-depth=%d", max(100, poolSize/16384/16))}
}

// mergeServerArgs is have with want's options in place of those of the same name
// (--innodb-lru-scan-depth=100 replaces --innodb_lru_scan_depth=1536).
func mergeServerArgs(have, want []string) []string {
	name := func(arg string) string {
		n, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		return strings.ReplaceAll(strings.ToLower(n), "_", "-")
	}
	wanted := map[string]bool{}
	for _, a := range want {
		wanted[name(a)] = true
	}
	var out []string
	for _, a := range have {
		if !wanted[name(a)] {
			out = append(out, a)
		}
	}
	return append(out, want...)
}

// OnSandbox runs experiments on a sandbox someone else manages (tests); Close leaves it.
func OnSandbox(sb *sandbox.Sandbox, log *logx.Logger) *Target {
	if log == nil {
		log = logx.Default()
	}
	return &Target{Opts: sb.ConnOptions(), Sandbox: sb, Log: log}
}

// OnServer runs experiments on an existing server; restartCmd ("" for none) restarts it.
func OnServer(opts connection.Options, restartCmd string, log *logx.Logger) *Target {
	if log == nil {
		log = logx.Default()
	}
	return &Target{Opts: opts, RestartCmd: restartCmd, Log: log}
}

// Close stops and removes a sandbox this run created (or only stops it when asked to keep
// it); a sandbox that existed before is left as it was found. It runs after an interrupt
// too, so it does not use the run's context.
func (t *Target) Close() {
	if t.Sandbox == nil || !t.created && !t.started && t.own == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if t.own != nil {
		t.putBack(ctx)
		return
	}
	if t.keep || t.started {
		if _, err := t.Sandbox.Stop(ctx); err != nil {
			t.Log.Warnf("could not stop the sandbox in %s: %v", t.Sandbox.Dir, err)
			return
		}
		t.Log.Infof("sandbox kept (stopped) in %s: 'innowarm sandbox up --dir %s' starts it again", t.Sandbox.Dir, t.Sandbox.Dir)
		return
	}
	rep, err := t.Sandbox.Purge(ctx)
	if err != nil {
		t.Log.Warnf("could not remove the sandbox in %s: %v", t.Sandbox.Dir, err)
		return
	}
	if t.tempDir != "" && !rep.DirRemoved {
		// The sandbox did not create the temporary directory, so it leaves it; it is empty.
		if err := os.Remove(t.tempDir); err != nil {
			t.Log.Warnf("could not remove %s: %v", t.tempDir, err)
		}
	}
}

// putBack gives a sandbox of the user's its own settings again, and its server the state
// it was in: running (restarted with them), or stopped.
func (t *Target) putBack(ctx context.Context) {
	sb, own := t.Sandbox, t.own
	sb.PoolSize, sb.ServerArgs = own.PoolSize, own.ServerArgs
	sb.BufferedIO, sb.DumpAtShutdown, sb.LoadAtStartup = own.BufferedIO, own.DumpAtShutdown, own.LoadAtStartup
	if t.running {
		if _, err := sb.Restart(ctx, own.PoolSize); err != nil {
			t.Log.Warnf("could not restart the sandbox in %s with its own settings (a %s pool, options %q): %v", sb.Dir, fmtBytes(own.PoolSize), own.ServerArgs, err)
			return
		}
		t.Log.Infof("sandbox in %s restarted with its own settings again (a %s pool, options %q)", sb.Dir, fmtBytes(own.PoolSize), own.ServerArgs)
		return
	}
	if _, err := sb.Stop(ctx); err != nil {
		t.Log.Warnf("could not stop the sandbox in %s: %v", sb.Dir, err)
	}
	if err := sb.Save(); err != nil {
		t.Log.Warnf("could not put back the sandbox's own settings in %s: %v", sb.Dir, err)
		return
	}
	t.Log.Infof("sandbox kept (stopped, its own settings again) in %s: 'innowarm sandbox up --dir %s' starts it again", sb.Dir, sb.Dir)
}

// Kind says what the target is, for reports.
func (t *Target) Kind() string {
	if t.Sandbox != nil {
		return "sandbox"
	}
	return "existing server"
}

// CanRestart reports whether cold restarts are possible.
func (t *Target) CanRestart() bool { return t.Sandbox != nil || t.RestartCmd != "" }

// Connect opens a connection to the target.
func (t *Target) Connect(ctx context.Context) (*connection.Conn, error) {
	return connection.Open(ctx, t.Opts)
}

// Restart is what a cold restart did.
type Restart struct {
	Seconds   float64 `json:"seconds"`
	Cold      string  `json:"cold"`             // why the pool and the OS cache are cold
	PoolPages int64   `json:"pool_pages_after"` // data pages in the pool once it answered
	// TablePages are the experiment table's pages in the pool once it answered: 0 when the
	// restart was cold.
	TablePages int64  `json:"table_pages_after"`
	Note       string `json:"note,omitempty"` // anything odd
	Output     string `json:"restart_cmd_output,omitempty"`
}

// ErrNoRestart is returned by ColdRestart on a target without a restart method.
var ErrNoRestart = errors.New("no way to restart the server")

// ColdRestart restarts the server with an empty buffer pool and, where possible, an empty OS
// page cache, and waits until it answers.
func (t *Target) ColdRestart(ctx context.Context) (Restart, error) {
	var r Restart
	t0 := time.Now()
	switch {
	case t.Sandbox != nil:
		rep, err := t.Sandbox.ColdRestart(ctx)
		if err != nil {
			return r, fmt.Errorf("cold restart of the sandbox: %w", err)
		}
		r.Cold = rep.ColdGuarantee
	case t.RestartCmd != "":
		if err := t.runRestartCmd(ctx, &r); err != nil {
			return r, err
		}
	default:
		return r, ErrNoRestart
	}
	r.Seconds = time.Since(t0).Seconds()
	return r, nil
}

// noDumpAtShutdown turns innodb_buffer_pool_dump_at_shutdown off before a restart of a
// server that loads its pool at startup (the variable resets to the server's setting with
// every restart): else each restart wrote a dump at shutdown and loaded it at startup, and
// recovery's "cold" runs were warm (a user test: pool 90% at 0.0 s, the first 5 s at 96%
// of hot), reported as cold. A dump file from before the experiment holds none of its
// table's pages; where innowarm runs on the database host, it is also set aside.
func (t *Target) noDumpAtShutdown(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := connection.Open(cctx, t.Opts)
	if err != nil {
		return // the restart command's own checks say what is wrong
	}
	defer conn.Close()
	var loads bool
	if err := conn.DB.QueryRowContext(cctx, "SELECT @@innodb_buffer_pool_load_at_startup").Scan(&loads); err != nil || !loads {
		return
	}
	if _, err := conn.DB.ExecContext(cctx, "SET GLOBAL innodb_buffer_pool_dump_at_shutdown = OFF"); err != nil {
		t.Log.Warnf("could not turn innodb_buffer_pool_dump_at_shutdown off before the restart, which may then not be cold: %v", err)
	}
}

// runRestartCmd runs --restart-cmd, drops the OS page cache when it may, waits until the
// server answers again and checks that it did restart.
func (t *Target) runRestartCmd(ctx context.Context, r *Restart) error {
	t.noDumpAtShutdown(ctx)
	t0 := time.Now()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", t.RestartCmd)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t.Log.Infof("restarting the server: %s", t.RestartCmd)
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("--restart-cmd %q failed (%w): %s", t.RestartCmd, err, lastLine(out.String()))
	}
	r.Output = strings.TrimSpace(out.String())
	drop := sandbox.DropPageCache()
	timeout := t.RestartTimeout
	if timeout == 0 {
		timeout = 5 * time.Minute
	}
	deadline := time.Now().Add(timeout)
	var lastErr error
	for {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the server did not answer within %s after --restart-cmd: %w", timeout, lastErr)
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		conn, err := connection.Open(cctx, t.Opts)
		cancel()
		if err != nil {
			lastErr = err
			time.Sleep(250 * time.Millisecond)
			continue
		}
		var name string
		var uptime float64
		var flush string
		err = conn.DB.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Uptime'").Scan(&name, &uptime)
		if err == nil {
			err = conn.DB.QueryRowContext(ctx, "SELECT @@innodb_flush_method").Scan(&flush)
		}
		conn.Close()
		if err != nil {
			lastErr = err
			time.Sleep(250 * time.Millisecond)
			continue
		}
		if uptime > time.Since(t0).Seconds()+2 {
			return fmt.Errorf("--restart-cmd %q ran, but the server was not restarted (up %.0f s): give a command that restarts it", t.RestartCmd, uptime)
		}
		direct := strings.Contains(strings.ToUpper(flush), "O_DIRECT")
		switch {
		case drop == "dropped":
			r.Cold = "restarted; OS page cache dropped on this machine"
		case direct:
			r.Cold = "restarted; the server uses " + flush + ", so the OS cache does not serve InnoDB reads"
		default:
			r.Cold = "restarted; OS page cache " + drop + " and the server uses buffered I/O (" + flush + "): reads may come from the OS cache"
			r.Note = "not fully cold: the OS page cache may hold data pages"
		}
		return nil
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return l
	}
	return "no output"
}

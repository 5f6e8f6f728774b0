package sandbox

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/exitcode"
)

// newSandbox creates a sandbox for one test and removes it even when the test fails.
func newSandbox(t *testing.T, cfg Config) (*Sandbox, *UpReport) {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = filepath.Join(t.TempDir(), "sb")
	}
	if cfg.PoolSize == 0 {
		cfg.PoolSize = 32 << 20
	}
	cfg.DieWithParent = true
	cfg.Flavor = os.Getenv(FlavorEnv)
	sb, rep, err := Up(context.Background(), cfg)
	if err != nil {
		t.Fatalf("sandbox up: %v", err)
	}
	t.Cleanup(func() { sb.Kill(); os.RemoveAll(sb.Dir) })
	return sb, rep
}

func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	sb, rep := newSandbox(t, Config{})
	if rep.Action != "created" || rep.Pid == 0 || rep.InstallSeconds <= 0 || rep.StartSeconds <= 0 {
		t.Fatalf("up report: %+v", rep)
	}
	t.Logf("install %.2fs, start %.2fs", rep.InstallSeconds, rep.StartSeconds)
	st := sb.Status(ctx)
	if !st.Running || st.Pid != rep.Pid || st.FlushMethod != "O_DIRECT" || !strings.HasPrefix(st.Socket, sb.Dir) {
		t.Fatalf("status: %+v", st)
	}

	conn, err := sb.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var flush, dumpAtShutdown, loadAtStartup, bind string
	var pool int64
	if err := conn.DB.QueryRow("SELECT @@innodb_flush_method, @@innodb_buffer_pool_dump_at_shutdown, @@innodb_buffer_pool_load_at_startup, @@innodb_buffer_pool_size, @@bind_address").Scan(&flush, &dumpAtShutdown, &loadAtStartup, &pool, &bind); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if flush != "O_DIRECT" || dumpAtShutdown != "0" || loadAtStartup != "0" || pool != 32<<20 || bind != "127.0.0.1" {
		t.Errorf("server settings: flush=%s dump=%s load=%s pool=%d bind=%s", flush, dumpAtShutdown, loadAtStartup, pool, bind)
	}

	// up again is idempotent.
	again, rep2, err := Up(ctx, Config{Dir: sb.Dir, PoolSize: 32 << 20})
	if err != nil || rep2.Action != "already-running" || again.Port != sb.Port {
		t.Fatalf("second up: %+v %v", rep2, err)
	}

	// A second process (no *os.Process handle) stops it through the pid file.
	other, err := Open(sb.Dir)
	if err != nil {
		t.Fatal(err)
	}
	secs, err := other.Stop(ctx)
	if err != nil || secs <= 0 {
		t.Fatalf("stop: %v %v", secs, err)
	}
	t.Logf("stop %.2fs", secs)
	if st := sb.Status(ctx); st.Running || st.StalePid != "" || st.StaleSocket != "" {
		t.Fatalf("after stop: %+v", st)
	}
	if _, err := os.Stat(sb.Socket); err == nil {
		t.Error("socket left after a clean stop")
	}
}

func TestStaleFilesAreReportedAndCleared(t *testing.T) {
	ctx := context.Background()
	sb, _ := newSandbox(t, Config{})
	sb.Kill() // as a crash: the pid file and socket stay behind
	// Make the pid file name a live process that is not our server (this test process).
	os.WriteFile(sb.PidFile, []byte(strconv.Itoa(os.Getpid())), 0o644)
	st := sb.Status(ctx)
	if st.Running || st.StalePid == "" || st.StaleSocket == "" {
		t.Fatalf("stale files not detected: %+v", st)
	}
	rep, err := sb.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Stale) != 2 {
		t.Errorf("start should report both stale files: %+v", rep.Stale)
	}
	if st := sb.Status(ctx); !st.Running {
		t.Errorf("not running after start: %+v", st)
	}
}

func TestColdRestartEmptiesThePool(t *testing.T) {
	ctx := context.Background()
	sb, _ := newSandbox(t, Config{})
	conn, err := sb.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE DATABASE cold",
		"CREATE TABLE cold.t (id INT PRIMARY KEY, pad CHAR(200)) SELECT seq AS id, REPEAT('x', 200) AS pad FROM " + conn.Server.Series("cold", 1, 20000) + " ORDER BY seq",
		"SELECT COUNT(*) FROM cold.t",
	} {
		if _, err := conn.DB.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// The table's own pages are counted: the server's start-up pages vary (MySQL 9.7 reads
	// 700-970 dictionary and system pages), more than the table holds.
	cat, err := catalog.Load(ctx, conn, catalog.Filter{Schemas: []string{"cold"}})
	if err != nil || len(cat.Tables) != 1 || !cat.Tables[0].Parts[0].SpaceKnown {
		t.Fatalf("catalog: %v %+v", err, cat)
	}
	space := cat.Tables[0].Parts[0].Space
	tablePages := func() int64 {
		t.Helper()
		var n int64
		if err := conn.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.INNODB_BUFFER_PAGE_LRU WHERE SPACE = ?", space).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	warm := tablePages()
	conn.Close()
	rep, err := sb.ColdRestart(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cold restart: %+v", rep)
	if rep.DropCache == "" || rep.ColdGuarantee == "" || rep.StopSeconds <= 0 || rep.StartSeconds <= 0 {
		t.Errorf("report incomplete: %+v", rep)
	}
	conn, err = sb.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The table is ~4 MB (250+ pages); after a cold restart none of it is resident.
	if cold := tablePages(); warm < 250 || cold != 0 {
		t.Errorf("pool not emptied: %d pages of the table before, %d after", warm, cold)
	}
	var n int
	if err := conn.DB.QueryRow("SELECT COUNT(*) FROM cold.t").Scan(&n); err != nil || n != 20000 {
		t.Errorf("data lost across restart: %d %v", n, err)
	}
}

func TestRestartChangesPoolSize(t *testing.T) {
	ctx := context.Background()
	sb, _ := newSandbox(t, Config{})
	rep, err := sb.Restart(ctx, 48<<20)
	if err != nil || rep.PoolSize != 48<<20 {
		t.Fatalf("restart: %+v %v", rep, err)
	}
	conn, err := sb.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if conn.Server.PoolSize != 48<<20 {
		t.Errorf("pool = %d after restart", conn.Server.PoolSize)
	}
	reopened, _ := Open(sb.Dir)
	if reopened.PoolSize != 48<<20 {
		t.Error("new pool size not persisted")
	}
}

func TestPurgeOnlyRemovesSandboxes(t *testing.T) {
	ctx := context.Background()
	sb, _ := newSandbox(t, Config{})
	if !sb.DirCreated {
		t.Error("up created the directory but did not record it")
	}
	rep, err := sb.Purge(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sb.Dir); err == nil || !rep.DirRemoved || len(rep.Kept) != 0 {
		t.Errorf("purge left the directory it created: %+v", rep)
	}
	// A directory without sandbox state is never touched.
	plain := t.TempDir()
	os.WriteFile(filepath.Join(plain, "precious"), []byte("data"), 0o644)
	os.Mkdir(filepath.Join(plain, "data"), 0o755)
	fake := &Sandbox{State: State{Dir: plain, PidFile: filepath.Join(plain, "x.pid"), Socket: filepath.Join(plain, "x.sock")}}
	if _, err := fake.Purge(ctx); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("purge of a directory that holds no sandbox: %v", err)
	}
	for _, n := range []string{"precious", "data"} {
		if _, err := os.Stat(filepath.Join(plain, n)); err != nil {
			t.Errorf("purge deleted foreign %s", n)
		}
	}
}

// The data loss: up in a directory holding the user's files, then purge, removed
// them all. Up refuses such a directory and leaves it as it was.
func TestUpRefusesADirectoryWithFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	os.Mkdir(dir, 0o755)
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("x\n"), 0o644)
	_, _, err := Up(context.Background(), Config{Dir: dir, Flavor: os.Getenv(FlavorEnv)})
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "notes.txt") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("up in a directory with a file: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "notes.txt" {
		t.Errorf("up changed a directory it refused: %v", entries)
	}
	// A file, and a symbolic link to nowhere, are no sandbox directories either.
	if _, _, err := Up(context.Background(), Config{Dir: notes}); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("up on a file: %v", err)
	}
	dangling := filepath.Join(t.TempDir(), "link")
	os.Symlink(filepath.Join(t.TempDir(), "gone"), dangling)
	if _, _, err := Up(context.Background(), Config{Dir: dangling}); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("up on a dangling link: %v", err)
	}
}

// Files the user puts into the sandbox's directory after up are theirs: purge removes the
// sandbox's own entries and keeps the rest (a link among the sandbox's entries is removed,
// not followed), and a copy of the state file elsewhere makes no other directory a sandbox.
func TestPurgeKeepsWhatTheUserAdded(t *testing.T) {
	ctx := context.Background()
	sb, _ := newSandbox(t, Config{})
	outside := t.TempDir()
	precious := filepath.Join(outside, "export.csv")
	os.WriteFile(precious, []byte("1,2\n"), 0o644)

	// sandbox.json copied beside someone's files names the original's directory: refused.
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "mine.txt"), []byte("x"), 0o644)
	state, err := os.ReadFile(filepath.Join(sb.Dir, stateFileName))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(other, stateFileName), state, 0o644)
	if _, err := Open(other); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), sb.Dir) {
		t.Errorf("open of a copied state file: %v", err)
	}
	if _, _, err := Up(ctx, Config{Dir: other}); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("up on a copied state file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(other, "mine.txt")); err != nil || !sb.Status(ctx).Running {
		t.Fatalf("a copied state file changed something: %v, running %v", err, sb.Status(ctx).Running)
	}

	os.WriteFile(filepath.Join(sb.Dir, "notes.txt"), []byte("x\n"), 0o644)
	os.Mkdir(filepath.Join(sb.Dir, "scripts"), 0o755)
	os.RemoveAll(filepath.Join(sb.Dir, filesDirName))
	if err := os.Symlink(outside, filepath.Join(sb.Dir, filesDirName)); err != nil {
		t.Fatal(err)
	}
	rep, err := sb.Purge(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("purge: %+v", rep)
	if rep.DirRemoved || strings.Join(rep.Kept, ",") != "notes.txt,scripts" || !strings.Contains(rep.KeptReason, "notes.txt") {
		t.Errorf("purge report: %+v", rep)
	}
	entries, _ := os.ReadDir(sb.Dir)
	if len(entries) != 2 {
		t.Errorf("left in the directory: %v", entries)
	}
	if _, err := os.Stat(precious); err != nil {
		t.Errorf("purge followed a link out of the sandbox: %v", err)
	}
	if sb.Status(ctx).Running {
		t.Error("purge left the server running")
	}
}

// An empty directory the user made (here reached through a symbolic link) stays, empty,
// after purge; an install that did not complete is done again by the next up.
func TestSandboxInAnExistingEmptyDirectory(t *testing.T) {
	ctx := context.Background()
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	sb, rep := newSandbox(t, Config{Dir: link})
	if rep.Action != "created" || sb.DirCreated || sb.Dir != link {
		t.Fatalf("up: %+v, dir %s created %v", rep, sb.Dir, sb.DirCreated)
	}
	if _, err := os.Stat(filepath.Join(real, stateFileName)); err != nil {
		t.Fatal("the sandbox is not in the link's directory")
	}
	if _, err := sb.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	// As if the install had been interrupted: start refuses, up installs again.
	sb.Installing = true
	if err := sb.save(); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Start(ctx); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "sandbox up") {
		t.Errorf("start of an incomplete install: %v", err)
	}
	again, rep, err := Up(ctx, Config{Dir: link, PoolSize: 32 << 20, Flavor: os.Getenv(FlavorEnv), DieWithParent: true})
	if err != nil || rep.Action != "created" || again.Installing || again.DirCreated || len(rep.Notes) == 0 {
		t.Fatalf("up after an incomplete install: %+v %v", rep, err)
	}
	purged, err := again.Purge(ctx)
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(real)
	if purged.DirRemoved || len(entries) != 0 || purged.KeptReason == "" {
		t.Errorf("purge: %+v, left %v", purged, entries)
	}
	if _, err := os.Lstat(link); err != nil {
		t.Errorf("purge removed the user's link: %v", err)
	}
}

// The default directory is created by up, so purge removes it (not its parents).
func TestDefaultDirIsCreatedAndRemoved(t *testing.T) {
	ctx := context.Background()
	t.Setenv(ServersDirEnv, ServersDir()) // the installed flavors stay where they are
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	sb, _ := newSandbox(t, Config{Dir: DefaultDir()})
	if sb.Dir != filepath.Join(cache, "innowarm", "sandbox") || !sb.DirCreated {
		t.Fatalf("default dir %s, created %v", sb.Dir, sb.DirCreated)
	}
	rep, err := sb.Purge(ctx)
	if err != nil || !rep.DirRemoved {
		t.Fatalf("purge: %+v %v", rep, err)
	}
	if _, err := os.Stat(filepath.Join(cache, "innowarm")); err != nil {
		t.Errorf("purge removed the sandbox's parent: %v", err)
	}
}

// Status reports the server's own uptime (from its start time), not the age of the kernel's
// /proc entry, which a dropped inode cache renews.
func TestStatusUptimeIsTheServers(t *testing.T) {
	before := time.Now()
	sb, _ := newSandbox(t, Config{})
	up := time.Now()
	time.Sleep(3 * time.Second)
	if os.Geteuid() == 0 {
		syscall.Sync()
		// Drop the dentry and inode caches: /proc/PID is built anew on the next look.
		if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("2\n"), 0); err != nil {
			t.Logf("could not drop the inode cache: %v", err)
		}
	}
	st := sb.Status(context.Background())
	waited, bound := time.Since(up).Seconds(), time.Since(before).Seconds()
	// The server started before up returned and after the test began; its start time is
	// counted from the boot time in whole seconds, so it can read up to 1 s early.
	if !st.Running || st.UptimeSecs < waited || st.UptimeSecs > bound+1 {
		t.Errorf("uptime %.2f s, want between %.2f and %.2f", st.UptimeSecs, waited, bound+1)
	}
}

func TestStartFailureShowsServerError(t *testing.T) {
	ctx := context.Background()
	sb, _ := newSandbox(t, Config{})
	if _, err := sb.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	sb.ServerArgs = []string{"--innodb-no-such-option=1"}
	sb.startTimeout = 30 * time.Second
	_, err := sb.Start(ctx)
	if err == nil || !strings.Contains(err.Error(), "exited during start-up") || !strings.Contains(err.Error(), "innodb-no-such-option") {
		t.Errorf("start with a bad option: %v", err)
	}
}

func TestBadConfig(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, _, err := Up(ctx, Config{Dir: filepath.Join(dir, "a"), PoolSize: 1 << 20}); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "too small") {
		t.Errorf("tiny pool: %v", err)
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	if _, _, err := Up(ctx, Config{Dir: filepath.Join(file, "sb")}); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "not writable") {
		t.Errorf("unwritable dir: %v", err)
	}
	if _, err := Open(filepath.Join(dir, "none")); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "sandbox up") {
		t.Errorf("open missing: %v", err)
	}
}

func TestServerNotFoundNamesThePackage(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	saved := SbinDirs
	SbinDirs = []string{t.TempDir()}
	defer func() { SbinDirs = saved }()
	_, err := FindServer(context.Background(), "")
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "apt-get install -y mariadb-server") {
		t.Errorf("no server: %v", err)
	}
	_, _, err = Up(context.Background(), Config{Dir: filepath.Join(t.TempDir(), "sb")})
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "mariadb-server") {
		t.Errorf("up without server: %v", err)
	}
}

func TestFindServerReadsVersion(t *testing.T) {
	b, err := FindServer(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if b.Kind == "" || b.Version.Major == 0 || !strings.Contains(b.Line, "Ver") {
		t.Errorf("binary: %+v", b)
	}
}

func TestLongDirectoryGetsShortSocket(t *testing.T) {
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 90))
	sock, note := socketPath(long)
	if len(sock) >= 100 || note == "" {
		t.Errorf("socket %q (%d bytes), note %q", sock, len(sock), note)
	}
	// Open takes that socket for the sandbox's own, and not another long directory's.
	st := State{Dir: long, Datadir: filepath.Join(long, dataDirName), PidFile: filepath.Join(long, pidFileName), ErrorLog: filepath.Join(long, errorLogName), Socket: sock}
	if err := st.checkOwnPaths(long); err != nil {
		t.Errorf("the short socket of a long directory: %v", err)
	}
	st.Socket, _ = socketPath(long + "x")
	if err := st.checkOwnPaths(long); err == nil || !strings.Contains(err.Error(), "socket") {
		t.Errorf("another directory's short socket: %v", err)
	}
}

// A template cache: the first sandbox bootstraps and leaves its fresh data directory as the
// template, before its server ever ran; the next copies it and runs as any other; other
// creation options (a page size) get a template of their own.
func TestTemplateCache(t *testing.T) {
	ctx := context.Background()
	cache := t.TempDir()
	first, _ := newSandbox(t, Config{TemplateCache: cache})
	conn, err := first.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.DB.ExecContext(ctx, "CREATE DATABASE made_by_the_first"); err != nil {
		t.Fatal(err)
	}
	firstID := conn.Server.Identity()
	conn.Close()
	templates, _ := filepath.Glob(filepath.Join(cache, "*", "complete"))
	if len(templates) != 1 {
		t.Fatalf("after one bootstrap: templates %v", templates)
	}

	second, _ := newSandbox(t, Config{TemplateCache: cache})
	conn, err = second.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Another server, which says so (MySQL's server_uuid is made at a data directory's
	// first start, and the template's was copied with it).
	if id := conn.Server.Identity(); id == firstID {
		t.Errorf("the copy claims the first server's identity %s", id)
	}
	var n int
	if err := conn.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'made_by_the_first'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("the copy holds what the first server did after its bootstrap: %d schemas, %v", n, err)
	}
	for _, q := range []string{"CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY) ENGINE=InnoDB", "INSERT INTO d.t VALUES (1), (2)"} {
		if _, err := conn.DB.ExecContext(ctx, q); err != nil {
			t.Fatalf("on the copied data directory: %s: %v", q, err)
		}
	}
	if log, err := os.ReadFile(filepath.Join(second.Dir, installLogName)); err == nil {
		t.Errorf("the second sandbox bootstrapped (install.log: %.200s)", log)
	}

	third, _ := newSandbox(t, Config{TemplateCache: cache, ServerArgs: []string{"--innodb-page-size=8k"}})
	conn3, err := third.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn3.Close()
	if conn3.Server.PageSize != 8192 {
		t.Errorf("8k sandbox from the cache runs %d-byte pages", conn3.Server.PageSize)
	}
	if templates, _ = filepath.Glob(filepath.Join(cache, "*", "complete")); len(templates) != 2 {
		t.Errorf("after a bootstrap with another page size: templates %v", templates)
	}
}

// The last error lines each flavor writes when its port was taken between innowarm's check
// and the server's bind (MySQL 9.7 failed so in CI: its last line names no errno), and
// lines of other start-up failures.
func TestPortTakenLine(t *testing.T) {
	for line, want := range map[string]bool{
		"2026-12-01 18:47:40 0 [ERROR] Can't start server: Bind on TCP/IP port. Got error: 98: Address already in use":                  true,
		"2026-12-01T18:47:40.711583Z 0 [ERROR] [MY-010257] [Server] Do you already have another mysqld server running on port: 44803 ?": true,
		"2026-12-03 19:15:01 0 [ERROR] Do you already have another server running on port: 40041 ?":                                     true,
		"2026-12-01T18:47:40.711000Z 0 [ERROR] [MY-010262] [Server] Can't start server: Bind on TCP/IP port: Address already in use":    true,
		"2026-12-01 18:47:40 0 [ERROR] InnoDB: Unable to lock ./ibdata1 error: 11":                                                      false,
		"2026-12-01T18:47:40Z 0 [ERROR] [MY-010119] [Server] Aborting":                                                                  false,
	} {
		if got := portTakenLine(line); got != want {
			t.Errorf("portTakenLine(%q) = %v, want %v", line, got, want)
		}
	}
}

// A user test: sandbox.json copied into another directory, its dir edited to match and its
// pid file, socket and data directory left naming a running sandbox's, made 'down' there
// stop that other sandbox's server. Every command refuses such a state; with the paths
// edited too, the directory's identity refuses it; a pid file of the sandbox's own that
// names another server is refused by Stop and reported by Status; a data directory named
// by a prefix of the server's --datadir is not that server's.
func TestForgedStateStopsNoOtherServer(t *testing.T) {
	ctx := context.Background()
	victim, _ := newSandbox(t, Config{})
	pid := victim.Status(ctx).Pid
	raw, err := os.ReadFile(filepath.Join(victim.Dir, stateFileName))
	if err != nil {
		t.Fatal(err)
	}
	// forge writes the victim's state into a new directory, dir edited to match, then edit.
	forge := func(edit func(st *State)) string {
		t.Helper()
		var st State
		if err := json.Unmarshal(raw, &st); err != nil {
			t.Fatal(err)
		}
		st.Dir = t.TempDir()
		edit(&st)
		b, _ := json.Marshal(st)
		if err := os.WriteFile(filepath.Join(st.Dir, stateFileName), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return st.Dir
	}
	refused := func(what, dir, want string) {
		t.Helper()
		_, err := Open(dir)
		if err == nil || exitcode.Of(err) != exitcode.Runtime || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), want) {
			t.Errorf("open of %s: %v", what, err)
		}
		if sb, _, err := Up(ctx, Config{Dir: dir, DieWithParent: true}); err == nil {
			t.Errorf("up on %s: no error", what)
			if sb.proc != nil {
				sb.Kill()
			}
		}
	}
	refused("a state naming another sandbox's server", forge(func(*State) {}), "datadir")
	refused("a state naming another sandbox's socket", forge(func(st *State) {
		st.Datadir, st.PidFile, st.ErrorLog = filepath.Join(st.Dir, dataDirName), filepath.Join(st.Dir, pidFileName), filepath.Join(st.Dir, errorLogName)
	}), "socket")
	refused("a state with no data directory", forge(func(st *State) { st.Datadir = "" }), "datadir")
	refused("a state copied with its paths edited", forge(func(st *State) {
		st.Datadir, st.PidFile = filepath.Join(st.Dir, dataDirName), filepath.Join(st.Dir, pidFileName)
		st.ErrorLog, st.Socket = filepath.Join(st.Dir, errorLogName), filepath.Join(st.Dir, socketName)
	}), "inode")
	if !victim.Status(ctx).Running || victim.Status(ctx).Pid != pid {
		t.Fatal("the other sandbox's server stopped")
	}

	// A sandbox of its own, stopped, whose pid file names the other's server.
	sb, _ := newSandbox(t, Config{})
	if _, err := sb.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(sb.PidFile, []byte(strconv.Itoa(pid)), 0o644)
	if st := sb.Status(ctx); st.Running || !strings.Contains(st.StalePid, victim.Datadir) {
		t.Errorf("status with a pid file naming another server: %+v", st)
	}
	for name, stop := range map[string]func() error{
		"stop":    func() error { _, err := sb.Stop(ctx); return err },
		"restart": func() error { _, err := sb.Restart(ctx, 0); return err },
		"purge":   func() error { _, err := sb.Purge(ctx); return err },
	} {
		if err := stop(); exitcode.Of(err) != exitcode.Runtime || !strings.Contains(err.Error(), victim.Datadir) {
			t.Errorf("%s with a pid file naming another server: %v", name, err)
		}
	}
	sb.Kill()
	// --datadir=DIR is a prefix of --datadir=DIR/data.
	prefix := &Sandbox{State: State{Dir: sb.Dir, Datadir: victim.Dir, PidFile: victim.PidFile}}
	if p := prefix.livePid(); p != 0 {
		t.Errorf("the server of %s taken for one of %s: pid %d", victim.Datadir, victim.Dir, p)
	}
	if !victim.Status(ctx).Running || victim.Status(ctx).Pid != pid {
		t.Fatal("the other sandbox's server stopped")
	}
}

// A state file put into a directory that is no sandbox, written to name that directory's
// own paths and identity, makes neither purge nor up's reinstall remove the user's data,
// tmp or files directories (without the identity, TestNothingUnprovenIsPurgedOrStarted).
func TestPurgeRefusesWhatNoSandboxMade(t *testing.T) {
	ctx := context.Background()
	for name, setup := range map[string]func(d string){
		"data of the user's": func(d string) {
			os.Mkdir(filepath.Join(d, dataDirName), 0o755)
			os.WriteFile(filepath.Join(d, dataDirName, "thesis.tex"), []byte("x"), 0o644)
			os.Mkdir(filepath.Join(d, tmpDirName), 0o755)
			os.WriteFile(filepath.Join(d, tmpDirName, "draft"), []byte("x"), 0o644)
		},
		"a directory where the sandbox makes a file": func(d string) {
			os.Mkdir(filepath.Join(d, errorLogName), 0o755)
			os.WriteFile(filepath.Join(d, errorLogName, "2026.log"), []byte("x"), 0o644)
		},
		"a file where the sandbox makes a directory": func(d string) {
			os.WriteFile(filepath.Join(d, filesDirName), []byte("x"), 0o644)
		},
	} {
		for _, installing := range []bool{false, true} {
			d := t.TempDir()
			setup(d)
			// With the directory's identity, as 'up' writes it: these checks hold even then.
			ino, err := inodeOf(d)
			if err != nil {
				t.Fatal(err)
			}
			st := State{Format: stateFormat, Dir: d, Datadir: filepath.Join(d, dataDirName), PidFile: filepath.Join(d, pidFileName),
				ErrorLog: filepath.Join(d, errorLogName), Socket: filepath.Join(d, socketName), DirCreated: true, Installing: installing, DirInode: ino}
			b, _ := json.Marshal(st)
			os.WriteFile(filepath.Join(d, stateFileName), b, 0o644)
			before := tree(t, d)
			sb, err := Open(d)
			if err != nil {
				t.Fatalf("%s: open: %v", name, err)
			}
			if _, err := sb.Purge(ctx); exitcode.Of(err) != exitcode.Runtime || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "refusing to purge") {
				t.Errorf("%s (installing %v): purge: %v", name, installing, err)
			}
			if installing {
				if sb, _, err := Up(ctx, Config{Dir: d, Flavor: os.Getenv(FlavorEnv), DieWithParent: true}); err == nil || !strings.Contains(err.Error(), "refusing to purge") {
					t.Errorf("%s: up reinstalling: %v", name, err)
					if err == nil {
						sb.Kill()
					}
				}
			}
			if after := tree(t, d); after != before {
				t.Errorf("%s (installing %v): the directory changed:\n%s\nnow\n%s", name, installing, before, after)
			}
		}
	}
}

// tree lists the paths under dir, one a line.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		out = append(out, p)
		return err
	})
	return strings.Join(out, "\n")
}

// Status reports the extra server options the sandbox starts with, [] when none.
func TestStatusReportsServerArgs(t *testing.T) {
	d := t.TempDir()
	sb := &Sandbox{State: State{Dir: d, PidFile: filepath.Join(d, pidFileName), Socket: filepath.Join(d, socketName)}}
	for _, args := range [][]string{nil, {"--performance-schema=OFF", "--innodb-lru-scan-depth=128"}} {
		sb.ServerArgs = args
		b, err := json.Marshal(sb.Status(context.Background()))
		want, _ := json.Marshal(append([]string{}, args...))
		if err != nil || !strings.Contains(string(b), `"server_args":`+string(want)) {
			t.Errorf("status of a sandbox with server args %q: %s %v", args, b, err)
		}
	}
}

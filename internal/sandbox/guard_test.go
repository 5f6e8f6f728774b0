package sandbox

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/exitcode"
)

// serverFiles fills datadir with what a bootstrap leaves there, as far as purge looks.
func serverFiles(t *testing.T, datadir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(datadir, "mysql"), 0o750); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"ibdata1", "aria_log_control", "mysql/user.frm"} {
		if err := os.WriteFile(filepath.Join(datadir, n), []byte("x"), 0o640); err != nil {
			t.Fatal(err)
		}
	}
}

// writeState writes st into its directory as a hand (or another program) would.
func writeState(t *testing.T, st State) {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(st.Dir, stateFileName), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// ownState is the state 'up' would write for dir, without its identity.
func ownState(dir string) State {
	return State{Format: stateFormat, Dir: dir, Datadir: filepath.Join(dir, dataDirName), PidFile: filepath.Join(dir, pidFileName),
		ErrorLog: filepath.Join(dir, errorLogName), Socket: filepath.Join(dir, socketName), ServerBinary: "/usr/sbin/mariadbd", DirCreated: true}
}

// stoppedSandbox is a sandbox as 'up' leaves it, its server stopped: identity recorded,
// data directory marked. No server is needed for what purge decides.
func stoppedSandbox(t *testing.T) *Sandbox {
	t.Helper()
	d := filepath.Join(t.TempDir(), "sb")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	ino, err := inodeOf(d)
	if err != nil {
		t.Fatal(err)
	}
	st := ownState(d)
	st.DirInode = ino
	writeState(t, st)
	serverFiles(t, st.Datadir)
	for _, n := range []string{tmpDirName, filesDirName} {
		os.Mkdir(filepath.Join(d, n), 0o750)
	}
	s, err := Open(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.writeMark(); err != nil {
		t.Fatal(err)
	}
	return s
}

// The tester's data loss: a sandbox.json written by hand (or by an innowarm that recorded
// no identity) beside a real server's data directory made purge remove that directory,
// and up run a server on it. Neither can be proven innowarm's: both are refused, and
// nothing changes.
func TestNothingUnprovenIsPurgedOrStarted(t *testing.T) {
	ctx := context.Background()
	d := t.TempDir()
	serverFiles(t, filepath.Join(d, dataDirName))
	writeState(t, ownState(d))
	before := tree(t, d)
	sb, err := Open(d)
	if err != nil {
		t.Fatalf("open of a state without identity (status and stop still work): %v", err)
	}
	if err := sb.CheckPurge(); err == nil || !strings.Contains(err.Error(), "cannot prove") {
		t.Errorf("check purge: %v", err)
	}
	if _, err := sb.Purge(ctx); exitcode.Of(err) != exitcode.Runtime || !strings.Contains(err.Error(), "cannot prove") || strings.Contains(err.Error(), "\n") {
		t.Errorf("purge: %v", err)
	}
	if _, err := sb.Start(ctx); err == nil || !strings.Contains(err.Error(), "refusing to start") {
		t.Errorf("start: %v", err)
		sb.Kill()
	}
	if s, _, err := Up(ctx, Config{Dir: d, DieWithParent: true}); err == nil || !strings.Contains(err.Error(), "refusing to start") {
		t.Errorf("up: %v", err)
		if err == nil {
			s.Kill()
		}
	}
	if after := tree(t, d); after != before {
		t.Errorf("the directory changed:\n%s\nnow\n%s", before, after)
	}
	if _, err := os.Stat(filepath.Join(d, dataDirName, "ibdata1")); err != nil {
		t.Fatalf("the data directory was removed: %v", err)
	}

	// The same state with the directory's identity, as 'up' writes it, is purged.
	own := stoppedSandbox(t)
	if rep, err := own.Purge(ctx); err != nil || !rep.DirRemoved {
		t.Errorf("purge of a sandbox 'up' made: %+v %v", rep, err)
	}
}

// A sandbox copied whole (cp -a) is a sandbox of its own where it was copied: it is
// started on its own paths and port, and a purge of the copy or of the original leaves
// the other as it was. A state file copied alone is refused, saying why.
func TestCopiedSandboxIsASandboxOfItsOwn(t *testing.T) {
	ctx := context.Background()
	orig, _ := newSandbox(t, Config{})
	pid := orig.Status(ctx).Pid
	copyDir := filepath.Join(t.TempDir(), "copy")
	// Copied while it runs, as a user would: pid file and socket come along.
	if out, err := exec.Command("cp", "-a", orig.Dir, copyDir).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v %s", err, out)
	}
	t.Cleanup(func() {
		if c, err := Open(copyDir); err == nil {
			c.Kill()
		}
	})
	c, err := Open(copyDir)
	if err != nil {
		t.Fatalf("open of a copy: %v", err)
	}
	if c.Datadir != filepath.Join(copyDir, dataDirName) || c.PidFile != filepath.Join(copyDir, pidFileName) || len(c.Notes()) == 0 || !strings.Contains(c.Notes()[0], orig.Dir) {
		t.Errorf("the copy's paths: %+v notes %q", c.State, c.Notes())
	}
	if st := c.Status(ctx); st.Running {
		t.Errorf("the original's server taken for the copy's: %+v", st)
	}
	if _, err := c.Stop(ctx); err != nil {
		t.Errorf("stop of a copy: %v", err)
	}
	if _, err := c.Start(ctx); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "sandbox up") {
		t.Errorf("start of a copy not yet made a sandbox of its own: %v", err)
	}
	if st := orig.Status(ctx); !st.Running || st.Pid != pid {
		t.Fatalf("the original's server: %+v", st)
	}

	cp, rep, err := Up(ctx, Config{Dir: copyDir, PoolSize: 32 << 20, Flavor: os.Getenv(FlavorEnv), DieWithParent: true})
	if err != nil {
		t.Fatalf("up of a copy: %v", err)
	}
	if rep.Action != "started" || cp.Port == orig.Port || !strings.HasPrefix(cp.Socket, copyDir) || !strings.Contains(strings.Join(rep.Notes, "\n"), "copy of the sandbox made in "+orig.Dir) {
		t.Errorf("up of a copy: %+v, port %d (original %d), socket %s", rep, cp.Port, orig.Port, cp.Socket)
	}
	if again, err := Open(copyDir); err != nil || len(again.Notes()) != 0 || again.Dir != copyDir {
		t.Errorf("the copy after up: %v %v", again, err)
	}
	origTree := tree(t, orig.Dir)
	if cp.CopiedFrom != orig.Dir {
		t.Errorf("the copy does not say where it came from: %q", cp.CopiedFrom)
	}
	if prep, err := cp.Purge(ctx); err != nil || prep.DirRemoved || !strings.Contains(prep.KeptReason, "copying") {
		t.Errorf("purge of the copy: %+v %v", prep, err)
	}
	if entries, _ := os.ReadDir(copyDir); len(entries) != 0 {
		t.Errorf("purge left %v in the copy", entries)
	}
	if now := tree(t, orig.Dir); now != origTree {
		t.Errorf("purge of the copy changed the original:\n%s\nnow\n%s", origTree, now)
	}
	if st := orig.Status(ctx); !st.Running || st.Pid != pid {
		t.Fatalf("purge of the copy stopped the original's server: %+v", st)
	}

	// The other way round: a copy purged by the original stays whole.
	second := filepath.Join(t.TempDir(), "second")
	if out, err := exec.Command("cp", "-a", orig.Dir, second).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v %s", err, out)
	}
	secondTree := tree(t, second)
	if _, err := orig.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	if now := tree(t, second); now != secondTree {
		t.Errorf("purge of the original changed its copy:\n%s\nnow\n%s", secondTree, now)
	}

	// Only the state file, beside data of the user's: refused, naming the original.
	alone := t.TempDir()
	serverFiles(t, filepath.Join(alone, dataDirName))
	if err := exec.Command("cp", filepath.Join(second, stateFileName), alone).Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(alone); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), orig.Dir) || !strings.Contains(err.Error(), "copied alone") {
		t.Errorf("open of a state file copied alone: %v", err)
	}
}

// Symbolic links at every level of a sandbox: --dir a link is named as one, and purge
// removes links, never what they lead to; a data directory that is a link is never
// started on.
func TestSymlinksNeverLeadOutOfTheSandbox(t *testing.T) {
	ctx := context.Background()
	outside := t.TempDir()
	serverFiles(t, filepath.Join(outside, "userdata"))
	os.WriteFile(filepath.Join(outside, "notes.txt"), []byte("x"), 0o644)
	os.Mkdir(filepath.Join(outside, "dir"), 0o755)
	os.WriteFile(filepath.Join(outside, "dir", "keep"), []byte("x"), 0o644)
	outsideTree := tree(t, outside)

	for _, dataIsLink := range []bool{false, true} {
		sb := stoppedSandbox(t)
		link := filepath.Join(t.TempDir(), "link")
		if err := os.Symlink(sb.Dir, link); err != nil {
			t.Fatal(err)
		}
		via, err := Open(link)
		if err != nil || via.Dir != sb.Dir || len(via.Notes()) != 1 || !strings.Contains(via.Notes()[0], "symbolic link") || !strings.Contains(via.Notes()[0], sb.Dir) {
			t.Errorf("open through a link: %v, notes %q", err, via.Notes())
		}
		if st := via.Status(ctx); len(st.Notes) != 1 {
			t.Errorf("status through a link says nothing of it: %+v", st)
		}
		plant := func(name, target string) {
			t.Helper()
			os.RemoveAll(filepath.Join(sb.Dir, name))
			if err := os.Symlink(target, filepath.Join(sb.Dir, name)); err != nil {
				t.Fatal(err)
			}
		}
		for _, n := range []string{tmpDirName, filesDirName} {
			plant(n, filepath.Join(outside, "dir"))
		}
		for _, n := range []string{errorLogName, pidFileName, socketName, installLogName, serverOutName, stateFileName + ".tmp"} {
			plant(n, filepath.Join(outside, "notes.txt"))
		}
		if dataIsLink {
			plant(dataDirName, filepath.Join(outside, "userdata"))
			if _, err := via.Start(ctx); err == nil || !strings.Contains(err.Error(), "symbolic link") {
				t.Errorf("start on a data directory that is a link: %v", err)
				via.Kill()
			}
		} else {
			for _, n := range []string{"mysql/linked", "linked"} {
				if err := os.Symlink(filepath.Join(outside, "userdata"), filepath.Join(sb.Datadir, n)); err != nil {
					t.Fatal(err)
				}
			}
		}
		rep, err := via.Purge(ctx)
		if err != nil || !rep.DirRemoved {
			t.Errorf("purge (data a link: %v): %+v %v", dataIsLink, rep, err)
		}
		if now := tree(t, outside); now != outsideTree {
			t.Errorf("purge (data a link: %v) reached out of the sandbox:\n%s\nnow\n%s", dataIsLink, outsideTree, now)
		}
		if _, err := os.Lstat(link); err != nil {
			t.Errorf("purge removed the user's link: %v", err)
		}
	}
}

// A process of the user's run on the data directory a state file names (a server of
// theirs beside a hand-written sandbox.json, or one on a pid the sandbox's server had) is
// no server the sandbox started: stop and purge never signal it. One that looks like a
// server makes them refuse, and its data stays.
func TestStopSignalsOnlyTheSandboxsServer(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"mariadbd", "backup-agent"} {
		sb := stoppedSandbox(t)
		// sh stays (no exec), so its command line keeps the arguments.
		cmd := exec.Command("/bin/sh", "-c", "sleep 300; :", name, "--no-defaults", "--datadir="+sb.Datadir, "--pid-file=/elsewhere/mysqld.pid")
		cmd.Dir = sb.Datadir
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
		// Until it has exec'd, the child's command line is this test's.
		for deadline := time.Now().Add(time.Minute); procDatadir(cmd.Process.Pid) != sb.Datadir; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the user's process never ran")
			}
		}
		os.WriteFile(sb.PidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
		if st := sb.Status(ctx); st.Running {
			t.Errorf("%s: a process of the user's taken for the sandbox's server: %+v", name, st)
		}
		for what, stop := range map[string]func() error{
			"stop":  func() error { _, err := sb.Stop(ctx); return err },
			"purge": func() error { _, err := sb.Purge(ctx); return err },
		} {
			err := stop()
			if name == "mariadbd" && (exitcode.Of(err) != exitcode.Runtime || !strings.Contains(err.Error(), "did not start")) {
				t.Errorf("%s of a sandbox whose pid file names a server of its data directory it did not start: %v", what, err)
			}
		}
		if _, err := os.Stat(filepath.Join(sb.Datadir, "ibdata1")); (err != nil) == (name == "mariadbd") {
			t.Errorf("%s: purge: %v", name, err)
		}
		select {
		case err := <-waited:
			t.Fatalf("stop or purge ended the user's %s: %v", name, err)
		default:
		}
	}
}

// A socket at the sandbox's path that another process listens on is that process's:
// status says so, stop and purge leave it, and start refuses rather than take the other's
// answers for its own server's.
func TestAnotherServersSocketIsLeftAlone(t *testing.T) {
	ctx := context.Background()
	sb := stoppedSandbox(t)
	l, err := net.Listen("unix", sb.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	defer wg.Wait()
	defer l.Close()
	if st := sb.Status(ctx); !strings.Contains(st.StaleSocket, "another process") {
		t.Errorf("status: %+v", st)
	}
	if _, err := sb.Stop(ctx); err != nil {
		t.Errorf("stop: %v", err)
	}
	if _, err := os.Lstat(sb.Socket); err != nil {
		t.Fatalf("stop removed another process's socket: %v", err)
	}
	if _, err := sb.Start(ctx); err == nil || !strings.Contains(err.Error(), "listens on its socket") {
		t.Errorf("start: %v", err)
		sb.Kill()
	}
	rep, err := sb.Purge(ctx)
	if err != nil || rep.DirRemoved || !strings.Contains(strings.Join(rep.Kept, ","), socketName) {
		t.Errorf("purge: %+v %v", rep, err)
	}
	if _, err := os.Lstat(sb.Socket); err != nil {
		t.Fatalf("purge removed another process's socket: %v", err)
	}
}

// Two 'up' at once in one new directory: one creates the sandbox, the other waits and
// finds it running; one bootstrap, one server, one state.
func TestConcurrentUpMakesOneSandbox(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "sb")
	type result struct {
		sb  *Sandbox
		rep *UpReport
		err error
	}
	results := make(chan result, 2)
	for range 2 {
		go func() {
			sb, rep, err := Up(ctx, Config{Dir: dir, PoolSize: 32 << 20, Flavor: os.Getenv(FlavorEnv), DieWithParent: true, StartTimeout: 5 * time.Minute})
			results <- result{sb, rep, err}
		}()
	}
	var actions []string
	var pids []int
	for range 2 {
		r := <-results
		if r.err != nil {
			t.Errorf("up: %v", r.err)
			continue
		}
		t.Cleanup(r.sb.Kill)
		actions = append(actions, r.rep.Action)
		pids = append(pids, r.rep.Pid)
	}
	slices.Sort(actions)
	if len(pids) != 2 || pids[0] != pids[1] || strings.Join(actions, ",") != "already-running,created" {
		t.Errorf("two ups at once: actions %v, pids %v", actions, pids)
	}
	sb, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st := sb.Status(ctx); !st.Running || st.Pid != pids[0] {
		t.Errorf("status after two ups: %+v", st)
	}
	if _, err := sb.Purge(ctx); err != nil {
		t.Error(err)
	}
}

// A file system mounted inside the sandbox (a user's volume, or a bind mount of their
// directory) is not the sandbox's: purge refuses, and empties nothing of it.
func TestPurgeLeavesMountedFileSystems(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a file system needs root")
	}
	ctx := context.Background()
	for _, at := range []string{dataDirName, filepath.Join(dataDirName, "backups"), tmpDirName} {
		sb := stoppedSandbox(t)
		mnt := filepath.Join(sb.Dir, at)
		os.MkdirAll(mnt, 0o755)
		if out, err := exec.Command("mount", "-t", "tmpfs", "none", mnt).CombinedOutput(); err != nil {
			t.Skipf("mount: %v %s", err, out)
		}
		t.Cleanup(func() { _ = exec.Command("umount", mnt).Run() })
		serverFiles(t, mnt)
		if _, err := sb.Purge(ctx); exitcode.Of(err) != exitcode.Runtime || !strings.Contains(err.Error(), "mount point") {
			t.Errorf("purge with a file system mounted at %s: %v", at, err)
		}
		if _, err := os.Stat(filepath.Join(mnt, "ibdata1")); err != nil {
			t.Errorf("purge emptied the file system mounted at %s: %v", at, err)
		}
	}
}

// A symbolic link planted where the sandbox writes (its state's temporary file, the pid
// file, the logs, the socket, its tmp and files directories) leads nothing it writes out
// of the sandbox: the state is written anew beside it, and start refuses.
func TestWritesNeverGoThroughALink(t *testing.T) {
	ctx := context.Background()
	outside := t.TempDir()
	victim := filepath.Join(outside, "thesis.tex")
	os.WriteFile(victim, []byte("years of work\n"), 0o644)
	os.Mkdir(filepath.Join(outside, "dir"), 0o755)
	before := tree(t, outside)

	sb := stoppedSandbox(t)
	if err := os.Symlink(victim, filepath.Join(sb.Dir, stateFileName+".tmp")); err != nil {
		t.Fatal(err)
	}
	if err := sb.Save(); err != nil {
		t.Errorf("save: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "years of work\n" {
		t.Fatalf("save wrote through a link: %q", b)
	}
	for _, n := range []string{pidFileName, errorLogName, serverOutName, socketName, socketLockName, tmpDirName, filesDirName} {
		sb := stoppedSandbox(t)
		p := filepath.Join(sb.Dir, n)
		os.RemoveAll(p)
		target := victim
		if n == tmpDirName || n == filesDirName {
			target = filepath.Join(outside, "dir")
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		if _, err := sb.Start(ctx); err == nil || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("start with %s a link: %v", n, err)
			sb.Kill()
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "years of work\n" {
		t.Errorf("a write went through a link: %q", b)
	}
	if now := tree(t, outside); now != before {
		t.Errorf("the directory outside changed:\n%s\nnow\n%s", before, now)
	}
}

// A dangling symbolic link is refused as the sandbox's directory (creating it would make a
// directory wherever the link points); a directory that appeared between claimDir's two
// looks, or a link to one, is accepted and left to the directory's lock.
func TestClaimDirSymbolicLinks(t *testing.T) {
	base := t.TempDir()
	dangling := filepath.Join(base, "dangling")
	if err := os.Symlink(filepath.Join(base, "nowhere"), dangling); err != nil {
		t.Fatal(err)
	}
	if _, err := claimDir(dangling); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("dangling link: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(base, "nowhere")); err == nil {
		t.Error("claimDir created the dangling link's target")
	}
	if err := os.Mkdir(filepath.Join(base, "nowhere"), 0o755); err != nil {
		t.Fatal(err)
	}
	if created, err := claimDir(dangling); err != nil || created {
		t.Errorf("link to an empty directory: created %v, %v", created, err)
	}
}

// A state file copied alone into a directory that has the original's inode number (a
// directory made after the original's purge can get it again) is no sandbox moved there:
// without innowarm's mark in its data directory, Open refuses it. A CI run took such a
// state file, beside a user's data directory, for the sandbox moved.
func TestStateFileAloneWhereTheInodeCameBack(t *testing.T) {
	alone := t.TempDir()
	serverFiles(t, filepath.Join(alone, dataDirName))
	ino, err := inodeOf(alone)
	if err != nil {
		t.Fatal(err)
	}
	orig := filepath.Join(t.TempDir(), "purged")
	st := State{Format: stateFormat, Dir: orig, Datadir: filepath.Join(orig, dataDirName), DirInode: ino}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(alone, stateFileName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(alone); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "copied alone") {
		t.Errorf("open of a state file copied alone where the original's inode came back: %v", err)
	}
}

// A sandbox moved (mv) while its server runs is still that server's: its command line
// names the paths where the sandbox was made, its working directory is the data directory
// moved here. Status said it was not running and named it another server's, 'down' said
// "not running", removed its pid file as stale and left it running, and 'up' refused for
// a socket in use: a server no innowarm command could stop. Now status says it runs and
// why its command line names another directory, 'down' stops it, and 'up' then starts
// the sandbox where it now lives.
func TestSandboxMovedWhileItsServerRuns(t *testing.T) {
	ctx := context.Background()
	orig, _ := newSandbox(t, Config{})
	pid := orig.Status(ctx).Pid
	moved := filepath.Join(filepath.Dir(orig.Dir), "moved")
	if err := os.Rename(orig.Dir, moved); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		os.RemoveAll(moved)
	})
	sb, err := Open(moved)
	if err != nil {
		t.Fatalf("open of the moved sandbox: %v", err)
	}
	st := sb.Status(ctx)
	if !st.Running || st.Pid != pid || st.StalePid != "" || st.StaleSocket != "" || !strings.Contains(strings.Join(st.Notes, "\n"), "started before the directory moved here") {
		t.Errorf("status of the moved sandbox whose server runs: %+v", st)
	}
	if _, err := sb.Stop(ctx); err != nil {
		t.Fatalf("stop of the moved sandbox's server: %v", err)
	}
	if alive(pid) {
		t.Fatalf("the moved sandbox's server (pid %d) still runs after stop", pid)
	}
	up, rep, err := Up(ctx, Config{Dir: moved, PoolSize: 32 << 20, Flavor: os.Getenv(FlavorEnv), DieWithParent: true})
	if err != nil {
		t.Fatalf("up of the moved sandbox once its server stopped: %v", err)
	}
	defer up.Kill()
	if rep.Action != "started" || !strings.HasPrefix(up.Socket, moved) || up.Status(ctx).Pid == pid {
		t.Errorf("up of the moved sandbox: %+v, socket %s", rep, up.Socket)
	}
}

// A sandbox whose pid file is gone while its server runs (removed by hand, or as stale by
// an innowarm that took a moved sandbox's server for another's) finds its server by the
// socket (the listener's SO_PEERCRED, checked as a pid file's process is): status said the
// socket was another process's, 'down' said "not running" and 'up' refused.
func TestServerFoundBySocketWhenItsPidFileIsGone(t *testing.T) {
	ctx := context.Background()
	orig, _ := newSandbox(t, Config{})
	pid := orig.Status(ctx).Pid
	if err := os.Remove(orig.PidFile); err != nil {
		t.Fatal(err)
	}
	sb, err := Open(orig.Dir) // as a later command sees it: not its child
	if err != nil {
		t.Fatal(err)
	}
	st := sb.Status(ctx)
	if !st.Running || st.Pid != pid || st.StaleSocket != "" || !strings.Contains(strings.Join(st.Notes, "\n"), "found by its socket") {
		t.Errorf("status of a sandbox whose pid file is gone: %+v", st)
	}
	if _, err := sb.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if alive(pid) {
		t.Fatalf("the server (pid %d) still runs after stop", pid)
	}
}

package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

func TestSandboxCommands(t *testing.T) {
	dir := filepath.Join(sandboxtest.Dir(t), "sb")
	cli := func(args ...string) sandboxtest.Result {
		t.Helper()
		return sandboxtest.CLI(t, sandboxtest.Run{}, append(args, "--dir", dir)...)
	}
	t.Cleanup(func() { cli("sandbox", "down", "--purge") })

	r := cli("sandbox", "up", "--pool-size", "48M", "--json")
	if r.Code != 0 {
		t.Fatalf("up: %s", r.Stderr)
	}
	var up struct {
		Up struct {
			Action  string  `json:"action"`
			Install float64 `json:"install_seconds"`
			Start   float64 `json:"start_seconds"`
			Pid     int     `json:"pid"`
		} `json:"up"`
		Status struct {
			Running bool   `json:"running"`
			Socket  string `json:"socket"`
			Port    int    `json:"port"`
			Pool    int64  `json:"pool_size"`
			Flush   string `json:"flush_method"`
		} `json:"status"`
	}
	sandboxtest.JSON(t, []byte(r.Stdout), &up)
	if up.Up.Action != "created" || !up.Status.Running || up.Status.Pool != 48<<20 || up.Status.Flush != "O_DIRECT" || up.Status.Port == 0 || !strings.HasPrefix(up.Status.Socket, dir) {
		t.Fatalf("up --json: %s", r.Stdout)
	}
	t.Logf("sandbox up: install %.2f s, start %.2f s", up.Up.Install, up.Up.Start)

	// The server outlives the CLI process and answers on the printed socket.
	r = sandboxtest.CLI(t, sandboxtest.Run{}, "ping", "--no-defaults", "-S", up.Status.Socket, "-u", "root")
	if r.Code != 0 || !strings.Contains(r.Stdout, "48 MiB") {
		t.Fatalf("ping sandbox: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}

	r = cli("sandbox", "up")
	if r.Code != 0 || !strings.Contains(r.Stdout, "already running") {
		t.Errorf("second up: %s %s", r.Stdout, r.Stderr)
	}

	r = cli("sandbox", "cold-restart", "--json")
	var cold struct {
		Stop  float64 `json:"stop_seconds"`
		Start float64 `json:"start_seconds"`
		Total float64 `json:"total_seconds"`
		Cache string  `json:"os_page_cache"`
		Cold  string  `json:"cold"`
		Pid   int     `json:"pid"`
	}
	sandboxtest.JSON(t, []byte(r.Stdout), &cold)
	if r.Code != 0 || cold.Start <= 0 || cold.Cache == "" || cold.Cold == "" || cold.Pid == up.Up.Pid {
		t.Fatalf("cold-restart: %s %s", r.Stdout, r.Stderr)
	}
	t.Logf("cold-restart: stop %.2f s, start %.2f s, total %.2f s, OS cache %s", cold.Stop, cold.Start, cold.Total, cold.Cache)

	r = cli("sandbox", "cold-restart")
	if r.Code != 0 || !strings.Contains(r.Stdout, "cold restart in") || !strings.Contains(r.Stdout, "cold: pool empty") {
		t.Errorf("cold-restart text: %s", r.Stdout)
	}

	r = cli("sandbox", "restart", "--pool-size", "64M")
	if r.Code != 0 || !strings.Contains(r.Stdout, "pool 64 MiB") {
		t.Errorf("restart --pool-size: %s %s", r.Stdout, r.Stderr)
	}

	// A crash leaves a pid file and a socket: status says so, up clears and reports them.
	r = cli("sandbox", "status", "--json")
	var st struct {
		Pid int `json:"pid"`
	}
	sandboxtest.JSON(t, []byte(r.Stdout), &st)
	syscall.Kill(st.Pid, syscall.SIGKILL)
	for i := 0; i < 200; i++ {
		if syscall.Kill(st.Pid, 0) != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	r = cli("sandbox", "status")
	if !strings.Contains(r.Stdout, "stopped") || !strings.Contains(r.Stdout, "stale socket") {
		t.Errorf("status after crash: %s", r.Stdout)
	}
	r = cli("sandbox", "up")
	if r.Code != 0 || !strings.Contains(r.Stdout, "removed stale socket") || !strings.Contains(r.Stdout, "sandbox started") {
		t.Errorf("up after crash: %s %s", r.Stdout, r.Stderr)
	}
	// It starts with its own settings (the 64 MiB of the restart), not the flags' defaults.
	if !strings.Contains(r.Stdout, "buffer pool  64 MiB") {
		t.Errorf("up of a stopped sandbox did not keep its pool: %s", r.Stdout)
	}

	r = cli("sandbox", "down")
	if r.Code != 0 || !strings.Contains(r.Stdout, "stopped in") {
		t.Errorf("down: %s %s", r.Stdout, r.Stderr)
	}
	r = cli("sandbox", "status", "--json")
	if !strings.Contains(r.Stdout, `"running": false`) {
		t.Errorf("status after down: %s", r.Stdout)
	}
	r = cli("sandbox", "down", "--purge")
	if r.Code != 0 {
		t.Errorf("purge: %s", r.Stderr)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("purge left %s", dir)
	}
}

// The data loss, as a user ran it: up in a directory holding a file of theirs, then
// down --purge, deleted both. Up refuses that directory; a file added to a sandbox after up
// survives the purge, which says what it kept; the default directory goes with its sandbox.
func TestSandboxPurgeKeepsTheUsersFiles(t *testing.T) {
	scratch := sandboxtest.Dir(t)
	d := filepath.Join(scratch, "d")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(d, "notes.txt")
	os.WriteFile(notes, []byte("x\n"), 0o644)
	r := sandboxtest.CLI(t, sandboxtest.Run{}, "sandbox", "up", "--dir", d)
	oneLineError(t, r, 2, "notes.txt", "empty directory")
	r = sandboxtest.CLI(t, sandboxtest.Run{}, "sandbox", "down", "--purge", "--dir", d)
	oneLineError(t, r, 2, "no sandbox")
	if b, err := os.ReadFile(notes); err != nil || string(b) != "x\n" {
		t.Fatalf("notes.txt after up and purge: %q %v", b, err)
	}

	// HOME of its own: the default directory is under it. Up creates it, so purge removes it.
	home := filepath.Join(scratch, "home")
	run := sandboxtest.Run{Env: []string{"HOME=" + home}}
	def := filepath.Join(home, ".cache", "innowarm", "sandbox")
	t.Cleanup(func() { sandboxtest.CLI(t, run, "sandbox", "down", "--purge") })
	for _, userFile := range []bool{false, true} {
		if r := sandboxtest.CLI(t, run, "sandbox", "up", "--pool-size", "32M"); r.Code != 0 || !strings.Contains(r.Stdout, def) {
			t.Fatalf("up in the default dir: %d %s %s", r.Code, r.Stdout, r.Stderr)
		}
		if !userFile {
			r = sandboxtest.CLI(t, run, "sandbox", "down", "--purge")
			if _, err := os.Stat(def); r.Code != 0 || !strings.Contains(r.Stdout, "removed "+def) || !os.IsNotExist(err) {
				t.Fatalf("purge of the default dir: %d %s %s (%v)", r.Code, r.Stdout, r.Stderr, err)
			}
			continue
		}
		mine := filepath.Join(def, "my-queries.sql")
		os.WriteFile(mine, []byte("SELECT 1;\n"), 0o644)
		r = sandboxtest.CLI(t, run, "sandbox", "down", "--purge", "--json")
		var down struct {
			Purge struct {
				Kept       []string `json:"kept"`
				DirRemoved bool     `json:"dir_removed"`
			} `json:"purge"`
		}
		sandboxtest.JSON(t, []byte(r.Stdout), &down)
		entries, _ := os.ReadDir(def)
		if r.Code != 0 || down.Purge.DirRemoved || len(down.Purge.Kept) != 1 || len(entries) != 1 || entries[0].Name() != "my-queries.sql" {
			t.Fatalf("purge with a file of the user's: %d %s %s; left %v", r.Code, r.Stdout, r.Stderr, entries)
		}
	}
}

// A user test: a sandbox.json copied into another directory with its dir edited to match,
// its pid file, socket and port left naming a running sandbox's server, made 'sandbox down'
// there stop that other server. Every command refuses it (exit 1, one line) and the server
// runs on. status --json lists the server options up recorded.
func TestSandboxRefusesAStateNamingAnotherServer(t *testing.T) {
	scratch := sandboxtest.Dir(t)
	victim := filepath.Join(scratch, "victim")
	t.Cleanup(func() { sandboxtest.CLI(t, sandboxtest.Run{}, "sandbox", "down", "--purge", "--dir", victim) })
	r := sandboxtest.CLI(t, sandboxtest.Run{}, "sandbox", "up", "--pool-size", "32M", "--server-arg=--performance-schema=OFF", "--dir", victim)
	if r.Code != 0 {
		t.Fatalf("up: %s", r.Stderr)
	}
	var st struct {
		Running    bool     `json:"running"`
		Pid        int      `json:"pid"`
		ServerArgs []string `json:"server_args"`
	}
	status := func() {
		t.Helper()
		r := sandboxtest.CLI(t, sandboxtest.Run{}, "sandbox", "status", "--json", "--dir", victim)
		st.Pid = 0 // omitted when not running
		sandboxtest.JSON(t, []byte(r.Stdout), &st)
	}
	status()
	pid := st.Pid
	if !st.Running || strings.Join(st.ServerArgs, " ") != "--performance-schema=OFF" {
		t.Fatalf("status --json: %+v", st)
	}

	forged := filepath.Join(scratch, "forged")
	os.Mkdir(forged, 0o755)
	state, err := os.ReadFile(filepath.Join(victim, "sandbox.json"))
	if err != nil {
		t.Fatal(err)
	}
	state = []byte(strings.Replace(string(state), `"dir": "`+victim+`"`, `"dir": "`+forged+`"`, 1))
	os.WriteFile(filepath.Join(forged, "sandbox.json"), state, 0o644)
	for _, args := range [][]string{{"down"}, {"down", "--purge"}, {"cold-restart"}, {"restart"}, {"status"}, {"up"}} {
		r := sandboxtest.CLI(t, sandboxtest.Run{}, append(append([]string{"sandbox"}, args...), "--dir", forged)...)
		oneLineError(t, r, 1, "not the sandbox's own")
		if status(); !st.Running || st.Pid != pid {
			t.Fatalf("sandbox %s on a forged state stopped the other sandbox's server: %+v", strings.Join(args, " "), st)
		}
	}
	if entries, _ := os.ReadDir(forged); len(entries) != 1 {
		t.Errorf("the forged directory changed: %v", entries)
	}
}

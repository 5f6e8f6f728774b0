package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// The common setup of a command with two ends: the same user and password on the source
// and the target, both given on the command line. Scrubbing the source's
// --source-password=SECRET from the process's arguments once overwrote the target's equal
// argument too, before the target's value (which points into it) was read: "target: access
// denied ... with the password from flag", exit 2. Both must connect, and neither password
// may show in /proc/PID/cmdline while follow runs.
func TestFollowSamePasswordOnBothEnds(t *testing.T) {
	sb := sandboxtest.Server(t)
	target := sandboxtest.SecondServer(t, 0)
	const user, secret = "twoends", "Same-Secret-42"
	// A schema of its own on both: the shared source holds other tests' schemas, which the
	// target lacks (a round that resolves none of its hot set fails).
	const db = "t_twoends"
	create := []string{
		"CREATE USER IF NOT EXISTS '" + user + "'@'localhost' IDENTIFIED BY '" + secret + "'",
		"GRANT ALL ON *.* TO '" + user + "'@'localhost'",
		"DROP DATABASE IF EXISTS " + db, "CREATE DATABASE " + db,
		"CREATE TABLE " + db + ".t (id INT PRIMARY KEY, v INT)",
		"INSERT INTO " + db + ".t VALUES (1, 1), (2, 2), (3, 3)",
	}
	sandboxtest.Exec(t, create...)
	conn, err := target.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range create {
		if _, err := conn.DB.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()
	t.Cleanup(func() { sandboxtest.Exec(t, "DROP DATABASE IF EXISTS "+db) })
	ends := []string{"follow", "--no-defaults", "-D", db,
		"--source-socket", sb.Socket, "--source-user", user, "--source-password=" + secret,
		"--target-socket", target.Socket, "--target-user", user, "--target-password=" + secret}

	r := sandboxtest.CLI(t, sandboxtest.Run{Timeout: 90 * time.Second}, append(ends, "--rounds", "1", "--interval", "1s", "--json")...)
	var round struct {
		OK bool `json:"ok"`
	}
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &round) != nil || !round.OK {
		t.Fatalf("follow with the same password on both ends: exit %d, stdout %q, stderr %s", r.Code, r.Stdout, r.Stderr)
	}
	// The warning about passwords on the command line is said once, as the mysql client says
	// it, not once per end.
	if n := strings.Count(r.Stderr, "Warning: using a password on the command line"); n != 1 {
		t.Errorf("the password warning is printed %d times, want once: %s", n, r.Stderr)
	}

	// While it runs (after its first round, before the next), its arguments show no password.
	cmd := exec.Command(sandboxtest.Binary(t), append(ends, "--interval", "1h", "--json")...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "USER=root", "INNOWARM_DEFAULT_SOCKETS=none"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	first := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		first <- line
	}()
	select {
	case line := <-first:
		if !strings.Contains(line, `"ok":true`) {
			t.Fatalf("first round of a running follow: %q", line)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("follow did not finish its first round")
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	args := strings.ReplaceAll(string(cmdline), "\x00", " ")
	hidden := strings.Repeat("x", len(secret))
	if strings.Contains(args, secret) || !strings.Contains(args, "--source-password="+hidden) || !strings.Contains(args, "--target-password="+hidden) {
		t.Errorf("follow's arguments while it runs: %q, want both passwords overwritten with x", args)
	}
}

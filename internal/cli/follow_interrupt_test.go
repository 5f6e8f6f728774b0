package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// Ctrl-C during follow's first round printed nothing but the error: a user who interrupted
// a long first load had no line saying where the standby stood. Now the round in flight is
// printed as stopped (--json: an object with "interrupted": true), then follow exits 130.
func TestFollowInterruptedPrintsTheRoundInFlight(t *testing.T) {
	sb := sandboxtest.Server(t)
	target := sandboxtest.SecondServer(t, 64<<20)
	const db = "t_follow_sigint"
	create := []string{"DROP DATABASE IF EXISTS " + db, "CREATE DATABASE " + db,
		"CREATE TABLE " + db + ".t (id INT PRIMARY KEY, pad CHAR(200) NOT NULL DEFAULT '')"}
	ctx := context.Background()
	conn, err := target.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range append(create, fmt.Sprintf("INSERT INTO %s.t (id) SELECT seq FROM %s ORDER BY seq", db, conn.Server.Series(db, 1, 40000))) {
		if _, err := conn.DB.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()
	sandboxtest.Exec(t, append(create, fmt.Sprintf("INSERT INTO %s.t (id) SELECT seq FROM %s ORDER BY seq", db, sandboxtest.Conn(t).Server.Series(db, 1, 40000)))...)
	t.Cleanup(func() { sandboxtest.Exec(t, "DROP DATABASE IF EXISTS "+db) })
	if _, err := target.ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	// A load capped to 1 MB/s: its first round lasts long enough to be interrupted.
	cmd := exec.Command(sandboxtest.Binary(t), "follow", "--no-defaults", "-D", db, "--interval", "1h", "--json", "--max-rate", "1M",
		"--source-socket", sb.Socket, "--source-user", "root", "--target-socket", target.Socket, "--target-user", "root")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "USER=root", "INNOWARM_DEFAULT_SOCKETS=none"}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	loading := make(chan struct{})
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			// The load's first chunk is under way once its progress or pacing speaks.
			if !once && (strings.Contains(sc.Text(), "for the load") || strings.Contains(sc.Text(), "pages")) {
				once = true
				close(loading)
			}
		}
	}()
	select {
	case <-loading:
	case <-time.After(90 * time.Second):
		t.Fatalf("follow's first load did not begin: %s", log.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("follow after Ctrl-C: %v, want exit 130; stdout %q", err, stdout.String())
	}
	var first struct {
		Round       int  `json:"round"`
		OK          bool `json:"ok"`
		Interrupted bool `json:"interrupted"`
	}
	line, _, _ := strings.Cut(stdout.String(), "\n")
	if err := json.Unmarshal([]byte(line), &first); err != nil || first.Round != 1 || first.OK || !first.Interrupted {
		t.Fatalf("follow's stdout after Ctrl-C in its first round: %q (%v); want round 1 interrupted", stdout.String(), err)
	}
}

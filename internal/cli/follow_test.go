package cli_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// followRun runs follow --rounds 1 from the shared server to target (flags), and checks that
// it ends within a generous bound with one "innowarm: " line naming the error last on stderr
// and, with --json, an error document with the same exit code on stdout.
func followRun(t *testing.T, code int, want string, target ...string) {
	t.Helper()
	sb := sandboxtest.Server(t)
	args := append([]string{"follow", "--source-socket", sb.Socket, "--source-user", "root", "--rounds", "1", "--interval", "1s"}, target...)
	r := sandboxtest.CLI(t, sandboxtest.Run{Timeout: 90 * time.Second}, args...)
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(r.Stderr), "\n") {
		if !strings.Contains(l, "Warning: using a password on the command line") {
			lines = append(lines, l)
		}
	}
	last := lines[len(lines)-1]
	if r.Code != code || !strings.HasPrefix(last, "innowarm: ") || !strings.Contains(last, want) || r.Elapsed > 60*time.Second {
		t.Errorf("follow %v: exit %d after %s, want %d and %q; stdout %q; stderr %s", target, r.Code, r.Elapsed, code, want, r.Stdout, r.Stderr)
	}
	if code == 2 && len(lines) != 1 {
		t.Errorf("follow %v: want one line on stderr, got %s", target, r.Stderr)
	}
	r = sandboxtest.CLI(t, sandboxtest.Run{Timeout: 90 * time.Second}, append(args, "--json")...)
	var doc struct {
		Error    string `json:"error"`
		ExitCode int    `json:"exit_code"`
	}
	docs := json.NewDecoder(strings.NewReader(r.Stdout))
	for docs.More() {
		if err := docs.Decode(&doc); err != nil {
			t.Fatalf("follow %v --json: stdout is not JSON (%v): %q", target, err, r.Stdout)
		}
	}
	if r.Code != code || doc.ExitCode != code || !strings.Contains(doc.Error, want) {
		t.Errorf("follow %v --json: exit %d, last document %+v; want exit %d and %q", target, r.Code, doc, code, want)
	}
}

// What no retry can fix ends follow at once with exit 2, --rounds or not: a wrong password
// on the target, the same server on both sides. A target that is down is retried, and with
// --rounds a last round that failed ends with exit 1.
func TestFollowExitCodes(t *testing.T) {
	sb := sandboxtest.Server(t)
	target := sandboxtest.SecondServer(t, 0)
	conn, err := target.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.DB.Exec("CREATE USER IF NOT EXISTS 'follow_pw'@'localhost' IDENTIFIED BY 'right'"); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	tgtPort := strconv.Itoa(target.Port)

	t.Run("wrong target password", func(t *testing.T) {
		followRun(t, 2, `target: access denied for user "follow_pw"`, "--target-socket", target.Socket, "--target-user", "follow_pw", "--target-password=wrong")
	})
	t.Run("same socket", func(t *testing.T) {
		followRun(t, 2, "source and target are the same server ("+sandboxtest.Flavor(t).Identity()+"): follow needs a standby",
			"--target-socket", sb.Socket, "--target-user", "root")
	})
	t.Run("same server by TCP", func(t *testing.T) {
		followRun(t, 2, "source and target are the same server", "--target-host", "127.0.0.1", "--target-port", strconv.Itoa(sb.Port), "--target-user", "root")
	})
	t.Run("without --rounds", func(t *testing.T) {
		r := sandboxtest.CLI(t, sandboxtest.Run{Timeout: 90 * time.Second}, "follow", "--source-socket", sb.Socket, "--source-user", "root",
			"--target-socket", target.Socket, "--target-user", "follow_pw", "--target-password=wrong", "--interval", "1s")
		if r.Code != 2 || !strings.Contains(r.Stderr, "access denied") {
			t.Errorf("follow with a wrong password and no --rounds: exit %d; stderr %s", r.Code, r.Stderr)
		}
	})
	t.Run("two servers", func(t *testing.T) {
		// A hot set of its own, on both servers: the source's whole pool held whatever
		// the package's other tests left there, and in a second run (-count=2) only
		// schemas the target lacks ("it has none of the source's hot pages", exit 2).
		db := sandboxtest.Schema(t) // on the source; the target is dropped with its server
		tbl := sqltext.Table(db, "t")
		ddl := []string{"CREATE TABLE " + tbl + " (id INT PRIMARY KEY, v INT)", "INSERT INTO " + tbl + " VALUES (1, 1), (2, 2), (3, 3)"}
		tc, err := target.Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range append([]string{"CREATE DATABASE IF NOT EXISTS " + sqltext.Ident(db)}, ddl...) {
			if _, err := tc.DB.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		tc.Close()
		sandboxtest.Exec(t, append(ddl, "SELECT SUM(v) FROM "+tbl)...)
		r := sandboxtest.CLI(t, sandboxtest.Run{Timeout: 90 * time.Second}, "follow", "--source-socket", sb.Socket, "--source-user", "root",
			"--target-socket", target.Socket, "--target-user", "root", "-D", db, "--rounds", "1", "--json")
		var round struct {
			OK bool `json:"ok"`
		}
		if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &round) != nil || !round.OK {
			t.Errorf("follow between two servers: exit %d, stdout %q, stderr %s", r.Code, r.Stdout, r.Stderr)
		}
	})

	if _, err := target.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Run("target down, by socket", func(t *testing.T) {
		followRun(t, 1, "round 1 of 1 failed: target: ", "--target-socket", target.Socket, "--target-user", "root")
	})
	t.Run("target down, by TCP", func(t *testing.T) {
		followRun(t, 1, "round 1 of 1 failed: target: nothing listens on 127.0.0.1:"+tgtPort, "--target-host", "127.0.0.1", "--target-port", tgtPort, "--target-user", "root")
	})
}

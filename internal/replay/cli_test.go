package replay_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// TestCLI runs the replay through the innowarm binary: warm --replay.
func TestCLI(t *testing.T) {
	schema := sandboxtest.Schema(t)
	sandboxtest.Exec(t, "CREATE TABLE "+q(schema)+".t (id INT PRIMARY KEY)", "INSERT INTO "+q(schema)+".t VALUES (1)")
	body := "USE " + q(schema) + ";\nSELECT * FROM t;\nINSERT INTO t VALUES (2);\nSELECT COUNT(*) FROM t WHERE id IN (1, 2);\nSELECT COUNT(*) FROM t WHERE id IN (3);\n"
	file := sqlFile(t, body)
	args := func(extra ...string) []string {
		return append(append([]string{"warm"}, sandboxtest.Sock(t)...), extra...)
	}

	r := sandboxtest.CLI(t, sandboxtest.Run{}, args("--replay", file, "--json", "--dedupe", "-q")...)
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	var out struct {
		Replay struct {
			Format     string           `json:"format"`
			Read       int64            `json:"statements_read"`
			Run        int64            `json:"statements_run"`
			Duplicates int64            `json:"duplicates"`
			Skipped    map[string]int64 `json:"skipped"`
			Errors     int64            `json:"errors"`
			Pages      *int64           `json:"pages_loaded"`
			Seconds    *float64         `json:"seconds"`
		} `json:"replay"`
	}
	sandboxtest.JSON(t, []byte(r.Stdout), &out)
	rp := out.Replay
	if rp.Format != "sql" || rp.Read != 4 || rp.Run != 2 || rp.Duplicates != 1 || rp.Skipped["not a SELECT: INSERT"] != 1 || rp.Errors != 0 || rp.Pages == nil || rp.Seconds == nil {
		t.Errorf("JSON result: %+v", rp)
	}

	// Standard input, human output.
	r = sandboxtest.CLI(t, sandboxtest.Run{Stdin: body}, args("--replay", "-", "--concurrency", "1")...)
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	for _, want := range []string{"4 statements read, 3 read-only, 1 skipped; 3 run, 0 failed", "pages loaded:", "skipped because", "not a SELECT: INSERT"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.Stdout)
		}
	}
	if !strings.Contains(r.Stderr, "replay: reading - as a SQL file") {
		t.Errorf("log: %s", r.Stderr)
	}

	// Usage errors exit 2 with one line.
	for _, c := range []struct {
		args []string
		want string
	}{
		{args("--replay", file, "--sample", "0"), "--sample 0"},
		{args("--replay", file, "--sample", "1.5"), "--sample 1.5"},
		{args("--replay", file, "--concurrency", "0"), "--concurrency 0"},
		{args("--replay", file, "--limit", "-1"), "--limit -1"},
		{args("--replay", file, "--replay-format", "csv"), "--replay-format"},
		{args("--replay", "performance_schema", "--replay-format", "slow"), "does not apply"},
		{args("--replay", filepath.Join(t.TempDir(), "nope.log")), "no such file"},
		{args("--dedupe"), "--dedupe needs --replay"},
		{args(), "choose what to warm"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			r := sandboxtest.CLI(t, sandboxtest.Run{}, c.args...)
			if r.Code != 2 || !strings.Contains(r.Stderr, c.want) || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
				t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args[len(sandboxtest.Sock(t))+1:], r.Code, r.Stderr, c.want)
			}
		})
	}
}

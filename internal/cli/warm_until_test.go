package cli_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// A warm with --until-coverage that ends below its goal says so: the user's run of
// 'warm --from hot.manifest --until-coverage 95% --budget 10%' exited 0 at 11.5% and
// nothing in its output or its JSON said the goal was missed. The exit stays 0 (the
// budget reached is a complete warm), but one line says the goal was not reached, at what
// coverage and why (here the budget), and --json has until_coverage; from a manifest and
// for a selection (-D), by the server's loader and by scans. A goal met says so too.
func TestUntilCoverageNotReachedIsSaid(t *testing.T) {
	ctx := context.Background()
	sb := sandboxtest.SecondServer(t, 64<<20)
	conn, err := sb.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv := conn.Server
	// Some 1,700 pages, all resident once filled: the manifest names them all, and a
	// budget of a tenth of the 4,096 pages of the pool holds a quarter of them.
	for _, q := range []string{
		"CREATE DATABASE goal",
		"CREATE TABLE goal.t (id INT PRIMARY KEY, k INT, pad CHAR(200), KEY k (k))",
		"INSERT INTO goal.t SELECT seq, seq MOD 500, REPEAT('g', 200) FROM " + srv.Series("goal", 1, 120000) + " ORDER BY seq",
		"ANALYZE TABLE goal.t",
		// Written to its file before the snapshot reads the key ranges there: pages still
		// dirty had none or stale ones, and the warm after the restart found this very
		// server "not a page-for-page copy" (1 CI run in 3: its goal counted the tree
		// path's 410 pages and was met within a tenth of the budget). Then read back: MySQL's
		// export may leave none of the table in the pool.
		"FLUSH TABLES goal.t FOR EXPORT", "UNLOCK TABLES",
		"SELECT SUM(LENGTH(pad)) FROM goal.t FORCE INDEX (PRIMARY)", "SELECT SUM(k) FROM goal.t FORCE INDEX (k)",
	} {
		if _, err := conn.DB.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	conn.Close()
	manifest := filepath.Join(sandboxtest.Dir(t), "hot.manifest")
	server := []string{"--no-defaults", "-S", sb.Socket, "-u", "root"}
	if r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"snapshot", "-o", manifest}, server...)...); r.Code != 0 {
		t.Fatalf("snapshot: exit %d: %s", r.Code, r.Stderr)
	}

	warm := func(t *testing.T, args ...string) sandboxtest.Result {
		t.Helper()
		if _, err := sb.ColdRestart(ctx); err != nil {
			t.Fatal(err)
		}
		return sandboxtest.CLI(t, sandboxtest.Run{}, append(append([]string{"warm", "-q"}, server...), args...)...)
	}
	type goalDoc struct {
		Goal     float64  `json:"goal"`
		Reached  bool     `json:"reached"`
		Coverage *float64 `json:"coverage"`
		Why      string   `json:"why"`
		Reason   string   `json:"reason"`
	}
	untilDoc := func(t *testing.T, r sandboxtest.Result) *goalDoc {
		t.Helper()
		var doc struct {
			Result struct {
				UntilCoverage *goalDoc `json:"until_coverage"`
			} `json:"result"`
		}
		if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &doc) != nil {
			t.Fatalf("--json: exit %d, stdout %q, stderr %s", r.Code, r.Stdout, r.Stderr)
		}
		if doc.Result.UntilCoverage == nil {
			t.Fatalf("--json has no result.until_coverage: %s", r.Stdout)
		}
		return doc.Result.UntilCoverage
	}
	for _, c := range []struct{ name, what string }{
		{"manifest native", "--from=" + manifest + " --method=native"},
		{"manifest scan", "--from=" + manifest + " --method=scan"},
		{"selection native", "-Dgoal --method=native"},
		{"selection scan", "-Dgoal --method=scan"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append(strings.Fields(c.what), "--until-coverage", "95%", "--budget", "10%")
			r := warm(t, args...)
			var said []string
			for _, l := range strings.Split(r.Stdout, "\n") {
				if strings.Contains(l, "coverage goal") {
					said = append(said, l)
				}
			}
			if r.Code != 0 || len(said) != 1 || !strings.HasPrefix(said[0], "coverage goal 95.0% NOT reached: coverage ") || !strings.Contains(said[0], "budget") {
				t.Errorf("warm %v: exit %d, want 0 and one line saying the goal was not reached for the budget, got %q; stdout:\n%s\nstderr: %s", args, r.Code, said, r.Stdout, r.Stderr)
			}
			doc := untilDoc(t, warm(t, append(args, "--json")...))
			if doc.Goal != 0.95 || doc.Reached || doc.Coverage == nil || *doc.Coverage >= 0.95 || doc.Why != "budget" || !strings.Contains(doc.Reason, "budget") {
				t.Errorf("warm %v --json: until_coverage %+v, want the 0.95 goal not reached, its coverage, and why: budget", args, doc)
			}
		})
	}
	t.Run("goal met", func(t *testing.T) {
		doc := untilDoc(t, warm(t, "--from="+manifest, "--until-coverage", "5%", "--budget", "10%", "--json"))
		if doc.Goal != 0.05 || !doc.Reached || doc.Coverage == nil || *doc.Coverage < 0.05 || doc.Why != "" {
			t.Errorf("until_coverage %+v, want the 0.05 goal reached", doc)
		}
	})
}

package warm_test

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// planDoc is the plan warm --dry-run --json prints, and the plan in a run's document.
type planDoc struct {
	Method      string `json:"method"`
	Reason      string `json:"method_reason"`
	Tablespaces []struct {
		Name string `json:"tablespace"`
		Load int64  `json:"load_pages"`
	} `json:"tablespaces"`
	Requested int64 `json:"requested_pages"`
	Units     []struct {
		Target string `json:"target"`
		Range  string `json:"range"`
	} `json:"units"`
	LeftOut []struct {
		Index  string `json:"index"`
		Reason string `json:"reason"`
	} `json:"left_out"`
}

// shape is what a plan loads, without the counts of pages resident before (planning
// statements of a scan plan read a few pages).
func (p planDoc) shape() []string {
	var out []string
	for _, ts := range p.Tablespaces {
		out = append(out, "tablespace "+ts.Name+" "+strconv.FormatInt(ts.Load, 10))
	}
	for _, u := range p.Units {
		out = append(out, "unit "+u.Target+" "+u.Range)
	}
	for _, l := range p.LeftOut {
		out = append(out, "left out "+l.Index)
	}
	return out
}

// A dry run chooses the method and plans as the run does, and prints that plan, not a
// result: the run that follows it loads what it said by the method it said, for whatever
// method auto picks on this flavor (native, or scans on MySQL for tables scans read whole)
// and for each method asked for.
func TestDryRunIsThePlanTheRunFollows(t *testing.T) {
	db := sandboxtest.Schema(t)
	srv := sandboxtest.Flavor(t)
	plainTable(t, db, "plain", 20000)
	textsTable(t, db, 2000)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"auto, a plain table", []string{"--tables", db + ".plain"}},
		{"auto, a table with FULLTEXT", []string{"-D", db}},
		{"native", []string{"-D", db, "--method", "native"}},
		{"scan", []string{"-D", db, "--method", "scan"}},
		{"native within a budget", []string{"-D", db, "--method", "native", "--budget", "400K"}},
		{"scan within a budget", []string{"-D", db, "--method", "scan", "--budget", "400K"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			coldConn(t)
			args := append(append([]string{"warm"}, c.args...), sandboxtest.Sock(t)...)
			text := sandboxtest.CLI(t, sandboxtest.Run{}, append(args, "--dry-run")...)
			var dry struct {
				Plan   planDoc         `json:"plan"`
				Result *map[string]any `json:"result"`
			}
			r := sandboxtest.CLI(t, sandboxtest.Run{}, append(args, "--dry-run", "--json")...)
			if text.Code != 0 || r.Code != 0 {
				t.Fatalf("dry run: exit %d and %d: %s%s", text.Code, r.Code, text.Stderr, r.Stderr)
			}
			sandboxtest.JSON(t, []byte(r.Stdout), &dry)
			var real struct {
				Plan   planDoc `json:"plan"`
				Result struct {
					Method string `json:"method"`
					Reason string `json:"method_reason"`
				} `json:"result"`
			}
			r = sandboxtest.CLI(t, sandboxtest.Run{}, append(args, "--json", "-q")...)
			if r.Code != 0 {
				t.Fatalf("run: exit %d: %s", r.Code, r.Stderr)
			}
			sandboxtest.JSON(t, []byte(r.Stdout), &real)
			t.Logf("%s: %s (%s)", srv, dry.Plan.Method, dry.Plan.Reason)
			if dry.Result != nil || dry.Plan.Method == "" || dry.Plan.Method != real.Result.Method || dry.Plan.Method != real.Plan.Method || dry.Plan.Reason != real.Result.Reason {
				t.Errorf("the dry run planned %s (%s), the run used %s (%s)", dry.Plan.Method, dry.Plan.Reason, real.Result.Method, real.Result.Reason)
			}
			if d, w := dry.Plan.shape(), real.Plan.shape(); !slices.Equal(d, w) || len(d) == 0 {
				t.Errorf("the dry run's plan:\n%s\nthe run's:\n%s", strings.Join(d, "\n"), strings.Join(w, "\n"))
			}
			if dry.Plan.Method == "native" && (dry.Plan.Requested != real.Plan.Requested || dry.Plan.Requested == 0) {
				t.Errorf("native: the dry run would request %d pages, the run requested %d", dry.Plan.Requested, real.Plan.Requested)
			}
			// The text is the plan: the method and why, no table of results.
			out := text.Stdout
			if !strings.HasPrefix(out, "method: "+dry.Plan.Method+" (") || strings.Contains(out, "→") || strings.Contains(out, "pool:") || strings.Contains(out, "pages after") {
				t.Errorf("the dry run's text is not its plan:\n%s", out)
			}
			if !slices.Contains(c.args, "--method") && strings.Contains(text.Stderr+out, "asked for") {
				t.Errorf("no method was asked for, the dry run says one was:\n%s%s", text.Stderr, out)
			}
		})
	}
}

// A warm with nothing left to load succeeds and says why; it does not call itself a dry run.
func TestNothingToLoadSaysSo(t *testing.T) {
	db := sandboxtest.Schema(t)
	plainTable(t, db, "plain", 20000)
	for _, method := range []string{"native", "scan"} {
		t.Run(method, func(t *testing.T) {
			coldConn(t)
			args := append([]string{"warm", "--tables", db + ".plain", "--method", method, "-q"}, sandboxtest.Sock(t)...)
			if r := sandboxtest.CLI(t, sandboxtest.Run{}, args...); r.Code != 0 {
				t.Fatalf("first warm: exit %d: %s", r.Code, r.Stderr)
			}
			// The second plans nothing: a table whose every index is resident is not asked
			// for again (its file-metadata pages may have left the pool, and background reads
			// may touch the page counters meanwhile).
			r := sandboxtest.CLI(t, sandboxtest.Run{}, args...)
			if r.Code != 0 || strings.Contains(r.Stdout, "dry run") || !strings.Contains(r.Stdout, "nothing to load") || !strings.Contains(r.Stdout, "already resident") {
				t.Errorf("second warm: exit %d:\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
		})
	}
}

// A warm that can load nothing because the budget has no room fails (exit 1) with that
// reason, by scans or natively, also when a FULLTEXT index was skipped besides (with a full
// pool on MySQL the scan blamed the FULLTEXT skip, "every index was skipped", and the
// native load printed a dry run's line and exited 0). --budget 4K (under a page of the
// test servers' 16 KiB; a budget under InnoDB's smallest page is refused) is the budget a
// full pool leaves.
func TestNoRoomInTheBudgetSaysSo(t *testing.T) {
	db := sandboxtest.Schema(t)
	sandboxtest.Exec(t, "ANALYZE TABLE "+textsTable(t, db, 5000))
	coldConn(t)
	for _, method := range []string{"scan", "native"} {
		t.Run(method, func(t *testing.T) {
			r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"warm", "--tables", db + ".texts", "--method", method, "--budget", "4K", "-q"}, sandboxtest.Sock(t)...)...)
			line := strings.TrimSpace(r.Stderr)
			if r.Code != 1 || strings.Contains(line, "\n") || !strings.Contains(line, "nothing to warm: the budget of 0 pages (--budget 4K)") ||
				strings.Contains(line, "every index was skipped") || r.Stdout != "" {
				t.Errorf("exit %d, stderr %q, stdout %q", r.Code, r.Stderr, r.Stdout)
			}
			// The dry run exits as the warm would, after its plan.
			r = sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"warm", "--tables", db + ".texts", "--method", method, "--budget", "4K", "--dry-run"}, sandboxtest.Sock(t)...)...)
			if r.Code != 1 || !strings.Contains(r.Stderr, "nothing to warm: the budget of 0 pages (--budget 4K)") || r.Stdout == "" {
				t.Errorf("--dry-run: exit %d, stderr %q, stdout %q", r.Code, r.Stderr, r.Stdout)
			}
		})
	}
	// An index of the selection already resident does not make a warm that could load
	// none of the rest a success (the scans said it was, the native load did not).
	sandboxtest.Exec(t, "CREATE TABLE "+sqltext.Table(db, "two")+" (id INT PRIMARY KEY, k INT, pad CHAR(100), KEY k (k))",
		"INSERT INTO "+sqltext.Table(db, "two")+" SELECT seq, seq MOD 7, 'x' FROM "+sandboxtest.Flavor(t).Series(db, 1, 20000)+" ORDER BY seq",
		"ANALYZE TABLE "+sqltext.Table(db, "two"))
	coldConn(t)
	sandboxtest.Exec(t, "SELECT COUNT(*) FROM "+sqltext.Table(db, "two")+" FORCE INDEX (k)")
	r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"warm", "--tables", db + ".two", "--method", "scan", "--budget", "4K", "-q"}, sandboxtest.Sock(t)...)...)
	if r.Code != 1 || !strings.Contains(r.Stderr, "nothing to warm: the budget of 0 pages (--budget 4K)") {
		t.Errorf("an index resident, the rest over the budget: exit %d, stderr %q, stdout %q", r.Code, r.Stderr, r.Stdout)
	}
}

// A selection or a manifest that matches nothing here is exit 2 and one line, by any
// method, dry run or not.
func TestNothingMatchesIsUsage(t *testing.T) {
	db := sandboxtest.Schema(t)
	gone := "gone_" + db
	sandboxtest.Exec(t, "DROP DATABASE IF EXISTS "+sqltext.Ident(gone), "CREATE DATABASE "+sqltext.Ident(gone))
	plainTable(t, gone, "t", 1000)
	manifest := filepath.Join(sandboxtest.Dir(t), "gone.manifest")
	if r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"snapshot", "-D", gone, "-o", manifest, "--page-list", "lru-table"}, sandboxtest.Sock(t)...)...); r.Code != 0 {
		t.Fatalf("snapshot: exit %d: %s", r.Code, r.Stderr)
	}
	sandboxtest.Exec(t, "DROP DATABASE "+sqltext.Ident(gone))
	for _, what := range [][]string{{"--tables", db + ".nosuch*"}, {"-D", db}, {"--from", manifest}} {
		for _, method := range []string{"auto", "native", "scan"} {
			for _, dry := range []bool{false, true} {
				args := append(append([]string{"warm", "--method", method}, what...), sandboxtest.Sock(t)...)
				if dry {
					args = append(args, "--dry-run")
				}
				r := sandboxtest.CLI(t, sandboxtest.Run{}, append(args, "-q")...)
				line := strings.TrimSpace(r.Stderr)
				if r.Code != 2 || strings.Contains(line, "\n") || !(strings.Contains(line, "matches no tables") || strings.Contains(line, "matches nothing here")) || r.Stdout != "" {
					t.Errorf("%v: exit %d, stderr %q, stdout %q", args, r.Code, r.Stderr, r.Stdout)
				}
			}
		}
	}
	// A schema with tables does match, even where they are all resident.
	ctx := context.Background()
	if _, err := sandboxtest.Conn(t).DB.ExecContext(ctx, "CREATE TABLE "+sqltext.Table(db, "x")+" (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	if r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"warm", "-D", db, "-q"}, sandboxtest.Sock(t)...)...); r.Code != 0 {
		t.Errorf("a schema with an empty table: exit %d: %s", r.Code, r.Stderr)
	}
}

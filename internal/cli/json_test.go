package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// scalarsThatMayBeUnknown are the JSON fields whose null means "unknown" (a hit rate the
// server's counters cannot give, a coverage before a follow round of range scans, a follow
// round's coverage and lag where its hot set's pages cannot be counted on the target); no
// list is ever null.
var scalarsThatMayBeUnknown = map[string]bool{"hit_rate": true, "coverage_before": true, "coverage": true, "lag": true}

// Scripts read --json: an empty list is [] and an empty map {}, never null, in every
// command's output, successful or not (a selection with nothing skipped, nothing left
// out, no notes).
func TestJSONListsAreNeverNull(t *testing.T) {
	sb := sandboxtest.Server(t)
	db := sandboxtest.Schema(t)
	q := sqltext.Table(db, "t")
	sandboxtest.Exec(t,
		"CREATE TABLE "+q+" (id INT PRIMARY KEY, k INT, KEY k (k))",
		"INSERT INTO "+q+" SELECT seq, seq MOD 10 FROM "+sandboxtest.Flavor(t).Series(db, 1, 5000)+" ORDER BY seq",
		"ANALYZE TABLE "+q)
	dir := sandboxtest.Dir(t)
	// follow's target: follow refuses the same server on both sides.
	target := sandboxtest.SecondServer(t, 0)
	tc, err := target.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{"CREATE DATABASE " + sqltext.Ident(db), "CREATE TABLE " + q + " (id INT PRIMARY KEY, k INT, KEY k (k))"} {
		if _, err := tc.DB.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	tc.Close()
	manifest := filepath.Join(dir, "t.manifest")
	statements := filepath.Join(dir, "statements.sql")
	if err := os.WriteFile(statements, []byte("SELECT COUNT(*) FROM "+q+" WHERE k = 3;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := sandboxtest.Sock(t)
	// nil: restart cold here (the warms after it have pages to load)
	commands := [][]string{
		{"version"},
		{"sandbox", "flavors"},
		append([]string{"ping"}, root...),
		append([]string{"snapshot", "-D", db, "-o", manifest}, root...),
		append([]string{"inspect", "-D", db}, root...),
		append([]string{"inspect", "--manifest", manifest}, root...),
		append([]string{"inspect", "-D", db, "--wait-coverage", "1%"}, root...),
		append([]string{"warm", "-D", db, "--dry-run"}, root...),
		append([]string{"warm", "-D", db, "--method", "scan", "--dry-run"}, root...),
		append([]string{"warm", "-D", db, "--method", "scan", "-q"}, root...),
		append([]string{"warm", "-D", db, "-q"}, root...),
		nil,
		append([]string{"warm", "--from", manifest, "--dry-run"}, root...),
		append([]string{"warm", "--from", manifest, "-q"}, root...),
		append([]string{"warm", "--replay", statements}, root...),
		append([]string{"warm", "--replay", statements, "--dry-run", "--verbose", "--limit", "0"}, root...),
		append([]string{"bench", "--query", "SELECT 1", "--create-schema", db}, root...),
		{"follow", "--source-socket", sb.Socket, "--source-user", "root", "--target-socket", target.Socket, "--target-user", "root", "-D", db, "--rounds", "1", "--interval", "1s"},
		append([]string{"warm", "--tables", db + ".nosuch"}, root...), // a failure
	}
	for _, args := range commands {
		if args == nil {
			if _, err := sb.ColdRestart(context.Background()); err != nil {
				t.Fatal(err)
			}
			sandboxtest.Reconnect(t)
			continue
		}
		name := strings.Join(args, " ")
		if i := strings.Index(name, " --no-defaults"); i > 0 {
			name = name[:i]
		}
		t.Run(name, func(t *testing.T) {
			r := sandboxtest.CLI(t, sandboxtest.Run{}, append(args, "--json")...)
			dec := json.NewDecoder(strings.NewReader(r.Stdout))
			docs := 0
			for dec.More() {
				var doc any
				if err := dec.Decode(&doc); err != nil {
					t.Fatalf("exit %d, stdout is not JSON (%v): %q; stderr %s", r.Code, err, r.Stdout, r.Stderr)
				}
				docs++
				for _, path := range nulls(doc, "") {
					t.Errorf("null at %s: %s", path, r.Stdout)
				}
			}
			if docs == 0 {
				t.Errorf("exit %d, no JSON on stdout; stderr %s", r.Code, r.Stderr)
			}
		})
	}
}

// nulls lists the paths of the null values in a decoded JSON document, but for scalars
// whose null means unknown.
func nulls(v any, path string) []string {
	var out []string
	switch x := v.(type) {
	case nil:
		return []string{path}
	case map[string]any:
		for k, e := range x {
			if e == nil && scalarsThatMayBeUnknown[k] {
				continue
			}
			out = append(out, nulls(e, path+"."+k)...)
		}
	case []any:
		for i, e := range x {
			out = append(out, nulls(e, path+"["+itoa(i)+"]")...)
		}
	}
	return out
}

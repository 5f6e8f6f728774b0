package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// selectionSchemas creates schemas with odd names (each with its tables), dropped when the
// test ends.
func selectionSchemas(t *testing.T, tables map[string][]string) {
	t.Helper()
	for schema, names := range tables {
		q := sqltext.Ident(schema)
		sandboxtest.Exec(t, "DROP DATABASE IF EXISTS "+q, "CREATE DATABASE "+q)
		t.Cleanup(func() { sandboxtest.Exec(t, "DROP DATABASE IF EXISTS "+q) })
		for _, n := range names {
			sandboxtest.Exec(t, "CREATE TABLE "+sqltext.Table(schema, n)+" (id INT PRIMARY KEY) ENGINE=InnoDB")
		}
	}
}

// selected runs inspect --by table with the selection args (after connArgs, by default
// the shared server's) and returns its schema.table rows sorted, or fails the test on a
// non-zero exit (then its exit code alone).
func selected(t *testing.T, args ...string) []string {
	t.Helper()
	return selectedWith(t, sandboxtest.Sock(t), args...)
}

func selectedWith(t *testing.T, connArgs []string, args ...string) []string {
	t.Helper()
	r := sandboxtest.CLI(t, sandboxtest.Run{}, append(append([]string{"inspect", "--by", "table", "--json"}, connArgs...), args...)...)
	if r.Code != 0 {
		t.Errorf("inspect %q: exit %d: %s", args, r.Code, r.Stderr)
		return []string{fmt.Sprintf("exit %d", r.Code)}
	}
	var out struct {
		Rows []struct{ Schema, Table string } `json:"rows"`
	}
	sandboxtest.JSON(t, []byte(r.Stdout), &out)
	var got []string
	for _, row := range out.Rows {
		got = append(got, row.Schema+"."+row.Table)
	}
	sort.Strings(got)
	return got
}

// same reports whether got (sorted) holds exactly want.
func same(got, want []string) bool {
	w := append([]string(nil), want...)
	sort.Strings(w)
	return reflect.DeepEqual(got, w)
}

// refused runs inspect with the selection args and checks it exits 2 with one line that
// says each of want.
func refused(t *testing.T, args []string, want ...string) {
	t.Helper()
	r := sandboxtest.CLI(t, sandboxtest.Run{}, append(append([]string{"inspect", "--by", "table"}, sandboxtest.Sock(t)...), args...)...)
	msg := strings.TrimSpace(r.Stderr)
	if r.Code != 2 || strings.Contains(msg, "\n") {
		t.Errorf("inspect %q: exit %d, want 2 with one line: %s", args, r.Code, r.Stderr)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("inspect %q: %q does not say %q", args, msg, w)
		}
	}
}

// -D takes a schema's name as given, as the mysql client's -D: a leading space is part of
// the name (it was trimmed, and -D ' x' chose x, or failed where x did not exist), and so
// is a trailing one.
func TestDatabaseNameTakenAsGiven(t *testing.T) {
	lead := " t_sel_lead"
	selectionSchemas(t, map[string][]string{lead: {"t1"}})
	if got := selected(t, "-D", lead); !same(got, []string{lead + ".t1"}) {
		t.Errorf("-D %q (no schema %q): %q", lead, lead[1:], got)
	}
	selectionSchemas(t, map[string][]string{lead[1:]: {"plain"}})
	if got := selected(t, "-D", lead); !same(got, []string{lead + ".t1"}) {
		t.Errorf("-D %q (%q exists too): %q", lead, lead[1:], got)
	}
	if got := selected(t, "-D", "`"+lead+"`,"+lead[1:]); !same(got, []string{lead + ".t1", lead[1:] + ".plain"}) {
		t.Errorf("-D `%s`,%s: %q", lead, lead[1:], got)
	}
	// A trailing space is the name's too (no schema may end with one), and "a, b" names
	// " b": refused, saying so.
	refused(t, []string{"-D", lead[1:] + " "}, `unknown database "t_sel_lead " (from -D)`, "as given", `did you mean "t_sel_lead"`)
}

// --tables and --exclude split on the commas outside backtick-quoted names, not as CSV: a
// quoted name with a '"', a ',' or a '\' is the name itself; -D takes the same quoting for
// a schema with a comma.
func TestTablesQuotedNames(t *testing.T) {
	w, cd, bs := "t_sel_w", "t_sel_c,d", `t_sel_we\ird`
	selectionSchemas(t, map[string][]string{w: {`quo"ted`, "comma,t", "T"}, cd: {"y"}, bs: {"z"}})
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--tables", sqltext.Table(w, `quo"ted`)}, []string{w + `.quo"ted`}},
		{[]string{"--tables", sqltext.Table(w, "comma,t")}, []string{w + ".comma,t"}},
		{[]string{"--tables", sqltext.Table(w, "comma,t") + "," + w + ".T"}, []string{w + ".T", w + ".comma,t"}},
		{[]string{"--tables", w + `.comma\,t`}, []string{w + ".comma,t"}},
		{[]string{"--tables", w + ".*", "--exclude", sqltext.Table(w, "comma,t") + "," + w + ".T"}, []string{w + `.quo"ted`}},
		{[]string{"--tables", "t_sel_w.T", "--tables", sqltext.Table(cd, "y")}, []string{cd + ".y", w + ".T"}},
		{[]string{"-D", sqltext.Ident(cd)}, []string{cd + ".y"}},
		// A backslash in a quoted schema is one (it was dropped: unknown database
		// "t_sel_weird"), and an escaped one in a glob is one too.
		{[]string{"--tables", sqltext.Table(bs, "z")}, []string{bs + ".z"}},
		{[]string{"--tables", `t_sel_we\\ird.z`}, []string{bs + ".z"}},
		{[]string{"-D", bs}, []string{bs + ".z"}},
		{[]string{"-D", sqltext.Ident(cd) + "," + w, "--tables", "y,T"}, []string{cd + ".y", w + ".T"}},
	} {
		if got := selected(t, c.args...); !same(got, c.want) {
			t.Errorf("%q: %q, want %q", c.args, got, c.want)
		}
	}
}

// -D with --tables chooses among the tables of the -D schemas, as mysqldump's db tables...:
// a pattern without a schema applies to each, a glob schema only among them, and a pattern
// whose schema is none of them is refused (it warmed that table alone, -D dropped without a
// word). A database= of an option file is only the schema of patterns without one.
func TestDatabaseBoundsTables(t *testing.T) {
	ab, w := "t_sel_ab", "t_sel_w2"
	selectionSchemas(t, map[string][]string{ab: {"x", "T"}, w: {"T"}})
	refused(t, []string{"-D", ab, "--tables", w + ".T"}, "--tables "+w+".T", "-D ("+ab+")")
	refused(t, []string{"-D", ab, "--tables", "x," + w + ".*"}, "--tables "+w+".*")
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"-D", ab, "--tables", "T"}, []string{ab + ".T"}},
		{[]string{"-D", ab, "--tables", "*.T"}, []string{ab + ".T"}},
		{[]string{"-D", ab, "--tables", ab + ".x"}, []string{ab + ".x"}},
		{[]string{"-D", ab + "," + w, "--tables", "T"}, []string{ab + ".T", w + ".T"}},
		{[]string{"-D", ab, "--exclude", "T"}, []string{ab + ".x"}},
	} {
		if got := selected(t, c.args...); !same(got, c.want) {
			t.Errorf("%q: %q, want %q", c.args, got, c.want)
		}
	}
	// An option file's database= is a default, as for the mysql client: --tables naming
	// another schema is that table.
	cnf := filepath.Join(sandboxtest.Dir(t), "my.cnf")
	if err := os.WriteFile(cnf, []byte("[client]\ndatabase="+ab+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fromFile := []string{"--defaults-file=" + cnf, "-S", sandboxtest.Server(t).Socket, "-u", "root"}
	for _, c := range []struct {
		tables string
		want   []string
	}{{w + ".T", []string{w + ".T"}}, {"x", []string{ab + ".x"}}} {
		if got := selectedWith(t, fromFile, "--tables", c.tables); !same(got, c.want) {
			t.Errorf("database=%s --tables %s: %q, want %q", ab, c.tables, got, c.want)
		}
	}
}

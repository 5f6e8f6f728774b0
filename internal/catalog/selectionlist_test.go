package catalog_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// A --tables value is split on the commas outside backtick-quoted names, not read as CSV:
// a quoted name keeps its commas and its double quotes, globs work as before.
func TestParsePatternsSplitsOutsideQuotes(t *testing.T) {
	type st = [2]string // schema, table the pattern must select
	for _, c := range []struct {
		in   string
		want []st
	}{
		{"shop.order*", []st{{"shop", "orders"}}},
		{"shop.order*,billing.inv?", []st{{"shop", "orders"}, {"billing", "inv1"}}},
		{"a.x, a.y", []st{{"a", "x"}, {"a", "y"}}},
		{"`w`.`quo\"ted`", []st{{"w", `quo"ted`}}},
		{"`w`.`comma,t`", []st{{"w", "comma,t"}}},
		{"`w`.`comma,t`,w.T", []st{{"w", "comma,t"}, {"w", "T"}}},
		{"`c,d`.y", []st{{"c,d", "y"}}},
		{"`a``,b`.t", []st{{"a`,b", "t"}}},                   // a doubled backtick is one, the comma inside
		{"`w`.`x``y`,`w`.z", []st{{"w", "x`y"}, {"w", "z"}}}, // ... and the list goes on after it
		{`w.comma\,t`, []st{{"w", "comma,t"}}},               // a backslash keeps a comma, as it keeps a dot
		{"a`b.c,d.e", []st{{"a`b", "c"}, {"d", "e"}}},        // a backtick no other closes is a character
		{`"x.y"`, []st{{`"x`, `y"`}}},                        // double quotes are characters, not CSV quotes
		{sqltext.Table("odd, db", "we`ird \"name\", 'q'"), []st{{"odd, db", "we`ird \"name\", 'q'"}}},
	} {
		ps, err := catalog.ParsePatterns(c.in)
		if err != nil {
			t.Errorf("ParsePatterns(%q): %v", c.in, err)
			continue
		}
		if len(ps) != len(c.want) {
			t.Errorf("ParsePatterns(%q) = %d patterns %+v, want %d", c.in, len(ps), ps, len(c.want))
			continue
		}
		for i, w := range c.want {
			if !ps[i].Matches(w[0], w[1]) {
				t.Errorf("ParsePatterns(%q)[%d] = %+v: does not select %q.%q", c.in, i, ps[i], w[0], w[1])
			}
		}
	}
	if ps, _ := catalog.ParsePatterns("`w`.`comma,t`"); ps[0].Matches("w", "comma") {
		t.Error("`w`.`comma,t` selects w.comma")
	}
	if ps, err := catalog.ParsePatterns(""); err != nil || len(ps) != 0 {
		t.Errorf("an empty value: %v, %v; want no pattern", ps, err)
	}
	for _, bad := range []string{"a.x,,a.y", "a.x,", "db.["} {
		if ps, err := catalog.ParsePatterns(bad); err == nil {
			t.Errorf("ParsePatterns(%q) accepted: %+v", bad, ps)
		}
	}
}

// -D's names are taken as given, spaces and all, as the mysql client's -D; commas inside a
// backtick-quoted name do not split it.
func TestSchemaNames(t *testing.T) {
	for in, want := range map[string][]string{
		"shop":             {"shop"},
		" lead":            {" lead"},
		"lead ":            {"lead "},
		"shop,billing":     {"shop", "billing"},
		"shop, billing":    {"shop", " billing"},
		"`c,d`":            {"c,d"},
		"`c,d`,shop":       {"c,d", "shop"},
		"` lead`":          {" lead"},
		"`a``b`":           {"a`b"},
		"`a`, `b`":         {"a", "b"},
		"a`b":              {"a`b"},
		"a`b,c":            {"a`b", "c"},
		"`x`y":             {"`x`y"},
		`we\ird`:           {`we\ird`},
		`quo"ted,'single'`: {`quo"ted`, `'single'`},
		"a,,b,":            {"a", "b"},
		"":                 nil,
	} {
		if got := catalog.SchemaNames(in); !reflect.DeepEqual(got, want) {
			t.Errorf("SchemaNames(%q) = %q, want %q", in, got, want)
		}
	}
}

// With Within (-D on the command line), --tables chooses among the tables of the -D
// schemas: a pattern without a schema in each, a glob schema only among them, and a
// pattern whose schema is none of them refused. Without it (a database= of an option
// file), -D is only the schema of the patterns without one.
func TestFilterWithin(t *testing.T) {
	zoo := sandboxtest.Zoo(t)
	other := sandboxtest.Schema(t)
	sandboxtest.Exec(t, "CREATE TABLE "+sqltext.Table(other, "select")+" (id INT PRIMARY KEY) ENGINE=InnoDB",
		"CREATE TABLE "+sqltext.Table(other, "mine")+" (id INT PRIMARY KEY) ENGINE=InnoDB")
	p := func(s string) catalog.Pattern {
		pp, err := catalog.ParsePattern(s)
		if err != nil {
			t.Fatal(err)
		}
		return pp
	}
	names := func(f catalog.Filter) []string {
		cat, err := catalog.Load(context.Background(), sandboxtest.Conn(t), f)
		if err != nil {
			t.Fatalf("%+v: %v", f, err)
		}
		var out []string
		for _, tb := range cat.Tables {
			out = append(out, tb.Schema+"."+tb.Name)
		}
		return out
	}
	// A glob schema matches only among -D's.
	if got := names(catalog.Filter{Schemas: []string{zoo}, Within: true, Tables: []catalog.Pattern{p("*.select")}}); !reflect.DeepEqual(got, []string{zoo + ".select"}) {
		t.Errorf("-D %s --tables '*.select': %q", zoo, got)
	}
	// Unbound (an option file's database=): the glob looks everywhere.
	if got := names(catalog.Filter{Schemas: []string{zoo}, Tables: []catalog.Pattern{p("*.select")}}); !reflect.DeepEqual(got, []string{other + ".select", zoo + ".select"}) && !reflect.DeepEqual(got, []string{zoo + ".select", other + ".select"}) {
		t.Errorf("database=%s --tables '*.select': %q", zoo, got)
	}
	// Unqualified and qualified within -D.
	if got := names(catalog.Filter{Schemas: []string{zoo, other}, Within: true, Tables: []catalog.Pattern{p("mine"), p(other + ".select")}}); !reflect.DeepEqual(got, []string{other + ".mine", other + ".select"}) {
		t.Errorf("-D %s,%s --tables mine,%s.select: %q", zoo, other, other, got)
	}
	// A schema outside -D: refused, with the pattern and -D named.
	for _, pat := range []string{other + ".mine", "zz*.mine"} {
		_, err := catalog.Load(context.Background(), sandboxtest.Conn(t), catalog.Filter{Schemas: []string{zoo}, Within: true, Tables: []catalog.Pattern{p(pat)}})
		if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), pat) || !strings.Contains(err.Error(), "-D ("+zoo+")") {
			t.Errorf("-D %s --tables %s: want a usage error naming both, got %v", zoo, pat, err)
		}
	}
	// -A lifts the bound.
	if got := names(catalog.Filter{Schemas: []string{zoo}, Within: true, All: true, Tables: []catalog.Pattern{p(other + ".mine")}}); !reflect.DeepEqual(got, []string{other + ".mine"}) {
		t.Errorf("-A -D %s --tables %s.mine: %q", zoo, other, got)
	}
}

// The schema part of a --tables pattern chooses the schemas to read by itself: a table
// glob with a bracket class ("[ab]") chose none (it was matched against its own text), and
// a schema whose '*' is escaped (a schema named with a star) was taken for a glob, not
// looked up, so a misspelt one read nothing instead of being refused.
func TestTablePatternSchemas(t *testing.T) {
	db := sandboxtest.Schema(t)
	star := db + "*x"
	sandboxtest.Exec(t, "CREATE TABLE "+sqltext.Table(db, "a1")+" (id INT PRIMARY KEY) ENGINE=InnoDB",
		"CREATE TABLE "+sqltext.Table(db, "c1")+" (id INT PRIMARY KEY) ENGINE=InnoDB",
		"CREATE DATABASE "+sqltext.Ident(star),
		"CREATE TABLE "+sqltext.Table(star, "t")+" (id INT PRIMARY KEY) ENGINE=InnoDB")
	t.Cleanup(func() { sandboxtest.Exec(t, "DROP DATABASE IF EXISTS "+sqltext.Ident(star)) })
	load := func(pattern string) ([]string, error) {
		ps, err := catalog.ParsePatterns(pattern)
		if err != nil {
			t.Fatal(err)
		}
		cat, err := catalog.Load(context.Background(), sandboxtest.Conn(t), catalog.Filter{Tables: ps})
		if err != nil {
			return nil, err
		}
		var out []string
		for _, tb := range cat.Tables {
			out = append(out, tb.Schema+"."+tb.Name)
		}
		return out, nil
	}
	if got, err := load(db[:len(db)-1] + "?.[ab]1"); err != nil || !reflect.DeepEqual(got, []string{db + ".a1"}) {
		t.Errorf("--tables '%s?.[ab]1': %q, %v; want %s.a1", db[:len(db)-1], got, err, db)
	}
	escaped := strings.ReplaceAll(star, "*", `\*`)
	if got, err := load(escaped + ".t"); err != nil || !reflect.DeepEqual(got, []string{star + ".t"}) {
		t.Errorf("--tables '%s.t': %q, %v; want %s.t", escaped, got, err, star)
	}
	if _, err := load(`nosuch\*x.t`); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), `"nosuch*x"`) {
		t.Errorf(`--tables 'nosuch\*x.t': want a usage error naming the database nosuch*x, got %v`, err)
	}
}

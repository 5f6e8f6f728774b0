package connection

import (
	"strings"
	"testing"
)

// The mysql and mariadb clients read these lines so (mysys/my_default.c); innowarm must
// read the same password from the same ~/.my.cnf.
func TestOptionLineAsTheClientReadsIt(t *testing.T) {
	for _, tc := range []struct {
		line, key, value string
		bare             bool
	}{
		{`password=Sec#ret`, "password", "Sec", false},
		{`password="Sec#ret"`, "password", "Sec#ret", false},
		{`password='a#b' # c`, "password", "a#b", false},
		{`x = v # c`, "x", "v", false},
		{`x=v#c`, "x", "v", false},
		{`x = "v" `, "x", "v", false},
		{`x="it\"s#not" # c`, "x", `it"s#not`, false},
		{`x='a"b#c'`, "x", `a"b#c`, false},
		{`x=it's#kept`, "x", "it's#kept", false}, // an unclosed quote keeps the rest
		{`x="a" "b"`, "x", `a" "b`, false},       // one pair, first and last
		{`x="`, "x", `"`, false},
		{`x=a\sb\tc\\d\qe\`, "x", "a b\tc\\d\\qe\\", false},
		{`x='a\'b'`, "x", "a'b", false},
		{`x=`, "x", "", false},
		{`password # prompts`, "password", "", true},
		{`key_name=1`, "key_name", "1", false},
		{"x\t=\tv\t", "x", "v", false},
	} {
		key, value, hasValue := splitOptionLine(tc.line)
		if key != tc.key || value != tc.value || hasValue == tc.bare {
			t.Errorf("%s: key %q value %q (value given %v), want %q %q (bare %v)", tc.line, key, value, hasValue, tc.key, tc.value, tc.bare)
		}
	}
}

func TestOptionFileCommentsAndGroups(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "my.cnf", "  # indented comment\n[client] # a group's comment\nuser=a#b\npassword='p#w'\n[mysqld]\nuser=other\n")
	vals, err := ReadOptionFiles(OptionFileSet{DefaultsFile: p}, OptionGroups)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range vals {
		got = append(got, v.Group+"."+v.Key+"="+v.Value)
	}
	if want := "client.user=a client.password=p#w"; strings.Join(got, " ") != want {
		t.Errorf("got %q, want %q", strings.Join(got, " "), want)
	}
}

package connection

import (
	"os"
	"os/exec"
	"path/filepath"
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

// optionLines are values as my_print_defaults prints them: --key=value, --key alone.
func optionLines(vals []OptionValue) []string {
	out := []string{}
	for _, v := range vals {
		if v.Bare {
			out = append(out, "--"+v.Key)
		} else {
			out = append(out, "--"+v.Key+"="+v.Value)
		}
	}
	return out
}

// checkWithMyPrintDefaults compares what innowarm reads from file with what the client
// library reads (my_print_defaults, where installed): the same lines in the same order.
func checkWithMyPrintDefaults(t *testing.T, file string, got []string) {
	t.Helper()
	bin, err := exec.LookPath("my_print_defaults")
	if err != nil {
		t.Log("my_print_defaults is not installed: checked against the expected lines only")
		return
	}
	args := append([]string{"--defaults-file=" + file}, OptionGroups...)
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		t.Fatalf("my_print_defaults %v: %v", args, err)
	}
	if strings.Contains(string(out), "=*****") {
		// MySQL's masks passwords unless asked to show them (MariaDB's has no such flag).
		args = append([]string{args[0], "--show"}, args[1:]...)
		if out, err = exec.Command(bin, args...).Output(); err != nil {
			t.Fatalf("my_print_defaults %v: %v", args, err)
		}
	}
	want := strings.Fields(string(out))
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("innowarm reads %q, my_print_defaults %q", got, want)
	}
}

// An included file's settings apply where the !include stands, as in the clients: a
// setting after it overrides the included one, one before it is overridden. innowarm
// applied every include after the rest of the including file, so a [client] socket or
// password set after "!include" lost to the included file's (the wrong server).
func TestIncludeAppliesWhereItStands(t *testing.T) {
	dir := t.TempDir()
	inc := writeFile(t, dir, "inc.cnf", "[client]\nhost=inchost\npassword=incpw\nport=2222\nuser=incuser\n")
	main := writeFile(t, dir, "main.cnf", "[client]\nhost=before\npassword=beforepw\nuser=before\n!include "+inc+"\nhost=after\nport=3333\n[innowarm]\nparallel=3\n")
	vals, err := ReadOptionFiles(OptionFileSet{DefaultsFile: main}, OptionGroups)
	if err != nil {
		t.Fatal(err)
	}
	got := optionLines(vals)
	want := []string{"--host=before", "--password=beforepw", "--user=before", "--host=inchost", "--password=incpw", "--port=2222", "--user=incuser", "--host=after", "--port=3333", "--parallel=3"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("read %q, want %q", got, want)
	}
	checkWithMyPrintDefaults(t, main, got)

	o, _, err := resolve(t, []string{"--defaults-file=" + main}, nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	if o.Host != "after" || o.Port != 3333 || o.Password != "incpw" || o.User != "incuser" {
		t.Errorf("resolved host %q port %d password %q user %q, want after 3333 incpw incuser", o.Host, o.Port, o.Password, o.User)
	}
}

// The group of the including file goes on after an !include, whatever groups the included
// file opened; nested includes and includedirs keep their place too.
func TestNestedIncludesKeepFileOrder(t *testing.T) {
	dir := t.TempDir()
	d := filepath.Join(dir, "conf.d")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, d, "20-b.cnf", "[client]\nuser=b\n")
	writeFile(t, d, "10-a.cnf", "[client]\nuser=a\n[mysqld]\nuser=mysql\n")
	deep := writeFile(t, dir, "deep.cnf", "[client]\nsocket=/deep.sock\n")
	mid := writeFile(t, dir, "mid.cnf", "[innowarm]\nquiet\n!include "+deep+"\nport=1\n")
	main := writeFile(t, dir, "main.cnf", "[innowarm]\nparallel=2\n!include "+mid+"\nbudget=1G\n!includedir "+d+"\n[client]\nsocket=/last.sock\n")
	vals, err := ReadOptionFiles(OptionFileSet{DefaultsFile: main}, OptionGroups)
	if err != nil {
		t.Fatal(err)
	}
	got := optionLines(vals)
	want := []string{"--parallel=2", "--quiet", "--socket=/deep.sock", "--port=1", "--budget=1G", "--user=a", "--user=b", "--socket=/last.sock"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("read %q, want %q", got, want)
	}
	checkWithMyPrintDefaults(t, main, got)
}

// !includedir reads only *.cnf on Unix, as both clients do (*.ini only on Windows): a
// my.ini in /etc/mysql/conf.d set innowarm's socket to another server.
func TestIncludedirReadsOnlyCnf(t *testing.T) {
	dir := t.TempDir()
	d := filepath.Join(dir, "conf.d")
	if err := os.MkdirAll(filepath.Join(d, "sub.cnf"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, d, "a.cnf", "[client]\nsocket=/a.sock\nuser=a\n")
	writeFile(t, d, "b.ini", "[client]\nsocket=/b.sock\n")
	writeFile(t, d, "c.conf", "[client]\nuser=c\n")
	writeFile(t, d, "d.cnf.bak", "[client]\nuser=d\n")
	writeFile(t, d, "e.cnf", "[client]\nport=3307\n")
	main := writeFile(t, dir, "main.cnf", "!includedir "+d+"\n")
	vals, err := ReadOptionFiles(OptionFileSet{DefaultsFile: main}, OptionGroups)
	if err != nil {
		t.Fatal(err)
	}
	got := optionLines(vals)
	want := []string{"--socket=/a.sock", "--user=a", "--port=3307"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("read %q, want %q", got, want)
	}
	checkWithMyPrintDefaults(t, main, got)
}

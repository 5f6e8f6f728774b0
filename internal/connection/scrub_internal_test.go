package connection

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// scrubArgs hides the password of -pSECRET (and --password=SECRET, --END-password=SECRET,
// -p=SECRET) and nothing else, not even another flag's same password: the other flags' values share the argument memory, and a
// password that was also the user or the schema renamed them ("access denied for user
// xxxx"); a password of x's looped forever at full CPU. Every argument of the flag is
// hidden, whatever its value: "-pOld -pNew" left Old in ps.
func TestScrubArgsTouchesOnlyThePassword(t *testing.T) {
	saved := os.Args
	t.Cleanup(func() { os.Args = saved })
	// Heap copies: the function writes into the strings' bytes.
	args := func(a ...string) []string {
		out := make([]string, len(a))
		for i, s := range a {
			out[i] = string([]byte(s))
		}
		return out
	}
	for _, c := range []struct {
		name    string
		in      []string
		want    []string
		noValue bool // no password argument with a value
	}{
		{"password", args("innowarm", "-usame", "-psame", "--database=same", "-S", "/tmp/same.sock"),
			[]string{"innowarm", "-usame", "-pxxxx", "--database=same", "-S", "/tmp/same.sock"}, false},
		{"password", args("innowarm", "-uxx", "-pxx"), []string{"innowarm", "-uxx", "-pxx"}, false},
		{"source-password", args("innowarm", "--source-password=s3cr=t", "--target-user=s3cr=t", "-p=s3cr=t"),
			[]string{"innowarm", "--source-password=xxxxxx", "--target-user=s3cr=t", "-p=s3cr=t"}, false},
		{"password", args("innowarm", "--source-password=s3cr=t", "-p=s3cr=t"),
			[]string{"innowarm", "--source-password=s3cr=t", "-p=xxxxxx"}, false},
		{"password", args("innowarm", "--password=pw", "-Dpw"), []string{"innowarm", "--password=xx", "-Dpw"}, false},
		// After "--" the arguments are positional, not flags.
		{"password", args("innowarm", "--password=pw", "--", "--password=pw"), []string{"innowarm", "--password=xx", "--", "--password=pw"}, false},
		// Every occurrence, whatever its value, whichever spelling.
		{"password", args("innowarm", "-pOld", "-pNew"), []string{"innowarm", "-pxxx", "-pxxx"}, false},
		{"password", args("innowarm", "--password=Old", "--password=New2", "-p=Mid"),
			[]string{"innowarm", "--password=xxx", "--password=xxxx", "-p=xxx"}, false},
		{"password", args("innowarm", "--password=Old", "-p"), []string{"innowarm", "--password=xxx", "-p"}, false},
		{"source-password", args("innowarm", "--source-password=a", "--target-password=b", "--source-password=c"),
			[]string{"innowarm", "--source-password=x", "--target-password=b", "--source-password=x"}, false},
		// An argument another flag took as its value is that flag's, not a password.
		{"password", args("innowarm", "-D", "-pdb", "-u", "--password=me", "-pPW"),
			[]string{"innowarm", "-D", "-pdb", "-u", "--password=me", "-pxx"}, false},
		{"password", args("innowarm", "-p", "--password", "--password="), []string{"innowarm", "-p", "--password", "--password="}, true},
	} {
		os.Args = c.in
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		BindFlags(fs)
		BindPrefixedFlags(fs, "source")
		BindPrefixedFlags(fs, "target")
		done := make(chan bool, 1)
		go func() { done <- scrubArgs(fs, fs.Lookup(c.name)) }()
		select {
		case found := <-done:
			if found == c.noValue {
				t.Errorf("%q: found a password %v, want %v", c.in, found, !c.noValue)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%q: scrubArgs did not return", c.in)
		}
		if got := strings.Join(os.Args, " "); got != strings.Join(c.want, " ") {
			t.Errorf("args after scrubbing %q, want %q", got, strings.Join(c.want, " "))
		}
	}
}

// A command with two ends (follow) resolves one end, then the other. The same password
// given to both (--source-password=pw --target-password=pw, the common setup) must reach
// both: scrubbing at the source's Resolve once overwrote the target's argument, which the
// target's flag value still pointed into, and the target logged in with "xx". Both
// password arguments are hidden from the first Resolve on, and nothing else is touched.
func TestTwoEndsWithTheSamePassword(t *testing.T) {
	saved := os.Args
	t.Cleanup(func() { os.Args = saved })
	for _, c := range []struct {
		name         string
		srcPW, tgtPW string
		line, want   []string
	}{
		{"same password", "pw", "pw",
			[]string{"--source-password=pw", "--target-password=pw"},
			[]string{"--source-password=xx", "--target-password=xx"}},
		{"different passwords", "one", "two",
			[]string{"--source-password=one", "--target-password=two"},
			[]string{"--source-password=xxx", "--target-password=xxx"}},
		{"target first on the line", "pw", "pw",
			[]string{"--target-password=pw", "--source-password=pw"},
			[]string{"--target-password=xx", "--source-password=xx"}},
		{"password is also the users", "iw", "iw",
			[]string{"--source-user=iw", "--source-password=iw", "--target-user=iw", "--target-password=iw"},
			[]string{"--source-user=iw", "--source-password=xx", "--target-user=iw", "--target-password=xx"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			head := []string{"innowarm", "follow", "--no-defaults", "--source-socket=/s.sock", "--target-socket=/t.sock"}
			// Heap copies, as the process's own arguments: scrubbing writes into their bytes,
			// and the parser's values point into them.
			os.Args = nil
			for _, a := range append(head, c.line...) {
				os.Args = append(os.Args, string([]byte(a)))
			}
			fs := pflag.NewFlagSet("follow", pflag.ContinueOnError)
			src, tgt := BindPrefixedFlags(fs, "source"), BindPrefixedFlags(fs, "target")
			if err := fs.Parse(os.Args[2:]); err != nil {
				t.Fatal(err)
			}
			env := func(k string) string { return map[string]string{"USER": "osuser"}[k] }
			home := t.TempDir()
			want := strings.Join(append(head, c.want...), " ")
			so, _, err := src.Resolve(env, home)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(os.Args, " "); got != want {
				t.Errorf("arguments after the source's Resolve %q, want %q", got, want)
			}
			to, _, err := tgt.Resolve(env, home)
			if err != nil {
				t.Fatal(err)
			}
			if so.Password != c.srcPW || to.Password != c.tgtPW {
				t.Errorf("passwords source %q, target %q; want %q, %q", so.Password, to.Password, c.srcPW, c.tgtPW)
			}
			if got := strings.Join(os.Args, " "); got != want {
				t.Errorf("arguments after both Resolves %q, want %q", got, want)
			}
		})
	}
}

// A password flag given more than once: the last value is the password, and every one of
// them is hidden from ps ("-pOld -pNew" left "-pOld" in /proc/PID/cmdline; so did
// "--password=Old -p" all the time the prompt waited).
func TestEveryPasswordArgumentIsScrubbed(t *testing.T) {
	saved := os.Args
	t.Cleanup(func() { os.Args = saved })
	for _, c := range []struct {
		line, want []string
		password   string
		prompt     bool
	}{
		{[]string{"-pOld", "-pNew"}, []string{"-pxxx", "-pxxx"}, "New", false},
		{[]string{"--password=Old", "--password=New"}, []string{"--password=xxx", "--password=xxx"}, "New", false},
		{[]string{"--password=Old", "-p"}, []string{"--password=xxx", "-p"}, "", true},
		{[]string{"-pOld", "--password=Mid", "-p=New!"}, []string{"-pxxx", "--password=xxx", "-p=xxxx"}, "New!", false},
	} {
		head := []string{"innowarm", "ping", "--no-defaults", "-S", "/s.sock", "-u", "me"}
		os.Args = nil
		for _, a := range append(head, c.line...) {
			os.Args = append(os.Args, string([]byte(a)))
		}
		// As the command line reaches the parser: "-pSECRET" is rewritten "-p=SECRET" into
		// a new string (cli.attachPasswordValues); every other argument is os.Args' own.
		parsed := make([]string, 0, len(os.Args))
		for _, a := range os.Args[2:] {
			if len(a) > 2 && strings.HasPrefix(a, "-p") && a[2] != '=' {
				a = "-p=" + a[2:]
			}
			parsed = append(parsed, a)
		}
		fs := pflag.NewFlagSet("ping", pflag.ContinueOnError)
		f := BindFlags(fs)
		if err := fs.Parse(parsed); err != nil {
			t.Fatal(err)
		}
		o, _, err := f.Resolve(func(k string) string { return map[string]string{"USER": "osuser"}[k] }, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if o.Password != c.password || o.PasswordPrompt != c.prompt {
			t.Errorf("%q: password %q (prompt %v), want %q (prompt %v)", c.line, o.Password, o.PasswordPrompt, c.password, c.prompt)
		}
		if got, want := strings.Join(os.Args, " "), strings.Join(append(head, c.want...), " "); got != want {
			t.Errorf("arguments after Resolve %q, want %q", got, want)
		}
	}
}

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
// xxxx"); a password of x's looped forever at full CPU.
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
		name, short, secret string
		in, want            []string
	}{
		{"password", "p", "same", args("innowarm", "-usame", "-psame", "--database=same", "-S", "/tmp/same.sock"),
			[]string{"innowarm", "-usame", "-pxxxx", "--database=same", "-S", "/tmp/same.sock"}},
		{"password", "p", "xx", args("innowarm", "-uxx", "-pxx"), []string{"innowarm", "-uxx", "-pxx"}},
		{"source-password", "", "s3cr=t", args("innowarm", "--source-password=s3cr=t", "--target-user=s3cr=t", "-p=s3cr=t"),
			[]string{"innowarm", "--source-password=xxxxxx", "--target-user=s3cr=t", "-p=s3cr=t"}},
		{"password", "p", "s3cr=t", args("innowarm", "--source-password=s3cr=t", "-p=s3cr=t"),
			[]string{"innowarm", "--source-password=s3cr=t", "-p=xxxxxx"}},
		{"password", "p", "pw", args("innowarm", "--password=pw", "-Dpw"), []string{"innowarm", "--password=xx", "-Dpw"}},
		// After "--" the arguments are positional, not flags.
		{"password", "p", "pw", args("innowarm", "--password=pw", "--", "--password=pw"), []string{"innowarm", "--password=xx", "--", "--password=pw"}},
	} {
		os.Args = c.in
		done := make(chan bool, 1)
		go func() { done <- scrubArgs(c.name, c.short, c.secret) }()
		select {
		case found := <-done:
			if !found {
				t.Errorf("%q: the password was not found in %q", c.secret, c.in)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%q: scrubArgs did not return", c.secret)
		}
		if got := strings.Join(os.Args, " "); got != strings.Join(c.want, " ") {
			t.Errorf("%q: args after scrubbing %q, want %q", c.secret, got, strings.Join(c.want, " "))
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

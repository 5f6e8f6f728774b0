package connection

import (
	"os"
	"strings"
	"testing"
	"time"
)

// scrubArgs hides the password of -pSECRET (and --password=SECRET, --END-password=SECRET,
// -p=SECRET) and nothing else: the other flags' values share the argument memory, and a
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
		secret   string
		in, want []string
	}{
		{"same", args("innowarm", "-usame", "-psame", "--database=same", "-S", "/tmp/same.sock"),
			[]string{"innowarm", "-usame", "-pxxxx", "--database=same", "-S", "/tmp/same.sock"}},
		{"xx", args("innowarm", "-uxx", "-pxx"), []string{"innowarm", "-uxx", "-pxx"}},
		{"s3cr=t", args("innowarm", "--source-password=s3cr=t", "--target-user=s3cr=t", "-p=s3cr=t"),
			[]string{"innowarm", "--source-password=xxxxxx", "--target-user=s3cr=t", "-p=xxxxxx"}},
		{"pw", args("innowarm", "--password=pw", "-Dpw"), []string{"innowarm", "--password=xx", "-Dpw"}},
	} {
		os.Args = c.in
		done := make(chan bool, 1)
		go func() { done <- scrubArgs(c.secret) }()
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

package warm

import (
	"strings"
	"testing"
)

// After innowarm asks the server to abort its load, the status it then reads says how the
// load ended: a load that completed before the abort reached it is not reported as aborted
// (MySQL 9.7, Ctrl-C: "buffer pool load aborted: Buffer pool(s) load completed at ...").
func TestAbortOutcome(t *testing.T) {
	for status, want := range map[string]string{
		"Buffer pool(s) load aborted on request":           "buffer pool load aborted: Buffer pool(s) load aborted on request",
		"Buffer pool(s) load completed at 261125 20:14:45": "the buffer pool load completed before the abort reached it: Buffer pool(s) load completed at 261125 20:14:45",
	} {
		if got := abortOutcome(status); got != want || strings.Contains(got, "aborted: Buffer pool(s) load completed") {
			t.Errorf("%q: %q, want %q", status, got, want)
		}
	}
}

package cli_test

import (
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// follow keeps each round's hot set in TMPDIR: one it cannot use said "follow: stat DIR: no
// such file or directory", naming neither TMPDIR nor what it was for, and a full one was
// counted as the source's failure. It is a one-line usage error naming TMPDIR.
func TestFollowNamesAnUnusableTMPDIR(t *testing.T) {
	sb := sandboxtest.Server(t)
	r := sandboxtest.CLI(t, sandboxtest.Run{Env: []string{"TMPDIR=/nonexistent/innowarm-tmp"}}, "follow", "--rounds", "1",
		"--source-socket", sb.Socket, "--source-user", "root", "--target-socket", sb.Socket, "--target-user", "root")
	if r.Code != 2 || !strings.Contains(r.Stderr, "TMPDIR") || strings.Count(strings.TrimSpace(r.Stderr), "\n") > 0 {
		t.Errorf("follow with an unusable TMPDIR: exit %d, stderr %q; want exit 2 and one line naming TMPDIR", r.Code, r.Stderr)
	}
}

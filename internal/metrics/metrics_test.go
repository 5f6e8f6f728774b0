package metrics

import (
	"path/filepath"
	"testing"

	"github.com/innowarm/innowarm/internal/exitcode"
)

// A metrics file in a directory innowarm cannot write in failed only at each round's
// flush, as a warning, and follow exited 0: a typo in the collector's path went unnoticed.
// It is now a usage error at once (exit 2); a writable directory gets no file before the
// first flush.
func TestMetricsFileCheckedAtOnce(t *testing.T) {
	if _, err := New("", filepath.Join(t.TempDir(), "missing", "follow.prom")); err == nil || exitcode.Of(err) != exitcode.Usage {
		t.Errorf("a metrics file in a missing directory: %v (exit %d), want a usage error", err, exitcode.Of(err))
	}
	dir := t.TempDir()
	e, err := New("", filepath.Join(dir, "follow.prom"))
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("the check left %v", left)
	}
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
}

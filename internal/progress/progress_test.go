package progress

import (
	"io"
	"testing"
	"time"
)

// A non-positive interval reached the ticker of the log lines and panicked the process
// (warm --progress-interval -1s): it now falls back to the default.
func TestNonPositiveIntervalDoesNotPanic(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		r := New(Config{Title: "warm", Total: 10, Workers: 1, Out: io.Discard, Interval: d})
		r.SetDone(5)
		r.Finish(true)
		if r.cfg.Interval != 5*time.Second {
			t.Errorf("interval %s: became %s, want the 5s default", d, r.cfg.Interval)
		}
	}
}

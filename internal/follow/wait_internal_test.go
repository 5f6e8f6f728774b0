package follow

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/logx"
)

// Rounds are spaced from capture to capture: after a round whose load took longer than
// the interval, the next starts at once; after a quick one, it waits out the interval.
func TestWaitNextCountsFromTheCapture(t *testing.T) {
	ctx := context.Background()
	const interval = 30 * time.Second
	o := Options{Interval: interval, NoChurnRounds: true, Log: logx.New(io.Discard, true)}
	t0 := time.Now()
	if _, err := waitNext(ctx, o, nil, Status{OK: true}, t0.Add(-interval-time.Second), interval); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(t0); took > interval/2 {
		t.Errorf("a capture %s ago with a %s interval: waited %s, want the next round at once", interval+time.Second, interval, took)
	}
	t0 = time.Now()
	if _, err := waitNext(ctx, o, nil, Status{OK: true}, t0.Add(-900*time.Millisecond), time.Second); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(t0); took < 50*time.Millisecond {
		t.Errorf("a capture 0.9 s ago with a 1 s interval: waited %s, want the rest of the interval", took)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := waitNext(cctx, o, nil, Status{OK: true}, time.Now(), interval); err == nil {
		t.Error("an ended context: want its error")
	}
}

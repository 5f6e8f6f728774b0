package follow

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/pacing"
	"github.com/innowarm/innowarm/internal/warm"
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

// The pacing of a round: the flags' on an idle target; on a busy one --nice, unless the
// flags chose (--nice=false included).
func TestPacingFor(t *testing.T) {
	cases := []struct {
		name          string
		o             Options
		serving       bool
		nice, arrives bool
		maxRate       int64
		why           string
	}{
		{"idle, nothing asked", Options{}, false, false, false, 0, ""},
		{"idle, --max-rate", Options{Pacing: pacing.Config{MaxRate: 8 << 20}, PacingChosen: true}, false, false, false, 8 << 20, "as asked"},
		{"busy, nothing asked", Options{}, true, true, true, 0, "--nice: the target serves traffic"},
		{"busy, --nice=false", Options{PacingChosen: true}, true, false, true, 0, ""},
		{"busy, --max-rate", Options{Pacing: pacing.Config{MaxRate: 8 << 20}, PacingChosen: true}, true, false, true, 8 << 20, "as asked"},
	}
	for _, c := range cases {
		got, why := c.o.pacingFor(c.serving)
		if got.Nice != c.nice || got.TrafficArrives != c.arrives || got.MaxRate != c.maxRate || why != c.why {
			t.Errorf("%s: got %+v %q", c.name, got, why)
		}
	}
}

// What is left of a round's budget after a first load.
func TestBudgetLeft(t *testing.T) {
	tot := bufferpool.Totals{PagesTotal: 1000, PageSize: 16384}
	if b := budgetLeft(warm.Budget{Bytes: 500 * 16384}, 200, tot); b.Bytes != 300*16384 {
		t.Errorf("500 pages less 200: %d bytes", b.Bytes)
	}
	if b := budgetLeft(warm.Budget{Percent: 50}, 100, tot); b.Bytes != 400*16384 {
		t.Errorf("50%% of 1,000 pages less 100: %d bytes", b.Bytes)
	}
	if b := budgetLeft(warm.Budget{Bytes: 100 * 16384}, 300, tot); b.Bytes != 16384 {
		t.Errorf("a budget spent: %d bytes, want one page", b.Bytes)
	}
}

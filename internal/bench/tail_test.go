package bench

import (
	"testing"
	"time"
)

// A round's last interval is reported only when it lasted half an interval or more, as
// sysbench reports only at interval boundaries; a shorter stub's queries still count in
// the totals. The clock is given, not read: nothing here depends on the machine's speed.
func TestShortTailIntervalIsNotReported(t *testing.T) {
	for _, tc := range []struct {
		name      string
		tail      time.Duration
		tailQ     int
		intervals int
	}{
		{"sub-millisecond stub", 380 * time.Microsecond, 1, 2},
		{"just under half", 499 * time.Millisecond, 3, 2},
		{"half an interval", 500 * time.Millisecond, 3, 3},
		{"idle stub", 900 * time.Millisecond, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &worker{rec: newRecorder(1)}
			start := time.Unix(1000, 0)
			r := &runner{p: &Plan{Options: Options{ReportInterval: time.Second}}}
			rp := newReporter(r, roundSpec{iteration: 1, clients: 1}, []*worker{w}, start)
			queries := func(n int) {
				for range n {
					w.rec.ok(time.Millisecond, 0)
				}
			}
			queries(10)
			rp.collect(start.Add(time.Second), false)
			queries(20)
			rp.collect(start.Add(2*time.Second), false)
			queries(tc.tailQ)
			rp.collect(start.Add(2*time.Second+tc.tail), true)
			res := rp.result()
			if len(res.intervals) != tc.intervals {
				t.Errorf("%d intervals %+v, want %d", len(res.intervals), res.intervals, tc.intervals)
			}
			if want := int64(30 + tc.tailQ); res.queries != want {
				t.Errorf("round total %d queries, want %d (the stub's count too)", res.queries, want)
			}
			for _, iv := range res.intervals {
				if iv.Seconds < 0.5 {
					t.Errorf("a stub of %.4f s reported: %+v", iv.Seconds, iv)
				}
			}
		})
	}
}

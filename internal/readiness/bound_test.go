package readiness

import (
	"testing"
)

func TestBoundsSince(t *testing.T) {
	a := anchor{Covered: 900, Total: 1000, Counters: pageCounters{Read: 100, Created: 10, Data: 5000}}
	cases := []struct {
		name string
		now  pageCounters
		want Bounds
	}{
		{"nothing happened", pageCounters{Read: 100, Created: 10, Data: 5000}, Bounds{900, 900}},
		// 50 pages read into free pages: the pool grew by 50, nothing left it.
		{"reads into free pages", pageCounters{Read: 150, Created: 10, Data: 5050}, Bounds{900, 950}},
		// 50 pages read into a full pool: 50 pages left it, perhaps all of the target's.
		{"reads into a full pool", pageCounters{Read: 150, Created: 10, Data: 5000}, Bounds{850, 950}},
		// A table dropped: 300 pages freed without any read.
		{"pages freed", pageCounters{Read: 100, Created: 10, Data: 4700}, Bounds{600, 900}},
		{"created pages evict too", pageCounters{Read: 100, Created: 60, Data: 5000}, Bounds{850, 950}},
		{"the bounds stay within 0 and the total", pageCounters{Read: 5100, Created: 10, Data: 5000}, Bounds{0, 1000}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := BoundsSince(a, c.now); got != c.want {
				t.Errorf("BoundsSince = %+v, want %+v", got, c.want)
			}
		})
	}
}

package bench

import "testing"

func TestLibcRandomMatchesGlibc(t *testing.T) {
	// The first values of glibc's random() after srandom(1) (or no seeding at all).
	want := []int32{1804289383, 846930886, 1681692777, 1714636915, 1957747793, 424238335, 719885386, 1649760492, 596516649, 1189641421}
	g := newLibcRandom(1)
	for i, w := range want {
		if got := g.next(); got != w {
			t.Fatalf("value %d: got %d, want %d", i, got, w)
		}
	}
}

package keys

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The date and time fields are written without fmt (a snapshot writes a key per page):
// they must read as fmt's %0Nd and %06d did, for every value, including those wider than
// their field (a TIME's hours, a year past 9999) and those out of range.
func TestPaddedDigitsAsFmt(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 1))
	values := []int64{0, 1, 9, 10, 99, 100, 838, 999, 1000, 9999, 10000, 16383, 1 << 40, -1, -42}
	for range 2000 {
		values = append(values, rng.Int64N(100000), rng.Int64N(100))
	}
	for _, n := range values {
		for _, width := range []int{2, 4} {
			if got, want := string(appendPadded([]byte("x"), n, width)), fmt.Sprintf("x%0*d", width, n); got != want {
				t.Fatalf("appendPadded(%d, %d) = %q, want %q", n, width, got, want)
			}
		}
	}
	micros := []int32{0, 1, 9, 10, 120000, 999999, 500000, 1000000, -1}
	for range 2000 {
		micros = append(micros, rng.Int32N(1000000))
	}
	for _, m := range micros {
		for scale := 0; scale <= 6; scale++ {
			want := "x"
			if scale > 0 {
				want += "." + fmt.Sprintf("%06d", m)[:scale]
			}
			if got := string(appendFraction([]byte("x"), m, scale)); got != want {
				t.Fatalf("appendFraction(%d, %d) = %q, want %q", m, scale, got, want)
			}
		}
	}
}

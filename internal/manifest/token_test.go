package manifest

import (
	"math/rand/v2"
	"testing"
)

// isToken tests eight bytes at a time: it must say what a byte-by-byte test says, for
// every length and wherever the space, control byte or DEL is, next to the bytes either
// side of the bounds (' ' and '!', '~', DEL and 0x80).
func TestIsTokenAsByteByByte(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 3))
	near := []byte{0, 1, 0x1f, ' ', '!', '~', 0x7f, 0x80, 0x81, 0xa0, 0xff, 'a', ',', '%'}
	slow := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if s[i] <= ' ' || s[i] == 0x7f {
				return false
			}
		}
		return true
	}
	bad := 0
	for range 200000 {
		b := make([]byte, 1+rng.IntN(40))
		for i := range b {
			if rng.IntN(4) == 0 {
				b[i] = near[rng.IntN(len(near))]
			} else {
				b[i] = byte('!' + rng.IntN(94))
			}
		}
		if rng.IntN(2) == 0 { // mostly clean words, one byte changed
			for i := range b {
				b[i] = byte('!' + rng.IntN(94))
			}
			b[rng.IntN(len(b))] = byte(rng.IntN(256))
		}
		s := string(b)
		want := slow(s)
		if got := isToken(s, false); got != want {
			t.Fatalf("isToken(%q) = %v, want %v", s, got, want)
		}
		if !want {
			bad++
		}
	}
	if bad == 0 {
		t.Fatal("no word that is not a token was tried")
	}
}

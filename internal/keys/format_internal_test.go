package keys

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
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

// AppendEscaped copies runs of bytes that need no escape at once: it must write what
// escaping byte by byte wrote (referenceEscaped, as it was), for any bytes and specials.
func TestEscapedAsByteByByte(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 4))
	alphabet := []string{"a", "Z", "0", ",", ":", ";", "%", " ", "\x00", "\x7f", "\x80", "\xff", "é", "\u200b", "€", "'", "\n", "~"}
	for range 50000 {
		var b strings.Builder
		for range rng.IntN(30) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		s := b.String()
		for _, special := range []string{"", ",", ",:", ",:;"} {
			if got, want := string(AppendEscaped([]byte("x"), s, special)), string(referenceEscaped([]byte("x"), s, special)); got != want {
				t.Fatalf("AppendEscaped(%q, %q) = %q, want %q", s, special, got, want)
			}
		}
	}
}

// referenceEscaped is AppendEscaped as it was, a byte at a time.
func referenceEscaped(dst []byte, s string, special string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c <= ' ' || c == 0x7f || c == '%' || strings.IndexByte(special, c) >= 0 {
				dst = append(dst, '%', upperHex[c>>4], upperHex[c&15])
			} else {
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || !unicode.IsPrint(r) {
			for j := i; j < i+size; j++ {
				dst = append(dst, '%', upperHex[s[j]>>4], upperHex[s[j]&15])
			}
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return dst
}

package pagekey

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/keys"
)

// appendFieldText writes keys straight from the stored bytes for the common kinds: for any
// stored bytes it must write what decoding them and keys.AppendValue wrote (the manifest's
// text is unchanged), and fail where they failed. The decimals are checked against the
// decoder as it was before it stopped allocating (referenceDecimal).
func TestFieldTextAsDecodedValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 2))
	utf8 := Charset{Name: "utf8mb4", MinLen: 1, MaxLen: 4}
	var fields []Field
	for _, size := range []int{1, 2, 3, 4, 8} {
		fields = append(fields, Field{Type: keys.Type{Kind: keys.Int, Size: size}}, Field{Type: keys.Type{Kind: keys.Uint, Size: size}, Unsigned: true})
	}
	for p := 1; p <= 65; p += 1 + rng.IntN(4) {
		for _, s := range []int{0, 1, 2, p / 2, p} {
			if s <= min(p, 30) {
				fields = append(fields, Field{Name: "d", Type: keys.Type{Kind: keys.Decimal, Precision: p, Scale: s}})
			}
		}
	}
	for scale := 0; scale <= 6; scale++ {
		fields = append(fields, Field{Type: keys.Type{Kind: keys.Datetime, Scale: scale}}, Field{Type: keys.Type{Kind: keys.Timestamp, Scale: scale}},
			Field{Type: keys.Type{Kind: keys.Time, Scale: scale}})
	}
	fields = append(fields, Field{Type: keys.Type{Kind: keys.Date}}, Field{Type: keys.Type{Kind: keys.Year}},
		Field{Type: keys.Type{Kind: keys.Char}, Charset: utf8}, Field{Type: keys.Type{Kind: keys.Varchar}, Charset: utf8},
		Field{Type: keys.Type{Kind: keys.Binary}}, Field{Type: keys.Type{Kind: keys.Double}}, Field{Type: keys.Type{Kind: keys.Enum}})
	storedSize := func(f Field) int {
		switch t := f.Type; t.Kind {
		case keys.Int, keys.Uint:
			return t.Size
		case keys.Decimal:
			return DecimalBytes(t.Precision, t.Scale)
		case keys.Datetime:
			return 5 + fracBytes(t.Scale)
		case keys.Timestamp:
			return 4 + fracBytes(t.Scale)
		case keys.Time:
			return 3 + fracBytes(t.Scale)
		case keys.Date:
			return 3
		case keys.Year, keys.Enum:
			return 1
		case keys.Double:
			return 8
		}
		return rng.IntN(12)
	}
	var decimals int
	for _, f := range fields {
		for range 300 {
			b := make([]byte, storedSize(f))
			for i := range b {
				b[i] = byte(rng.Uint32())
				if rng.IntN(3) == 0 {
					b[i] = []byte{0, 0x80, 0x7f, 0xff, ' ', 'a'}[rng.IntN(6)]
				}
			}
			if rng.IntN(50) == 0 && len(b) > 1 {
				b = b[:len(b)-1] // a wrong size
			}
			got, _, gotErr := appendFieldText([]byte("x,"), &f, b)
			want, wantErr := []byte("x,"), error(nil)
			v, err := decodeValue(&f, b, false)
			if err != nil {
				wantErr = err
			} else {
				want, wantErr = keys.AppendValue(want, f.Type, v)
			}
			if (gotErr != nil) != (wantErr != nil) || gotErr == nil && !bytes.Equal(got, want) || gotErr != nil && gotErr.Error() != wantErr.Error() {
				t.Fatalf("%s stored %x: appendFieldText %q, %v; decoded %q, %v", f.Type, b, got, gotErr, want, wantErr)
			}
			if f.Type.Kind == keys.Decimal {
				ref, refErr := referenceDecimal(b, f.Type.Precision, f.Type.Scale)
				if (refErr != nil) != (gotErr != nil) || refErr == nil && "x,"+ref != string(got) {
					t.Fatalf("%s stored %x: %q, %v; the reference decoder %q, %v", f.Type, b, got, gotErr, ref, refErr)
				}
				decimals++
			}
		}
	}
	if decimals == 0 {
		t.Fatal("no decimal compared")
	}
}

// referenceDecimal is decodeDecimal as it was, a string built from strings.
func referenceDecimal(stored []byte, precision, scale int) (string, error) {
	if len(stored) != DecimalBytes(precision, scale) || len(stored) == 0 {
		return "", fmt.Errorf("%d bytes stored for DECIMAL(%d,%d), want %d", len(stored), precision, scale, DecimalBytes(precision, scale))
	}
	b := append([]byte{}, stored...)
	neg := b[0]&0x80 == 0
	b[0] ^= 0x80
	if neg {
		for i := range b {
			b[i] = ^b[i]
		}
	}
	intg := precision - scale
	var intDigits, fracDigits strings.Builder
	take := func(n int) uint64 {
		v := beUint(b[:n])
		b = b[n:]
		return v
	}
	group := func(sb *strings.Builder, digits, nbytes int) error {
		v := take(nbytes)
		s := strconv.FormatUint(v, 10)
		if len(s) > digits {
			return fmt.Errorf("a group of %d digits holds %d", digits, v)
		}
		sb.WriteString(strings.Repeat("0", digits-len(s)) + s)
		return nil
	}
	if lead := intg % 9; lead > 0 {
		if err := group(&intDigits, lead, digitsBytes[lead]); err != nil {
			return "", err
		}
	}
	for i := 0; i < intg/9; i++ {
		if err := group(&intDigits, 9, 4); err != nil {
			return "", err
		}
	}
	for i := 0; i < scale/9; i++ {
		if err := group(&fracDigits, 9, 4); err != nil {
			return "", err
		}
	}
	if trail := scale % 9; trail > 0 {
		if err := group(&fracDigits, trail, digitsBytes[trail]); err != nil {
			return "", err
		}
	}
	ip := strings.TrimLeft(intDigits.String(), "0")
	if ip == "" {
		ip = "0"
	}
	s := ip
	if scale > 0 {
		s += "." + fracDigits.String()
	}
	if neg && strings.Trim(ip+fracDigits.String(), "0") != "" {
		s = "-" + s
	}
	return s, nil
}

package units

import (
	"fmt"
	"testing"
)

func TestParseBytes(t *testing.T) {
	cases := map[string]int64{
		"0":         0,
		"1024":      1024,
		"256M":      256 << 20,
		"256m":      256 << 20,
		"1G":        1 << 30,
		"1.5G":      3 << 29,
		"64MiB":     64 << 20,
		"64 MB":     64 << 20,
		"8k":        8 << 10,
		" 2T ":      2 << 40,
		"100b":      100,
		"0.5K":      512,
		"134217728": 134217728,
	}
	for in, want := range cases {
		t.Run(in, func(t *testing.T) {
			got, err := ParseBytes(in)
			if err != nil || got != want {
				t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
			}
		})
	}
	for _, bad := range []string{"", "M", "12X", "-1", "1..2G", "abc", "1e400"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) accepted", bad)
		}
	}
}

func TestParseRate(t *testing.T) {
	got, err := ParseRate("200MB/s")
	if err != nil || got != 200<<20 {
		t.Fatalf("ParseRate = %d, %v", got, err)
	}
	if _, err := ParseRate("fast"); err == nil {
		t.Fatal("ParseRate(fast) accepted")
	}
}

func TestFormatBytes(t *testing.T) {
	cases := map[int64]string{
		0:         "0 B",
		1023:      "1023 B",
		1024:      "1 KiB",
		256 << 20: "256 MiB",
		3 << 29:   "1.5 GiB",
	}
	for in, want := range cases {
		t.Run(fmt.Sprint(in), func(t *testing.T) {
			if got := FormatBytes(in); got != want {
				t.Errorf("FormatBytes(%d) = %q; want %q", in, got, want)
			}
		})
	}
}

func TestGroup(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -20000: "-20,000"} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			if got := Group(n); got != want {
				t.Errorf("Group(%d) = %q, want %q", n, got, want)
			}
		})
	}
}

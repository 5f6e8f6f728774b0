// Package units parses and formats the sizes and rates users type: "256M", "1.5GiB", "200MB/s".
// Like the MySQL server, a bare K/M/G suffix means a power of 1024.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

var multipliers = map[string]float64{
	"":    1,
	"b":   1,
	"k":   1 << 10,
	"kb":  1 << 10,
	"kib": 1 << 10,
	"m":   1 << 20,
	"mb":  1 << 20,
	"mib": 1 << 20,
	"g":   1 << 30,
	"gb":  1 << 30,
	"gib": 1 << 30,
	"t":   1 << 40,
	"tb":  1 << 40,
	"tib": 1 << 40,
}

// ParseBytes reads "134217728", "128M", "1.5G", "64MiB" (case-insensitive).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty size")
	}
	i := strings.IndexFunc(t, func(r rune) bool { return !(unicode.IsDigit(r) || r == '.') })
	num, suffix := t, ""
	if i >= 0 {
		num, suffix = t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	}
	mult, ok := multipliers[suffix]
	if !ok || num == "" {
		return 0, fmt.Errorf("bad size %q: use a number with an optional K, M, G or T suffix (e.g. 256M)", s)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) {
		return 0, fmt.Errorf("bad size %q: use a number with an optional K, M, G or T suffix (e.g. 256M)", s)
	}
	v := f * mult
	if v > math.MaxInt64 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return int64(v), nil
}

// ParseRate reads "200MB/s", "1G/s" or a plain size meaning per second.
func ParseRate(s string) (int64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(strings.TrimSuffix(t, "/s"), "/S")
	v, err := ParseBytes(t)
	if err != nil {
		return 0, fmt.Errorf("bad rate %q: use a size per second, e.g. 200MB/s", s)
	}
	return v, nil
}

// FormatBytes prints a size with a binary unit and up to one decimal: "1.5 GiB", "512 B".
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	f := float64(n)
	suffixes := []string{"KiB", "MiB", "GiB", "TiB", "PiB"}
	i := -1
	for math.Abs(f) >= unit && i < len(suffixes)-1 {
		f /= unit
		i++
	}
	if f == math.Trunc(f) {
		return fmt.Sprintf("%.0f %s", f, suffixes[i])
	}
	return fmt.Sprintf("%.1f %s", f, suffixes[i])
}

// MBps is the throughput in MB/s (10^6 bytes, as disk tools report it).
func MBps(bytes int64, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return float64(bytes) / 1e6 / seconds
}

var englishDigits = message.NewPrinter(language.English)

// Group writes n with thousands separators (1,234,567), as the tables and progress lines
// show counts.
func Group(n int64) string { return englishDigits.Sprintf("%d", n) }

package pacing

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/innowarm/innowarm/internal/exitcode"
)

// Bound is a SHOW GLOBAL STATUS variable and the value it must not exceed.
type Bound struct {
	Name  string
	Limit float64
	// Relative marks a bound given as a bare name ("Threads_running"): as in
	// pt-online-schema-change, its limit becomes 20% above the value the server reports when
	// the governor starts (and at least that value + 1), which New fills in.
	Relative bool
}

func (b Bound) String() string {
	if b.Relative && b.Limit == 0 {
		return b.Name + " (+20%)"
	}
	return b.Name + "=" + strconv.FormatFloat(b.Limit, 'f', -1, 64)
}

var statusName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// ParseBounds reads "Threads_running=25,Innodb_row_lock_current_waits=5" in
// pt-online-schema-change's syntax: comma-separated, "=" or ":" between the name and its
// limit, a bare name for "20% above its value at start". An empty string means no bounds.
// Errors are usage errors that quote the bad part; whether each variable exists is checked
// against the server by New.
func ParseBounds(s string) ([]Bound, error) {
	var out []Bound
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		p := strings.TrimSpace(part)
		if p == "" {
			if strings.TrimSpace(s) == "" {
				return nil, nil
			}
			return nil, usagef("empty part in %q: use NAME=LIMIT[,NAME=LIMIT...], e.g. Threads_running=25", s)
		}
		name, val, hasVal := strings.Cut(p, "=")
		if !hasVal {
			name, val, hasVal = strings.Cut(p, ":")
		}
		name = strings.TrimSpace(name)
		if !statusName.MatchString(name) {
			return nil, usagef("%q: %q is not a status variable name (use NAME=LIMIT, e.g. Threads_running=25)", p, name)
		}
		key := strings.ToLower(name)
		if seen[key] {
			return nil, usagef("%q: %s is given twice", p, name)
		}
		seen[key] = true
		b := Bound{Name: name}
		if !hasVal {
			b.Relative = true
			out = append(out, b)
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, usagef("%q: the limit of %s must be a number >= 0", p, name)
		}
		b.Limit = f
		out = append(out, b)
	}
	return out, nil
}

func usagef(format string, args ...any) error {
	return exitcode.UsageError(fmt.Errorf(format, args...))
}

// exceeded returns the first bound whose (adjusted) value is above its limit, as
// "Threads_running=31 > 25", or "".
func exceeded(bounds []Bound, values map[string]float64) string {
	for _, b := range bounds {
		v, ok := values[strings.ToLower(b.Name)]
		if ok && v > b.Limit {
			return fmt.Sprintf("%s=%s > %s", b.Name, fmtNum(v), fmtNum(b.Limit))
		}
	}
	return ""
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

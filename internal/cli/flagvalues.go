package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// minDurationKey annotates a duration flag with the least value it takes when 0 means
// nothing to it (a ticker of 0 panics); flags without it take 0 (often "off") or more.
const minDurationKey = "innowarm-min-duration"

// minDuration makes the duration flag name refuse values below least, 0 included.
func minDuration(fl *pflag.FlagSet, name string, least time.Duration) {
	if err := fl.SetAnnotation(name, minDurationKey, []string{least.String()}); err != nil {
		panic(err) // a typo in a flag name: a programming error
	}
}

// checkDurations refuses, as the flags are parsed, a duration no command can use: a
// negative one anywhere (every interval, timeout and period here counts forward), and
// one below a flag's least value. Runs as every command's PreRunE.
func checkDurations(cmd *cobra.Command, _ []string) error {
	var bad error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if bad != nil {
			return
		}
		if msg := durationProblem(f); msg != "" {
			bad = usagef("--%s %s: %s", f.Name, f.Value.String(), msg)
		}
	})
	return bad
}

// durationProblem says what is wrong with a duration flag's value ("" if nothing is, or
// if f is not a duration).
func durationProblem(f *pflag.Flag) string {
	if f.Value.Type() != "duration" {
		return ""
	}
	d, err := time.ParseDuration(f.Value.String())
	if err != nil {
		return ""
	}
	if least, ok := f.Annotations[minDurationKey]; ok && len(least) == 1 {
		if floor, err := time.ParseDuration(least[0]); err == nil && d < floor {
			return "use " + least[0] + " or more"
		}
	}
	if d < 0 {
		return "a duration cannot be negative"
	}
	return ""
}

// valueProblem says, in the user's words, why a flag refused a value given in an option
// file: pflag's own error is Go's parser speaking (strconv.ParseInt: ...).
func valueProblem(f *pflag.Flag, err error) string {
	switch f.Value.Type() {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "count":
		return "not a whole number"
	case "float32", "float64":
		return "not a number"
	case "duration":
		return "not a duration (e.g. 500ms, 10s, 5m)"
	case "bool":
		return "not a boolean (use 1 or 0, true or false)"
	}
	return fmt.Sprint(err)
}

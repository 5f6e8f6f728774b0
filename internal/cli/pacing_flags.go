package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/innowarm/innowarm/internal/pacing"
	"github.com/innowarm/innowarm/internal/units"
)

// pacingFlags are the flags every warm method shares to spare the server's own work
// (docs/pacing.md).
type pacingFlags struct {
	maxLoad, criticalLoad string
	maxRate               string
	nice                  bool
	prefix                string // of the flags' names: "warm-" on a command whose warm is one part
	cmd                   *cobra.Command
}

// addPacingFlags registers --max-load, --critical-load, --max-rate and --nice on cmd.
func addPacingFlags(cmd *cobra.Command) *pacingFlags { return addPacingFlagsNamed(cmd, "") }

// addPacingFlagsNamed registers the pacing flags with prefix before their names
// (experiment recovery's --warm-nice is warm's --nice).
func addPacingFlagsNamed(cmd *cobra.Command, prefix string) *pacingFlags {
	f := &pacingFlags{prefix: prefix, cmd: cmd}
	fl := cmd.Flags()
	fl.StringVar(&f.maxLoad, prefix+"max-load", "", "pause while a SHOW GLOBAL STATUS variable is above its bound, checked every second: NAME=LIMIT[,NAME=LIMIT...], e.g. Threads_running=25 (the warm's own sessions are not counted)")
	fl.StringVar(&f.criticalLoad, prefix+"critical-load", "", "stop the warm cleanly when a status variable is above its bound, e.g. Threads_running=50")
	fl.StringVar(&f.maxRate, prefix+"max-rate", "", "cap the server's read rate (Innodb_pages_read) while warming, e.g. 200MB/s")
	fl.BoolVar(&f.nice, prefix+"nice", false, "yield to foreground work: lower the warm's read rate while a probe's latency or Threads_running grows beyond what it was before the warm, or the server's reads wait longer than they did at best (the default for a warm that starts with its traffic: warm --wait-for-server)")
	return f
}

// given says whether any pacing flag was set.
func (f *pacingFlags) given() bool {
	return f.maxLoad != "" || f.criticalLoad != "" || f.maxRate != "" || f.nice
}

// chosen says whether any pacing flag was on the command line, --nice=false included.
func (f *pacingFlags) chosen() bool {
	for _, name := range []string{"max-load", "critical-load", "max-rate", "nice"} {
		if f.cmd != nil && f.cmd.Flags().Changed(f.prefix+name) {
			return true
		}
	}
	return false
}

// underTraffic is the pacing of a warm that starts with its server's traffic: the flags'
// when any was given, else the default for that case (pacing.UnderTraffic), and the text
// that says so ("" when the flags chose).
func (f *pacingFlags) underTraffic(c pacing.Config) (pacing.Config, string) {
	if f.chosen() {
		c.TrafficArrives = true
		return c, ""
	}
	return pacing.UnderTraffic(c), "--" + f.prefix + "nice, the default when traffic arrives with the warm (--" + f.prefix + "nice=false reads at full speed)"
}

// config checks the flags and returns the governor's configuration for a warm of workers
// sessions (0: not known yet; set Config.Workers before pacing.New). Bad values are usage
// errors; whether the status variables exist is checked by pacing.New against the server.
func (f *pacingFlags) config(workers int) (pacing.Config, error) {
	c := pacing.Config{Nice: f.nice, Workers: workers}
	var err error
	if c.MaxLoad, err = pacing.ParseBounds(f.maxLoad); err != nil {
		return c, usagef("--%smax-load: %v", f.prefix, err)
	}
	if c.Critical, err = pacing.ParseBounds(f.criticalLoad); err != nil {
		return c, usagef("--%scritical-load: %v", f.prefix, err)
	}
	if f.maxRate != "" {
		if c.MaxRate, err = units.ParseRate(f.maxRate); err != nil {
			return c, usagef("--%smax-rate: %v", f.prefix, err)
		}
		if c.MaxRate < 1<<20 {
			return c, usagef("--%smax-rate %s: use at least 1MB/s", f.prefix, f.maxRate)
		}
	}
	for _, crit := range c.Critical {
		for _, load := range c.MaxLoad {
			if strings.EqualFold(crit.Name, load.Name) && !crit.Relative && !load.Relative && crit.Limit <= load.Limit {
				return c, usagef("--%scritical-load %s is not above --%smax-load %s: the warm would stop before it pauses", f.prefix, crit, f.prefix, load)
			}
		}
	}
	return c, nil
}

// describe names the pacing asked for, as the flags would ("" for none).
func (f *pacingFlags) describe() string {
	var parts []string
	for _, x := range []struct{ name, v string }{{"max-load", f.maxLoad}, {"critical-load", f.criticalLoad}, {"max-rate", f.maxRate}} {
		if x.v != "" {
			parts = append(parts, "--"+f.prefix+x.name+" "+x.v)
		}
	}
	if f.nice {
		parts = append(parts, "--"+f.prefix+"nice")
	}
	return strings.Join(parts, " ")
}

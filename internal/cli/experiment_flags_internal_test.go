package cli

import (
	"slices"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Every connection flag of an experiment either points it at an existing server or says
// nothing of which server: `experiment hotrows --login-path prod`, `--ssl` or
// `--defaults-group-suffix` alone ran on a sandbox, because the list of server flags
// predated them. A connection flag added later fails here until it is placed.
func TestExperimentConnectionFlagsArePlaced(t *testing.T) {
	for _, sub := range newExperimentCmd().Commands() {
		sub.Flags().VisitAll(func(fl *pflag.Flag) {
			if !isConnectionFlag(fl.Name) {
				return
			}
			if !slices.Contains(serverFlags, fl.Name) && !slices.Contains(notServerFlags, fl.Name) {
				t.Errorf("%s: connection flag --%s is neither a server flag nor listed as not one", sub.Name(), fl.Name)
			}
		})
		for _, name := range serverFlags {
			probe := &cobra.Command{Use: sub.Name()}
			pf := &expFlags{}
			pf.bind(probe, sub.Name(), "128M", true)
			if probe.Flags().Lookup(name) == nil {
				t.Errorf("%s: server flag --%s is not a flag of the command", sub.Name(), name)
				continue
			}
			val := "x"
			if probe.Flags().Lookup(name).Value.Type() == "bool" {
				val = "true"
			} else if probe.Flags().Lookup(name).Value.Type() == "int" {
				val = "3307"
			}
			if err := probe.Flags().Set(name, val); err != nil {
				t.Fatal(err)
			}
			if !pf.onServer(probe) {
				t.Errorf("%s --%s=%s runs on a sandbox", sub.Name(), name, val)
			}
		}
	}
}

// isConnectionFlag says whether name is one of the flags connection.BindFlags adds, by
// binding them on an empty command.
func isConnectionFlag(name string) bool {
	c := &cobra.Command{Use: "probe"}
	addConnFlags(c)
	return c.Flags().Lookup(name) != nil
}

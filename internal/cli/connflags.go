package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
)

// connFlags are the mysql-style connection flags of one command.
type connFlags struct {
	flags    *connection.Flags
	resolved *connection.Options
}

func addConnFlags(cmd *cobra.Command) *connFlags {
	// -h is the host, as in the mysql client; help is --help or -? there too.
	cmd.Flags().BoolP("help", "?", false, "help for "+cmd.Name())
	return &connFlags{flags: connection.BindFlags(cmd.Flags())}
}

// resolve merges option files, environment and flags, and applies the [innowarm] group's
// (and a command's own groups', ReadAlso) other settings to the command's own flags (a flag given on the command line wins). It
// must run before the command reads its flag variables.
func (cf *connFlags) resolve(cmd *cobra.Command) (connection.Options, error) {
	if cf.resolved != nil {
		return *cf.resolved, nil
	}
	home, _ := os.UserHomeDir()
	opts, rest, err := cf.flags.Resolve(os.Getenv, home)
	if err != nil {
		return connection.Options{}, err
	}
	known := flagNames(cmd.Root())
	for _, v := range rest {
		f := cmd.Flags().Lookup(v.Key)
		if f == nil {
			if !known[v.Key] && !v.Loose {
				return connection.Options{}, exitcode.UsageError(fmt.Errorf("option file %s [%s]: unknown option %q (prefix it with loose- to ignore it)", v.File, v.Group, v.Key))
			}
			continue
		}
		if f.Changed {
			continue
		}
		val := v.Value
		if v.Bare {
			val = "true"
		}
		if err := f.Value.Set(val); err != nil {
			return connection.Options{}, badOptionValue(v, valueProblem(f, err))
		}
		if msg := durationProblem(f); msg != "" {
			return connection.Options{}, badOptionValue(v, msg)
		}
	}
	cf.resolved = &opts
	return opts, nil
}

// open resolves the options and connects.
func (cf *connFlags) open(cmd *cobra.Command) (*connection.Conn, error) {
	opts, err := cf.resolve(cmd)
	if err != nil {
		return nil, err
	}
	return connection.Open(cmd.Context(), opts)
}

// badOptionValue names the file, the group and the setting whose value is wrong, as the
// user wrote them: a flag's parser speaks of types, not of where the value came from.
func badOptionValue(v connection.OptionValue, msg string) error {
	return exitcode.UsageError(fmt.Errorf("option file %s [%s] %s=%s: %s", v.File, v.Group, v.Key, v.Value, msg))
}

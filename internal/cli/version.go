package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// Set at build time with -ldflags "-X github.com/innowarm/innowarm/internal/cli.version=...".
var (
	version = "dev"
	commit  = ""
)

func init() { register(newVersionCmd) }

func newVersionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print innowarm's version",
		Example: "  innowarm version\n  innowarm version --json",
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]string{"version": version, "commit": buildCommit(), "go": runtime.Version()})
			}
			fmt.Fprintln(cmd.OutOrStdout(), versionLine())
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

// buildCommit is the commit innowarm was built from: set at build time, else from the
// module's build information.
func buildCommit() string {
	if commit != "" {
		return commit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return s.Value[:12]
			}
		}
	}
	return ""
}

// versionLine is what `innowarm version` and `innowarm --version` print.
func versionLine() string {
	c := buildCommit()
	// make build's version is git describe, which already names the commit when no tag does.
	built := ""
	if c != "" && !strings.HasPrefix(c, strings.TrimSuffix(version, "-dirty")) {
		built = "commit " + c + ", "
	}
	return fmt.Sprintf("innowarm %s (%s%s, %s/%s)", version, built, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

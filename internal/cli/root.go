// Package cli wires innowarm's commands: flags in, calls into the concept packages, results
// out. It holds no database logic of its own.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/pacing"
	"github.com/innowarm/innowarm/internal/sqlerr"
)

// registry holds the constructors of the top-level commands; each command's file adds its own.
var registry []func() *cobra.Command

func register(f func() *cobra.Command) { registry = append(registry, f) }

// NewRoot builds the command tree.
func NewRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "innowarm",
		Short: "Warm the InnoDB buffer pool of MariaDB/MySQL after a restart, prove it, measure it",
		Long: `innowarm puts the right pages back into an empty InnoDB buffer pool after a restart,
a failover or a new replica, shows what is resident, and measures the difference.

Connection flags follow the mysql client: -h -P -S -u -p, ~/.my.cnf ([client] and
[innowarm] groups), MYSQL_PWD, --ssl-mode. Results go to stdout (--json for scripts),
timestamped logs to stderr. Exit codes: 0 ok, 1 runtime failure, 2 bad usage or input,
3 readiness timeout, 130 interrupted.`,
		Example: `  innowarm sandbox up --pool-size 256M        # a throwaway local server
  innowarm ping -S ~/.cache/innowarm/sandbox/mysqld.sock -u root
  innowarm inspect -u admin -p -D shop --top 20
  innowarm warm -u admin -p -D shop --dry-run`,
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: false},
	}
	root.SetFlagErrorFunc(flagError)
	// --version prints what `innowarm version` prints (packages and scripts check either).
	root.Version = buildVersion()
	root.SetVersionTemplate(versionLine() + "\n")
	cobra.AddTemplateFunc("flagUsages", flagUsages)
	tmpl := root.UsageTemplate()
	tmpl = strings.ReplaceAll(tmpl, "{{.LocalFlags.FlagUsages", "{{flagUsages .LocalFlags")
	tmpl = strings.ReplaceAll(tmpl, "{{.InheritedFlags.FlagUsages", "{{flagUsages .InheritedFlags")
	root.SetUsageTemplate(tmpl)
	for _, f := range registry {
		c := f()
		root.AddCommand(c)
	}
	applyToTree(root, func(c *cobra.Command) {
		c.SetFlagErrorFunc(flagError)
		if c.Args == nil && c.Runnable() {
			c.Args = noArgs
		}
	})
	return root
}

func applyToTree(c *cobra.Command, f func(*cobra.Command)) {
	f(c)
	for _, sub := range c.Commands() {
		applyToTree(sub, f)
	}
}

func flagError(c *cobra.Command, err error) error {
	return exitcode.UsageError(fmt.Errorf("%s: %w (see '%s --help')", c.CommandPath(), err, c.CommandPath()))
}

// noArgs rejects positional arguments without echoing them: a password typed as
// "-p secret" lands here, and must not be printed back.
func noArgs(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	return exitcode.UsageError(fmt.Errorf("%s takes no positional arguments, got %d (a password goes attached: -pSECRET or --password=SECRET; see '%s --help')", c.CommandPath(), len(args), c.CommandPath()))
}

// Main runs innowarm with args and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// After the first signal, a second one kills the process the default way.
		<-ctx.Done()
		stop()
	}()
	root := NewRoot()
	root.SetArgs(attachPasswordValues(args))
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitcode.OK
	}
	code := exitcode.Of(err)
	var coded *exitcode.Error
	if !errors.As(err, &coded) && cmd != nil && !ranCommand && !errors.Is(err, context.Canceled) {
		// cobra's own parse errors (unknown command, bad arguments) are usage errors.
		code = exitcode.Usage
	}
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || code == exitcode.Runtime) {
		code = exitcode.Interrupted
		fmt.Fprintln(stderr, "innowarm: interrupted")
		return code
	}
	fmt.Fprintln(stderr, "innowarm: "+oneLine(describe(err)))
	return code
}

// attachPasswordValues rewrites the mysql client's "-pSECRET" as "-p=SECRET": the flag
// parser treats a shorthand with an optional value as a boolean and would read "SECRET"
// as more shorthand flags.
func attachPasswordValues(args []string) []string {
	out := make([]string, len(args))
	copy(out, args)
	for i, a := range out {
		if a == "--" {
			break
		}
		if len(a) > 2 && strings.HasPrefix(a, "-p") && a[2] != '=' {
			out[i] = "-p=" + a[2:]
		}
	}
	return out
}

// ranCommand is set once a command's RunE starts, to tell parse errors from run errors.
var ranCommand bool

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	s = strings.ReplaceAll(s, "\r", " ")
	return strings.ReplaceAll(s, "\n", " | ")
}

// run wraps a RunE so parse errors and run errors can be told apart.
func run(f func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ranCommand = true
		return f(cmd, args)
	}
}

// flagUsages prints flag help, showing the password flag as the mysql manual does
// (--password[=PW]) instead of pflag's rendering of its prompt sentinel.
func flagUsages(fs *pflag.FlagSet) string {
	out := fs.FlagUsages()
	ugly := " string[=\"" + connection.PasswordPromptSentinel + "\"]"
	return strings.Replace(out, ugly, "[=PW]"+strings.Repeat(" ", len(ugly)-len("[=PW]")), -1)
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// usagef is a usage error (exit 2).
func usagef(format string, args ...any) error {
	return exitcode.UsageError(fmt.Errorf(format, args...))
}

// flagNames lists every flag name of every command, so a typo in the [innowarm] option
// group is caught while settings meant for another command are not.
func flagNames(root *cobra.Command) map[string]bool {
	names := map[string]bool{}
	applyToTree(root, func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { names[f.Name] = true })
	})
	return names
}

// describe is the user's line for err: a failure of the connection itself says that the
// server went away, whatever statement was running when it did.
func describe(err error) string {
	msg := err.Error()
	var fe *exitcode.FieldError
	if errors.As(err, &fe) {
		msg = strings.Replace(msg, fe.Error(), flagMessage(fe), 1)
	}
	if errors.Is(err, pacing.ErrCritical) {
		msg += " (--critical-load)"
	}
	if sqlerr.ConnectionLost(err) && !strings.Contains(msg, lostServer) {
		return lostServer + " (it stopped, restarted or the network failed): " + msg
	}
	return msg
}

const lostServer = "lost the connection to the server"

// flagMessage says what is wrong with a value as the command line gave it: packages name
// the field of their options ("PoolSize"), the user typed a flag ("--pool-size").
func flagMessage(fe *exitcode.FieldError) string {
	msg := fe.Err.Error()
	switch fe.Field {
	case "Selection":
		if strings.HasPrefix(msg, "is empty") {
			return "choose what to warm: -D schema[,schema], --tables 'schema.table*', --all-databases, or --from MANIFEST"
		}
		return "the selection (-D, --tables, --all-databases) " + msg
	case "Manifest":
		return "--from warms what the manifest names: leave out -D, --tables and --all-databases"
	case "Path":
		return "-o " + msg
	}
	return "--" + exitcode.Words(fe.Field, "-") + " " + msg
}

// Package cli wires innowarm's commands: flags in, calls into the concept packages, results
// out. It holds no database logic of its own.
package cli

import (
	"context"
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
	"github.com/innowarm/innowarm/internal/logx"
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
timestamped logs to stderr. Exit codes: 0 ok, 1 runtime failure, 2 bad usage or input
(a missing privilege included), 3 readiness timeout, 130 interrupted (Ctrl-C; SIGTERM too,
except that snapshot --every and follow end with 0 on SIGTERM, a service manager's stop).
With --json a failed command prints {"error": ..., "exit_code": N} on stdout.`,
		Example: `  innowarm sandbox up --pool-size 256M        # a throwaway local server
  innowarm ping -S ~/.cache/innowarm/sandbox/mysqld.sock -u root
  innowarm inspect -u admin -p -D shop --top 20
  innowarm warm -u admin -p -D shop --dry-run`,
		Version:           versionLine(),
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: false},
	}
	// --version prints what `innowarm version` prints (packages and scripts check either).
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(flagError)
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
		if c.HasSubCommands() && !c.Runnable() {
			// cobra checks the arguments of a command that only groups others after it
			// has printed its help and exited 0 for a mistyped subcommand ("sandbox dwon"),
			// and checks them at all only on the root: made runnable, it refuses them.
			c.Args, c.RunE = unknownSubcommand, groupHelp
		}
		if c.Args == nil && c.Runnable() {
			c.Args = noArgs
		}
		if c.Runnable() && c.PreRunE == nil && c.PreRun == nil {
			c.PreRunE = checkDurations
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
	return exitcode.UsageError(fmt.Errorf("%s%w (see '%s --help')", commandPrefix(c), err, c.CommandPath()))
}

// commandPrefix names the subcommand at the start of an error ("warm: "): the line already
// starts with "innowarm: ".
func commandPrefix(c *cobra.Command) string {
	if !c.HasParent() {
		return ""
	}
	return strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ") + ": "
}

// unknownSubcommand is the Args of a command that only groups subcommands: any argument
// left once cobra found no subcommand of that name is a mistyped one.
func unknownSubcommand(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	hint := ""
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2 // cobra's own default, set only where it suggests itself
	}
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		hint = fmt.Sprintf(" (did you mean %q?)", s[0])
	}
	return exitcode.UsageError(fmt.Errorf("unknown command %q for %q%s (see '%s --help')", args[0], c.CommandPath(), hint, c.CommandPath()))
}

// groupHelp is what a command that only groups subcommands does alone: print its help.
func groupHelp(c *cobra.Command, _ []string) error { return c.Help() }

// noArgs rejects positional arguments without echoing them: a password typed as
// "-p secret" lands here, and must not be printed back.
func noArgs(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	return exitcode.UsageError(fmt.Errorf("%stakes no positional arguments, got %d (a password goes attached: -pSECRET or --password=SECRET; see '%s --help')", commandPrefix(c), len(args), c.CommandPath()))
}

// Main runs innowarm with args and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := notifySignals(context.Background())
	defer stop()
	root := NewRoot()
	root.SetArgs(attachPasswordValues(args))
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitcode.OK
	}
	code, msg := classify(ctx, err, cmd != nil && !ranCommand)
	var shown *shownInJSON
	if wantsJSON(cmd, args) && !errors.As(err, &shown) {
		_ = printJSONLine(stdout, errorJSON{Error: msg, ExitCode: code})
	}
	fmt.Fprintln(stderr, "innowarm: "+msg)
	return code
}

// classify gives err's exit code and its one line; parsing says cobra failed before the
// command ran (its own parse errors, unknown command or bad arguments, are usage errors).
func classify(ctx context.Context, err error, parsing bool) (int, string) {
	code := exitcode.Of(err)
	var coded *exitcode.Error
	if !errors.As(err, &coded) && parsing && !errors.Is(err, context.Canceled) {
		code = exitcode.Usage
	}
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || code == exitcode.Runtime) {
		return exitcode.Interrupted, "interrupted"
	}
	return code, oneLine(describe(err))
}

// errorJSON is what a command run with --json prints on stdout when it fails.
type errorJSON struct {
	Error    string `json:"error"`
	ExitCode int    `json:"exit_code"`
}

// shownInJSON is an error a command has already put into the JSON document it printed
// (a warm that ran in part, a readiness wait that timed out): Main does not print another.
type shownInJSON struct{ error }

func (e *shownInJSON) Unwrap() error { return e.error }

// withError adds err and its exit code to a JSON document about to be printed, and returns
// the error to return once it is: a script reads one document, with the outcome in it.
func withError(ctx context.Context, doc map[string]any, err error) error {
	if err == nil {
		return nil
	}
	doc["error"], doc["exit_code"] = errorFields(ctx, err)
	return &shownInJSON{err}
}

func errorFields(ctx context.Context, err error) (string, int) {
	code, msg := classify(ctx, err, false)
	return msg, code
}

// wantsJSON reports whether the command was asked for --json (on the command line, or
// by an option file's [innowarm] group), also when its flags failed to parse.
func wantsJSON(cmd *cobra.Command, args []string) bool {
	if cmd == nil {
		return false
	}
	f := cmd.Flags().Lookup("json")
	if f == nil {
		return false
	}
	if f.Value.String() == "true" {
		return true
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--json" || a == "--json=true" || a == "--json=1" {
			return true
		}
	}
	return false
}

// stopSignal is the cause of the context a signal cancels.
type stopSignal struct{ os.Signal }

func (s stopSignal) Error() string { return "stopped by " + s.String() }

// notifySignals cancels ctx on the first SIGINT or SIGTERM, with the signal as its cause;
// a second one kills the process the default way.
func notifySignals(parent context.Context) (context.Context, func()) {
	// A reader that went away (innowarm ... | head) made the next write to stdout or stderr
	// kill innowarm by SIGPIPE, skipping its cleanup: a sandbox left running, a server's
	// settings left changed. Ignored, such writes fail and the command ends as it would.
	signal.Ignore(syscall.SIGPIPE)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, stop := watchSignals(parent, sigs, func() { os.Exit(exitcode.Interrupted) })
	return ctx, func() {
		stop()
		signal.Stop(sigs)
	}
}

// watchSignals cancels the context at the first signal. The cleanup that follows puts back
// what innowarm changed on the server (its dump file, settings) and takes seconds at most:
// a second Ctrl-C, which used to kill the process in the middle of it, is told to wait; a
// third calls exit, and the next innowarm repairs what is left.
func watchSignals(parent context.Context, sigs <-chan os.Signal, exit func()) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			cancel(stopSignal{s})
		case <-done:
			return
		}
		for n := 2; ; n++ {
			select {
			case <-sigs:
				if n >= 3 {
					logx.Warnf("interrupted again: exiting before the cleanup ends (the next innowarm on this server puts back what is left)")
					exit()
					return
				}
				logx.Warnf("interrupted: putting back what innowarm changed on the server, a few seconds at most (interrupt again to exit at once)")
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		close(done)
		cancel(nil)
	}
}

// serviceEnd is how a long-running command (snapshot --every, follow) ends once it stops:
// SIGTERM, a service manager's stop, is its normal end (exit 0); Ctrl-C interrupts it as it
// does any command (exit 130).
func serviceEnd(ctx context.Context, err error) error {
	if ctx.Err() == nil || (err != nil && !errors.Is(err, context.Canceled)) {
		return err
	}
	var s stopSignal
	if errors.As(context.Cause(ctx), &s) && s.Signal == syscall.SIGTERM {
		logx.Infof("stopped by SIGTERM")
		return nil
	}
	return context.Canceled
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

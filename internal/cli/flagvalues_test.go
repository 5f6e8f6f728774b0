package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/cli"
	"github.com/innowarm/innowarm/internal/exitcode"
)

// runMain runs innowarm in process and checks the promise for input errors: exit 2, one
// line on stderr naming want, and with --json the error object alone on stdout.
func runMain(t *testing.T, args []string, want string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := cli.Main(args, &stdout, &stderr)
	line := strings.TrimSpace(stderr.String())
	if code != exitcode.Usage || !strings.Contains(line, want) || strings.Contains(line, "\n") || strings.Contains(line, "panic") {
		t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", args, code, line, want)
	}
	jsonOut := false
	for _, a := range args {
		jsonOut = jsonOut || a == "--json"
	}
	if !jsonOut {
		return
	}
	var doc struct {
		Error    string `json:"error"`
		ExitCode int    `json:"exit_code"`
	}
	out := stdout.String()
	if strings.Count(strings.TrimSpace(out), "\n") != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc.ExitCode != 2 || !strings.Contains(doc.Error, want) {
		t.Errorf("%v: stdout %q; want one error object with exit_code 2", args, out)
	}
}

// A negative duration (and an interval of 0 where it means nothing) is refused as the
// flags are parsed, before any server is contacted; one reached a ticker and panicked.
func TestDurationFlagsRefuseNegativeValues(t *testing.T) {
	none := "--no-defaults"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"warm", none, "-D", "x", "--progress-interval", "-1s"}, "--progress-interval -1s: use 1ms or more"},
		{[]string{"warm", none, "-D", "x", "--progress-interval", "-1s", "--json"}, "--progress-interval -1s: use 1ms or more"},
		{[]string{"warm", none, "-D", "x", "--progress-interval", "0"}, "--progress-interval 0s: use 1ms or more"},
		{[]string{"warm", none, "-D", "x", "--statement-timeout", "-1s"}, "--statement-timeout -1s: a duration cannot be negative"},
		{[]string{"bench", none, "--query", "SELECT 1", "--report-interval", "-1s", "--json"}, "--report-interval -1s: a duration cannot be negative"},
		{[]string{"bench", none, "--query", "SELECT 1", "--time", "-2s"}, "--time -2s: a duration cannot be negative"},
		{[]string{"snapshot", none, "-o", "x.manifest", "--every", "-1s", "--json"}, "--every -1s: a duration cannot be negative"},
		{[]string{"inspect", none, "--interval", "-1s"}, "--interval -1s: a duration cannot be negative"},
		{[]string{"agent", none, "--interval", "-5s"}, "--interval -5s: a duration cannot be negative"},
		{[]string{"follow", "--interval", "-1s", "--json"}, "--interval -1s: a duration cannot be negative"},
		{[]string{"experiment", "recovery", "--pool-pages-every", "-1s"}, "--pool-pages-every -1s: a duration cannot be negative"},
		{[]string{"ping", "--connect-timeout", "-1s"}, "--connect-timeout -1s: a duration cannot be negative"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) { runMain(t, tc.args, tc.want) })
	}
}

// A command that only groups others refuses a mistyped subcommand as the root does,
// rather than print its help and exit 0; alone it still prints its help.
func TestGroupCommandsRefuseUnknownSubcommands(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sandbox", "dwon"}, `unknown command "dwon" for "innowarm sandbox" (did you mean "down"?)`},
		{[]string{"experiment", "coldstrat"}, `unknown command "coldstrat" for "innowarm experiment" (did you mean "coldstart"?)`},
		{[]string{"experiment", "bogus"}, `unknown command "bogus" for "innowarm experiment"`},
		{[]string{"bogus"}, `unknown command "bogus" for "innowarm"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) { runMain(t, tc.args, tc.want) })
	}
	for _, args := range [][]string{{"sandbox"}, {"experiment"}, {}} {
		var stdout, stderr bytes.Buffer
		if code := cli.Main(args, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "Available Commands") {
			t.Errorf("%v alone: exit %d, stdout %q, stderr %q; want its help and exit 0", args, code, stdout.String(), stderr.String())
		}
	}
}

// A value in the [innowarm] group that the flag refuses names the file, the group and the
// setting, in words rather than Go's parser's.
func TestOptionFileValuesNameTheirSetting(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		setting, want string
	}{
		{"parallel=abc", "[innowarm] parallel=abc: not a whole number"},
		{"progress-interval=soon", "[innowarm] progress-interval=soon: not a duration"},
		{"progress-interval=-1s", "[innowarm] progress-interval=-1s: use 1ms or more"},
		{"statement_timeout=-1s", "[innowarm] statement-timeout=-1s: a duration cannot be negative"},
	} {
		t.Run(tc.setting, func(t *testing.T) {
			cnf := filepath.Join(dir, "my.cnf")
			if err := os.WriteFile(cnf, []byte("[innowarm]\n"+tc.setting+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			runMain(t, []string{"warm", "--defaults-file=" + cnf, "-D", "x", "--dry-run", "--json"}, "option file "+cnf+" "+tc.want)
		})
	}
}

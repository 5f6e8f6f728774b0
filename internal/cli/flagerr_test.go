package cli_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/cli"
	"github.com/innowarm/innowarm/internal/exitcode"
)

// Packages refuse values by their options' field names; the user reads the flag they
// typed, on one line, with exit 2. These all fail before any server is contacted.
func TestBadValuesNameTheirFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"sandbox pool size", []string{"sandbox", "up", "--dir", dir, "--pool-size", "1M"}, "innowarm: --pool-size 1 MiB is too small"},
		{"experiment rows", []string{"experiment", "coldstart", "--rows", "0"}, "innowarm: --rows must be at least 1, got 0"},
		{"hotrows max hot", []string{"experiment", "hotrows", "--min-hot", "50", "--max-hot", "10"}, "--max-hot 10 is less than the least hot rows, 50"},
		{"warm method", []string{"warm", "--no-defaults", "-D", "x", "--method", "bogus"}, `innowarm: --method "bogus": use`},
		{"warm split pages", []string{"warm", "--no-defaults", "-D", "x", "--split-pages", "3"}, "innowarm: --split-pages 3: at least 16"},
		{"recovery clients", []string{"experiment", "recovery", "--clients", "0"}, "innowarm: --clients 0: use 1 to 1000"},
		{"recovery duration", []string{"experiment", "recovery", "--duration", "1s"}, "innowarm: --duration 1s: use 2s or more"},
		{"recovery scenario", []string{"experiment", "recovery", "--scenarios", "bogus"}, `innowarm: scenario "bogus": use cold, innodb-load-25`},
		{"warm wait for server", []string{"warm", "--no-defaults", "-D", "x", "--wait-for-server=soon"}, `innowarm: --wait-for-server "soon": give how long to wait`},
		{"warm nothing chosen", []string{"warm", "--no-defaults"}, "innowarm: choose what to warm: -D schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := cli.Main(tc.args, &stdout, &stderr)
			line := strings.TrimSpace(stderr.String())
			if code != exitcode.Usage || !strings.Contains(line, tc.want) || strings.Contains(line, "\n") {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, line, tc.want)
			}
		})
	}
}

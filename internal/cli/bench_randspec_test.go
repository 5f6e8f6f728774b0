package cli_test

import (
	"bytes"
	"net"
	"strconv"
	"testing"

	"github.com/innowarm/innowarm/internal/cli"
	"github.com/innowarm/innowarm/internal/exitcode"
)

// --rand-spec-iter, --rand-spec-pct and --rand-spec-res (sysbench 1.0's names) tune
// --dist special; out of range, or without --dist special, they are usage errors found
// before any server is contacted.
func TestBenchRandSpecFlags(t *testing.T) {
	wl := []string{"bench", "--no-defaults", "--workload", "point-select"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--dist", "special", "--rand-spec-pct", "101"}, "--rand-spec-pct 101: want a percentage of the range"},
		{[]string{"--dist", "special", "--rand-spec-pct=-1", "--json"}, "--rand-spec-pct -1: want a percentage of the range"},
		{[]string{"--dist", "special", "--rand-spec-res", "101"}, "--rand-spec-res 101: want a percentage of the keys"},
		{[]string{"--dist", "special", "--rand-spec-iter", "0"}, "--rand-spec-iter 0: want 1 to 1000"},
		{[]string{"--dist", "special", "--rand-spec-iter", "many"}, "--rand-spec-iter"},
		{[]string{"--dist", "zipf", "--rand-spec-pct", "5"}, "apply to --dist special, not zipf:0.8"},
		{[]string{"--rand-spec-res", "90"}, "apply to --dist special, not uniform"},
		{[]string{"--dist", "special:5"}, "special takes no parameter here"},
	} {
		runMain(t, append(append([]string{}, wl...), tc.args...), tc.want)
	}
	runMain(t, []string{"bench", "--no-defaults", "--query", "SELECT 1", "--rand-spec-iter", "3"}, "apply to --workload runs with --dist special")

	// Accepted: the run gets past the plan to connecting, to a port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	args := append(append([]string{}, wl...), "-h", "127.0.0.1", "-P", port, "--dist", "special", "--rand-spec-pct", "0", "--rand-spec-res", "100", "--rand-spec-iter", "1")
	var stdout, stderr bytes.Buffer
	if code := cli.Main(args, &stdout, &stderr); code != exitcode.Runtime {
		t.Errorf("%v: exit %d, stderr %q; want exit 1 from the connection", args, code, stderr.String())
	}
}

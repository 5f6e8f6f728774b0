package readiness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/readiness"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

func TestMain(m *testing.M) { sandboxtest.Main(m, sandboxtest.Options{PoolSize: 128 << 20}) }

func TestParsePercent(t *testing.T) {
	for in, want := range map[string]float64{"95%": 0.95, "95": 0.95, "0.95": 0.95, "100%": 1, " 50 % ": 0} {
		t.Run(fmt.Sprintf("%q", in), func(t *testing.T) {
			got, err := readiness.ParsePercent(in)
			if want == 0 {
				if err == nil {
					t.Errorf("%q accepted", in)
				}
				return
			}
			if err != nil || got != want {
				t.Errorf("ParsePercent(%q) = %v, %v", in, got, err)
			}
		})
	}
	for _, bad := range []string{"", "0%", "101%", "-5", "x"} {
		if _, err := readiness.ParsePercent(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func cold(t *testing.T) {
	t.Helper()
	sandboxtest.Zoo(t)
	if _, err := sandboxtest.Server(t).ColdRestart(context.Background()); err != nil {
		t.Fatal(err)
	}
	sandboxtest.Reconnect(t)
}

// The readiness gate: exit 3 on timeout while cold, exit 0 once warm; with a manifest too.
func TestWaitCoverageExitCodes(t *testing.T) {
	zoo := sandboxtest.Zoo(t)
	sock := sandboxtest.Sock(t)
	dir := sandboxtest.Dir(t)
	mf := filepath.Join(dir, "zoo.manifest")
	// A manifest of the warm zoo: warm it by scans, snapshot it.
	if r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"warm", "-D", zoo, "--method", "scan", "-q"}, sock...)...); r.Code != 0 {
		t.Fatal(r.Stderr)
	}
	if r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"snapshot", "-D", zoo, "-o", mf}, sock...)...); r.Code != 0 {
		t.Fatal(r.Stderr)
	}
	cold(t)
	for _, target := range [][]string{{"-D", zoo}, {"--manifest", mf}} {
		r := sandboxtest.CLI(t, sandboxtest.Run{}, append(append([]string{"inspect", "--wait-coverage", "95%", "--timeout", "2s", "--interval", "500ms"}, target...), sock...)...)
		if r.Code != 3 || !strings.Contains(r.Stderr, "did not reach 95.0%") {
			t.Errorf("%v while cold: exit %d, %q", target, r.Code, r.Stderr)
		}
		// How far along the recovery is: each wait's line, and the last one, say it.
		if !strings.Contains(r.Stderr, "waiting: ") || !strings.Contains(r.Stderr, "of the 95.0% goal") {
			t.Errorf("%v while cold: no progress towards the goal in %q", target, r.Stderr)
		}
		if r.Elapsed.Seconds() < 1.9 || r.Elapsed.Seconds() > 10 {
			t.Errorf("%v: the timeout of 2 s took %s", target, r.Elapsed)
		}
	}
	if r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"warm", "--from", mf, "-q"}, sock...)...); r.Code != 0 {
		t.Fatal(r.Stderr)
	}
	for _, target := range [][]string{{"--manifest", mf}, {"-D", zoo}} {
		r := sandboxtest.CLI(t, sandboxtest.Run{}, append(append([]string{"inspect", "--wait-coverage", "95%", "--timeout", "30s", "--json"}, target...), sock...)...)
		var res readiness.Result
		if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &res) != nil || !res.Reached || res.Coverage < 0.95 || res.ETASeconds == nil || *res.ETASeconds != 0 {
			t.Errorf("%v when warm: exit %d, %s %s", target, r.Code, r.Stdout, r.Stderr)
		}
	}
	// Between counts a manifest probe answers from the page counters without reading the
	// manifest: a file damaged in place (same size and time) still gets the bounded answer;
	// a rewritten one (a new time) is counted again, and its damage found.
	fi, err := os.Stat(mf)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(mf)
	if err != nil {
		t.Fatal(err)
	}
	damaged := append([]byte(nil), raw...)
	for i := len(damaged) / 3; i < len(damaged)/3+64 && i < len(damaged); i++ {
		damaged[i] ^= 0x5a
	}
	if err := os.WriteFile(mf, damaged, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(mf, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	probe := append([]string{"inspect", "--wait-coverage", "95%", "--timeout", "5s", "--manifest", mf}, sock...)
	if r := sandboxtest.CLI(t, sandboxtest.Run{}, probe...); r.Code != 0 || !strings.Contains(r.Stdout, "bounded since by the server's page counters") {
		t.Errorf("probe between counts: exit %d, %q %q; want the counters' answer without reading the manifest", r.Code, r.Stdout, r.Stderr)
	}
	later := fi.ModTime().Add(time.Second)
	if err := os.Chtimes(mf, later, later); err != nil {
		t.Fatal(err)
	}
	if r := sandboxtest.CLI(t, sandboxtest.Run{}, probe...); r.Code == 0 {
		t.Errorf("probe of a rewritten, damaged manifest: exit 0, %q; want it read and refused", r.Stdout)
	}
	r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"inspect", "--wait-coverage", "95%"}, sock...)...)
	if r.Code != 2 || !strings.Contains(r.Stderr, "needs a target") {
		t.Errorf("no target: exit %d, %q", r.Code, r.Stderr)
	}
}

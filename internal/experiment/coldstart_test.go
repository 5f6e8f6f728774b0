package experiment_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/experiment"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// TestColdstartPhysics runs every coldstart scenario at a small scale whose data fits in
// the pool and checks what noise cannot flip: cold passes miss, hot and warmed passes do not.
func TestColdstartPhysics(t *testing.T) {
	const rows, lookups = 20_000, 2_000
	dir := sandboxtest.Dir(t)
	// The server's own dump file (the installer leaves one) is set aside and put back.
	dumpFile := sandboxtest.Server(t).Datadir + "/ib_buffer_pool"
	original, _ := os.ReadFile(dumpFile)
	res, err := experiment.Coldstart(context.Background(), target(t), experiment.ColdstartOptions{
		Schema: "exp_coldstart", Rows: rows, Queries: lookups, Snapshot: true, Interval: 100 * time.Millisecond,
		Seed: 7, Dir: dir, Progress: quiet(),
	})
	defer sandboxtest.Reconnect(t)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range res.Scenarios {
		ids = append(ids, s.ID)
		if s.Skipped != "" {
			t.Errorf("scenario %s skipped: %s", s.ID, s.Skipped)
		}
	}
	if got := strings.Join(ids, ","); got != strings.Join(experiment.ColdstartScenarios, ",") {
		t.Fatalf("scenarios %s", got)
	}
	if !res.Fits {
		t.Fatalf("the test data (%d pages) should fit the pool (%d pages)", res.Data.Pages, res.PoolPages)
	}
	if res.Lookups != lookups {
		t.Errorf("%d lookups, want %d", res.Lookups, lookups)
	}
	checkQueryFile(t, res.QueryFile, lookups)

	cold, hot := res.Pass(experiment.ScenarioCold, 1), res.Hot()
	t.Logf("cold: %d misses, hot: %d misses", cold.Misses, hot.Misses)
	// A cold pass reads from disk nearly every page its lookups touch, a hot one none.
	if cold.Misses < 100 || cold.Misses < 20*(hot.Misses+1) {
		t.Errorf("cold pass %d misses, hot pass %d: want many more cold", cold.Misses, hot.Misses)
	}
	if hot.RatioToHot != 1 || cold.RatioToHot <= 0 {
		t.Errorf("ratios: hot %v, cold %v", hot.RatioToHot, cold.RatioToHot)
	}
	// Every warm-up that covers the lookups' pages leaves the first pass next to no misses.
	for _, id := range []string{experiment.ScenarioWarm, experiment.ScenarioOldTool, experiment.ScenarioDump100, experiment.ScenarioManifest} {
		s := res.Scenario(id)
		first := s.Passes[0]
		if first.Misses > cold.Misses/50+5 {
			t.Errorf("%s: first pass after the warm-up had %d misses (cold: %d)", s.Label, first.Misses, cold.Misses)
		}
		if s.Warmup == nil || s.Warmup.Seconds <= 0 || s.Warmup.PagesAdded < cold.Misses/2 {
			t.Errorf("%s: warm-up %+v", s.Label, s.Warmup)
		}
	}
	for _, s := range res.Scenarios {
		if s.Restart == nil || s.Restart.TablePages > res.Data.Pages/50+2 || s.Restart.PoolPages == 0 {
			t.Errorf("%s: the restart left %+v", s.Label, s.Restart)
		}
		want := map[string]int{experiment.ScenarioCold: 2, experiment.ScenarioWarm: 2, experiment.ScenarioOldTool: 2}[s.ID]
		if want == 0 {
			want = 1
		}
		if len(s.Passes) != want {
			t.Errorf("%s: %d passes, want %d", s.Label, len(s.Passes), want)
		}
		for _, p := range s.Passes {
			if p.Queries != lookups || p.QPS <= 0 || p.P95 <= 0 || len(p.Curve) == 0 {
				t.Errorf("%s %s: %+v", s.Label, p.Name, p)
			}
		}
	}
	if len(res.Dumps) != 2 || res.Dumps[0].Pct != 25 || res.Dumps[0].Pages > res.PoolPages/4+1 || res.Dumps[1].Pages < res.Dumps[0].Pages {
		t.Errorf("dumps: %+v", res.Dumps)
	}
	if w := res.Scenario(experiment.ScenarioOldTool).Warmup; len(w.Statements) != 2 ||
		!strings.Contains(w.Statements[0], "`random_str2` = 0 or `random_str2` = '0'") || !strings.Contains(w.Statements[1], "`random_str` LIKE '%0%'") {
		t.Errorf("old-tool statements: %q", w.Statements)
	}

	md := res.Markdown()
	for _, want := range []string{"| scenario", "7.562", "InnoDB load 25%", "warm from manifest"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	data := checkReport(t, res, "coldstart-times", "coldstart-misses", "warmup-curve")
	if sc, _ := data["scenarios"].([]any); len(sc) != 6 {
		t.Errorf("report.json has %d scenarios", len(sc))
	}
	if schemaExists(t, "exp_coldstart") {
		t.Errorf("the experiment's schema was not dropped")
	}
	if now, _ := os.ReadFile(dumpFile); string(now) != string(original) {
		t.Errorf("the server's dump file was not put back: %d bytes before, %d after", len(original), len(now))
	}
}

// checkQueryFile checks the 2017 format and that every lookup is of a distinct key.
func checkQueryFile(t *testing.T, path string, n int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "select * from test_data where random_str = '") || !strings.HasSuffix(line, "';") {
			t.Fatalf("query file line %q", line)
		}
		seen[line] = true
	}
	if len(seen) != n {
		t.Errorf("query file: %d distinct lookups, want %d", len(seen), n)
	}
}

func TestColdstartNeedsARestartMethod(t *testing.T) {
	tg := experiment.OnServer(sandboxtest.Server(t).ConnOptions(), "", nil)
	_, err := experiment.Coldstart(context.Background(), tg, experiment.ColdstartOptions{Rows: 10, Queries: 10, Dir: sandboxtest.Dir(t)})
	var fe *exitcode.FieldError
	if !errors.As(err, &fe) || fe.Field != "RestartCmd" || exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("err = %v", err)
	}
}

package follow_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/follow"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/metrics"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/warm"
)

// A round of range scans (--method scan on a logical standby) within a budget that holds a
// fifth of the hot set: the coverage said 0.5 ("coverage_of": "range statements", one of
// the two statements run) where a sixth of the hot set's pages were resident, and the
// gauge innowarm_follow_coverage_ratio a Prometheus user reads as a page fraction said the
// same. The coverage is now the share of the hot set's pages resident, found in the
// standby's own trees, and it cannot exceed what was loaded into a cold pool.
func TestFollowByRangeScansCoverageIsOfPages(t *testing.T) {
	ctx := context.Background()
	source := sandboxtest.Server(t)
	target := sandboxtest.SecondServer(t, 64<<20)
	onBothEnds(t, target, "fcp", func(conn *connection.Conn, end int) []string {
		order := []string{"seq", "seq * 13 % 100003"}[end]
		return paddedTable(conn, "fcp", "seq", 100000, order)
	})
	if _, err := sandboxtest.Conn(t).DB.ExecContext(ctx, "SELECT COUNT(*) FROM fcp.t FORCE INDEX (PRIMARY) WHERE pad = '' AND id < 60000"); err != nil {
		t.Fatal(err)
	}
	if _, err := target.ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	budget, err := warm.ParseBudget("2M")
	if err != nil {
		t.Fatal(err)
	}
	exp, err := metrics.New("", "")
	if err != nil {
		t.Fatal(err)
	}
	m := follow.NewMetrics(exp.Registry)
	var st follow.Status
	o := follow.Options{Source: source.ConnOptions(), Target: target.ConnOptions(), Interval: time.Second, Rounds: 1, Method: "scan", Budget: budget,
		Filter: catalog.Filter{Schemas: []string{"fcp"}}, Log: logx.New(os.Stderr, false)}
	if err := follow.Run(ctx, o, m, func(s follow.Status) { st = s }); err != nil {
		t.Fatal(err)
	}
	if !st.OK || st.Paths[warm.PathSQL] == 0 || st.KeyRanges == 0 || st.HotSetPages < 500 {
		t.Fatalf("want a hot set of hundreds of pages read by range scans: %+v", st)
	}
	if st.CoverageOf != follow.CoverageOfHotSet && st.CoverageOf != follow.CoverageOfCounted {
		t.Errorf("coverage of %q: want a share of the hot set's pages", st.CoverageOf)
	}
	// The pool was cold: what is resident of the hot set is what the round read, and the
	// budget (128 pages of 16 KiB, and the non-leaf pages and the range scans' ends past it).
	if bound := float64(st.Loaded) + 0.05*float64(st.HotSetPages); math.IsNaN(st.Coverage) || st.Coverage*float64(st.HotSetPages) > bound {
		t.Errorf("coverage %.3f of %d hot pages, with %d pages loaded into a cold pool: more than it can hold (range statements %d of %d)",
			st.Coverage, st.HotSetPages, st.Loaded, st.RangeStatementsRun, st.RangeStatements)
	}
	mfs, err := exp.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "innowarm_follow_coverage_ratio" {
			if v := mf.GetMetric()[0].GetGauge().GetValue(); v != st.Coverage {
				t.Errorf("innowarm_follow_coverage_ratio %v, want the round's page coverage %v", v, st.Coverage)
			}
		}
	}
}

// A coverage no page can measure (every index of a logical copy read by range scans, its
// trees unreadable here) is unknown: null in --json, never a share of statements.
func TestFollowUnknownCoverageIsNullInJSON(t *testing.T) {
	s := follow.Status{OK: true, Coverage: math.NaN(), Lag: math.NaN(), CoverageOf: follow.CoverageUnknown, UncountedPages: 300, RangeStatements: 4, RangeStatementsRun: 4}
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"coverage":null`, `"lag":null`, `"coverage_of":"unknown"`, `"uncounted_pages":300`, `"range_statements_run":4`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("--json lacks %s: %s", want, js)
		}
	}
	s.Coverage, s.Lag, s.CoverageOf = 0.25, 0.75, follow.CoverageOfHotSet
	if js, err = json.Marshal(s); err != nil || !strings.Contains(string(js), `"coverage":0.25`) || !strings.Contains(string(js), `"lag":0.75`) {
		t.Errorf("a known coverage: %s %v", js, err)
	}
}

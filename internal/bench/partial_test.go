package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// A run stopped by a failed query reports what ran before the failure, under a header
// that says the figures are partial (and no CSV line, which could not say it). Before, the
// level in flight printed nothing: a long --time run lost its whole summary to an error in
// its last second, or to a server that went away.
func TestFailedRunReportsItsPartialResults(t *testing.T) {
	schema := "t_partial_results" // does not exist: the run creates it and drops it
	c := sandboxtest.Conn(t)
	o := Defaults()
	o.Schema = schema
	o.Query = "SELECT 1\nSELECT 2\nSELEC 3\nSELECT 4" // the third one fails, on the server
	p, err := NewPlan(o)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	var out, csv bytes.Buffer
	rep, err := Run(context.Background(), p, Env{Admin: c, Sink: &Sink{Out: &out, CSV: &csv}})
	if err == nil || !strings.Contains(err.Error(), "SELEC 3") {
		t.Fatalf("run: err %v, want the failed statement", err)
	}
	if rep == nil || len(rep.Runs) != 1 {
		t.Fatalf("report %+v: want the level that failed, as partial", rep)
	}
	l := rep.Runs[0]
	if l.Partial == "" || l.Queries != 2 {
		t.Fatalf("level: partial %q, %d queries; want partial and the 2 that ran before the failure", l.Partial, l.Queries)
	}
	if !strings.HasPrefix(out.String(), "Benchmark (PARTIAL: ") || !strings.Contains(out.String(), "\tQueries: 2 in ") {
		t.Fatalf("block:\n%s", out.String())
	}
	// The statement that stopped the run failed: the block counts it. Before, a run that
	// exited 1 on a failed query printed "0 errors".
	if l.Errors != 1 || !strings.Contains(out.String(), " per second, 1 error\n") {
		t.Fatalf("level: %d errors, want the failed statement counted:\n%s", l.Errors, out.String())
	}
	if csv.Len() != 0 {
		t.Fatalf("a partial level printed a CSV line: %q", csv.String())
	}
}

package experiment_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/experiment"
)

func TestConcurrencyMatrix(t *testing.T) {
	res, err := experiment.Concurrency(context.Background(), target(t), experiment.ConcurrencyOptions{
		Schema: "exp_concurrency", Clients: []int{1, 4}, Scale: 0.0001, Iterations: 1, Progress: quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	per := experiment.ScaledPerClient(0.0001)
	if !slices.Equal(per, []int64{1, 10, 30, 50, 100}) {
		t.Fatalf("queries per client at scale 0.0001: %v", per)
	}
	if len(res.Cells) != 2*len(per) {
		t.Fatalf("%d cells", len(res.Cells))
	}
	for _, c := range res.Cells {
		if c.Queries != int64(c.Clients)*c.QueriesPerClient || c.Errors != 0 || c.P95 <= 0 || c.MsPerQuery <= 0 {
			t.Errorf("cell %+v", c)
		}
	}
	md := res.Markdown()
	for _, want := range []string{"Total seconds", "Milliseconds per query", "p95 latency", "| clients / queries per client"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	checkReport(t, res, "concurrency-seconds", "concurrency-ms-per-query")
	if schemaExists(t, "exp_concurrency") {
		t.Errorf("the schema bench created was not dropped")
	}
}

func TestScaledPerClient(t *testing.T) {
	if got := experiment.ScaledPerClient(0.001); !slices.Equal(got, []int64{1, 10, 100, 300, 500, 1000}) {
		t.Errorf("scale 0.001: %v", got)
	}
	if got := experiment.ScaledPerClient(0.000001); !slices.Equal(got, []int64{1}) {
		t.Errorf("scale 1e-6: %v", got)
	}
}

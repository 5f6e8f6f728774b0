package experiment_test

import (
	"context"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/experiment"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// TestHotrowsPhysics: on a table twice the pool, random hot rows spread over nearly one
// page each, so a few hundred fit and a few thousand do not; clustered, the same rows
// share pages and all fit.
func TestHotrowsPhysics(t *testing.T) {
	c := sandboxtest.Conn(t)
	var oldBlocks int64
	if err := c.DB.QueryRow("SELECT @@GLOBAL.innodb_old_blocks_time").Scan(&oldBlocks); err != nil {
		t.Fatal(err)
	}
	// The sizes follow the test pool (larger on MySQL, whose own pages take half of it).
	scale := testPool() / (16 << 20)
	res, err := experiment.Hotrows(context.Background(), target(t), experiment.HotrowsOptions{
		Schema: "exp_hotrows", Rows: 150_000 * scale, Queries: 2_000, MinHot: 200 * scale, MaxHot: 3_200 * scale, Seed: 7, MakeYoung: true, Progress: quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Random) != 5 || len(res.Clustered) != 5 {
		t.Fatalf("%d random and %d clustered points, want 5 each", len(res.Random), len(res.Clustered))
	}
	if res.TableToPool < 1.5 {
		t.Fatalf("the table is only %.1f times the pool", res.TableToPool)
	}
	if res.RowsPerPage < 50 || res.RowsPerPage > 100 {
		t.Errorf("%.1f rows per page: sbtest rows are ~224 bytes, ~70 a page", res.RowsPerPage)
	}
	for i, p := range res.Random {
		c := res.Clustered[i]
		t.Logf("K=%d: random %d pages %.3f misses/query; clustered %d pages %.3f", p.K, p.Pages, p.MissesPerQuery, c.Pages, c.MissesPerQuery)
		if i > 0 && p.Pages <= res.Random[i-1].Pages {
			t.Errorf("random: %d pages at K=%d, %d at K=%d: the pages must grow with K", p.Pages, p.K, res.Random[i-1].Pages, res.Random[i-1].K)
		}
		if p.Pages > p.K || p.Pages < p.K/2 {
			t.Errorf("random K=%d spans %d pages: want nearly one page per row", p.K, p.Pages)
		}
		if c.Pages*20 > c.K {
			t.Errorf("clustered K=%d spans %d pages", c.K, c.Pages)
		}
		if !c.Fits {
			t.Errorf("clustered K=%d (%d pages) does not fit: %.3f misses/query", c.K, c.Pages, c.MissesPerQuery)
		}
		if p.Queries != 2000 || p.QPS <= 0 {
			t.Errorf("random K=%d: %+v", p.K, p)
		}
	}
	// 200 rows on ~200 pages fit a pool of ~1,000; 3,200 rows on ~1,700 pages cannot.
	if small := res.Random[0]; !small.Fits {
		t.Errorf("random K=%d (%d pages) should fit: %.3f misses/query", small.K, small.Pages, small.MissesPerQuery)
	}
	if big := res.Random[4]; big.Pages <= res.PoolPages || big.MissesPerQuery < 0.2 {
		t.Errorf("random K=%d (%d pages, pool %d) should not fit: %.3f misses/query", big.K, big.Pages, res.PoolPages, big.MissesPerQuery)
	}
	if !res.KneeRandom.Found() || res.KneeClustered.Found() {
		t.Errorf("knees: random %+v, clustered %+v", res.KneeRandom, res.KneeClustered)
	}
	var after int64
	if err := sandboxtest.Conn(t).DB.QueryRow("SELECT @@GLOBAL.innodb_old_blocks_time").Scan(&after); err != nil || after != oldBlocks {
		t.Errorf("innodb_old_blocks_time is %d after the run, was %d (%v)", after, oldBlocks, err)
	}
	if md := res.Markdown(); !strings.Contains(md, "stopped fitting between") || !strings.Contains(md, "| random pages") {
		t.Errorf("markdown:\n%s", md)
	}
	checkReport(t, res, "hotrows-knee", "hotrows-pages")
	if schemaExists(t, "exp_hotrows") {
		t.Errorf("the experiment's schema was not dropped")
	}
}

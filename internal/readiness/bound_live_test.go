package readiness_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/readiness"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/warm"
)

// A probe counts pages once, then answers from the server's counters while they settle the
// question; activity that could change the answer, and a restart, make it count again.
func TestBoundedProbeCountsOnlyWhenNeeded(t *testing.T) {
	ctx := context.Background()
	zoo := sandboxtest.Zoo(t)
	cold(t)
	conn := sandboxtest.Conn(t)
	cat, err := catalog.Load(ctx, conn, catalog.Filter{Schemas: []string{zoo}})
	if err != nil {
		t.Fatal(err)
	}
	dir := sandboxtest.Dir(t)
	probe := func(want float64) (float64, bool) {
		t.Helper()
		b := &readiness.Bounded{Conn: sandboxtest.Conn(t), Target: readiness.Selection{Conn: sandboxtest.Conn(t), Catalog: cat}, Key: "zoo", Want: want, StateDir: dir}
		c, detail, err := b.Coverage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("want %.0f%%: %.3f exact=%v: %s", 100*want, c, b.Exact, detail)
		return c, b.Exact
	}
	cold0, exact := probe(0.95)
	if !exact || cold0 >= 0.95 {
		t.Fatalf("first probe on a cold pool: coverage %.3f, exact %v; want an exact count below 95%%", cold0, exact)
	}
	// A selection's size comes from statistics: a count below the threshold is not
	// carried forward.
	if _, exact := probe(0.95); !exact {
		t.Errorf("second probe below the threshold answered from bounds, though statistics may change the selection's size")
	}
	if r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"warm", "-D", zoo, "--method", "scan", "-q"}, sandboxtest.Sock(t)...)...); r.Code != 0 {
		t.Fatal(r.Stderr)
	}
	// Pages were read: the bounds no longer settle it, the probe counts.
	warmC, exact := probe(0.95)
	if !exact || warmC < 0.95 {
		t.Fatalf("after the warm: coverage %.3f exact %v; want an exact count of at least 95%%", warmC, exact)
	}
	// A little activity elsewhere: the lower bound still holds the threshold.
	db := sandboxtest.Schema(t)
	sandboxtest.Exec(t, "CREATE TABLE "+sqltext.Table(db, "small")+" (id INT PRIMARY KEY)", "INSERT INTO "+sqltext.Table(db, "small")+" VALUES (1), (2)")
	if c, exact := probe(0.90); exact || c < 0.90 || c > warmC {
		t.Errorf("after a small insert: coverage %.3f exact %v; want a bound between 90%% and %.3f without counting", c, exact, warmC)
	}
	// A restart is a new server run: the state does not apply.
	if _, err := sandboxtest.Server(t).ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	sandboxtest.Reconnect(t)
	if _, exact := probe(0.90); !exact {
		t.Errorf("after a restart the probe used the previous run's count")
	}
}

// A manifest's pages are a fixed set: with nothing read since a count below the threshold,
// the probe knows without counting that it is still below.
func TestBoundedManifestProbe(t *testing.T) {
	ctx := context.Background()
	zoo := sandboxtest.Zoo(t)
	sock := sandboxtest.Sock(t)
	mf := filepath.Join(sandboxtest.Dir(t), "zoo.manifest")
	if r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"warm", "-D", zoo, "--method", "scan", "-q"}, sock...)...); r.Code != 0 {
		t.Fatal(r.Stderr)
	}
	if r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"snapshot", "-D", zoo, "-o", mf}, sock...)...); r.Code != 0 {
		t.Fatal(r.Stderr)
	}
	cold(t)
	m, err := manifest.Load(mf)
	if err != nil {
		t.Fatal(err)
	}
	resolved, err := warm.Resolve(ctx, sandboxtest.Conn(t), m)
	if err != nil {
		t.Fatal(err)
	}
	dir := sandboxtest.Dir(t)
	probe := func() (float64, bool) {
		t.Helper()
		conn := sandboxtest.Conn(t)
		b := &readiness.Bounded{Conn: conn, Target: readiness.Manifest{Conn: conn, Resolved: resolved}, Key: "zoo manifest", Want: 0.95, StateDir: dir}
		c, detail, err := b.Coverage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%.3f exact=%v: %s", c, b.Exact, detail)
		return c, b.Exact
	}
	if c, exact := probe(); !exact || c >= 0.95 {
		t.Fatalf("cold: coverage %.3f exact %v", c, exact)
	}
	if c, exact := probe(); exact || c >= 0.95 {
		t.Errorf("nothing read since: coverage %.3f exact %v; want a bound below 95%% without counting", c, exact)
	}
	if r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"warm", "--from", mf, "-q"}, sock...)...); r.Code != 0 {
		t.Fatal(r.Stderr)
	}
	if c, exact := probe(); !exact || c < 0.95 {
		t.Errorf("after warm --from: coverage %.3f exact %v; want a count of at least 95%%", c, exact)
	}
	if c, exact := probe(); exact || c < 0.95 {
		t.Errorf("nothing read since the count: coverage %.3f exact %v; want a bound of at least 95%% without counting", c, exact)
	}
}

package snapshot_test

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/snapshot"
)

// snapshot --every on a pool that has not evicted yet (restarted, larger than what has
// been read since): the hot set was read before the history began and is read again in
// place, a report reads another table once during it. InnoDB moves nothing up in such a
// pool, so the history saw the report's pages "read from disk" and nothing of the hot set,
// and a manifest cut to the hot set's size named the report's pages first (a warm --from
// with a budget then missed most of the hot set; a single snapshot's order missed none).
func TestHistoryOfAPoolThatHasNotEvicted(t *testing.T) {
	ctx := context.Background()
	srv := sandboxtest.Flavor(t)
	sb := sandboxtest.SecondServer(t, 128<<20)
	conn, err := sb.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	exec := func(qs ...string) {
		t.Helper()
		for _, q := range qs {
			if _, err := conn.DB.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	// About 600 and 1,200 pages, both far below the 8,192-page pool.
	exec("CREATE DATABASE ne",
		"CREATE TABLE ne.hot (id INT PRIMARY KEY, pad CHAR(200) CHARACTER SET latin1)",
		"INSERT INTO ne.hot SELECT seq, REPEAT('h', 200) FROM "+srv.Series("ne", 1, 40_000)+" ORDER BY seq",
		"CREATE TABLE ne.report (id INT PRIMARY KEY, pad CHAR(200) CHARACTER SET latin1)",
		"INSERT INTO ne.report SELECT seq, REPEAT('r', 200) FROM "+srv.Series("ne", 1, 80_000)+" ORDER BY seq")
	conn.Close()
	if _, err := sb.ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	if conn, err = sb.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	workload := func() { exec("SELECT SUM(LENGTH(pad)) FROM ne.hot", "SELECT SUM(LENGTH(pad)) FROM ne.hot") }
	workload()
	dir := sandboxtest.Dir(t)
	h := snapshot.NewHistory(snapshot.HalfLifeFor(0))
	path := filepath.Join(dir, "every.manifest")
	capture := func() {
		t.Helper()
		o := snapshot.Options{Path: path, Filter: catalog.Filter{Schemas: []string{"ne"}}, ToolVersion: "test", NoKeys: true, History: h, Log: logx.New(io.Discard, true)}
		if _, err := snapshot.Capture(ctx, conn, o); err != nil {
			t.Fatal(err)
		}
	}
	capture()
	workload()
	capture()
	exec("SELECT SUM(LENGTH(pad)) FROM ne.report")
	capture()
	workload()
	capture()
	m, err := manifest.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	hot := 0
	for _, e := range m.Entries {
		if m.Objects[e.Object].Table == "hot" {
			hot++
		}
	}
	if hot < 500 {
		t.Fatalf("the manifest names %d pages of ne.hot; want its ~600", hot)
	}
	kept := 0
	for _, e := range manifest.CutToBudget(m.Entries, int64(hot)) {
		if m.Objects[e.Object].Table == "hot" {
			kept++
		}
	}
	t.Logf("%s: %d entries, %d of ne.hot; the first %d name %d of them", conn.Server, len(m.Entries), hot, hot, kept)
	if kept < hot*95/100 {
		t.Errorf("a manifest cut to ne.hot's %d pages names %d of them; want 95%% or more (the report's pages ranked first)", hot, kept)
	}
}

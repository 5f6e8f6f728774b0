package agent

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/snapshot"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// TestLeftOutPagesAreNotTakenAsRead: on a copy that is not page-for-page, a spatial index
// has no key ranges and no warm reads it (path none). The agent's count took such pages
// as read once its warm had run, with the pages of indexes its range scans read: its
// coverage, and so its readiness, called a cold index warm. They are counted neither way
// now.
func TestLeftOutPagesAreNotTakenAsRead(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	db := sandboxtest.Schema(t)
	geo, cp := sqltext.Table(db, "geo"), sqltext.Table(db, "geo_copy")
	sandboxtest.Exec(t,
		"CREATE TABLE "+geo+" (id INT PRIMARY KEY, g POINT NOT NULL, pad CHAR(100) CHARACTER SET latin1 NOT NULL DEFAULT '', SPATIAL KEY sg (g))",
		"INSERT INTO "+geo+" (id, g) SELECT seq, POINT(seq MOD 997, seq DIV 997) FROM "+conn.Server.Series(db, 1, 20000)+" ORDER BY seq")
	// Written to the file, where snapshot reads the key ranges, and every page in the pool.
	FlushDirtyPages(t, conn)
	sandboxtest.Exec(t, "SELECT COUNT(*) FROM "+geo+" FORCE INDEX (PRIMARY) WHERE pad = ''")
	path := filepath.Join(sandboxtest.Dir(t), "geo.manifest")
	res, err := snapshot.Capture(ctx, conn, snapshot.Options{Path: path, ToolVersion: "test", Filter: catalog.Filter{Schemas: []string{db}}})
	if err != nil {
		t.Fatal(err)
	}
	mf, err := openManifest(ctx, nil, path)
	if err != nil {
		t.Fatal(err)
	}
	spatial := int64(0)
	for _, e := range mf.Entries {
		if mf.Objects[e.Object].Index == "sg" {
			spatial++
		}
	}
	if spatial < 5 {
		t.Fatalf("the manifest (%d entries) holds %d pages of the spatial index; the test needs 5+", res.Entries, spatial)
	}
	// A logical copy: the same rows in random key order, under the same name.
	sandboxtest.Exec(t,
		"CREATE TABLE "+cp+" LIKE "+geo,
		"INSERT INTO "+cp+" SELECT * FROM "+geo+" ORDER BY RAND(3)",
		"DROP TABLE "+geo,
		"RENAME TABLE "+cp+" TO "+geo,
		"ANALYZE TABLE "+geo)
	FlushDirtyPages(t, conn)
	tg, err := loadTarget(ctx, conn, &Options{Manifest: path})
	if err != nil {
		t.Fatal(err)
	}
	if tg.resolved.LeftOut != spatial {
		t.Fatalf("the copy's target leaves %d pages out, want the spatial index's %d (%s)", tg.resolved.LeftOut, spatial, tg.describe(&Options{Manifest: path}))
	}
	tg.warmed.Store(true)
	n, total, err := tg.count(ctx, conn, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d spatial pages left out; counted %d of %d after the warm (%s)", conn.Server, spatial, n, total, tg.describe(&Options{Manifest: path}))
	if total != int64(len(tg.resolved.Pages))+tg.uncounted || tg.uncounted != 0 {
		t.Errorf("the count is of %d pages, %d uncounted (%d counted by page): the spatial index's %d pages, which no warm reads, are among them", total, tg.uncounted, len(tg.resolved.Pages), spatial)
	}
}

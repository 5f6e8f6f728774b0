package snapshot_test

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/snapshot"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// TestSnapshotLabelsLOBPagesOnEitherPageList: a table of 12.8 KB TEXT bodies (off-page on
// DYNAMIC rows, one or more BLOB pages a row), its file written, rows 100-400 read; the
// snapshot's manifest lists the resident off-page pages as the server names them (a LOB
// page type, no index: warm --from's "(LOB)" of the primary key) whether the page list is
// the LRU table or the server's own dump. From the dump every such page was an
// INDEX_SEGMENT page of PRIMARY, which the keys stage then read as leaves no parent points
// to ("... pages no parent on disk points to yet (split since) read alone").
func TestSnapshotLabelsLOBPagesOnEitherPageList(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	db := sandboxtest.Schema(t)
	tbl := sqltext.Table(db, "tl")
	sandboxtest.Exec(t,
		"CREATE TABLE "+tbl+" (id INT NOT NULL PRIMARY KEY, body MEDIUMTEXT CHARACTER SET latin1 NOT NULL) ROW_FORMAT=DYNAMIC STATS_AUTO_RECALC=0",
		fmt.Sprintf("INSERT INTO %s SELECT seq, REPEAT(CHAR(65 + seq %% 26), 12800) FROM %s ORDER BY seq", tbl, conn.Server.Series(db, 1, 2000)),
		// Written to the file, where the dump's pages are named and their types read (MySQL's
		// export also drops the table's pages from the pool: the read below brings them in).
		"FLUSH TABLES "+tbl+" FOR EXPORT", "UNLOCK TABLES",
		"SELECT SUM(LENGTH(body)) FROM "+tbl+" WHERE id BETWEEN 100 AND 400")
	for _, list := range []string{bufferpool.SourceDump, bufferpool.SourceLRUTable} {
		t.Run(list, func(t *testing.T) {
			path := filepath.Join(sandboxtest.Dir(t), "lob.manifest")
			res, err := snapshot.Capture(ctx, conn, snapshot.Options{Path: path, ToolVersion: "test", PageList: list,
				Filter: catalog.Filter{Schemas: []string{db}}, Log: logx.New(io.Discard, true)})
			if err != nil {
				t.Fatal(err)
			}
			if res.PageList != list {
				t.Fatalf("page list %s (%s), want %s", res.PageList, res.PageListNote, list)
			}
			m, err := manifest.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			perObject := map[uint32]int{}
			for _, e := range m.Entries {
				perObject[e.Object]++
			}
			var lob, primary int
			var objects []string
			for i, o := range m.Objects {
				if o.Schema != db || o.Table != "tl" {
					continue
				}
				objects = append(objects, fmt.Sprintf("%s %q: %d pages", o.PageType, o.Index, perObject[uint32(i)]))
				switch {
				case bufferpool.IsLOBPageType(o.PageType) && o.Index == "":
					lob += perObject[uint32(i)]
				case o.Index == "PRIMARY":
					primary += perObject[uint32(i)]
				}
			}
			t.Logf("%s: %s; keys %+v", list, strings.Join(objects, ", "), res.Keys)
			// 301 rows read, a BLOB page or more each; their clustered leaves hold 2,000 rows
			// of 20-byte pointers in a few pages.
			if lob < 301 {
				t.Errorf("%s: %d pages labelled as off-page column pages, want at least 301 (%s)", list, lob, strings.Join(objects, ", "))
			}
			if primary == 0 || primary > 40 {
				t.Errorf("%s: %d pages of PRIMARY, want its few B-tree pages (%s)", list, primary, strings.Join(objects, ", "))
			}
			if res.Keys.ReadAlone > 0 {
				t.Errorf("%s: %d pages no parent on disk points to read alone: off-page pages read as PRIMARY's leaves", list, res.Keys.ReadAlone)
			}
		})
	}
}

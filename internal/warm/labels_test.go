package warm_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/warm"
)

// What the results name is what it is. A manifest's pages of a table's file that are no
// index's (the space header, descriptors, inodes; pages a snapshot could not name) are its
// file pages, not its primary key's LOB pages, which a table without a BLOB column has
// none of (they showed as "PRIMARY (LOB)" in inspect --manifest and warm --from). A native
// load's left-out tablespaces name their table once, and in JSON no index.
func TestResultsNameWhatTheyCount(t *testing.T) {
	db := sandboxtest.Schema(t)
	sock := sandboxtest.Sock(t)
	plain := plainTable(t, db, "plain", 30000)
	lobs := sqltext.Table(db, "lobs")
	sandboxtest.Exec(t,
		"CREATE TABLE "+lobs+" (id INT PRIMARY KEY, body TEXT)",
		"INSERT INTO "+lobs+" SELECT seq, REPEAT('b', 30000) FROM "+sandboxtest.Flavor(t).Series(db, 1, 50)+" ORDER BY seq",
		"FLUSH TABLES "+plain+", "+lobs+" FOR EXPORT", "UNLOCK TABLES",
	)
	coldConn(t)
	if r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"warm", "-D", db, "--method", "scan", "--lob", "-q"}, sock...)...); r.Code != 0 {
		t.Fatal(r.Stderr)
	}
	dir := sandboxtest.Dir(t)
	for _, list := range []string{bufferpool.SourceLRUTable, bufferpool.SourceDump} {
		t.Run(list, func(t *testing.T) {
			mf := filepath.Join(dir, list+".manifest")
			if r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"snapshot", "-D", db, "--page-list", list, "-o", mf}, sock...)...); r.Code != 0 {
				t.Fatal(r.Stderr)
			}
			r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"inspect", "--manifest", mf, "--json"}, sock...)...)
			if r.Code != 0 {
				t.Fatal(r.Stderr)
			}
			var got struct{ Rows []warm.ManifestRow }
			sandboxtest.JSON(t, []byte(r.Stdout), &got)
			kinds := map[string]int64{}
			for _, row := range got.Rows {
				kinds[row.Table+" "+row.Index+" "+string(row.Kind)] += row.ManifestPages
			}
			t.Logf("%s: %v", list, kinds)
			for k := range kinds {
				if strings.HasPrefix(k, "plain ") && strings.HasSuffix(k, " "+string(warm.KindLOB)) {
					t.Errorf("a table without a BLOB column has LOB pages in the manifest: %v", kinds)
				}
				if strings.HasSuffix(k, " "+string(warm.KindFile)) && !strings.HasSuffix(k, "  "+string(warm.KindFile)) {
					t.Errorf("file pages named after an index: %q", k)
				}
			}
			// The plain table's pages of no index (its header, descriptors, inodes, where the
			// flavor keeps them in the pool: MariaDB 11.8 does not) are its file pages.
			m, err := manifest.Load(mf)
			if err != nil {
				t.Fatal(err)
			}
			var noIndex int64
			for _, e := range m.Entries {
				if o := m.Objects[e.Object]; o.Table == "plain" && o.Index == "" {
					noIndex++
				}
			}
			if got := kinds["plain  "+string(warm.KindFile)]; got != noIndex {
				t.Errorf("the plain table has %d pages of no index in the manifest, %d shown as its file pages: %v", noIndex, got, kinds)
			}
			// The dump names a LOB page by its segment, the clustered index's; the LRU table
			// by its page type.
			if list == bufferpool.SourceLRUTable && kinds["lobs PRIMARY "+string(warm.KindLOB)] == 0 {
				t.Errorf("the LOB table's BLOB pages are not its LOB pages: %v", kinds)
			}
			if strings.Contains(r.Stdout, "PRIMARY (LOB)") {
				t.Errorf("--json has a display label")
			}
			text := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"inspect", "--manifest", mf}, sock...)...)
			if strings.Contains(text.Stdout, "(file pages)") != (noIndex > 0) {
				t.Errorf("inspect --manifest and the %d pages of no index:\n%s", noIndex, text.Stdout)
			}
		})
	}

	// A native load with room for one table: the other is left out, by its table alone.
	coldConn(t)
	r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"warm", "-D", db, "--method", "native", "--budget", "1M", "--order", "large-first", "--json"}, sock...)...)
	if r.Code != 0 {
		t.Fatalf("native warm: exit %d: %s", r.Code, r.Stderr)
	}
	var out struct{ Result warm.Result }
	sandboxtest.JSON(t, []byte(r.Stdout), &out)
	res := out.Result
	if len(res.LeftOut) == 0 {
		t.Fatalf("nothing left out with a 1 MiB budget: %s", r.Stdout)
	}
	for _, l := range res.LeftOut {
		if l.Kind != warm.KindTablespace || l.Index != "" || l.Table == "" {
			t.Errorf("left out: %+v; want the table's tablespace, no index", l)
		}
	}
	r = sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"warm", "-D", db, "--method", "native", "--budget", "1M", "--order", "large-first"}, sock...)...)
	for _, line := range strings.Split(r.Stdout, "\n") {
		if strings.HasPrefix(line, "left out: ") && (strings.Count(line, sqltext.Ident(db)) != 1 || strings.Contains(line, "  ")) {
			t.Errorf("left-out line names its table more than once: %q", line)
		}
	}
}

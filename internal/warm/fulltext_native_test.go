package warm_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/ibd"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/warm"
)

// After a restart MariaDB lists a tablespace, with its size, in INNODB_SYS_TABLESPACES only
// once it opened it: the catalog's reads open a table but not its FULLTEXT index's
// auxiliary tables (FTS_..._INDEX_1..6, CONFIG, DELETED, ...), which wait for a MATCH() or
// an OPTIMIZE TABLE. A native warm of such a table planned none of them, said nothing of
// them, and left the whole index cold (a user test on 10.11 and 11.8). The server's loader
// reads them all the same: a native warm now sizes them from their files and loads every one
// of them with the table. MySQL lists every tablespace: the same warm, unchanged.
func TestNativeWarmLoadsFulltextTablesAfterRestart(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	db := sandboxtest.Schema(t)
	q := sqltext.Table(db, "docs")
	// utf8mb4_general_ci sorts a word into INDEX_1..6 by its first letter (digits and
	// A-E, F-J, K-O, P-T, U-Z: fts_index_selector), on both servers, so that each index
	// table holds pages of its own; the index built after the rows writes them at once
	// (rows inserted under an index would wait in the full-text cache).
	sandboxtest.Exec(t,
		"CREATE TABLE "+q+" (id INT PRIMARY KEY, body VARCHAR(200)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci",
		"INSERT INTO "+q+" SELECT seq, CONCAT(CHAR(97 + seq MOD 26 USING utf8mb4), 'word', seq, ' ', seq MOD 1000, 'n ', CHAR(97 + seq * 7 MOD 26 USING utf8mb4), 'x', seq MOD 977) FROM "+conn.Server.Series(db, 1, 8000)+" ORDER BY seq",
		"ALTER TABLE "+q+" ADD FULLTEXT KEY fb (body)")
	if _, err := sandboxtest.Server(t).ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	conn = sandboxtest.Reconnect(t)
	filter := catalog.Filter{Schemas: []string{db}}
	req := warm.Request{Filter: filter, Method: warm.MethodNative, Run: quiet(),
		Plan: warm.Options{Order: "small-first", SplitPages: warm.DefaultSplitPages}}
	if err := req.Validate(); err != nil {
		t.Fatal(err)
	}
	out, err := warm.Execute(ctx, conn, req, func(string, string) {})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range out.Native.Skipped {
		t.Errorf("skipped: %+v", s)
	}

	// Every auxiliary table of the index, from the server's dictionary and its files.
	cat, err := catalog.Load(ctx, conn, filter)
	if err != nil || len(cat.Tables) != 1 {
		t.Fatalf("catalog: %v %+v", err, cat)
	}
	tb := cat.Tables[0]
	if len(tb.Aux) != 11 {
		t.Fatalf("%s has %d full-text tables, want 11 (six INDEX_n for fb, five common): %+v", q, len(tb.Aux), tb.Aux)
	}
	files, err := catalog.TablespaceFiles(ctx, conn, map[uint32]bool{tb.Parts[0].Space: true})
	if err != nil || files[tb.Parts[0].Space] == "" {
		t.Fatalf("the table's file: %v %v", files, err)
	}
	planned := map[string]warm.NativeSpace{}
	for _, s := range out.Native.Spaces {
		planned[s.Name] = s
	}
	var inUse, resident int64
	for _, a := range tb.Aux {
		m, err := ibd.Open(filepath.Join(filepath.Dir(files[tb.Parts[0].Space]), filepath.Base(a.Name)+".ibd"), conn.Server.PageSize, nil)
		if err != nil {
			t.Fatalf("%s: %v", a.Name, err)
		}
		// Planned by the pages its file has in use, as the table's own file is.
		if s, ok := planned[tb.Quoted()+" "+a.Name]; !ok || s.Pages != m.InUsePages() {
			t.Errorf("the native plan of %s (%s): %+v (planned: %t), want its %d pages in use of %d", a.Name, a.Role, s, ok, m.InUsePages(), m.Pages)
		}
		var n int64
		if err := conn.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+conn.Server.BufferPageLRUTable()+" WHERE SPACE = ?", a.Space).Scan(&n); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d of %d pages in use resident (file: %d pages)", a.Role, n, m.InUsePages(), m.Pages)
		// Every page in use is read: the space header, the root, and an index table's tree.
		if n < m.InUsePages() {
			t.Errorf("%s (%s): %d pages resident after the warm, %d in use in its file", a.Name, a.Role, n, m.InUsePages())
		}
		inUse += m.InUsePages()
		resident += n
	}
	t.Logf("%s: %d of the full-text tables' %d pages in use resident after a native warm", conn.Server, resident, inUse)
}

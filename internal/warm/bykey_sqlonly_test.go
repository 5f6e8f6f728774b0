package warm_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/snapshot"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// TestSQLOnlyWarmSaysItsMethodAndNoCoverageByNumber: a warm --from on the database host
// whose every index takes the sql path (a logical copy, --by-key sql) uses the method it
// logged (native) and says that nothing went by page number. It said "warm (scan)" and
// "method scan: innowarm runs on the database host and can write the server's dump file"
// after the log's "method: native", and "coverage of the pages read by number: 0.0% →
// 0.0%", a coverage of no pages, read as a warm that warmed nothing.
func TestSQLOnlyWarmSaysItsMethodAndNoCoverageByNumber(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	db := sandboxtest.Schema(t)
	tbl := sqltext.Table(db, "keyed")
	sandboxtest.Exec(t,
		"CREATE TABLE "+tbl+" (id INT PRIMARY KEY, pad CHAR(200) CHARACTER SET latin1 NOT NULL DEFAULT '')",
		"INSERT INTO "+tbl+" (id) SELECT seq FROM "+conn.Server.Series(db, 1, 20000)+" ORDER BY seq",
		"FLUSH TABLES "+tbl+" FOR EXPORT", "UNLOCK TABLES")
	if _, err := sandboxtest.Server(t).ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	conn = sandboxtest.Reconnect(t)
	sandboxtest.Exec(t, "SELECT SUM(LENGTH(pad)) FROM "+tbl+" WHERE id BETWEEN 5000 AND 9000")
	path := filepath.Join(sandboxtest.Dir(t), "keyed.manifest")
	if _, err := snapshot.Capture(ctx, conn, snapshot.Options{Path: path, ToolVersion: "test", Filter: catalog.Filter{Schemas: []string{db}}}); err != nil {
		t.Fatal(err)
	}
	copyInRandomOrder(t, db, "keyed", 5)

	// The text first, on the cold copy; then --json, which says whether a page is counted
	// by number (a MySQL source's file page is: the coverage is then of it).
	r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"warm", "--from", path, "--by-key", "sql"}, sandboxtest.Sock(t)...)...)
	if r.Code != 0 || !strings.Contains(r.Stderr, "method: native") || !strings.Contains(r.Stdout, "method native: ") ||
		strings.Contains(r.Stdout, "warm (scan)") || strings.Contains(r.Stdout, "method scan") {
		t.Fatalf("warm --from --by-key sql: exit %d, want the method native, logged and said:\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	text := r.Stdout
	r = sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"warm", "--from", path, "--by-key", "sql", "--json"}, sandboxtest.Sock(t)...)...)
	var doc struct {
		Result struct {
			Method   string `json:"method"`
			Manifest struct {
				Requested     int64  `json:"requested"`
				CoveragePages *int64 `json:"coverage_pages"`
				KeyRanges     int64  `json:"key_ranges_requested"`
			} `json:"manifest"`
		} `json:"result"`
	}
	sandboxtest.JSON(t, []byte(r.Stdout), &doc)
	m := doc.Result.Manifest
	if r.Code != 0 || doc.Result.Method != "native" || m.CoveragePages == nil || m.KeyRanges == 0 {
		t.Fatalf("--json: exit %d, method %q, coverage_pages %v, key ranges %d; want native, the pages counted, the ranges:\n%s%s",
			r.Code, doc.Result.Method, m.CoveragePages, m.KeyRanges, r.Stdout, r.Stderr)
	}
	t.Logf("%s: %d pages by number, coverage of %d pages, %d key ranges", conn.Server, m.Requested, *m.CoveragePages, m.KeyRanges)
	byNumber := *m.CoveragePages > 0
	says := map[string]bool{
		"warm (native, every index by range scans of its key ranges, none by page number): ": !byNumber,
		"no page is read by number, so no coverage by number":                                !byNumber,
		"coverage of the pages read by number: ":                                             byNumber,
	}
	for line, want := range says {
		if strings.Contains(text, line) != want {
			t.Errorf("with %d pages counted by number, the text says %q: %v, want %v:\n%s", *m.CoveragePages, line, !want, want, text)
		}
	}
}

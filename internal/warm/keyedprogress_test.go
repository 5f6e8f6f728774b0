package warm_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/innowarm/innowarm/internal/progress"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/warm"
)

// warm --from on a logical copy loads the pages it can by number, then reads key ranges
// by range scans: an observer of its progress (the agent's /ready status) saw the first
// phase's count, then the second's from 0 again, and a warm whose range scans had just
// begun looked done. The count is now one: it never goes back, and while the pages by
// number load, its total already holds the range scans' pages.
func TestManifestWarmProgressIsOneCount(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	db := sandboxtest.Schema(t)
	tbl, same := sqltext.Table(db, "t"), sqltext.Table(db, "u")
	sandboxtest.Exec(t,
		// u stays as it was: its pages go by number.
		"CREATE TABLE "+same+" (id INT NOT NULL PRIMARY KEY, pad CHAR(200) CHARACTER SET latin1 NOT NULL DEFAULT '')",
		"INSERT INTO "+same+" (id) SELECT seq FROM "+conn.Server.Series(db, 1, 20000)+" ORDER BY seq",
		// t's key compares by its collation, which only the server knows: on the copy its
		// ranges are read by range scans (the sql path).
		"CREATE TABLE "+tbl+" (id VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL PRIMARY KEY, pad CHAR(200) CHARACTER SET latin1 NOT NULL DEFAULT '')",
		fmt.Sprintf("INSERT INTO %s (id) SELECT CONCAT('k', (seq * 7919) %% 30001) FROM %s ORDER BY seq", tbl, conn.Server.Series(db, 1, 30000)),
		"ANALYZE TABLE "+tbl, "ANALYZE TABLE "+same, "FLUSH TABLES "+tbl+", "+same+" FOR EXPORT", "UNLOCK TABLES")
	cold := coldRestarter(t)
	conn = cold()
	var ids []string
	for id := 1; id < 30000; id += 150 {
		ids = append(ids, fmt.Sprintf("'k%d'", id))
	}
	sandboxtest.Exec(t, "SELECT SUM(LENGTH(pad)) FROM "+tbl+" WHERE id IN ("+strings.Join(ids, ",")+")", "SELECT SUM(LENGTH(pad)) FROM "+same)
	m, _ := mostlyKeyedSnapshot(t, conn, db, "progress.manifest")
	replaceByLogicalCopy(t, conn, db, tbl)
	conn = cold()

	var mu sync.Mutex
	type point struct{ done, total int64 }
	var seen []point
	ro := quiet()
	ro.Progress = progress.Config{Out: &strings.Builder{}, Quiet: true, Observe: func(done, total int64) {
		mu.Lock()
		seen = append(seen, point{done, total})
		mu.Unlock()
	}}
	req := warm.Request{Manifest: m, Method: warm.MethodAuto, Run: ro,
		Plan: warm.Options{Order: "small-first", SplitPages: warm.DefaultSplitPages}}
	if err := req.Validate(); err != nil {
		t.Fatal(err)
	}
	out, err := warm.Execute(ctx, conn, req, func(string, string) {})
	if err != nil {
		t.Fatal(err)
	}
	if out.Manifest == nil || out.Manifest.Keyed == nil || out.Native == nil {
		t.Fatalf("want pages by number natively and key ranges by range scans: native %v, manifest %+v", out.Native != nil, out.Manifest)
	}
	keyed := out.Manifest.Keyed.EstPages
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%s: %d progress points, the range scans' plan %d pages; first %+v, last %+v", conn.Server, len(seen), keyed, seen[0], seen[len(seen)-1])
	var most int64
	for i, p := range seen {
		if p.done < most {
			t.Fatalf("progress went back from %d to %d pages (point %d of %d: %+v)", most, p.done, i, len(seen), seen)
		}
		most = p.done
	}
	if seen[0].total < keyed {
		t.Errorf("the first count's total %d does not hold the range scans' %d pages", seen[0].total, keyed)
	}
}

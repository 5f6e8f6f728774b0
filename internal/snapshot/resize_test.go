package snapshot_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/snapshot"
)

// A sidecar connects once and runs for the server's life; the pool shrinks under it (an
// admin's SET GLOBAL, or MariaDB 10.11.12+ under memory pressure). Its manifests then give
// the pool it has, and the turnover that makes it take a capture into the history between
// two files is a quarter of that pool: reading 500 pages from disk is churn in a 1,024-page
// pool, not in the 4,096-page one it connected to.
func TestEveryFollowsAShrunkPool(t *testing.T) {
	ctx := context.Background()
	srv := sandboxtest.Flavor(t)
	sb := sandboxtest.SecondServer(t, 64<<20, srv.PoolResizeArgs(8<<20)...)
	conn, err := sb.Connect(ctx) // before the shrink: conn.Server knows 64 MiB
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exec := func(q string) {
		t.Helper()
		if _, err := conn.DB.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	readPages := func() int64 {
		t.Helper()
		st, err := conn.GlobalStatus(ctx, "Innodb_pages_read")
		if err != nil {
			t.Fatal(err)
		}
		return st["innodb_pages_read"]
	}
	exec("CREATE DATABASE rz")
	// latin1 CHAR(200): about 70 rows a page on every flavor. a: ~500 pages, b: ~1,300.
	exec("CREATE TABLE rz.a (id INT PRIMARY KEY, pad CHAR(200) CHARACTER SET latin1)")
	exec("INSERT INTO rz.a SELECT seq, REPEAT('a', 200) FROM " + srv.Series("rz", 1, 35000) + " ORDER BY seq")
	exec("CREATE TABLE rz.b (id INT PRIMARY KEY, pad CHAR(200) CHARACTER SET latin1)")
	exec("INSERT INTO rz.b SELECT seq, REPEAT('b', 200) FROM " + srv.Series("rz", 1, 91000) + " ORDER BY seq")
	pages := sandboxtest.ResizePool(t, conn.DB, 16<<20)
	// b, larger than the pool, pushes a out of it.
	exec("SELECT SUM(LENGTH(pad)) FROM rz.b")
	exec("SELECT SUM(LENGTH(pad)) FROM rz.b")

	path := filepath.Join(sandboxtest.Dir(t), "hot.manifest")
	var mu sync.Mutex
	var results []*snapshot.Result
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- snapshot.Every(runCtx, conn, snapshot.Options{Path: path, Filter: catalog.Filter{Schemas: []string{"rz"}}, ToolVersion: "test"}, 6*time.Second,
			func(r *snapshot.Result) { mu.Lock(); results = append(results, r); mu.Unlock() }, logx.New(testLog{t}, true))
	}()
	captures := func() int { mu.Lock(); defer mu.Unlock(); return len(results) }
	waitFor := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); captures() < n; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				stop() // Every logs to t: it ends before the test does
				<-done
				t.Fatalf("%d captures in a minute; want %d", captures(), n)
			}
		}
	}
	waitFor(1)
	r0 := readPages()
	exec("SELECT SUM(LENGTH(pad)) FROM rz.a")
	read := readPages() - r0
	if read <= pages/4 || read >= 4096/4 {
		t.Fatalf("reading rz.a read %d pages from disk: the test needs more than a quarter of the %d-page pool and less than a quarter of 4,096", read, pages)
	}
	waitFor(2)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	second := results[1]
	mu.Unlock()
	t.Logf("%s: pool %d pages; rz.a read %d pages; second manifest: %d churn captures, header pool %d bytes, %d pages", conn.Server, pages, read, second.ChurnCaptures, second.Header.PoolBytes, second.Header.PoolPages)
	if second.ChurnCaptures < 1 {
		t.Errorf("%d pages read from disk in a %d-page pool took no capture into the history", read, pages)
	}
	m, err := manifest.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.PoolBytes != 16<<20 || m.Header.PoolPages != pages {
		t.Errorf("manifest header: pool %d bytes, %d pages; the pool is %d bytes, %d pages", m.Header.PoolBytes, m.Header.PoolPages, 16<<20, pages)
	}
}

// testLog writes Every's warnings (a capture that failed) to the test's log: a CI run under
// -race waited a minute for a second capture with nothing to say why it did not come.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

package snapshot_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/snapshot"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// TestEveryKeepsTheHotSetAfterARestart: a sidecar restarted with its server does not
// write its first captures of the cold pool over the hot set on disk; once the server has
// read as many pages as that manifest names, its captures replace it again. Before, a
// sidecar restarted with its database replaced a 2,985-page manifest by a 2-page one.
func TestEveryKeepsTheHotSetAfterARestart(t *testing.T) {
	sb := sandboxtest.Server(t)
	conn := sandboxtest.Conn(t)
	db := sandboxtest.Schema(t)
	tbl := sqltext.Table(db, "hot")
	// Statistics computed now and not again in the background: on a busy machine their
	// recalculation after the restart read the table back (898 of its 901 pages resident at
	// the first capture, 4 of 14 runs beside two CPU burners).
	run(t, conn, "CREATE TABLE "+tbl+" (id INT PRIMARY KEY, pad CHAR(200)) STATS_AUTO_RECALC=0",
		"INSERT INTO "+tbl+" SELECT seq, 'h' FROM "+conn.Server.Series(db, 1, 60000)+" ORDER BY seq",
		"ANALYZE TABLE "+tbl,
		"SELECT COUNT(*) FROM "+tbl)
	path := filepath.Join(sandboxtest.Dir(t), "hot.manifest")
	o := snapshot.Options{Path: path, Filter: catalog.Filter{Schemas: []string{db}}, NoKeys: true, PageList: snapshot.PageListAuto}
	// every runs the sidecar until want says so from a capture's result or its log.
	every := func(want func(r *snapshot.Result, log string) bool) (string, *snapshot.Result) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var out sandboxtest.SyncBuffer
		var last *snapshot.Result
		stop := make(chan struct{})
		go func() {
			defer close(stop)
			_ = snapshot.Every(ctx, conn, o, time.Second, func(r *snapshot.Result) {
				last = r
				if want(r, out.String()) {
					cancel()
				}
			}, logx.New(&out, false))
		}()
		for {
			select {
			case <-stop:
				if ctx.Err() == context.DeadlineExceeded {
					t.Fatalf("the sidecar did not get there in 2 minutes: %s", out.String())
				}
				return out.String(), last
			case <-time.After(100 * time.Millisecond):
				if want(nil, out.String()) {
					cancel()
				}
			}
		}
	}
	_, first := every(func(r *snapshot.Result, _ string) bool { return r != nil })
	if first == nil || first.Entries < 500 {
		t.Fatalf("first capture: %+v", first)
	}
	cold(t, sb)
	conn = sandboxtest.Reconnect(t)
	run(t, conn, "SELECT * FROM "+tbl+" WHERE id IN (1, 30000, 59000)") // a few pages
	log, _ := every(func(r *snapshot.Result, log string) bool {
		if r != nil {
			t.Fatalf("a capture of the restarted, cold pool replaced the manifest: %d pages (was %d); page list %s %q, captured %s; log %s", r.Entries, first.Entries, r.PageList, r.PageListNote, r.CapturedAt, log)
		}
		return strings.Contains(log, "pool still filling")
	})
	m, err := manifest.Load(path)
	if err != nil || m.Header.Entries != first.Entries {
		t.Fatalf("the manifest after the restart: %v, %+v; log %s", err, m.Header, log)
	}
	// The workload reads its hot set again: captures replace the manifest.
	run(t, conn, "SELECT COUNT(*) FROM "+tbl)
	_, again := every(func(r *snapshot.Result, _ string) bool { return r != nil })
	if again == nil || again.Entries < first.Entries/2 {
		t.Fatalf("after the hot set was read again: %+v", again)
	}
}

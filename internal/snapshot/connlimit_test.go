package snapshot_test

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/snapshot"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// TestCaptureWithinConnectionLimit: an account the server lets hold two connections at once
// (MAX_USER_CONNECTIONS 2) captures the pool's pages of a table with every index page's key
// range. The page list and the key dictionary's reads run at once, a connection each, and
// wait for each other's where the server refuses more: before, three or four opened at once,
// and the capture failed ("open session: Error 1226 ... max_user_connections") or kept no
// key. An account allowed one connection fails with one line that says it needs two (exit 2).
func TestCaptureWithinConnectionLimit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := sandboxtest.Flavor(t)
	db := sandboxtest.Schema(t)
	tbl := sqltext.Table(db, "t")
	sandboxtest.Exec(t,
		"CREATE TABLE "+tbl+" (id INT NOT NULL PRIMARY KEY, k INT NOT NULL, pad CHAR(100) NOT NULL DEFAULT '', KEY kk (k))",
		"INSERT INTO "+tbl+" (id, k) SELECT seq, (seq * 7919) % 20011 FROM "+srv.Series(db, 1, 20000)+" ORDER BY seq",
		// On disk, so that the capture reads the trees from the file.
		"FLUSH TABLES "+tbl+" FOR EXPORT", "UNLOCK TABLES",
		"SELECT COUNT(*) FROM "+tbl+" FORCE INDEX (PRIMARY) WHERE pad = ''",
		"SELECT COUNT(*) FROM "+tbl+" FORCE INDEX (kk) WHERE k >= 0")
	o := snapshot.Options{ToolVersion: "test", Filter: catalog.Filter{Schemas: []string{db}}}

	t.Run("two", func(t *testing.T) {
		o := o
		o.Path = filepath.Join(sandboxtest.Dir(t), "two.manifest")
		conn := sandboxtest.LimitedUser(t, "snaplim2", 2)
		res, err := snapshot.Capture(ctx, conn, o)
		if err != nil {
			t.Fatalf("capture as a user allowed 2 connections: %v", err)
		}
		// Through a catalog cache, as snapshot -D, --every and follow load: the cache's
		// fingerprint session was held through the load, a third connection.
		cached := o
		cached.Catalogs = &catalog.Cache{}
		cached.Path = filepath.Join(sandboxtest.Dir(t), "two-cached.manifest")
		if _, err := snapshot.Capture(ctx, conn, cached); err != nil {
			t.Fatalf("capture through a catalog cache as a user allowed 2 connections: %v", err)
		}
		k := res.Keys
		t.Logf("%d pages from %s, keys %+v", res.Entries, res.PageList, k)
		if res.Entries == 0 || k.Note != "" || k.Indexes != 2 || k.Pages == 0 || k.Keyed != k.Pages {
			t.Errorf("capture as a user allowed 2 connections: %d pages, keys %+v; want every index page keyed", res.Entries, k)
		}
	})
	t.Run("one", func(t *testing.T) {
		o := o
		o.Path = filepath.Join(sandboxtest.Dir(t), "one.manifest")
		_, err := snapshot.Capture(ctx, sandboxtest.LimitedUser(t, "snaplim1", 1), o)
		if ctx.Err() != nil {
			t.Fatal("the capture waited for a connection that nothing would free")
		}
		if err == nil || exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "a capture needs 2") || strings.Contains(err.Error(), "\n") {
			t.Fatalf("capture as a user allowed 1 connection: %v (exit %d); want one line saying it needs 2, exit %d", err, exitcode.Of(err), exitcode.Usage)
		}
		// --every ends with it at the first capture, rather than a warning each interval
		// and no file ever written.
		every := o
		every.Path = filepath.Join(sandboxtest.Dir(t), "every.manifest")
		err = snapshot.Every(ctx, sandboxtest.LimitedUser(t, "snaplim1e", 1), every, 50*time.Millisecond, func(*snapshot.Result) {}, logx.New(io.Discard, true))
		if ctx.Err() != nil || exitcode.Of(err) != exitcode.Usage || !strings.Contains(fmt.Sprint(err), "a capture needs 2") {
			t.Fatalf("snapshot --every as a user allowed 1 connection: %v (exit %d); want it to end with the reason, exit %d", err, exitcode.Of(err), exitcode.Usage)
		}
	})
}

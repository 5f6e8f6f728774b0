package snapshot_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/dumpfile"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/snapshot"
)

// A capture of a server whose dump file another innowarm holds (a native load, for minutes
// under --nice: follow on a promoted standby) reads the LRU table instead of waiting 30 s
// for the file and failing, and says why.
func TestSnapshotDoesNotWaitForABorrowedDumpFile(t *testing.T) {
	ctx := context.Background()
	sb := sandboxtest.Server(t)
	conn := sandboxtest.Conn(t)
	createShop(t, conn, []string{"orders", "items", "docs"})
	touchOrders(t, conn)
	other, err := sb.Connect(ctx) // the other innowarm's
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	held, err := dumpfile.Borrow(ctx, other, logx.New(os.Stderr, true))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Return()
	t0 := time.Now()
	res, err := snapshot.Capture(ctx, conn, snapshot.Options{Path: filepath.Join(sandboxtest.Dir(t), "busy.manifest"), ToolVersion: "test",
		Filter: catalog.Filter{Schemas: []string{"shop"}}})
	took := time.Since(t0)
	if err != nil {
		t.Fatalf("capture beside a borrowed dump file: %v (after %s)", err, took)
	}
	t.Logf("captured %d entries in %s from %s (%s)", res.Entries, took, res.PageList, res.PageListNote)
	if res.PageList != bufferpool.SourceLRUTable || !strings.Contains(res.PageListNote, "holds the server's dump file") || res.Entries < 50 {
		t.Errorf("want the LRU table's pages, and the reason: %d entries from %s (%s)", res.Entries, res.PageList, res.PageListNote)
	}
}

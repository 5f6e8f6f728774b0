package bufferpool_test

import (
	"context"
	"testing"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// The pool's totals are the pool's now, not the one found at connect time: a connection
// kept for long (a sidecar, the agent, follow) sees the pool resized under it.
func TestReadTotalsFollowsAResizedPool(t *testing.T) {
	ctx := context.Background()
	srv := sandboxtest.Flavor(t)
	sb := sandboxtest.SecondServerWith(t, 64<<20, srv.PoolResizeArgs(8<<20)...)
	conn, err := sb.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if conn.Server.ElasticPool() != conn.Server.IsMariaDB() {
		// Every MariaDB the tests run (10.11.19, 11.8.9) has MDEV-29445's pool.
		t.Errorf("%s: ElasticPool() = %v", conn.Server, conn.Server.ElasticPool())
	}
	for _, size := range []int64{96 << 20, 32 << 20} {
		pages := sandboxtest.ResizePool(t, conn.DB, size)
		tot, err := bufferpool.ReadTotals(ctx, conn)
		if err != nil {
			t.Fatal(err)
		}
		if tot.PoolBytes != size || tot.PagesTotal != pages {
			t.Errorf("pool resized to %d bytes (%d pages): ReadTotals says %d bytes, %d pages", size, pages, tot.PoolBytes, tot.PagesTotal)
		}
		t.Logf("%s: %d MiB = %d pages", conn.Server, size>>20, pages)
	}
}

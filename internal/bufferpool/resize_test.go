package bufferpool_test

import (
	"context"
	"testing"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// The pool's totals are the pool's now, not the one found at connect time: a connection
// kept for long (a sidecar, the agent, follow) sees the pool resized under it. The shared
// server's 128 MiB pool grows to 256 MiB and shrinks back (one chunk of MySQL's 128 MiB
// default, any size on MariaDB's elastic pool).
func TestReadTotalsFollowsAResizedPool(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	start := conn.Server.PoolSize
	t.Cleanup(func() { sandboxtest.ResizePool(t, conn.DB, start) })
	if conn.Server.ElasticPool() != conn.Server.IsMariaDB() {
		// Every MariaDB the tests run (10.11.19, 11.8.9) has MDEV-29445's pool.
		t.Errorf("%s: ElasticPool() = %v", conn.Server, conn.Server.ElasticPool())
	}
	for _, size := range []int64{2 * start, start} {
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

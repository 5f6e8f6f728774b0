package agent

import (
	"context"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
)

// TreatEveryRunAsYoung makes a broken ping connection unable to tell any run from a
// restart by its start, as it is within a server's first seconds, until restore.
func TreatEveryRunAsYoung() (restore func()) {
	was := youngRunSeconds
	youngRunSeconds = 1 << 40
	return func() { youngRunSeconds = was }
}

// FlushDirtyPages has conn's server write every dirty page to its files, where snapshot,
// the tree path and the agent's page list from the server's dump read the pages (MySQL's
// FLUSH TABLES ... FOR EXPORT would evict them).
func FlushDirtyPages(t testing.TB, conn *connection.Conn) {
	t.Helper()
	ctx := context.Background()
	var pct string
	if err := conn.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_max_dirty_pages_pct").Scan(&pct); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.DB.ExecContext(ctx, "SET GLOBAL innodb_max_dirty_pages_pct = 0"); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = conn.DB.ExecContext(ctx, "SET GLOBAL innodb_max_dirty_pages_pct = "+pct) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err := conn.GlobalStatus(ctx, "Innodb_buffer_pool_pages_dirty")
		if err != nil {
			t.Fatal(err)
		}
		if st["innodb_buffer_pool_pages_dirty"] == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d dirty pages a minute on", st["innodb_buffer_pool_pages_dirty"])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

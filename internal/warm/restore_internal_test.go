package warm

import (
	"context"
	"errors"
	"testing"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// A setting innowarm changed for a run and could not put back (its user lost the
// privilege, as a user's REVOKE did on MySQL mid-follow) only made a warning: the warm
// said it succeeded, and follow's next rounds said ok with the standby's
// innodb_old_blocks_pct left at 95. The restore's failure is now an error the run returns,
// ErrNotRestored, which follow stops on.
func TestRestoreFailureIsAnError(t *testing.T) {
	ctx := context.Background()
	var was int64
	if err := sandboxtest.Conn(t).DB.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_old_blocks_pct").Scan(&was); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sandboxtest.Exec(t, "SET GLOBAL innodb_old_blocks_pct = DEFAULT") })
	conn, err := connection.Open(ctx, sandboxtest.Server(t).ConnOptions())
	if err != nil {
		t.Fatal(err)
	}
	restore, err := raiseOldBlocksPct(ctx, conn, logx.New(nil, true))
	if err != nil {
		t.Fatal(err)
	}
	// The restore cannot reach the server now.
	conn.Close()
	err = restore()
	if !errors.Is(err, ErrNotRestored) {
		t.Fatalf("a restore that could not run returned %v, want ErrNotRestored", err)
	}
	t.Logf("%v", err)
	var now int64
	if err := sandboxtest.Reconnect(t).DB.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_old_blocks_pct").Scan(&now); err != nil {
		t.Fatal(err)
	}
	if now != replacePct || was == replacePct {
		t.Fatalf("innodb_old_blocks_pct %d (was %d): the test did not leave it changed", now, was)
	}
}

package warm

import (
	"context"
	"fmt"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/logx"
)

// applyVariables changes global variables for the run and returns what puts them back. The
// restore runs on its own context, so it also happens after Ctrl-C; the original value is
// logged first, so an operator can restore it by hand if innowarm is killed outright.
func applyVariables(ctx context.Context, conn *connection.Conn, o RunOptions, log *logx.Logger) (func(), error) {
	if !o.MakeYoung {
		return func() {}, nil
	}
	var old int64
	if err := conn.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_old_blocks_time").Scan(&old); err != nil {
		return nil, fmt.Errorf("read innodb_old_blocks_time: %w", err)
	}
	if _, err := conn.DB.ExecContext(ctx, "SET GLOBAL innodb_old_blocks_time = 0"); err != nil {
		return nil, fmt.Errorf("--make-young needs to SET GLOBAL innodb_old_blocks_time (SUPER or SYSTEM_VARIABLES_ADMIN): %w", err)
	}
	log.Infof("innodb_old_blocks_time set to 0 for the warm (was %d; if innowarm is killed, restore it with SET GLOBAL innodb_old_blocks_time = %d)", old, old)
	return func() {
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := conn.DB.ExecContext(rctx, fmt.Sprintf("SET GLOBAL innodb_old_blocks_time = %d", old)); err != nil {
			log.Warnf("could not restore innodb_old_blocks_time to %d: %v; run SET GLOBAL innodb_old_blocks_time = %d", old, err, old)
			return
		}
		log.Infof("innodb_old_blocks_time restored to %d", old)
	}, nil
}

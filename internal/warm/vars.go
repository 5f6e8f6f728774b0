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
		return nil, fmt.Errorf("making loaded pages young needs to SET GLOBAL innodb_old_blocks_time (SUPER or SYSTEM_VARIABLES_ADMIN), or turn it off: %w", err)
	}
	log.Infof("innodb_old_blocks_time set to 0 for the warm (was %d; if innowarm is killed, restore it with SET GLOBAL innodb_old_blocks_time = %d)", old, old)
	return func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, err := conn.DB.ExecContext(rctx, fmt.Sprintf("SET GLOBAL innodb_old_blocks_time = %d", old)); err != nil {
			log.Warnf("could not restore innodb_old_blocks_time to %d: %v; run SET GLOBAL innodb_old_blocks_time = %d", old, err, old)
			return
		}
		log.Infof("innodb_old_blocks_time restored to %d", old)
	}, nil
}

// replacePct is innodb_old_blocks_pct during a load that replaces the pool's content.
const replacePct = 95

// raiseOldBlocksPct lets a native load replace what has gone stale in the young sublist.
// The server puts every page it loads at the head of the old sublist (3/8 of the LRU list
// by default); once the pool is full, each page loaded evicts the tail, so a load keeps only
// its last 3/8 of a pool while pages nobody has touched since (an idle standby's whole
// young sublist) stay. With the old sublist at 95% for the load, its pages replace nearly
// the whole pool; put back afterwards, the boundary moves towards the tail and the pages
// loaded last, the hottest when tiers load the coldest first, become the young sublist.
func raiseOldBlocksPct(ctx context.Context, conn *connection.Conn, log *logx.Logger) (func(), error) {
	var old int64
	if err := conn.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_old_blocks_pct").Scan(&old); err != nil {
		return nil, fmt.Errorf("read innodb_old_blocks_pct: %w", err)
	}
	if old >= replacePct {
		return func() {}, nil
	}
	if _, err := conn.DB.ExecContext(ctx, fmt.Sprintf("SET GLOBAL innodb_old_blocks_pct = %d", replacePct)); err != nil {
		return nil, fmt.Errorf("loading over stale pages needs to SET GLOBAL innodb_old_blocks_pct (SUPER or SYSTEM_VARIABLES_ADMIN): %w", err)
	}
	log.Infof("innodb_old_blocks_pct set to %d for the load (was %d; if innowarm is killed, restore it with SET GLOBAL innodb_old_blocks_pct = %d)", replacePct, old, old)
	return func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, err := conn.DB.ExecContext(rctx, fmt.Sprintf("SET GLOBAL innodb_old_blocks_pct = %d", old)); err != nil {
			log.Warnf("could not restore innodb_old_blocks_pct to %d: %v; run SET GLOBAL innodb_old_blocks_pct = %d", old, err, old)
			return
		}
		log.Infof("innodb_old_blocks_pct restored to %d", old)
	}, nil
}

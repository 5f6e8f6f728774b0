package warm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/logx"
)

// applyVariables changes global variables for the run and returns what puts them back. The
// restore runs on its own context, so it also happens after Ctrl-C; the original value is
// logged first, and recorded (changeGlobal), so that the next innowarm on this server puts
// it back if this one is killed.
func applyVariables(ctx context.Context, conn *connection.Conn, o RunOptions, log *logx.Logger) (func() error, error) {
	if !o.MakeYoung {
		return func() error { return nil }, nil
	}
	return changeGlobal(ctx, conn, log, "innodb_old_blocks_time", 0, "the warm",
		"making loaded pages young needs to SET GLOBAL innodb_old_blocks_time (SUPER or SYSTEM_VARIABLES_ADMIN), or turn it off")
}

// ErrNotRestored: a server setting innowarm changed for a run could not be put back.
var ErrNotRestored = errors.New("a server setting innowarm changed could not be put back")

// replacePct is innodb_old_blocks_pct during a load that replaces the pool's content.
const replacePct = 95

// raiseOldBlocksPct lets a native load replace what has gone stale in the young sublist.
// The server puts every page it loads at the head of the old sublist (3/8 of the LRU list
// by default); once the pool is full, each page loaded evicts the tail, so a load keeps only
// its last 3/8 of a pool while pages nobody has touched since (an idle standby's whole
// young sublist) stay. With the old sublist at 95% for the load, its pages replace nearly
// the whole pool; put back afterwards, the boundary moves towards the tail and the pages
// loaded last, the hottest when tiers load the coldest first, become the young sublist.
func raiseOldBlocksPct(ctx context.Context, conn *connection.Conn, log *logx.Logger) (func() error, error) {
	var old int64
	if err := conn.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_old_blocks_pct").Scan(&old); err != nil {
		return nil, fmt.Errorf("read innodb_old_blocks_pct: %w", err)
	}
	if old >= replacePct && !hasLeftover(conn, "innodb_old_blocks_pct") {
		return func() error { return nil }, nil
	}
	return changeGlobal(ctx, conn, log, "innodb_old_blocks_pct", replacePct, "the load",
		"loading over stale pages needs to SET GLOBAL innodb_old_blocks_pct (SUPER or SYSTEM_VARIABLES_ADMIN)")
}

// changedGlobals are the global variables innowarm changes for a run and puts back.
var changedGlobals = []string{"innodb_old_blocks_time", "innodb_old_blocks_pct"}

// RepairLeftoverVariables puts back the global variables a killed innowarm left changed
// on this server (recorded by changeGlobal from this machine and user), where they still
// hold the value it set.
func RepairLeftoverVariables(ctx context.Context, conn *connection.Conn, log *logx.Logger) {
	for _, name := range changedGlobals {
		if st, ok := loadVarState(conn, name); ok && !st.live() {
			repairVariable(ctx, conn, log, st)
		}
	}
}

// varState is a global variable innowarm changed: kept in the user's cache directory until
// it is put back, so that the next innowarm on the server repairs what a killed one left.
type varState struct {
	Variable string    `json:"variable"`
	Original int64     `json:"original"`
	Set      int64     `json:"set"`
	Pid      int       `json:"pid"`
	At       time.Time `json:"at"`
	path     string
}

// live says whether the innowarm that recorded st still runs (it puts the variable back).
func (st varState) live() bool {
	if st.Pid == os.Getpid() {
		return true
	}
	err := syscall.Kill(st.Pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// VariablesDirEnv names another directory for the records of changed variables (tests;
// a host whose cache directory is not kept).
const VariablesDirEnv = "INNOWARM_VARIABLES_DIR"

func varStatePath(conn *connection.Conn, name string) string {
	dir := filepath.Join(os.TempDir(), "innowarm-variables")
	if c, err := os.UserCacheDir(); err == nil {
		dir = filepath.Join(c, "innowarm", "variables")
	}
	if d := os.Getenv(VariablesDirEnv); d != "" {
		dir = d
	}
	srv := conn.Server
	sum := sha256.Sum256([]byte(strings.Join([]string{srv.Identity(), srv.Datadir, name}, "\x00")))
	return filepath.Join(dir, hex.EncodeToString(sum[:12])+".json")
}

// VariableStatePath is where the change of global variable name on conn's server is
// recorded until it is put back.
func VariableStatePath(conn *connection.Conn, name string) string { return varStatePath(conn, name) }

func loadVarState(conn *connection.Conn, name string) (varState, bool) {
	path := varStatePath(conn, name)
	var st varState
	raw, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(raw, &st) != nil || st.Variable != name {
		return st, false
	}
	st.path = path
	return st, true
}

func hasLeftover(conn *connection.Conn, name string) bool {
	st, ok := loadVarState(conn, name)
	return ok && !st.live()
}

// saveVarState writes st atomically; where it cannot, the log line that names the original
// value is all an operator has, as before.
func saveVarState(st varState) {
	raw, err := json.Marshal(st)
	if err != nil || os.MkdirAll(filepath.Dir(st.path), 0o700) != nil {
		return
	}
	tmp := fmt.Sprintf("%s.%d.tmp", st.path, os.Getpid())
	if os.WriteFile(tmp, raw, 0o600) == nil {
		_ = os.Rename(tmp, st.path)
	}
}

// repairVariable puts back a variable a killed innowarm (st) left changed, where it still
// holds the value that innowarm set (an operator may have set it since).
func repairVariable(ctx context.Context, conn *connection.Conn, log *logx.Logger, st varState) {
	var now int64
	if err := conn.DB.QueryRowContext(ctx, "SELECT @@GLOBAL."+st.Variable).Scan(&now); err != nil {
		return
	}
	if now == st.Set {
		if _, err := conn.DB.ExecContext(ctx, fmt.Sprintf("SET GLOBAL %s = %d", st.Variable, st.Original)); err != nil {
			log.Warnf("%s was left at %d by an innowarm that was killed (pid %d, %s): could not put it back to %d: %v", st.Variable, st.Set, st.Pid, st.At.Format(time.RFC3339), st.Original, err)
			return
		}
		log.Warnf("%s was left at %d by an innowarm that was killed (pid %d, %s): put back to %d", st.Variable, st.Set, st.Pid, st.At.Format(time.RFC3339), st.Original)
	}
	os.Remove(st.path)
}

// changeGlobal sets the global variable name to value for what ("the warm", "the load") and
// returns what puts it back. The original is recorded first (varState), so a killed
// innowarm's change is put back by the next; a change another running innowarm made is
// left to it. hint says what a refusal needs.
func changeGlobal(ctx context.Context, conn *connection.Conn, log *logx.Logger, name string, value int64, what, hint string) (func() error, error) {
	if st, ok := loadVarState(conn, name); ok {
		if st.live() {
			log.Infof("%s is %d for another innowarm's run (pid %d), which puts it back to %d", name, st.Set, st.Pid, st.Original)
			if st.Set == value {
				return func() error { return nil }, nil
			}
		} else {
			repairVariable(ctx, conn, log, st)
		}
	}
	var old int64
	if err := conn.DB.QueryRowContext(ctx, "SELECT @@GLOBAL."+name).Scan(&old); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if old == value {
		return func() error { return nil }, nil
	}
	st := varState{Variable: name, Original: old, Set: value, Pid: os.Getpid(), At: time.Now().UTC(), path: varStatePath(conn, name)}
	saveVarState(st)
	if _, err := conn.DB.ExecContext(ctx, fmt.Sprintf("SET GLOBAL %s = %d", name, value)); err != nil {
		os.Remove(st.path)
		return nil, fmt.Errorf("%s: %w", hint, err)
	}
	log.Infof("%s set to %d for %s (was %d; if innowarm is killed, the next warm on this server from this machine puts it back, or SET GLOBAL %s = %d)", name, value, what, old, name, old)
	return func() error {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, err := conn.DB.ExecContext(rctx, fmt.Sprintf("SET GLOBAL %s = %d", name, old)); err != nil {
			// The run fails with it: a warm, or a follow round, that ends with the server's
			// settings changed must not say it succeeded (a user's follow went on for
			// rounds with innodb_old_blocks_pct at 95 after a REVOKE).
			return fmt.Errorf("%w: %s is still %d, not its %d (SET GLOBAL %s = %d puts it back; the next innowarm on this server from this machine does too): %w", ErrNotRestored, name, value, old, name, old, err)
		}
		os.Remove(st.path)
		log.Infof("%s restored to %d", name, old)
		return nil
	}, nil
}

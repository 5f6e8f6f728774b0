package warm_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/warm"
)

// An innowarm killed during --make-young (or a tiered native load) left
// innodb_old_blocks_time at 0 (innodb_old_blocks_pct at 95) for good, and the next run took
// 0 for the original: it "restored" 0. The change is now recorded in the user's cache
// directory first, and the next warm on the server puts a killed run's change back where
// the variable still holds what it set; a --make-young run then restores the true original.
func TestKilledRunsVariablesArePutBack(t *testing.T) {
	ctx := context.Background()
	// Not XDG_CACHE_HOME: the sandbox finds the installed servers there.
	dir := t.TempDir()
	t.Setenv(warm.VariablesDirEnv, dir)
	conn := sandboxtest.Conn(t)
	var original int64
	if err := conn.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_old_blocks_time").Scan(&original); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sandboxtest.Exec(t, "SET GLOBAL innodb_old_blocks_time = "+itoa(original))
	})
	sandboxtest.Exec(t, "CREATE DATABASE IF NOT EXISTS leftover", "CREATE TABLE IF NOT EXISTS leftover.t (id INT PRIMARY KEY)", "INSERT IGNORE INTO leftover.t VALUES (1), (2)")
	t.Cleanup(func() { sandboxtest.Exec(t, "DROP DATABASE IF EXISTS leftover") })
	warmOnce := func(makeYoung bool) string {
		t.Helper()
		var log strings.Builder
		saved := logx.Default()
		logx.SetDefault(logx.New(&log, false))
		defer logx.SetDefault(saved)
		run := quiet()
		run.MakeYoung = makeYoung
		req := warm.Request{Filter: catalog.Filter{Schemas: []string{"leftover"}}, Method: warm.MethodScan, Run: run,
			Plan: warm.Options{Order: "small-first", SplitPages: warm.DefaultSplitPages}}
		if err := req.Validate(); err != nil {
			t.Fatal(err)
		}
		if _, err := warm.Execute(ctx, conn, req, func(string, string) {}); err != nil {
			t.Fatal(err)
		}
		return log.String()
	}
	// The record of a run that was killed (its pid gone), and the variable as it left it.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	warmOnce(true) // a run that ends leaves no record
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 0 {
		t.Fatalf("a run that ended left its record: %v", files)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// The path is the one changeGlobal uses: record a live run's change, and read it back.
	sandboxtest.Exec(t, "SET GLOBAL innodb_old_blocks_time = 0")
	rec := map[string]any{"variable": "innodb_old_blocks_time", "original": original, "set": 0, "pid": dead.Process.Pid, "at": "2026-12-06T00:00:00Z"}
	raw, _ := json.Marshal(rec)
	path := warm.VariableStatePath(conn, "innodb_old_blocks_time")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	out := warmOnce(true)
	var now int64
	if err := conn.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_old_blocks_time").Scan(&now); err != nil {
		t.Fatal(err)
	}
	if now != original || !strings.Contains(out, "left at 0 by an innowarm that was killed") {
		t.Errorf("innodb_old_blocks_time %d after a --make-young run that found a killed run's 0, want %d put back; log:\n%s", now, original, out)
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("the killed run's record is still there")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

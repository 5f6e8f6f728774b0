package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// --no-drop in a schema innowarm did not create keeps the t1 a read load made there, and
// nothing marks that t1 as innowarm's: the next run there refuses and cleanup will not
// drop it. The run that leaves it says so, with the statement that drops it. Before, it
// said nothing, and the next run's refusal was the first the user heard of the table.
func TestNoDropInSomeoneElsesSchemaNamesTheKeptTable(t *testing.T) {
	schema := sandboxtest.Schema(t) // the user's: innowarm did not create it
	sandboxtest.Exec(t, "CREATE TABLE "+schema+".keep (x INT)")
	c := sandboxtest.Conn(t)
	o := Defaults()
	o.Schema, o.AutoGenerate, o.NoDrop = schema, true, true
	o.Auto.LoadType = LoadRead
	p, err := NewPlan(o)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	var log bytes.Buffer
	if _, err := Run(context.Background(), p, Env{Admin: c, Sink: &Sink{}, Log: logx.New(&log, false)}); err != nil {
		t.Fatalf("run: %v", err)
	}
	var n int
	if err := c.DB.QueryRow("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 't1'", schema).Scan(&n); err != nil || n != 1 {
		t.Fatalf("t1 in %s after a --no-drop run: %d (%v), want it kept", schema, n, err)
	}
	if !strings.Contains(log.String(), "kept table t1") || !strings.Contains(log.String(), "DROP TABLE `"+schema+"`.`t1`") {
		t.Fatalf("the run did not say it left t1 in %s:\n%s", schema, log.String())
	}
}

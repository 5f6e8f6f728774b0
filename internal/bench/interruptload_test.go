package bench

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// Ctrl-C during the load phase (mysqlslap's INSERTs into t1, on the control session)
// still drops the schema the run created. The cancel made the driver drop the control
// session's connection, and the drop went through that dead connection and failed, unsaid:
// the schema stayed, with its partial t1.
func TestInterruptDuringLoadPhaseDropsTheSchema(t *testing.T) {
	schema := "t_interrupt_load"
	c := sandboxtest.Conn(t)
	t.Cleanup(func() { _, _ = c.DB.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+schema) })
	o := Defaults()
	o.Schema, o.AutoGenerate = schema, true
	o.Auto.WriteNumber = 10_000_000 // a load phase far longer than the test waits
	p, err := NewPlan(o)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, p, Env{Admin: c, Sink: &Sink{}})
		done <- err
	}()
	// Cancel once the load phase is under way: t1 has rows.
	for deadline := time.Now().Add(time.Minute); ; {
		var n int64
		err := c.DB.QueryRow("SELECT COUNT(*) FROM `" + schema + "`.`t1`").Scan(&n)
		if err == nil && n > 0 {
			break
		}
		if err != nil && !isMissingTable(err) {
			t.Fatalf("count t1: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the load phase never began")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("run: %v, want it cancelled", err)
	}
	var name string
	err = c.DB.QueryRow("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", schema).Scan(&name)
	if !errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("schema %s after the interrupt: %q (%v), want it dropped", schema, name, err)
	}
}

// isMissingTable: the schema or t1 does not exist yet (1049, 1146).
func isMissingTable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1049 || me.Number == 1146)
}

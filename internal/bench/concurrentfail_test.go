package bench

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// TestFailuresAtOnceAreAllCounted: when several clients fail at the same time, every
// failure the server raised is counted, not only the first. Each of 8 clients runs SELECT 1,
// then a procedure that waits behind a table lock the test holds and then raises an error
// (SIGNAL); the lock's release lets all of them fail at once. The server counts the SIGNALs
// it raised (Com_signal), and the run's partial block must count as many errors. Before,
// a client that failed after the first had stopped the round was taken for one the run
// had killed on its way out and not counted: 1 error where the server raised 8.
func TestFailuresAtOnceAreAllCounted(t *testing.T) {
	ctx := context.Background()
	c := sandboxtest.Conn(t)
	s := sandboxtest.Schema(t)
	sandboxtest.Exec(t, "CREATE TABLE "+sqltext.Table(s, "gate")+" (i INT)",
		"CREATE PROCEDURE "+sqltext.Table(s, "fail_after_gate")+"() BEGIN DECLARE x INT; SELECT COUNT(*) INTO x FROM "+sqltext.Table(s, "gate")+"; SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'gate failure'; END")
	signals := func() int64 {
		var name string
		var n int64
		if err := c.DB.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Com_signal'").Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	const clients = 8
	for _, io := range []string{IOAuto, IOLoop, IODriver} {
		t.Run(io, func(t *testing.T) {
			lock, err := c.DB.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer lock.Close()
			if _, err := lock.ExecContext(ctx, "LOCK TABLES "+sqltext.Table(s, "gate")+" WRITE"); err != nil {
				t.Fatal(err)
			}
			o := Defaults()
			o.Schema, o.AllowWrites, o.IOMode = s, true, io
			o.Query = "SELECT 1;CALL fail_after_gate()"
			o.Delimiter = ";"
			o.ConcurrencySpec = strconv.Itoa(clients)
			p, err := NewPlan(o)
			if err != nil {
				t.Fatal(err)
			}
			before := signals()
			type result struct {
				rep *Report
				err error
			}
			done := make(chan result, 1)
			var out bytes.Buffer
			go func() {
				rep, err := Run(ctx, p, Env{Admin: c, Sink: &Sink{Out: &out}, Log: logx.New(&bytes.Buffer{}, true)})
				done <- result{rep, err}
			}()
			waiting := func() int {
				var n int
				if err := c.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = ? AND STATE LIKE 'Waiting for table%'", s).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			for deadline := time.Now().Add(30 * time.Second); waiting() < clients; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the %d clients never all waited behind the lock (%d did)", clients, waiting())
				}
			}
			if _, err := lock.ExecContext(ctx, "UNLOCK TABLES"); err != nil {
				t.Fatal(err)
			}
			var res result
			select {
			case res = <-done:
			case <-time.After(2 * time.Minute):
				t.Fatal("the run did not end")
			}
			if res.err == nil || !strings.Contains(res.err.Error(), "gate failure") {
				t.Fatalf("run: %v, want the procedure's error", res.err)
			}
			raised := signals() - before
			if res.rep == nil || len(res.rep.Runs) != 1 || res.rep.Runs[0].Partial == "" {
				t.Fatalf("report %+v: want the level, partial", res.rep)
			}
			l := res.rep.Runs[0]
			t.Logf("the server raised %d errors; the run counted %d (%d queries):\n%s", raised, l.Errors, l.Queries, out.String())
			if raised < 1 || l.Errors != raised {
				t.Errorf("the run counted %d errors where the server raised %d", l.Errors, raised)
			}
			if l.Queries != clients {
				t.Errorf("%d queries succeeded, want the %d clients' SELECT 1", l.Queries, clients)
			}
			want := " per second, " + strconv.FormatInt(raised, 10) + " error"
			if !strings.Contains(out.String(), want) {
				t.Errorf("the block does not say %q:\n%s", want, out.String())
			}
			// Each failure is named, not only the first one's on the error line.
			if got := l.StopErrorCounts["1644 gate failure"]; got != raised {
				t.Errorf("stop error counts %v, want %d x 1644 gate failure", l.StopErrorCounts, raised)
			}
			want = "\tFailed (stopped the run): " + strconv.FormatInt(raised, 10) + " x 1644 gate failure\n"
			if !strings.Contains(out.String(), want) {
				t.Errorf("the block does not say %q:\n%s", want, out.String())
			}
		})
	}
}

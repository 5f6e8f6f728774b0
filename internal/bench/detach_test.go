package bench

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// TestDetachWorkloadPreparesOnEachConnection: a --workload run with --detach prepares its
// statements again on every new connection, and reconnects only between events. Before,
// the event after a reconnect executed the statement id of the closed connection: MariaDB
// refused it (error 1243, Unknown prepared statement handler; a user test on 10.11, exit 1
// after 20 queries), MySQL ran it only because its ids start again at 1 on every
// connection, and a client over TLS or --io driver crashed on the driver's closed statement.
// A transaction was cut by the reconnect too: its first statements on one connection, the
// rest in autocommit on the next.
func TestDetachWorkloadPreparesOnEachConnection(t *testing.T) {
	ctx := context.Background()
	c := sandboxtest.Conn(t)
	s := "bench_detach_" + strconv.Itoa(os.Getpid())
	if _, err := Prepare(ctx, c, PrepareOptions{Schema: s, Tables: 2, Rows: 1000, Threads: 2}, logx.New(&bytes.Buffer{}, true)); err != nil {
		t.Fatal(err)
	}
	defer Cleanup(ctx, c, s)
	for _, io := range []string{IOAuto, IODriver} {
		// 40 point selects, shared by 2 clients: a client that ran n of them reconnected
		// before its 11th, 21st and 31st, as far as it got: 2 or 3 reconnects in all.
		l := benchJSON(t, "--io="+io, "--create-schema="+s, "--workload=point-select", "--concurrency=2", "--events=40", "--detach=10").Runs[0]
		if l.Events != 40 || l.Queries != 40 || l.Errors != 0 || l.Reconnects < 2 || l.Reconnects > 3 {
			t.Errorf("io=%s point-select --detach 10: events %d queries %d errors %d reconnects %d (want 40, 40, 0, 2-3)", io, l.Events, l.Queries, l.Errors, l.Reconnects)
		}
		// read-only transactions are 16 statements: with --detach 20 a client reconnects
		// at the first event boundary after 20 statements, every 2 transactions (before
		// its 3rd, 5th, 7th, 9th); 10 transactions shared by 2 clients make 3 or 4
		// reconnects. One every 20 statements, inside transactions, made 6 or 7.
		l = benchJSON(t, "--io="+io, "--create-schema="+s, "--workload=read-only", "--concurrency=2", "--events=10", "--detach=20").Runs[0]
		if l.Events != 10 || l.Queries != 10*16 || l.Errors != 0 || l.Reconnects < 3 || l.Reconnects > 4 {
			t.Errorf("io=%s read-only --detach 20: events %d queries %d errors %d reconnects %d (want 10, 160, 0, 3-4)", io, l.Events, l.Queries, l.Errors, l.Reconnects)
		}
	}
	// The user's command line: a timed run, the text block.
	res := mustBench(t, "--create-schema="+s, "--workload=point-select", "--time=1s", "--detach=10", "-c", "2")
	if bs := blocks(res.Stdout); len(bs) != 1 || bs[0]["Queries"] == "" {
		t.Errorf("--time 1s --detach 10:\n%s", res.Stdout)
	}
}

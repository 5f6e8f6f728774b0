package bench

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// An open-loop client that is free before its event's scheduled start sleeps until then:
// the time its own timer wakes it late (0.5-1 ms on a busy machine, against a server's
// 0.05 ms point select) is the client's, not a queue in front of the server, and must not
// be added to the event's latency. Before, every event of a run the server kept up with
// carried it: --rate 200 reported p50 0.77 ms where the server answered in 0.02 ms.
func TestPacerOnTimeEventsCarryNoLag(t *testing.T) {
	st := &roundState{stopped: make(chan struct{})}
	// Each event is scheduled well ahead of the client (20 ms): 1-2 ms ahead, a busy
	// machine that paused the test between scheduling and waiting made the client late, and
	// its lag was rightly counted (11 runs in 1,000 at low priority on a loaded machine).
	const lead = 20 * time.Millisecond
	p := newPacer(1000, 1, 0, time.Now().Add(lead))
	early := 0
	for i := range 10 {
		arrived := time.Now()
		lag, ok := p.wait(st, false, time.Time{})
		if !ok {
			t.Fatalf("event %d: the pacer gave up", i)
		}
		// A client paused past the scheduled start before its wait began was late, not
		// early: its lag is its own.
		if arrived.Before(p.next) {
			early++
			if lag != 0 {
				t.Fatalf("event %d: the client was free %v before its scheduled start, yet %v of lag was counted (its own sleep's overshoot)", i, p.next.Sub(arrived), lag)
			}
		}
		p.eventDone()
		p.next = time.Now().Add(lead)
	}
	if early == 0 {
		t.Fatal("the client was late for every event: the test proved nothing")
	}
}

// A client still busy when its next event was due starts it at once, and the time it was
// late counts, as a queued request's wait does (no coordinated omission).
func TestPacerLateEventsCarryTheirLag(t *testing.T) {
	st := &roundState{stopped: make(chan struct{})}
	start := time.Now().Add(-30 * time.Millisecond)
	p := newPacer(100, 1, 0, start) // every 10 ms: the first three are due already
	for i := range 3 {
		lag, ok := p.wait(st, false, time.Time{})
		if !ok {
			t.Fatalf("event %d: the pacer gave up", i)
		}
		if want := 30*time.Millisecond - time.Duration(i)*10*time.Millisecond; lag < want {
			t.Fatalf("event %d: lag %v, want at least %v", i, lag, want)
		}
		p.eventDone()
	}
}

// A timed open-loop run the server cannot keep up with says so: the events due before the
// end that never ran are counted and printed beside the rate, since no latency includes
// them. Before, the block showed only the events that ran and their latency, and nothing
// told the rate asked from the rate served.
func TestOpenLoopCountsEventsTheServerFellBehindOn(t *testing.T) {
	schema := "t_open_loop_behind"
	c := sandboxtest.Conn(t)
	ctx := context.Background()
	if _, err := Prepare(ctx, c, PrepareOptions{Schema: schema, Tables: 1, Rows: 1000, Threads: 1}, nil); err != nil {
		t.Fatalf("prepare: %v", err)
	}
	t.Cleanup(func() { _, _ = c.DB.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+schema) })

	o := Defaults()
	o.Schema, o.Workload, o.NoDrop = schema, "point-select", true
	o.ConcurrencySpec = "1"
	o.Time = 300 * time.Millisecond
	o.Rate = 1e7 // no server answers ten million point selects a second from one client
	p, err := NewPlan(o)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	var out bytes.Buffer
	rep, err := Run(ctx, p, Env{Admin: c, Sink: &Sink{Out: &out}})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	l := rep.Runs[0]
	due := o.Rate * o.Time.Seconds()
	if l.EventsBehind <= 0 {
		t.Fatalf("%d events ran of about %.0f due, and none counted behind schedule:\n%s", l.Events, due, out.String())
	}
	// Every event due before the deadline either ran or is counted behind; the client's
	// schedule starts a little after the round's clock, so a few may be missing, none extra.
	if got := float64(l.Events + l.EventsBehind); got > due+1 || got < 0.5*due {
		t.Fatalf("ran %d + behind %d = %.0f, want about %.0f (the rate times --time)", l.Events, l.EventsBehind, got, due)
	}
	if !strings.Contains(out.String(), fmt.Sprintf("%d events due were never run", l.EventsBehind)) {
		t.Fatalf("the block does not say the server fell behind:\n%s", out.String())
	}
}

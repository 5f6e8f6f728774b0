package bench

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/go-sql-driver/mysql"

	"github.com/innowarm/innowarm/internal/sqlerr"
)

// worker is one client.
type worker struct {
	idx  int
	r    *runner
	st   *roundState
	rec  *recorder
	conn atomic.Pointer[wconn]
	busy atomic.Bool
	done atomic.Bool
	rng  *rand.Rand
	// killed says the run's monitor sent KILL QUERY for the client's statement, cut says it
	// cut the client's connection: a failure after either may be the run's own doing.
	killed, cut atomic.Bool

	connects   []time.Duration // connection set-up times
	reconnects int64
	// redial opens the client's next connection (--detach); nil where the client does not
	// reconnect (event loops, which do not run with --detach). detachedAt is the query
	// count at the last reconnect.
	redial     func() error
	detachedAt uint64
	errCodes   map[string]int64
	// fatalCodes counts, by error, the statements that stopped the round: several clients
	// may fail at once, and not all for the same reason.
	fatalCodes map[string]int64
	errCount   int64
	fatals     int64 // statements that stopped the round (in errCount too)
	// lastRetryable says the last failed statement's error only rolled back its
	// transaction (retryableInTransaction): the program runs the transaction again.
	lastRetryable bool
	buf           []byte
	in, out       []byte // protocol buffers (execRaw)
	inLen         int
	parser        respParser
	args          []driver.Value
	prepared      []sbStmts // per table, workload runs
	// behind counts, in a timed open-loop run (--rate with --time), the events whose
	// scheduled start came before the round's end but that the client never began: the
	// backlog of a server that could not keep up, which no latency shows.
	behind int64
	// txStart is when the client's current transaction began (its scheduled start in an
	// open-loop run), for its latency.
	txStart time.Time
}

// succeeded records a statement that succeeded: d is its latency, extra the time it was
// late on its schedule (open loop), end when its answer came. The statement that
// completes a transaction also records the transaction's latency.
func (w *worker) succeeded(s step, d, extra time.Duration, end time.Time) {
	switch {
	case !s.record:
	case !s.event:
		w.rec.ok(d+extra, 0)
	case w.rec.keepsTx && !w.txStart.IsZero():
		w.rec.okTx(d+extra, end.Sub(w.txStart))
		w.txStart = time.Time{}
	default:
		w.rec.ok(d+extra, 1)
	}
}

// connect opens the client's connection and readies it; the time it takes is connection
// set-up, recorded apart from the queries.
func (w *worker) connect(ctx context.Context) error {
	t0 := time.Now()
	c, err := w.r.dial.open(ctx)
	if err != nil {
		return err
	}
	if w.r.p.Commit > 0 {
		if err := c.exec("SET AUTOCOMMIT=0"); err != nil {
			c.close()
			return err
		}
	}
	if w.r.p.Mode == ModeWorkload {
		if err := w.prepareStatements(c); err != nil {
			c.close()
			return err
		}
	}
	w.connects = append(w.connects, time.Since(t0))
	w.conn.Store(c)
	return nil
}

func (w *worker) reconnect(ctx context.Context) error {
	if old := w.conn.Load(); old != nil {
		old.close()
	}
	w.parser.caps, w.inLen = caps{}, 0
	w.reconnects++
	return w.connect(ctx)
}

// exec runs one statement and says how long it took.
func (w *worker) exec(c *wconn, q string) (time.Duration, error) {
	w.busy.Store(true)
	t0 := time.Now()
	err := c.exec(q)
	d := time.Since(t0)
	w.busy.Store(false)
	return d, err
}

func (w *worker) execStmt(st driver.Stmt, args []driver.Value) (time.Duration, error) {
	w.busy.Store(true)
	t0 := time.Now()
	_, err := st.Exec(args) //nolint:staticcheck // the per-query hot path: no context per statement; a run is stopped by KILL QUERY and by cutting the socket
	d := time.Since(t0)
	w.busy.Store(false)
	return d, err
}

// failed handles a failed statement: counted with --ignore-errors when the server refused
// it, otherwise the end of the round. A transaction workload's deadlocks and lock wait
// timeouts are counted (and the transaction run again) without it, as sysbench ignores
// them by default (--mysql-ignore-errors=1213,1020,1205). It reports whether the client
// must stop.
func (w *worker) failed(q string, err error) bool {
	// A round that is stopping still counts the statements that failed on their own: when
	// several clients fail at once, only the first stops the round, and the others' failures
	// happened all the same. Only those the run itself stopped on its way out are not.
	stopping := w.st.stop.Load()
	if stopping && w.stoppedByRun(err) {
		return true
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) && (w.r.p.IgnoreErrors || w.r.p.Transactions() && retryableInTransaction(me.Number)) {
		w.lastRetryable = retryableInTransaction(me.Number)
		w.rec.failed()
		w.errCount++
		key := errorKey(me)
		if len(w.errCodes) < 1000 {
			w.errCodes[key]++
		} else {
			w.errCodes["other"]++
		}
		return stopping
	}
	hint := ""
	if me != nil {
		hint = " (--ignore-errors counts failed queries and goes on)"
	}
	w.fatal(fmt.Errorf("client %d: query failed: %s: %w%s", w.idx+1, shorten(q, 200), err, hint))
	return true
}

// errorKey names a failure for the counts by error: the server's number and message, or
// what became of the connection.
func errorKey(err error) string {
	var me *mysql.MySQLError
	switch {
	case errors.As(err, &me):
		return fmt.Sprintf("%d %s", me.Number, shorten(me.Message, 80))
	case sqlerr.ConnectionLost(err):
		return "connection lost"
	}
	return "other"
}

// erFilesortAbort is ER_FILSORT_ABORT, "Sort aborted": how a KILL QUERY may end a sort.
const erFilesortAbort uint16 = 1028

// stoppedByRun says a statement that failed while the round was stopping failed because
// the run stopped it: its connection was cut by the monitor, or the monitor's KILL QUERY
// interrupted it (a statement that failed on its own, even after a KILL QUERY was sent,
// carries its own error).
func (w *worker) stoppedByRun(err error) bool {
	if w.cut.Load() {
		return true
	}
	return w.killed.Load() && sqlerr.Is(err, sqlerr.QueryInterrupted, erFilesortAbort)
}

// fatal ends the round for a statement of this client that failed for good (or could not
// be sent: its connection was lost, or its --detach reconnect failed). The statement counts
// as failed: the block of a run that stopped on it must not say "0 errors".
func (w *worker) fatal(err error) {
	w.rec.failed()
	w.errCount++
	w.fatals++
	if w.fatalCodes == nil {
		w.fatalCodes = map[string]int64{}
	}
	w.fatalCodes[errorKey(err)]++
	w.st.fail(err)
}

// detach opens the client's next connection when --detach says it is due: n is the number
// of queries the client has run. The programs call it where a new connection may begin:
// before a query of mysqlslap's list, and before a workload's next event, so that a
// transaction never spans two connections and the event takes the prepared statements of
// the connection it runs on (a statement id belongs to the connection that prepared it:
// MariaDB refuses another's, error 1243, and the driver's statement of a closed connection
// is unusable). False when the reconnect failed: the round is stopping.
func (w *worker) detach(n uint64) bool {
	every := uint64(max(w.r.p.Detach, 0))
	if every == 0 || w.redial == nil || n < w.detachedAt+every {
		return true
	}
	w.detachedAt = n
	if err := w.redial(); err != nil {
		w.fatal(fmt.Errorf("client %d: reconnect (--detach): %w", w.idx+1, err))
		return false
	}
	return true
}

func (w *worker) expired(now time.Time) bool {
	return !w.st.deadline.IsZero() && now.After(w.st.deadline)
}

// keyed builds "... WHERE id =  'key'" without allocating: the driver copies the text
// into its packet buffer before Exec returns, so the string may alias w.buf.
func (w *worker) keyed(s string) string {
	keys := w.r.keys
	w.buf = append(w.buf[:0], s...)
	w.buf = append(w.buf, " '"...)
	w.buf = append(w.buf, keys[w.rng.IntN(len(keys))]...)
	w.buf = append(w.buf, '\'')
	return unsafe.String(unsafe.SliceData(w.buf), len(w.buf))
}

// program makes the client's program for a round.
func (w *worker) program(spec roundSpec) program {
	if w.r.p.Mode == ModeWorkload {
		return newWorkloadProgram(w, spec)
	}
	return newSlapProgram(w, spec)
}

// runThreaded runs the client's program on its own thread, a statement at a time, with a
// fresh connection every --detach queries (the program says when: worker.detach).
func (w *worker) runThreaded(ctx context.Context, spec roundSpec) {
	p := w.r.p
	w.redial = func() error { return w.reconnect(ctx) }
	prog := w.program(spec)
	pace := newPacer(p.Rate, spec.clients, w.idx, time.Now())
	if spec.deadline > 0 {
		defer func() { w.behind = pace.missed(w.st, time.Now()) }()
	}
	for !w.st.stop.Load() {
		expired := spec.deadline > 0 && w.expired(time.Now())
		s, ok := prog.next(expired)
		if !ok {
			return
		}
		lag, ok := pace.wait(w.st, spec.deadline > 0, w.st.deadline)
		if !ok {
			return
		}
		if s.begins && w.rec.keepsTx {
			w.txStart = time.Now().Add(-lag)
		}
		var d time.Duration
		var err error
		switch {
		case w.r.dial.raw:
			d, err = w.execRaw(s)
		case s.ps != nil:
			args := w.args[:s.nargs]
			for i := range args {
				args[i] = s.args[i]
			}
			d, err = w.execStmt(s.ps.ds, args)
		default:
			d, err = w.exec(w.conn.Load(), s.text)
		}
		if err != nil {
			if w.failed(s.describe(), err) {
				return
			}
			if s.event {
				pace.eventDone()
			}
			prog.done(s, true)
			continue
		}
		w.succeeded(s, d, lag, time.Now())
		if s.event {
			pace.eventDone()
		}
		prog.done(s, false)
	}
}

// pacer schedules a client's events in an open-loop run (--rate): the client's share of
// the rate, its first event offset so that the clients' schedules interleave. A client
// behind its schedule starts its next event at once, and the time it was late counts in
// that event's latency, as a queued request's wait does (no coordinated omission).
type pacer struct {
	interval time.Duration // 0: closed loop
	next     time.Time     // the scheduled start of the client's next event
	started  bool          // the current event has started (its lag is counted)
}

func newPacer(rate float64, clients, idx int, start time.Time) *pacer {
	if rate <= 0 {
		return &pacer{}
	}
	interval := time.Duration(float64(clients) / rate * float64(time.Second))
	return &pacer{interval: interval, next: start.Add(time.Duration(float64(idx) / rate * float64(time.Second)))}
}

// wait holds the client until its event's scheduled start, for the event's first
// statement; lag is how late the statement starts (0 for the event's later statements).
// Only a client that is behind its schedule when it comes here has lag: it was busy with
// earlier events past this one's start, as a queued request waits. A client that is early
// sleeps, and its wake-up overshoot (0.5-1 ms of the Go timer on a busy machine, ten times
// a point select) is its own, not the server's: the event starts on time as far as the
// server can tell. ok is false when the round stops, or its deadline comes, first.
func (p *pacer) wait(st *roundState, timed bool, deadline time.Time) (lag time.Duration, ok bool) {
	if p.interval == 0 || p.started {
		return 0, true
	}
	p.started = true
	now := time.Now()
	if !now.Before(p.next) {
		return now.Sub(p.next), true
	}
	for now.Before(p.next) {
		if timed && !p.next.Before(deadline) {
			return 0, false
		}
		if st.stop.Load() {
			return 0, false
		}
		time.Sleep(min(p.next.Sub(now), 50*time.Millisecond))
		now = time.Now()
	}
	return 0, true
}

// missed counts, when the client stops at the round's deadline (now is past it), the
// events scheduled before the deadline that it has not begun: a client behind its
// schedule leaves them unrun. A client that stops earlier (--events spent, a failure)
// misses none.
func (p *pacer) missed(st *roundState, now time.Time) int64 {
	if p.interval == 0 || st.deadline.IsZero() || now.Before(st.deadline) {
		return 0
	}
	end := st.deadline
	next := p.next
	if p.started {
		next = next.Add(p.interval) // the event in hand had begun: it is not a missed one
	}
	if !next.Before(end) {
		return 0
	}
	return int64(end.Sub(next)/p.interval) + 1
}

// eventDone moves the schedule to the client's next event.
func (p *pacer) eventDone() {
	if p.interval > 0 {
		p.next = p.next.Add(p.interval)
		p.started = false
	}
}

// execRaw sends a statement and reads its answer in the protocol, on the client's own
// thread (see proto.go): no decoding, no allocation.
func (w *worker) execRaw(s step) (time.Duration, error) {
	bc := w.conn.Load().sock.(*blockingConn)
	if w.parser.caps == (caps{}) {
		cp, ok := sniffCaps(bc.hello)
		if !ok {
			return 0, errors.New("cannot read the capabilities the connection negotiated")
		}
		w.parser.caps = cp
	}
	w.out = w.out[:0]
	if s.ps != nil {
		w.out = appendExecute(w.out, s.ps.id, s.args[:s.nargs])
	} else {
		w.out = appendCommand(w.out, comQuery, s.text)
	}
	w.parser.reset()
	refused := false
	w.busy.Store(true)
	t0 := time.Now()
	_, err := bc.Write(w.out)
	for err == nil {
		if w.inLen == len(w.in) {
			w.in = append(w.in, make([]byte, max(len(w.in), 16<<10))...)
		}
		var n int
		if n, err = bc.Read(w.in[w.inLen:]); err != nil {
			break
		}
		w.inLen += n
		used, done := w.parser.feed(w.in[:w.inLen])
		copy(w.in, w.in[used:w.inLen])
		w.inLen -= used
		if done {
			break
		}
		if w.parser.infile {
			w.parser.infile, refused = false, true
			_, err = bc.Write([]byte{0, 0, 0, w.parser.seq + 1})
		}
	}
	d := time.Since(t0)
	w.busy.Store(false)
	switch {
	case err != nil:
		return d, fmt.Errorf("connection lost: %w", err)
	case w.parser.err != nil:
		return d, w.parser.err
	case refused:
		return d, errLocalInfile
	}
	return d, nil
}

// closeConn ends the client: its connection closes.
func (w *worker) closeConn() {
	if c := w.conn.Load(); c != nil {
		c.close()
	}
	w.done.Store(true)
}

// retryableInTransaction says whether a statement's error rolled back only its transaction,
// which a client runs again: a deadlock (1213), a lock wait timeout (1205), a record
// changed since it was read (1020: MariaDB 11.8's innodb_snapshot_isolation, often).
func retryableInTransaction(code uint16) bool {
	return code == 1213 || code == 1205 || code == 1020
}

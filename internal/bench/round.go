package bench

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"github.com/innowarm/innowarm/internal/sqlerr"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/innowarm/innowarm/internal/connection"
)

// maxBlockingClients is the most clients that get blocking connections (and a P each);
// more use Go's network poller.
const maxBlockingClients = 512

// spareProcs are the Ps left over for the rest of the process while every client holds
// one: none. With an idle P around, every time a client goes through the scheduler the
// runtime wakes a thread to look for work on it and puts it back to sleep: thousands of
// futex calls and context switches a second at 32 clients. The rest of the process
// (interval reports, signals, KILL QUERY) runs when the runtime preempts a client, which
// it does to every goroutine that has run for 10 ms without a break (as a client in raw
// system calls seems to): the preemption signal also ends a long statement's wait
// (blockingConn.wait). Yielding more often than that costs more than it saves.
const spareProcs = 0

// chooseIO decides how the clients of a round talk to the server (see IOAuto).
func (r *runner) chooseIO(clients int) {
	d := r.dial
	tls := d.base.TLS != nil
	d.loop, d.blocking, d.raw = false, false, false
	switch mode := r.p.IOMode; {
	case mode == IONetpoll || !blockingIOSupported:
	case mode == IOLoop && loopSupported && !tls && r.p.Detach == 0 && r.p.Rate == 0:
		d.loop, d.blocking, d.raw = true, true, true
	case mode == IODriver:
		d.blocking = clients <= 1024 // the runtime's limit on GOMAXPROCS
	case mode == IOBlocking:
		d.blocking = clients <= 1024
		d.raw = d.blocking && !tls
	default: // auto: a thread per client, protocol spoken directly
		d.blocking = clients <= maxBlockingClients
		d.raw = d.blocking && !tls
	}
}

// roundSpec is one run of the clients.
type roundSpec struct {
	clients   int
	iteration int
	limit     uint64        // queries per client (mysqlslap); 0: one pass over the list
	cycle     bool          // run the list until the deadline
	deadline  time.Duration // --time
	events    uint64        // --events (workload), for all clients together
}

// roundState is shared by the clients of a round.
type roundState struct {
	stop     atomic.Bool
	deadline time.Time
	events   atomic.Uint64

	mu       sync.Mutex
	firstErr error
	stopped  chan struct{} // closed when a client fails
	stopOnce sync.Once
}

func (st *roundState) fail(err error) {
	st.mu.Lock()
	if st.firstErr == nil {
		st.firstErr = err
	}
	st.mu.Unlock()
	st.stop.Store(true)
	st.stopOnce.Do(func() { close(st.stopped) })
}

// roundResult is one round's measurements.
type roundResult struct {
	iteration  int
	clients    int
	seconds    float64 // mysqlslap's: from the first connection attempt to the last client done
	connectSec float64 // until every client was connected
	querySec   float64 // from the start signal to the last client done
	queries    int64
	errors     int64
	fatal      int64 // of the errors, the statements that stopped the round
	events     int64
	reconnects int64
	behind     int64 // --rate with --time: events due before the deadline and never begun
	hist       *hdr.Histogram
	txHist     *hdr.Histogram // transaction workloads: whole transactions; else nil
	connects   []time.Duration
	errCodes   map[string]int64
	fatalCodes map[string]int64 // the statements that stopped the round, by error
	intervals  []Interval
	cpuSec     float64
	started    time.Time
}

// round connects the clients, starts them together, and measures until the last is done.
func (r *runner) round(ctx context.Context, spec roundSpec) (*roundResult, error) {
	r.chooseIO(spec.clients)
	if r.dial.blocking && !r.dial.loop {
		// A client blocked in a raw read keeps its P: give each one its own.
		if prev := runtime.GOMAXPROCS(0); prev < spec.clients+spareProcs {
			runtime.GOMAXPROCS(spec.clients + spareProcs)
			defer runtime.GOMAXPROCS(prev)
		}
	}
	// Collect garbage rarely while the clients run (a collection waits for the statements
	// in flight): when the heap has grown by 128 MiB, not when it has doubled.
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	prevGC := debug.SetGCPercent(-1)
	prevLimit := debug.SetMemoryLimit(int64(mem.Sys) + 128<<20)
	defer func() {
		debug.SetMemoryLimit(prevLimit)
		debug.SetGCPercent(prevGC)
	}()
	st := &roundState{stopped: make(chan struct{})}
	workers := make([]*worker, spec.clients)
	newRec := newRecorder
	if r.p.Transactions() {
		newRec = newTxRecorder
	}
	for i := range workers {
		workers[i] = &worker{
			idx: i, r: r, st: st, rec: newRec(spec.clients),
			rng:      rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i)*0x9e3779b97f4a7c15+1)),
			errCodes: map[string]int64{}, buf: make([]byte, 0, 256), args: make([]driver.Value, 4),
		}
	}
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	start := time.Now()

	connErrs := make([]error, len(workers))
	var ready, finished sync.WaitGroup
	begin := make(chan bool)
	for i, w := range workers {
		ready.Add(1)
		finished.Add(1)
		go func() {
			defer finished.Done()
			err := w.connect(ctx)
			connErrs[i] = err
			ready.Done()
			if goAhead := <-begin; !goAhead || err != nil {
				w.closeConn()
				return
			}
			if r.dial.loop {
				return // the event loops run this client
			}
			w.runThreaded(ctx, spec)
			w.closeConn()
		}()
	}
	ready.Wait()
	var connErr error
	failedConns := 0
	for _, err := range connErrs {
		if err != nil {
			failedConns++
			if connErr == nil {
				connErr = err
			}
		}
	}
	if connErr != nil || ctx.Err() != nil {
		close(begin)
		finished.Wait()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%d of %d clients could not connect: %w", failedConns, len(workers), connection.Explain(connErr, r.env.Admin.Opts))
	}
	connected := time.Now()
	if spec.deadline > 0 {
		st.deadline = connected.Add(spec.deadline)
	}
	rep := newReporter(r, spec, workers, connected)
	monitorDone, monitorExited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(monitorExited)
		r.monitor(ctx, st, workers, monitorDone)
	}()
	for range workers {
		begin <- true
	}
	if r.dial.loop {
		if err := r.startLoops(spec, workers, &finished); err != nil {
			st.fail(err)
		}
	}
	allDone := make(chan struct{})
	go func() { finished.Wait(); close(allDone) }()
	rep.loop(allDone)
	end := time.Now()
	// The monitor may be sending a KILL QUERY: the run's admin connection must outlive it.
	close(monitorDone)
	<-monitorExited
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)

	rr := rep.result()
	rr.iteration, rr.clients = spec.iteration, spec.clients
	rr.seconds = end.Sub(start).Seconds()
	rr.connectSec = connected.Sub(start).Seconds()
	rr.started = connected
	rr.querySec = end.Sub(connected).Seconds()
	rr.cpuSec = tvSec(ru1.Utime) + tvSec(ru1.Stime) - tvSec(ru0.Utime) - tvSec(ru0.Stime)
	rr.errCodes = map[string]int64{}
	for _, w := range workers {
		rr.connects = append(rr.connects, w.connects...)
		rr.reconnects += w.reconnects
		rr.fatal += w.fatals
		rr.behind += w.behind
		for k, v := range w.errCodes {
			rr.errCodes[k] += v
		}
		for k, v := range w.fatalCodes {
			if rr.fatalCodes == nil {
				rr.fatalCodes = map[string]int64{}
			}
			rr.fatalCodes[k] += v
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	st.mu.Lock()
	err := st.firstErr
	st.mu.Unlock()
	if err != nil {
		return rr, err // what ran before the error: the caller reports it as partial
	}
	return rr, nil
}

func tvSec(tv syscall.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }

// startLoops hands the connected clients to event loops; finished counts the loops.
func (r *runner) startLoops(spec roundSpec, workers []*worker, finished *sync.WaitGroup) error {
	n := loopsFor(len(workers))
	groups := make([][]*loopClient, n)
	for i, w := range workers {
		c := w.conn.Load()
		bc, ok := c.sock.(*blockingConn)
		cp, known := caps{}, false
		if ok {
			cp, known = sniffCaps(bc.hello)
		}
		if !known {
			for _, w := range workers {
				w.closeConn()
			}
			return errors.New("cannot read the capabilities the connections negotiated")
		}
		lc := &loopClient{w: w, prog: w.program(spec), spec: spec, conn: bc, fd: bc.fd, in: make([]byte, 16<<10), parser: respParser{caps: cp}}
		groups[i%n] = append(groups[i%n], lc)
	}
	for _, g := range groups {
		l, err := newEventLoop(g)
		if err != nil {
			for _, w := range workers {
				w.closeConn()
			}
			return err
		}
		finished.Add(1)
		go func() {
			defer finished.Done()
			l.run()
			for _, c := range l.clients {
				c.w.closeConn()
			}
		}()
	}
	return nil
}

// monitor stops the clients' statements on the server when the run is interrupted or a
// client failed: KILL QUERY for every client busy in a statement, again until all are done,
// and after 10 s their sockets are cut.
func (r *runner) monitor(ctx context.Context, st *roundState, workers []*worker, done <-chan struct{}) {
	select {
	case <-done:
		return
	case <-ctx.Done():
		st.stop.Store(true)
	case <-st.stopped:
	}
	giveUp := time.Now().Add(10 * time.Second)
	for {
		for _, w := range workers {
			if w.done.Load() || !w.busy.Load() {
				continue
			}
			if c := w.conn.Load(); c != nil {
				w.killed.Store(true)
				kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
				_, err := r.env.Admin.DB.ExecContext(kctx, fmt.Sprintf("KILL QUERY %d", c.id))
				cancel()
				// A client whose statement ended with its connection (the error that stops
				// the run) is no longer there: nothing to stop, nothing to say.
				if err != nil && !sqlerr.Is(err, sqlerr.NoSuchThread) {
					r.log.Warnf("could not stop the statement of client %d on the server (KILL QUERY %d): %v", w.idx+1, c.id, err)
				}
			}
		}
		select {
		case <-done:
			return
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(giveUp) {
			for _, w := range workers {
				if c := w.conn.Load(); c != nil && !w.done.Load() {
					w.cut.Store(true)
					c.abort()
				}
			}
			<-done
			return
		}
	}
}

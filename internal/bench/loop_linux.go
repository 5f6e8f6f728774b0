//go:build linux

package bench

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"github.com/go-sql-driver/mysql"
)

// loopSupported says whether this build has the event loop.
const loopSupported = true

// The event loop runs many clients on one thread. A thread per client (as mysqlslap and
// sysbench do) costs a thread wake-up and two system calls of waiting per query in every
// client; a loop waits for all its clients in one epoll_wait, and handles every answer that
// has arrived when it wakes up. The clients are the same (one statement in flight each,
// timed from the write of the request to the last packet of the answer); they use less
// CPU (measured here: 15-25% less than mariadb-slap and sysbench per query, half of a
// thread per client in Go), which on a machine shared with the server is CPU the server
// gets.

// loopsFor is how many loops serve the clients: one per CPU, so that the clients are
// present on every CPU the scheduler shares between the server and them, and no more
// than there are Ps (a loop waiting in epoll_wait holds its P).
func loopsFor(clients int) int {
	return max(1, min(clients, runtime.NumCPU(), runtime.GOMAXPROCS(0)))
}

type loopClient struct {
	w           *worker
	prog        program
	spec        roundSpec
	conn        *blockingConn
	fd          int
	in          []byte
	inLen       int
	out         []byte
	outOff      int
	parser      respParser
	cur         step
	t0          time.Time
	slot        int
	refusedFile bool // a LOCAL INFILE request was declined
	active      bool
	wantOut     bool
}

type eventLoop struct {
	epfd    int
	clients []*loopClient
	events  []syscall.EpollEvent
	active  int
}

func newEventLoop(clients []*loopClient) (*eventLoop, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	l := &eventLoop{epfd: epfd, clients: clients, events: make([]syscall.EpollEvent, min(len(clients), 256))}
	for i, c := range clients {
		c.slot = i
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(i)}
		if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
			syscall.Close(epfd)
			return nil, fmt.Errorf("epoll_ctl: %w", err)
		}
	}
	return l, nil
}

// run drives the clients until every program is done.
func (l *eventLoop) run() {
	defer syscall.Close(l.epfd)
	for _, c := range l.clients {
		// The loop reads the socket directly: hold it open until the client is done.
		c.conn.acquire()
		c.active = true
		l.active++
	}
	now := time.Now()
	for _, c := range l.clients {
		l.startNext(c, now)
	}
	for l.active > 0 {
		r, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(l.epfd), uintptr(unsafe.Pointer(&l.events[0])),
			uintptr(len(l.events)), ^uintptr(0), 0, 0)
		if e == syscall.EINTR {
			// A signal (a preemption, Ctrl-C): let the scheduler run what waits for a P.
			runtime.Gosched()
			continue
		}
		if e != 0 {
			for _, c := range l.clients {
				if c.active {
					c.w.st.fail(fmt.Errorf("epoll_wait: %w", e))
					l.finish(c)
				}
			}
			return
		}
		for i := 0; i < int(r); i++ {
			c := l.clients[l.events[i].Fd]
			if !c.active {
				continue
			}
			ev := l.events[i].Events
			if ev&syscall.EPOLLOUT != 0 && c.wantOut {
				l.flush(c)
			}
			if c.active && ev&(syscall.EPOLLIN|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 {
				l.readable(c)
			}
		}
	}
}

// startNext sends the client's next statement, or ends the client.
func (l *eventLoop) startNext(c *loopClient, now time.Time) {
	w := c.w
	if w.st.stop.Load() {
		l.finish(c)
		return
	}
	expired := c.spec.deadline > 0 && w.expired(now)
	s, ok := c.prog.next(expired)
	if !ok {
		l.finish(c)
		return
	}
	c.cur = s
	c.out, c.outOff = c.out[:0], 0
	if s.ps != nil {
		c.out = appendExecute(c.out, s.ps.id, s.args[:s.nargs])
	} else {
		c.out = appendCommand(c.out, comQuery, s.text)
	}
	c.parser.reset()
	w.busy.Store(true)
	c.t0 = time.Now()
	l.flush(c)
}

// flush writes what is left of the request; the rest waits for EPOLLOUT.
func (l *eventLoop) flush(c *loopClient) {
	for c.outOff < len(c.out) {
		r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(c.fd), uintptr(unsafe.Pointer(&c.out[c.outOff])), uintptr(len(c.out)-c.outOff))
		switch {
		case e == syscall.EAGAIN:
			if !c.wantOut {
				l.interest(c, true)
			}
			return
		case e == syscall.EINTR:
			continue
		case e != 0:
			l.lost(c, e)
			return
		}
		c.outOff += int(r)
	}
	if c.wantOut {
		l.interest(c, false)
	}
}

func (l *eventLoop) interest(c *loopClient, out bool) {
	c.wantOut = out
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(c.slot)}
	if out {
		ev.Events |= syscall.EPOLLOUT
	}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_MOD, c.fd, &ev); err != nil {
		l.lost(c, err)
	}
}

// readable reads what arrived and completes the statement when its answer is whole.
func (l *eventLoop) readable(c *loopClient) {
	if c.inLen == len(c.in) {
		c.in = append(c.in, make([]byte, len(c.in))...)
	}
	r, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(c.fd), uintptr(unsafe.Pointer(&c.in[c.inLen])), uintptr(len(c.in)-c.inLen))
	switch {
	case e == syscall.EAGAIN || e == syscall.EINTR:
		return
	case e != 0:
		l.lost(c, e)
		return
	case r == 0:
		l.lost(c, errors.New("the server closed the connection"))
		return
	}
	c.inLen += int(r)
	used, done := c.parser.feed(c.in[:c.inLen])
	copy(c.in, c.in[used:c.inLen])
	c.inLen -= used
	if c.parser.infile && !done {
		// No file is sent: an empty packet ends the request (the server then loads
		// nothing and answers), and the statement fails as it does with the driver.
		c.parser.infile = false
		c.refusedFile = true
		c.out = append(c.out[:0], 0, 0, 0, c.parser.seq+1)
		c.outOff = 0
		l.flush(c)
		return
	}
	if done {
		if c.refusedFile && c.parser.err == nil {
			c.parser.err = errLocalInfile
		}
		c.refusedFile = false
		l.complete(c)
	}
}

var errLocalInfile = errors.New("LOAD DATA LOCAL INFILE: innowarm bench sends no files")

func (l *eventLoop) complete(c *loopClient) {
	t1 := time.Now()
	w := c.w
	w.busy.Store(false)
	s := c.cur
	if s.begins && w.rec.keepsTx {
		w.txStart = c.t0
	}
	if err := c.parser.err; err != nil {
		var me *mysql.MySQLError
		if !errors.As(err, &me) {
			if !w.st.stop.Load() || !w.stoppedByRun(err) {
				w.fatal(fmt.Errorf("client %d: %s: %w", w.idx+1, shorten(s.describe(), 200), err))
			}
			l.finish(c)
			return
		}
		if w.failed(s.describe(), err) {
			l.finish(c)
			return
		}
		c.prog.done(s, true)
	} else {
		w.succeeded(s, t1.Sub(c.t0), 0, t1)
		c.prog.done(s, false)
	}
	l.startNext(c, t1)
}

// lost ends a client whose connection failed.
func (l *eventLoop) lost(c *loopClient, err error) {
	if !c.w.st.stop.Load() || !c.w.stoppedByRun(err) {
		// With the statement in flight: it failed.
		c.w.fatal(fmt.Errorf("client %d lost its connection: %w", c.w.idx+1, err))
	}
	l.finish(c)
}

func (l *eventLoop) finish(c *loopClient) {
	if !c.active {
		return
	}
	c.active = false
	c.w.busy.Store(false)
	l.active--
	_ = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, c.fd, &syscall.EpollEvent{})
	c.conn.release()
}

// rawPrepare prepares a statement on a connection the loop will use.
func rawPrepare(bc *blockingConn, cp caps, sql string) (*psStmt, error) {
	if _, err := bc.Write(appendCommand(nil, comStmtPrepare, sql)); err != nil {
		return nil, err
	}
	resp := prepareResp{caps: cp}
	buf := make([]byte, 4096)
	n := 0
	for {
		if n == len(buf) {
			buf = append(buf, make([]byte, len(buf))...)
		}
		r, err := bc.Read(buf[n:])
		if err != nil {
			return nil, err
		}
		n += r
		used, done := resp.feed(buf[:n])
		copy(buf, buf[used:n])
		n -= used
		if done {
			if resp.err != nil {
				return nil, resp.err
			}
			return &psStmt{sql: sql, id: resp.id, nparams: resp.params}, nil
		}
	}
}

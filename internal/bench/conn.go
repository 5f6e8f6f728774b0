package bench

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/go-sql-driver/mysql"
)

// A benchmark client spends most of its time waiting for the server's answer. With Go's
// network poller every query costs a read that fails with EAGAIN, a trip through epoll,
// goroutine switches and wake-ups of idle threads on top of the write and the read that
// carry the data, and a system call made the ordinary way wakes the runtime's monitor
// thread. On a small machine where client and server share the CPUs, that client CPU is
// taken from the server: measured here, 2 to 3 times mysqlslap's CPU per query.
//
// A blockingConn waits the way the C clients do: a read that finds nothing sleeps in
// poll(POLLIN), then reads. (A plain blocking read sleeps twice per query on a Unix socket:
// the server consuming the request wakes every sleeper on the socket, poll filters that
// wake-up out.) The calls are raw system calls on the client's own thread, which keeps its
// P while it waits: the run gives every client a P of its own (see runner.round). A
// garbage collection then waits for the statements in flight, which is why the clients
// allocate almost nothing per query and the run collects garbage rarely.
type blockingConn struct {
	fd            int
	laddr, raddr  net.Addr
	refs          atomic.Int32 // calls in progress
	closed        atomic.Bool
	fdClosed      atomic.Bool
	readDeadline  atomic.Int64 // UnixNano; 0: none
	writeDeadline atomic.Int64
}

var errConnClosed = errors.New("use of closed connection")

// dialBlocking connects like net.Dialer (timeouts, name resolution), then takes the socket
// out of Go's network poller.
func dialBlocking(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("dial %s: no file descriptor", addr)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	nfd := -1
	var dupErr error
	if err := rc.Control(func(fd uintptr) {
		r, _, e := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_DUPFD_CLOEXEC, 0)
		if e != 0 {
			dupErr = e
			return
		}
		nfd = int(r)
	}); err != nil {
		return nil, err
	}
	if dupErr != nil {
		return nil, fmt.Errorf("dial %s: dup: %w", addr, dupErr)
	}
	// The duplicate shares the non-blocking file status with the original, which is what
	// the poll loop wants; closing the original takes it out of the network poller.
	return &blockingConn{fd: nfd, laddr: nc.LocalAddr(), raddr: nc.RemoteAddr()}, nil
}

func (c *blockingConn) acquire() bool {
	c.refs.Add(1)
	if c.closed.Load() {
		c.release()
		return false
	}
	return true
}

func (c *blockingConn) release() {
	if c.refs.Add(-1) == 0 && c.closed.Load() && !c.fdClosed.Swap(true) {
		syscall.Close(c.fd)
	}
}

const (
	pollIn  = 0x1
	pollOut = 0x4
)

type pollFd struct {
	fd      int32
	events  int16
	revents int16
}

// wait sleeps in poll until the socket is ready for events or the deadline passes.
func (c *blockingConn) wait(events int16, deadline int64) error {
	timeout := -1
	if deadline != 0 {
		left := deadline - time.Now().UnixNano()
		if left <= 0 {
			return timeoutError{}
		}
		timeout = int((left + int64(time.Millisecond) - 1) / int64(time.Millisecond))
	}
	pfd := pollFd{fd: int32(c.fd), events: events}
	_, _, e := syscall.RawSyscall(syscall.SYS_POLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(timeout))
	if e != 0 && e != syscall.EINTR {
		return &net.OpError{Op: "poll", Net: c.raddr.Network(), Addr: c.raddr, Err: e}
	}
	return nil
}

func (c *blockingConn) Read(b []byte) (int, error) {
	if !c.acquire() {
		return 0, errConnClosed
	}
	defer c.release()
	if len(b) == 0 {
		return 0, nil
	}
	for {
		r, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(c.fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		switch {
		case e == syscall.EAGAIN:
			if err := c.wait(pollIn, c.readDeadline.Load()); err != nil {
				return 0, err
			}
			continue
		case e == syscall.EINTR:
			continue
		case e != 0:
			return 0, &net.OpError{Op: "read", Net: c.raddr.Network(), Addr: c.raddr, Err: e}
		case r == 0:
			if c.closed.Load() {
				return 0, errConnClosed
			}
			return 0, io.EOF
		}
		return int(r), nil
	}
}

func (c *blockingConn) Write(b []byte) (int, error) {
	if !c.acquire() {
		return 0, errConnClosed
	}
	defer c.release()
	done := 0
	for done < len(b) {
		r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(c.fd), uintptr(unsafe.Pointer(&b[done])), uintptr(len(b)-done))
		switch {
		case e == syscall.EAGAIN:
			if err := c.wait(pollOut, c.writeDeadline.Load()); err != nil {
				return done, err
			}
			continue
		case e == syscall.EINTR:
			continue
		case e != 0:
			return done, &net.OpError{Op: "write", Net: c.raddr.Network(), Addr: c.raddr, Err: e}
		}
		done += int(r)
	}
	return done, nil
}

// Close shuts the socket down, which wakes a poll on it in another goroutine, and closes
// the descriptor once no call uses it any more.
func (c *blockingConn) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	_ = syscall.Shutdown(c.fd, syscall.SHUT_RDWR)
	c.refs.Add(1)
	c.release()
	return nil
}

func (c *blockingConn) LocalAddr() net.Addr  { return c.laddr }
func (c *blockingConn) RemoteAddr() net.Addr { return c.raddr }

func (c *blockingConn) SetDeadline(t time.Time) error {
	_ = c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}

func (c *blockingConn) SetReadDeadline(t time.Time) error {
	c.readDeadline.Store(unixNano(t))
	return nil
}

func (c *blockingConn) SetWriteDeadline(t time.Time) error {
	c.writeDeadline.Store(unixNano(t))
	return nil
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// wconn is one benchmark client's connection, used at the driver level: database/sql's
// pool, locks and argument conversion cost more client CPU per query than the query's
// own packets.
type wconn struct {
	dc    driver.Conn
	ex    driver.Execer
	id    int64 // server thread id, for KILL QUERY
	mu    sync.Mutex
	sock  net.Conn // the socket under the driver, to cut a client loose
	stmts []driver.Stmt
}

// dialer makes the connections of one run.
type dialer struct {
	base     *mysql.Config
	blocking bool
}

// open connects and reads the connection's thread id.
func (d *dialer) open(ctx context.Context) (*wconn, error) {
	w := &wconn{}
	cfg := d.base.Clone()
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var nc net.Conn
		var err error
		if d.blocking {
			nc, err = dialBlocking(ctx, network, addr)
		} else {
			var nd net.Dialer
			nc, err = nd.DialContext(ctx, network, addr)
		}
		if err == nil {
			w.mu.Lock()
			w.sock = nc
			w.mu.Unlock()
		}
		return nc, err
	}
	cfg.DialFunc = dial
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	w.dc = dc
	ex, ok := dc.(driver.Execer)
	if !ok {
		dc.Close()
		return nil, errors.New("the MySQL driver offers no Exec")
	}
	w.ex = ex
	id, err := w.queryInt("SELECT CONNECTION_ID()")
	if err != nil {
		dc.Close()
		return nil, fmt.Errorf("read the connection id: %w", err)
	}
	w.id = id
	return w, nil
}

// exec runs a statement and discards any rows without decoding them.
func (w *wconn) exec(q string) error {
	_, err := w.ex.Exec(q, nil)
	return err
}

func (w *wconn) queryInt(q string) (int64, error) {
	qr, ok := w.dc.(driver.Queryer)
	if !ok {
		return 0, errors.New("the MySQL driver offers no Query")
	}
	rows, err := qr.Query(q, nil)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	dest := make([]driver.Value, len(rows.Columns()))
	if err := rows.Next(dest); err != nil {
		return 0, err
	}
	switch v := dest[0].(type) {
	case int64:
		return v, nil
	case []byte:
		return strconv.ParseInt(string(v), 10, 64)
	case nil:
		return 0, nil
	}
	return 0, fmt.Errorf("unexpected %T", dest[0])
}

// queryStrings runs q and returns the first column of every row.
func (w *wconn) queryStrings(q string) ([]string, error) {
	qr := w.dc.(driver.Queryer)
	rows, err := qr.Query(q, nil)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	dest := make([]driver.Value, len(rows.Columns()))
	var out []string
	for {
		if err := rows.Next(dest); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		switch v := dest[0].(type) {
		case []byte:
			out = append(out, string(v))
		case int64:
			out = append(out, strconv.FormatInt(v, 10))
		case nil:
			out = append(out, "")
		default:
			out = append(out, fmt.Sprint(v))
		}
	}
}

// prepare makes a server-side prepared statement.
func (w *wconn) prepare(q string) (driver.Stmt, error) {
	st, err := w.dc.Prepare(q)
	if err != nil {
		return nil, err
	}
	w.stmts = append(w.stmts, st)
	return st, nil
}

// abort cuts the connection from another goroutine: a read blocked on it returns.
func (w *wconn) abort() {
	w.mu.Lock()
	s := w.sock
	w.mu.Unlock()
	if s != nil {
		_ = s.Close()
	}
}

func (w *wconn) close() {
	for _, st := range w.stmts {
		_ = st.Close()
	}
	w.stmts = nil
	_ = w.dc.Close()
}

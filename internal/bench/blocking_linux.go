//go:build linux

package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// blockingIOSupported says whether dialBlocking gives blockingConns.
const blockingIOSupported = true

// A benchmark client spends most of its time waiting for the server's answer. With Go's
// network poller every query costs a read that fails with EAGAIN, a trip through epoll,
// goroutine switches and wake-ups of idle threads on top of the write and the read that
// carry the data, and a system call made the ordinary way wakes the runtime's monitor
// thread. On a small machine where client and server share the CPUs, that client CPU is
// taken from the server: measured here, 2 to 3 times mysqlslap's CPU per query.
//
// A blockingConn waits the way the C clients do: a read that finds nothing sleeps in
// ppoll(POLLIN), then reads. (A blocking read would sleep twice per query on a Unix socket:
// the server consuming the request wakes every sleeper on the socket; poll filters that
// wake-up out.) The calls are raw system calls on the client's own thread, which keeps its
// P while it waits: a run gives every client a P of its own (runner.round). A garbage
// collection then waits for the statements in flight, which is why the clients allocate
// almost nothing per query and a run collects garbage rarely. Linux only (raw system call
// numbers); elsewhere clients use the network poller.
type blockingConn struct {
	fd            int
	laddr, raddr  net.Addr
	refs          atomic.Int32 // calls in progress
	closed        atomic.Bool
	fdClosed      atomic.Bool
	wrote         bool         // the last call was a write: the answer is not there yet
	hello         []byte       // the first packet written: the handshake response, with the capabilities
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

// asyncPreemptOff is GODEBUG=asyncpreemptoff=1: the runtime then sends no preemption
// signals, and a client waiting on a long statement must come back by itself.
var asyncPreemptOff = strings.Contains(os.Getenv("GODEBUG"), "asyncpreemptoff=1")

// pollSlice is how long a client waits in ppoll before it comes back to Go code when no
// preemption signal will bring it back (asyncPreemptOff).
const pollSlice = 20 * time.Millisecond

// wait sleeps in ppoll until the socket is ready for events or the deadline passes.
//
// Without a deadline it sleeps with no timeout: arming a timer for every wait costs about a
// tenth of the client's CPU. The process does not starve for it (every client holds a P,
// see runner.spareProcs): a client that waits for longer than 10 ms gets the runtime's
// preemption signal, ppoll returns EINTR, and on its way back the client yields its P to
// whatever else is runnable (interval reports, Ctrl-C, KILL QUERY, a garbage collection).
// A raw system call is no preemption point: wait yields explicitly after a signal.
func (c *blockingConn) wait(events int16, deadline int64) error {
	var ts *syscall.Timespec
	if deadline != 0 || asyncPreemptOff {
		slice := int64(pollSlice)
		if deadline != 0 {
			left := deadline - time.Now().UnixNano()
			if left <= 0 {
				return timeoutError{}
			}
			if !asyncPreemptOff || left < slice {
				slice = left
			}
		}
		t := syscall.NsecToTimespec(slice)
		ts = &t
	}
	pfd := pollFd{fd: int32(c.fd), events: events}
	_, _, e := syscall.RawSyscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(ts)), 0, 0, 0)
	switch e {
	case 0:
		return nil
	case syscall.EINTR:
		// A signal (a preemption, Ctrl-C): let the scheduler run what waits for a P.
		runtime.Gosched()
		return nil
	}
	return &net.OpError{Op: "poll", Net: c.raddr.Network(), Addr: c.raddr, Err: e}
}

func (c *blockingConn) Read(b []byte) (int, error) {
	if !c.acquire() {
		return 0, errConnClosed
	}
	defer c.release()
	if len(b) == 0 {
		return 0, nil
	}
	if c.wrote {
		// Right after a request the server cannot have answered yet: a read would fail
		// with EAGAIN, a system call for nothing.
		c.wrote = false
		if err := c.wait(pollIn, c.readDeadline.Load()); err != nil {
			return 0, err
		}
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
	if c.hello == nil {
		c.hello = append([]byte{}, b...)
	}
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
	c.wrote = true
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

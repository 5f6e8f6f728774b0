package bench

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"sync"

	"github.com/go-sql-driver/mysql"
)

// wconn is one benchmark client's connection, used at the driver level: database/sql's
// pool, locks and argument conversion cost more client CPU per query than the query's
// own packets.
type wconn struct {
	dc    driver.Conn
	ex    driver.Execer //nolint:staticcheck // the per-query hot path: no context per statement; a run is stopped by KILL QUERY and by cutting the socket
	id    int64         // server thread id, for KILL QUERY
	mu    sync.Mutex
	sock  net.Conn // the socket under the driver, to cut a client loose
	stmts []driver.Stmt
}

// dialer makes the connections of one run.
type dialer struct {
	base     *mysql.Config
	blocking bool // blockingConn sockets
	raw      bool // the protocol spoken directly (proto.go)
	loop     bool // run by event loops
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
	ex, ok := dc.(driver.Execer) //nolint:staticcheck // the per-query hot path: no context per statement; a run is stopped by KILL QUERY and by cutting the socket
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
	qr, ok := w.dc.(driver.Queryer) //nolint:staticcheck // the per-query hot path: no context per statement; a run is stopped by KILL QUERY and by cutting the socket
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
	case uint64: // MySQL 8+ types CONNECTION_ID() unsigned
		if v > math.MaxInt64 {
			return 0, fmt.Errorf("%d is out of range", v)
		}
		return int64(v), nil
	case []byte:
		return strconv.ParseInt(string(v), 10, 64)
	case nil:
		return 0, nil
	}
	return 0, fmt.Errorf("unexpected %T", dest[0])
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

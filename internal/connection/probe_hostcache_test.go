package connection_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// The TLS probe (run when a TLS connection with a client certificate broke without a
// reason) connected again, and the server counts a connection that ends before its login
// against max_connect_errors for the client's host: from any address but 127.0.0.1 and
// ::1, each failed innowarm run took the host two steps nearer to being blocked instead of
// one, and a probe whose handshake the server accepted counted too. From such an address
// the probe must not connect: the host's SUM_CONNECT_ERRORS (performance_schema.host_cache)
// stays where it was, while a connection that does end early from there is counted (the
// test's own check that the counter counts). From 127.0.0.1 it still finds the alert.
func TestTLSProbeCostsNoConnectError(t *testing.T) {
	f := makeTLSFiles(t)
	args := []string{"--ssl-ca=" + f.ca, "--ssl-cert=" + f.serverCert, "--ssl-key=" + f.serverKey, "--bind-address=127.0.0.2", "--performance-schema=ON"}
	sb := sandboxtest.SecondServer(t, 0, args...)
	adminExec(t, sb, "CREATE USER 'iw_x509'@'%' REQUIRE X509")
	admin, err := sb.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sess, err := admin.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	threads := func() int {
		t.Helper()
		var name string
		var n int
		if err := sess.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Threads_connected'").Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	idle := threads()
	// settled waits until the server has ended every other connection, and with it
	// counted those that ended before their login.
	settled := func() {
		t.Helper()
		for threads() > idle {
			if ctx.Err() != nil {
				t.Fatalf("connections from 127.0.0.2 never ended: %d threads, %d before", threads(), idle)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	connectErrors := func() int64 {
		t.Helper()
		settled()
		var n int64
		err := sess.QueryRowContext(ctx, "SELECT SUM_CONNECT_ERRORS FROM performance_schema.host_cache WHERE IP = '127.0.0.2'").Scan(&n)
		if errors.Is(err, sql.ErrNoRows) {
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	addr := net.JoinHostPort("127.0.0.2", strconv.Itoa(sb.Port))

	// A connection from 127.0.0.2 that reads the greeting and hangs up is counted.
	before := connectErrors()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadFull(c, make([]byte, 4))
	c.Close()
	counted := connectErrors()
	if counted != before+1 {
		t.Fatalf("a connection from 127.0.0.2 that ended before its login took SUM_CONNECT_ERRORS from %d to %d: the server does not count this host, and the test proves nothing", before, counted)
	}

	probe := func(cert, key string) error {
		o := connection.ForTCP("127.0.0.2", sb.Port, "iw_x509", "")
		o.SSLMode, o.SSLCert, o.SSLKey = connection.SSLRequired, cert, key
		cfg, err := o.Config()
		if err != nil {
			t.Fatal(err)
		}
		return connection.ProbeTLSRefusal(ctx, cfg, 2*time.Second)
	}
	restore := connection.SetProbeSource(net.ParseIP("127.0.0.2"))
	for _, c := range []struct{ name, cert, key string }{
		{"another CA's certificate", f.rogueCert, f.rogueKey},
		{"the CA's own certificate", f.clientCert, f.clientKey},
	} {
		err := probe(c.cert, c.key)
		if after := connectErrors(); after != counted {
			t.Errorf("the probe with %s from 127.0.0.2 took SUM_CONNECT_ERRORS from %d to %d, want no change", c.name, counted, after)
			counted = after
		}
		if !errors.Is(err, connection.ErrNotProbed) || !strings.Contains(err.Error(), "--ssl-cert") {
			t.Errorf("the probe with %s from 127.0.0.2 says %v, want why it did not ask", c.name, err)
		}
	}
	restore()

	// From 127.0.0.1, which the server keeps out of its host cache, it still asks.
	err = probe(f.rogueCert, f.rogueKey)
	if err == nil || !strings.Contains(err.Error(), "tls: ") {
		t.Errorf("the probe of another CA's certificate from 127.0.0.1 found %v, want the server's TLS alert", err)
	}
	if after := connectErrors(); after != counted {
		t.Errorf("the probe from 127.0.0.1 took 127.0.0.2's SUM_CONNECT_ERRORS from %d to %d", counted, after)
	}
}

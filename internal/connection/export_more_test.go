package connection

import "net"

// ErrNotProbed is errNotProbed, for the tests of package connection_test.
var ErrNotProbed = errNotProbed

// SetProbeSource makes the TLS probe connect from ip (nil: the system's choice) until the
// returned function is called.
func SetProbeSource(ip net.IP) (restore func()) {
	old := probeSource
	probeSource = ip
	return func() { probeSource = old }
}

// ExplainAccountRefusal is explainAccountRefusal, for the tests of package connection_test.
var ExplainAccountRefusal = explainAccountRefusal

package warm

import (
	"context"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
)

// trafficFloor is the client statements per second above which a server counts as
// serving traffic: far above what a monitoring agent's polls add, far below any workload
// a warm-up could compete with.
const trafficFloor = 20.0

// trafficWindow is how long sampleTraffic watches the counters.
const trafficWindow = 300 * time.Millisecond

// sampleTraffic is the rate of client data statements (SELECT, INSERT, UPDATE, DELETE,
// REPLACE) the server ran over window. Its own SHOW statements are not among them.
func sampleTraffic(ctx context.Context, conn *connection.Conn, window time.Duration) (float64, error) {
	names := []string{"Com_select", "Com_insert", "Com_update", "Com_delete", "Com_replace"}
	read := func() (int64, error) {
		vals, err := conn.GlobalStatus(ctx, names...)
		var total int64
		for _, v := range vals {
			total += v
		}
		return total, err
	}
	a, err := read()
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(window):
	}
	b, err := read()
	if err != nil {
		return 0, err
	}
	return float64(max(b-a, 0)) / time.Since(t0).Seconds(), nil
}

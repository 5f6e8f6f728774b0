package warm

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// TestSampleTraffic: a server nobody queries is below the floor, one that four clients
// query in a loop far above it (the clients run until the sample is taken, so that a busy
// machine only slows both alike).
func TestSampleTraffic(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	quiet, err := sampleTraffic(ctx, conn, trafficWindow)
	if err != nil {
		t.Fatal(err)
	}
	if quiet >= trafficFloor {
		t.Errorf("an idle server runs %.0f client statements/s, want below %.0f", quiet, trafficFloor)
	}
	cctx, stop := context.WithCancel(ctx)
	var ran atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for cctx.Err() == nil {
				if _, err := conn.DB.ExecContext(cctx, "SELECT 1"); err == nil {
					ran.Add(1)
				}
			}
		}()
	}
	defer func() { stop(); wg.Wait() }()
	// The clients are running before the sample starts.
	for deadline := time.Now().Add(time.Minute); ran.Load() < 20; {
		if time.Now().After(deadline) {
			t.Fatalf("the clients ran %d statements in a minute", ran.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	before := ran.Load()
	busy, err := sampleTraffic(ctx, conn, trafficWindow)
	if err != nil {
		t.Fatal(err)
	}
	if n := ran.Load() - before; n >= 2*int64(trafficFloor*trafficWindow.Seconds()) && busy < trafficFloor {
		t.Errorf("the clients ran %d statements during the sample, which says %.0f/s: want at least %.0f", n, busy, trafficFloor)
	}
	t.Logf("idle %.0f statements/s, four clients in a loop %.0f/s", quiet, busy)
}

package warm

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
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

// TestThrottledLoad: where the server's loader keeps to innodb_io_capacity under write
// activity (MySQL) and the capacity is low, a server that writes makes a manifest's keyed
// indexes take range scans, and one that does not leaves them to the loader; MariaDB
// 10.5+ loads at full speed either way.
func TestThrottledLoad(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	var was int64
	if err := conn.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_io_capacity").Scan(&was); err != nil {
		t.Fatal(err)
	}
	sandboxtest.Exec(t, "SET GLOBAL innodb_io_capacity = 200")
	t.Cleanup(func() { sandboxtest.Exec(t, fmt.Sprintf("SET GLOBAL innodb_io_capacity = %d", was)) })
	if why, _, err := throttledLoad(ctx, conn); err != nil || why != "" {
		t.Fatalf("no writes: %q %v, want no throttle", why, err)
	}
	db := sandboxtest.Schema(t)
	tbl := sqltext.Table(db, "w")
	sandboxtest.Exec(t, "CREATE TABLE "+tbl+" (id INT PRIMARY KEY, v INT NOT NULL)", "INSERT INTO "+tbl+" VALUES (1, 0), (2, 0)")
	cctx, stop := context.WithCancel(ctx)
	var ran atomic.Int64
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for cctx.Err() == nil {
				if _, err := conn.DB.ExecContext(cctx, fmt.Sprintf("UPDATE %s SET v = v + 1 WHERE id = %d", tbl, i+1)); err == nil {
					ran.Add(1)
				}
			}
		}()
	}
	defer func() { stop(); wg.Wait() }()
	for deadline := time.Now().Add(time.Minute); ran.Load() < 20; {
		if time.Now().After(deadline) {
			t.Fatalf("the writers ran %d updates in a minute", ran.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	before := ran.Load()
	why, _, err := throttledLoad(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	wrote := ran.Load() - before
	switch {
	case !conn.Server.LoadThrottledWhenBusy() && why != "":
		t.Errorf("%s loads at full speed, but: %s", conn.Server, why)
	case conn.Server.LoadThrottledWhenBusy() && wrote >= 2 && !strings.Contains(why, "innodb_io_capacity = 200"):
		t.Errorf("%s: %d updates during the sample, throttle reason %q", conn.Server, wrote, why)
	}
	t.Logf("%s: %d updates during the sample: %q", conn.Server, wrote, why)
}

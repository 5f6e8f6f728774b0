package follow_test

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/follow"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// A round on an idle target may meet traffic at any moment (a promotion): on a server
// whose loader queues its reads, the load keeps at most about one and a half of its
// 128-page chunks queued, so that a first query waits behind no more. The target's reads
// are capped at 2 MB/s (128 pages a second) so that the queue is seen.
func TestFollowBoundsTheReadsItQueues(t *testing.T) {
	ctx := context.Background()
	source, target, _ := followedPair(t)
	watch, err := target.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	defer sandboxtest.ThrottleReads(t, target.Status(ctx).Pid, target.Datadir, 2<<20)()
	q := "SELECT (SELECT SUM(PENDING_READS) FROM information_schema.INNODB_BUFFER_POOL_STATS), (SELECT VARIABLE_VALUE FROM " +
		watch.Server.GlobalStatusTable() + " WHERE VARIABLE_NAME = 'INNODB_DATA_PENDING_READS')"
	var most atomic.Int64
	wctx, stopWatching := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		// Five looks a second: the looks are SELECTs, which follow would count as traffic
		// at twenty.
		for wctx.Err() == nil {
			var all, sync int64
			if err := watch.DB.QueryRowContext(wctx, q).Scan(&all, &sync); err == nil && all-sync > most.Load() {
				most.Store(all - sync)
			}
			select {
			case <-wctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	o := follow.Options{Source: source.ConnOptions(), Target: target.ConnOptions(), Interval: time.Second, Rounds: 1,
		Filter: catalog.Filter{Schemas: []string{"fw"}}, Log: logx.New(os.Stderr, false), Method: "native"}
	var statuses []follow.Status
	err = follow.Run(ctx, o, nil, func(s follow.Status) { statuses = append(statuses, s) })
	stopWatching()
	<-watched
	if err != nil {
		t.Fatal(err)
	}
	if len(statuses) != 1 || !statuses[0].OK {
		t.Fatalf("want one good round: %+v", statuses)
	}
	s := statuses[0]
	t.Logf("round: %d of %d pages loaded in %.1f s, coverage %.3f, traffic %.1f/s; at most %d reads queued", s.Loaded, s.HotSetPages, s.LoadSeconds, s.Coverage, s.TrafficArrived, most.Load())
	if s.TrafficArrived != 0 || s.Coverage < 0.95 {
		t.Errorf("want the hot set loaded with no traffic seen: %+v", s)
	}
	if !watch.Server.LoadQueuesReads() {
		return // MySQL's loader reads a page at a time
	}
	if m := most.Load(); m > 200 || m < 16 {
		t.Errorf("at most %d reads queued during the load; want some, and no more than 1.5 chunks of 128 (+ slack)", m)
	}
}

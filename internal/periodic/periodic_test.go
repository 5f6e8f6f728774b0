package periodic

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// waitUntil polls cond; the bound is only against a hang.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the condition never held")
		}
	}
}

// The tests wait for calls, not for time: on a busy machine a 1 ms ticker may fire far
// less often. The short sleeps below only give a wrong call a chance to show; a slow
// machine can make them miss one, never fail a correct Every.
func TestEvery(t *testing.T) {
	t.Run("calls until stopped, and stop waits for the call in progress", func(t *testing.T) {
		var n atomic.Int32
		entered, release := make(chan struct{}), make(chan struct{})
		var returned atomic.Bool
		var third context.Context
		stop := Every(context.Background(), time.Millisecond, func(ctx context.Context) bool {
			if n.Add(1) == 3 {
				third = ctx
				close(entered)
				<-release
				returned.Store(true)
			}
			return true
		})
		<-entered
		stopped := make(chan bool)
		go func() { stop(); stopped <- returned.Load() }()
		// The call is released once stop has begun (its context ended), not after a sleep:
		// released before, the loop would rightly make a fourth call (a busy machine may start
		// the goroutine above more than 20 ms late).
		<-third.Done()
		time.Sleep(20 * time.Millisecond) // stop, were it wrong, would return meanwhile
		close(release)
		if !<-stopped {
			t.Error("stop returned while a call was in progress")
		}
		got := n.Load()
		time.Sleep(20 * time.Millisecond)
		if got != 3 || n.Load() != got {
			t.Errorf("%d calls when stopped, then %d", got, n.Load())
		}
		stop() // twice is fine
	})
	t.Run("f ends it", func(t *testing.T) {
		var n atomic.Int32
		stop := Every(context.Background(), time.Millisecond, func(context.Context) bool { return n.Add(1) < 3 })
		waitUntil(t, func() bool { return n.Load() >= 3 })
		time.Sleep(20 * time.Millisecond)
		stop()
		if n.Load() != 3 {
			t.Errorf("%d calls, want 3", n.Load())
		}
	})
	t.Run("the context ends it", func(t *testing.T) {
		// The context ends during a call, while ticks are pending: no call follows. Many
		// times, since a wrong loop may pick the pending tick or the ended context.
		for i := 0; i < 50; i++ {
			ctx, cancel := context.WithCancel(context.Background())
			var n atomic.Int32
			entered, release := make(chan struct{}), make(chan struct{})
			stop := Every(ctx, time.Millisecond, func(context.Context) bool {
				if n.Add(1) == 2 {
					close(entered)
					<-release
				}
				return true
			})
			<-entered
			time.Sleep(3 * time.Millisecond) // ticks pile up
			cancel()
			close(release)
			time.Sleep(5 * time.Millisecond)
			if got := n.Load(); got != 2 {
				t.Fatalf("run %d: %d calls, want none after the context ended during the second", i, got)
			}
			stop()
		}
	})
}

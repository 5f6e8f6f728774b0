package periodic

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestEvery(t *testing.T) {
	t.Run("calls until stopped, and stop waits", func(t *testing.T) {
		var n atomic.Int32
		stop := Every(context.Background(), 5*time.Millisecond, func(context.Context) bool { n.Add(1); return true })
		time.Sleep(60 * time.Millisecond)
		stop()
		got := n.Load()
		time.Sleep(20 * time.Millisecond)
		if got < 3 || n.Load() != got {
			t.Errorf("%d calls, then %d after stop", got, n.Load())
		}
		stop() // twice is fine
	})
	t.Run("f ends it", func(t *testing.T) {
		var n atomic.Int32
		stop := Every(context.Background(), time.Millisecond, func(context.Context) bool { return n.Add(1) < 3 })
		time.Sleep(50 * time.Millisecond)
		stop()
		if n.Load() != 3 {
			t.Errorf("%d calls, want 3", n.Load())
		}
	})
	t.Run("the context ends it", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var n atomic.Int32
		stop := Every(ctx, time.Millisecond, func(context.Context) bool { n.Add(1); return true })
		cancel()
		time.Sleep(20 * time.Millisecond)
		got := n.Load()
		time.Sleep(20 * time.Millisecond)
		if n.Load() != got {
			t.Errorf("calls went on after the context ended")
		}
		stop()
	})
}

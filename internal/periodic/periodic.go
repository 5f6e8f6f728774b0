// Package periodic runs a function at a fixed interval in the background until told to
// stop: the progress lines, samplers and watchers of long commands.
package periodic

import (
	"context"
	"sync"
	"time"
)

// Every calls f every d (the first call after d) in a goroutine of its own, until ctx ends,
// f returns false, or stop is called. stop cancels the context f gets and waits for a call
// in progress to return; it may be called more than once.
func Every(ctx context.Context, d time.Duration, f func(ctx context.Context) bool) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			// select picks at random among ready cases: a tick pending when ctx ended must
			// not start another call.
			if ctx.Err() != nil || !f(ctx) {
				return
			}
		}
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}

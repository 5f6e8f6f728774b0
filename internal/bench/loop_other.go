//go:build !linux

package bench

import (
	"errors"
	"sync"
)

// loopSupported says whether this build has the event loop.
const loopSupported = false

type loopClient struct{}

func (r *runner) startLoops(roundSpec, []*worker, *sync.WaitGroup) error {
	return errors.New("no event loop on this system")
}

func rawPrepare(*blockingConn, caps, string) (*psStmt, error) {
	return nil, errors.New("no event loop on this system")
}

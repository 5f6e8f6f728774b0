package replay_test

import (
	"testing"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// The test server records statements in performance_schema's history, as a server set up
// for --replay performance_schema does.
func TestMain(m *testing.M) {
	sandboxtest.Main(m, sandboxtest.Options{
		PoolSize: 64 << 20,
		ServerArgs: []string{
			"--performance-schema=ON",
			"--performance-schema-consumer-events-statements-current=ON",
			"--performance-schema-consumer-events-statements-history-long=ON",
		},
	})
}

package bench

import (
	"testing"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

func TestMain(m *testing.M) { sandboxtest.Main(m, sandboxtest.Options{}) }

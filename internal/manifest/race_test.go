//go:build race

package manifest

// raceEnabled: the race detector slows everything down about tenfold, so timing checks
// are skipped and the large tests run smaller.
const raceEnabled = true

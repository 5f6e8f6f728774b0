package warm

import "testing"

// One page of a wide sample changed since the snapshot, on the manifest's own server, still
// says page-for-page (a restart after a few writes went by tree or range scans for one
// purged first row); on another server, or with two changed, or in a small sample, not.
func TestPageForPageAllowsOneChangeOnTheSameServer(t *testing.T) {
	for _, c := range []struct {
		v          physicalVerdict
		sameServer bool
		want       bool
	}{
		{physicalVerdict{sampled: 32, same: 31}, true, true},
		{physicalVerdict{sampled: 128, same: 127}, true, true},
		{physicalVerdict{sampled: 32, same: 31}, false, false},
		{physicalVerdict{sampled: 32, same: 30}, true, false},
		{physicalVerdict{sampled: 8, same: 7}, true, false},
		{physicalVerdict{sampled: 32, same: 23}, true, false},
	} {
		if got := c.v.pageForPage(c.sameServer); got != c.want {
			t.Errorf("%+v same server %v: %v, want %v", c.v, c.sameServer, got, c.want)
		}
	}
}

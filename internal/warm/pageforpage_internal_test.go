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

// In the manifest's own tablespace (the same server, the same space id: never rebuilt),
// page numbers name the rows by construction: half a sample holding the manifest's ranges
// says it is (the rest were dirty at the capture, or changed since); less than half, or
// another server, or a rebuilt tablespace, does not.
func TestPageForPageInTheManifestsOwnTablespace(t *testing.T) {
	for _, c := range []struct {
		v                     physicalVerdict
		sameServer, sameSpace bool
		want                  bool
	}{
		{physicalVerdict{sampled: 32, same: 18}, true, true, true},
		{physicalVerdict{sampled: 129, same: 126}, true, true, true},
		{physicalVerdict{sampled: 4, same: 2}, true, true, true},
		{physicalVerdict{sampled: 32, same: 15}, true, true, false},
		{physicalVerdict{sampled: 32, same: 18}, true, false, false},
		{physicalVerdict{sampled: 32, same: 18}, false, true, false},
		{physicalVerdict{sampled: 0, same: 0}, true, true, false},
	} {
		if got := c.v.ownTablespace(c.sameServer, c.sameSpace); got != c.want {
			t.Errorf("%+v same server %v, same space %v: %v, want %v", c.v, c.sameServer, c.sameSpace, got, c.want)
		}
	}
}

package bufferpool

import "testing"

// Innodb_buffer_pool_pages_misc wraps around on MariaDB after a native load (a user test:
// 18446744073709551564 for a pool of 8,112 pages): it read as the largest int64, and follow
// then loaded a hot set cut to the pool less that, nothing. A value past the pool's pages
// is the pages neither free nor data instead.
func TestMiscPagesWrappedAround(t *testing.T) {
	for _, c := range []struct {
		raw               string
		total, free, data int64
		want              int64
	}{
		{"120", 8112, 5000, 2992, 120},
		{"18446744073709551564", 8112, 5000, 3000, 112},
		{"18446744073709551564", 8112, 5200, 3000, 0}, // free + data over the total: none
		{"9000", 8112, 5000, 3000, 112},               // more than the pool holds
		{"", 8112, 5000, 3000, 112},                   // a server without the counter
		{"0", 8112, 8112, 0, 0},
	} {
		if got := miscPages(c.raw, c.total, c.free, c.data); got != c.want {
			t.Errorf("miscPages(%q, total %d, free %d, data %d) = %d, want %d", c.raw, c.total, c.free, c.data, got, c.want)
		}
	}
}
